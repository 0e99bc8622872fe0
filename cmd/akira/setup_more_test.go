package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
)

// setupRun is `akira setup` running in the test process.
type setupRun struct {
	out  *lockedLog
	page string
	done chan error
}

// startSetupInProcess runs `akira setup` in the test process until ctx ends and waits for its page.
func startSetupInProcess(t *testing.T, ctx context.Context, fake *githubtest.Server, dir string, extra ...string) *setupRun {
	t.Helper()
	r := &setupRun{out: &lockedLog{}, done: make(chan error, 1)}
	root := newRootCmd()
	root.SetArgs(append([]string{"setup", "--addr", "127.0.0.1:0", "--github-url", fake.URL(),
		"--webhook-url", "https://akira.example.test/webhook",
		"--env-file", filepath.Join(dir, "akira.env"), "--key-file", filepath.Join(dir, "akira.private-key.pem")}, extra...))
	root.SetOut(&lineWriter{r.out})
	root.SetErr(&lineWriter{r.out})
	go func() { r.done <- root.ExecuteContext(ctx) }()
	pageRE := regexp.MustCompile(`Open (http://\S+/) in your browser`)
	waitFor(t, "akira setup's page", func() bool {
		select {
		case err := <-r.done:
			t.Fatalf("akira setup ended before serving its page: %v\n%s", err, r.out)
		default:
		}
		m := pageRE.FindStringSubmatch(r.out.String())
		if m != nil {
			r.page = m[1]
		}
		return m != nil
	})
	return r
}

// pressCreate does what the browser does: it posts the page's manifest form to GitHub, which sends
// it back to setup's callback with a code.
func pressCreate(t *testing.T, page string) {
	t.Helper()
	_, body := httpGet(t, page)
	form := regexp.MustCompile(`action="([^"]+)"[\s\S]*name="manifest" value="([^"]+)"`).FindStringSubmatch(body)
	if form == nil {
		t.Fatalf("no manifest form on the page:\n%s", body)
	}
	resp, err := http.PostForm(html.UnescapeString(form[1]), url.Values{"manifest": {html.UnescapeString(form[2])}})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(done), `id="done"`) {
		t.Fatalf("after GitHub's redirect: %d\n%s", resp.StatusCode, done)
	}
}

// TestSetupInProcess: setup registers the App and writes its settings and key readable by the user
// only, then prints the installation link and the command that starts Akira; run again it refuses
// to overwrite them without --force; interrupted, it says nothing was written; an address in use is
// named.
func TestSetupInProcess(t *testing.T) {
	fake := githubtest.New(t)
	dir := t.TempDir()
	envFile, keyFile := filepath.Join(dir, "akira.env"), filepath.Join(dir, "akira.private-key.pem")

	r := startSetupInProcess(t, context.Background(), fake, dir, "--name", "Akira test")
	pressCreate(t, r.page)
	if err := <-r.done; err != nil {
		t.Fatalf("akira setup: %v\n%s", err, r.out)
	}
	out := r.out.String()
	for _, want := range []string{
		// The name is what GitHub answers (the fake answers its slug).
		fmt.Sprintf("Registered the GitHub App %q (id %d).", fake.AppSlug(), fake.AppID()),
		"Wrote " + envFile + " (settings and secrets) and " + keyFile + " (private key), readable by you only.",
		"Install it on your repositories: " + strings.TrimSuffix(fake.URL(), "/") + "/apps/" + fake.AppSlug() + "/installations/new",
		"Then start Akira:\n\n  akira serve --env-file " + envFile,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("setup's output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{envFile, keyFile} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v; want mode 0600", filepath.Base(f), st, err)
		}
	}
	env, err := readEnvFile(envFile)
	if err != nil || env["GITHUB_APP_ID"] != fmt.Sprint(fake.AppID()) || env["GITHUB_PRIVATE_KEY_PATH"] != keyFile {
		t.Errorf("env file = %v (%v)", env, err)
	}
	before := readFile(t, envFile)

	// Again without --force: refused before anything is served.
	_, stderr, code := runCmd(t, "setup", "--addr", "127.0.0.1:0", "--github-url", fake.URL(), "--webhook-url", "https://akira.example.test/webhook",
		"--env-file", envFile, "--key-file", keyFile)
	if code != 2 || !strings.Contains(stderr, envFile+" exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("setup over existing files: exit %d, %q", code, stderr)
	}

	// Interrupted while waiting for GitHub: nothing is written.
	ctx, cancel := context.WithCancel(context.Background())
	r = startSetupInProcess(t, ctx, fake, dir, "--force")
	cancel()
	if err := <-r.done; err == nil || !strings.Contains(err.Error(), "interrupted before GitHub sent the App back; nothing was written") {
		t.Errorf("interrupted setup: %v", err)
	}
	if readFile(t, envFile) != before {
		t.Error("an interrupted setup changed the env file")
	}

	// The address of the page is taken.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, stderr, code = runCmd(t, "setup", "--addr", ln.Addr().String(), "--webhook-url", "https://akira.example.test/webhook",
		"--env-file", filepath.Join(dir, "other.env"), "--key-file", filepath.Join(dir, "other.pem"))
	if code != 1 || !strings.Contains(stderr, "setup: listen on "+ln.Addr().String()) {
		t.Errorf("address in use: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.env")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed setup wrote its env file: %v", err)
	}
}
