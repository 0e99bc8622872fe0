package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/internal/browsertest"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
)

// setupProcess is a running `akira setup`: its page's address, and its output once it ended.
type setupProcess struct {
	cmd    *exec.Cmd
	page   string
	stdout *lockedLog
	stderr *lockedLog
	done   chan struct{}
}

// startSetup runs the real binary's `akira setup` against the fake GitHub and waits for its page.
func startSetup(t *testing.T, fake *githubtest.Server, dir string, extra ...string) *setupProcess {
	t.Helper()
	args := append([]string{"setup", "--addr", "127.0.0.1:0", "--github-url", fake.URL(),
		"--webhook-url", "https://akira.example.test/webhook",
		"--env-file", filepath.Join(dir, "akira.env"), "--key-file", filepath.Join(dir, "akira.private-key.pem")}, extra...)
	p := &setupProcess{cmd: exec.Command(akiraBin, args...), stdout: &lockedLog{}, stderr: &lockedLog{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	p.cmd.Stderr = &lineWriter{p.stderr}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pageRE := regexp.MustCompile(`^Open (http://\S+/) in your browser`)
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout.WriteString(sc.Text() + "\n")
			if m := pageRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.page = <-found:
	case <-p.done:
		t.Fatalf("akira setup ended before serving its page (exit %d):\n%s%s", p.cmd.ProcessState.ExitCode(), p.stdout, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("akira setup served no page:\n%s%s", p.stdout, p.stderr)
	}
	return p
}

// wait waits for the process to end and returns its exit code.
func (p *setupProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("akira setup did not end:\n%s%s", p.stdout, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// lineWriter adapts a lockedLog to an io.Writer.
type lineWriter struct{ l *lockedLog }

func (w *lineWriter) Write(b []byte) (int, error) { w.l.WriteString(string(b)); return len(b), nil }

// TestSetupInBrowser: a person opens setup's page in a real browser and presses its one button; the
// manifest goes to GitHub's "new App" page, GitHub sends the browser back with a code, and setup
// saves the App's credentials (0600), prints where to install it and how to start Akira, refuses to
// overwrite without --force, and `akira serve --env-file` then runs as that App.
func TestSetupInBrowser(t *testing.T) {
	browser := browsertest.New(t)
	fake := githubtest.New(t)
	dir := t.TempDir()
	envFile, keyFile := filepath.Join(dir, "akira.env"), filepath.Join(dir, "akira.private-key.pem")

	p := startSetup(t, fake, dir)
	installURL := clickCreate(t, browser, p.page)
	if code := p.wait(t); code != 0 {
		t.Fatalf("akira setup exit %d:\n%s%s", code, p.stdout, p.stderr)
	}
	wantInstall := strings.TrimSuffix(fake.URL(), "/") + "/apps/" + fake.AppSlug() + "/installations/new"
	if installURL != wantInstall {
		t.Errorf("the page links to %q; want %q", installURL, wantInstall)
	}
	out := p.stdout.String()
	for _, want := range []string{wantInstall, "akira serve --env-file " + envFile} {
		if !strings.Contains(out, want) {
			t.Errorf("setup's output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{envFile, keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v; want 0600", filepath.Base(f), st.Mode().Perm())
		}
	}
	if key := readFile(t, keyFile); key != string(fake.PrivateKeyPEM()) {
		t.Errorf("the key file does not hold the App's private key")
	}
	env, err := readEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if env["GITHUB_APP_ID"] != fmt.Sprint(fake.AppID()) || env["GITHUB_WEBHOOK_SECRET"] == "" || env["GITHUB_CLIENT_SECRET"] == "" ||
		env["GITHUB_PRIVATE_KEY_PATH"] != keyFile || env["GITHUB_API_URL"] != strings.TrimSuffix(fake.URL(), "/")+"/api/v3/" {
		t.Errorf("env file = %v", env)
	}

	// What reached GitHub is Akira's manifest with this setup's webhook and callback.
	posted := fake.PostedManifests()
	if len(posted) != 1 || posted[0].Org != "" {
		t.Fatalf("manifests posted: %+v; want one, for the person's account", posted)
	}
	m := posted[0].Manifest
	if hook := m["hook_attributes"].(map[string]any); hook["url"] != "https://akira.example.test/webhook" {
		t.Errorf("manifest webhook = %v", hook["url"])
	}
	if u, _ := m["redirect_url"].(string); !strings.HasPrefix(u, strings.TrimSuffix(p.page, "/")+"/callback") {
		t.Errorf("manifest redirect_url = %q; want setup's own callback under %s", u, p.page)
	}
	want, err := app.AppManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := anyStrings(m["default_events"]); !slices.Equal(got, want.DefaultEvents) {
		t.Errorf("manifest events = %v; want %v", got, want.DefaultEvents)
	}
	if perms, _ := m["default_permissions"].(map[string]any); perms["workflows"] != nil {
		t.Errorf("the workflows permission is asked for without --workflows: %v", perms)
	}

	// Again without --force: refused before anything is served, the files untouched.
	before := readFile(t, envFile)
	cmd := exec.Command(akiraBin, "setup", "--addr", "127.0.0.1:0", "--github-url", fake.URL(), "--webhook-url", "https://akira.example.test/webhook",
		"--env-file", envFile, "--key-file", keyFile)
	refusal, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(refusal), envFile+" exists") || !strings.Contains(string(refusal), keyFile+" exists") || !strings.Contains(string(refusal), "--force") {
		t.Errorf("setup over existing files: exit %d, %s; want exit 2 naming both files and --force", code, refusal)
	}
	if readFile(t, envFile) != before {
		t.Error("the env file changed without --force")
	}
	// With --force: replaced (a new webhook secret), still 0600.
	p = startSetup(t, fake, dir, "--force")
	clickCreate(t, browser, p.page)
	if code := p.wait(t); code != 0 {
		t.Fatalf("akira setup --force exit %d:\n%s%s", code, p.stdout, p.stderr)
	}
	after, err := readEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if after["GITHUB_WEBHOOK_SECRET"] == env["GITHUB_WEBHOOK_SECRET"] {
		t.Error("--force did not replace the env file")
	}
	if st, _ := os.Stat(envFile); st.Mode().Perm() != 0o600 {
		t.Errorf("the replaced env file has mode %v", st.Mode().Perm())
	}

	// The printed command starts Akira as the new App: a delivery signed with its secret is taken.
	serveWithEnvFile(t, fake, envFile, after["GITHUB_WEBHOOK_SECRET"])
}

// clickCreate opens setup's page, presses its button, and returns the installation link of the page
// GitHub's redirect lands on.
func clickCreate(t *testing.T, browser context.Context, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS("#submit")),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#done")),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	link, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#install"), "href"))
	if err != nil || !link.Exists {
		t.Fatalf("browser: no installation link on the page GitHub sent back to: %v", err)
	}
	return link.Value
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func anyStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// serveWithEnvFile starts `akira serve --env-file` (web only) and checks that it takes a delivery
// signed with secret and refuses one signed with anything else.
func serveWithEnvFile(t *testing.T, fake *githubtest.Server, envFile, secret string) {
	t.Helper()
	cmd := exec.Command(akiraBin, "serve", "--web-only", "--env-file", envFile)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AKIRA_ADDR=127.0.0.1:0",
		"REDIS_URL=redis://" + redistest.Own(t) + "/0"}
	logs := &lockedLog{}
	cmd.Stdout, cmd.Stderr = &lineWriter{logs}, &lineWriter{logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var addr string
	waitFor(t, `akira serve --env-file's "akira serving" line`, func() bool {
		addr, _ = servingAddrs(logs.String())
		return addr != ""
	})
	base := "http://" + addr
	waitFor(t, "akira serve --env-file to answer /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	ping := map[string]any{"zen": "Keep it logically awesome.", "hook_id": 1}
	for _, tt := range []struct {
		secret string
		want   int
	}{{secret, http.StatusOK}, {"not-the-secret", http.StatusUnauthorized}} {
		resp, err := http.DefaultClient.Do(fake.SignedWebhook(base+"/webhook", tt.secret, "ping", "setup-ping-"+tt.secret, ping))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("ping signed with %q: %d %s; want %d\n%s", tt.secret, resp.StatusCode, body, tt.want, logs)
		}
	}
}

// TestSetupForOrganization drives the flow over plain HTTP, as a browser would: the form goes to
// the organization's "new App" page, and an answer that does not carry the form's state is refused
// without ending the setup.
func TestSetupForOrganization(t *testing.T) {
	fake := githubtest.New(t)
	dir := t.TempDir()
	p := startSetup(t, fake, dir, "--org", "acme", "--name", "Akira for acme", "--workflows")

	resp, err := http.Get(p.page + "callback?code=stolen&state=wrong")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("callback with a foreign state: %d; want 400", resp.StatusCode)
	}
	select {
	case <-p.done:
		t.Fatal("a foreign callback ended the setup")
	default:
	}

	resp, err = http.Get(p.page)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := regexp.MustCompile(`action="([^"]+)"[\s\S]*name="manifest" value="([^"]+)"`).FindStringSubmatch(string(page))
	if form == nil {
		t.Fatalf("no manifest form on the page:\n%s", page)
	}
	action := html.UnescapeString(form[1])
	if !strings.HasPrefix(action, strings.TrimSuffix(fake.URL(), "/")+"/organizations/acme/settings/apps/new?state=") {
		t.Errorf("form action = %q; want the organization's new App page", action)
	}
	resp, err = http.PostForm(action, url.Values{"manifest": {html.UnescapeString(form[2])}})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(done), `id="done"`) {
		t.Fatalf("after GitHub's redirect: %d\n%s", resp.StatusCode, done)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, p.stdout, p.stderr)
	}
	posted := fake.PostedManifests()
	if len(posted) != 1 || posted[0].Org != "acme" || posted[0].Manifest["name"] != "Akira for acme" {
		t.Errorf("posted = %+v; want Akira's manifest named for acme, to acme", posted)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(html.UnescapeString(form[2])), &raw); err != nil || raw["public"] != false {
		t.Errorf("the manifest is not a private App's: %v %v", raw["public"], err)
	}
	// --workflows: the App may push workflow files (where a repository allows it).
	if perms, _ := posted[0].Manifest["default_permissions"].(map[string]any); perms["workflows"] != "write" {
		t.Errorf("permissions with --workflows = %v; want workflows: write", perms)
	}
}

// TestSetupUsageErrors: a missing webhook URL or a bad one stops setup before it serves anything.
func TestSetupUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"setup"}, "--webhook-url is required"},
		{[]string{"setup", "--webhook-url", "akira.example.com/webhook", "--addr", "127.0.0.1:0"}, `--webhook-url: "akira.example.com/webhook" is not an http(s) URL`},
		{[]string{"setup", "--webhook-url", "https://a.example/webhook", "--github-url", "ftp://x", "--addr", "127.0.0.1:0"}, `--github-url: "ftp://x" is not an http(s) URL`},
	}
	for _, tt := range tests {
		_, stderr, code := runCmd(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("akira %v: exit %d, %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
