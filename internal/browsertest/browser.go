// Package browsertest gives tests a real headless Chromium, driven over the DevTools protocol with
// chromedp. Where no Chromium is installed a test that needs one is skipped with what to install;
// CI sets AKIRA_TEST_BROWSER_REQUIRED=1, and there a missing browser fails the test instead.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/akira-bot/akira/internal/testnotes"
)

// EnvRequired makes a missing browser a test failure.
const EnvRequired = "AKIRA_TEST_BROWSER_REQUIRED"

// executable finds Chromium: AKIRA_TEST_CHROMIUM, else the usual names on PATH.
func executable() string {
	if p := os.Getenv("AKIRA_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium for tb and returns a context to run chromedp actions in; the
// browser is closed when the test ends.
func New(tb testing.TB) context.Context {
	tb.Helper()
	path := executable()
	if path == "" {
		hint := "install Chromium (Debian/Ubuntu: apt-get install chromium), or set AKIRA_TEST_CHROMIUM to its path"
		if os.Getenv(EnvRequired) != "" {
			tb.Fatal("this test needs Chromium: " + hint)
		}
		testnotes.Skip(tb, "browser tests (the akira setup page, the dashboard; Chromium)", hint)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(tb.TempDir()),
		// Tests run as root in containers, where Chromium's own sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx
}
