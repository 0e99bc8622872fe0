package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/sandbox"
)

// demoAppTasks are the demo roadmap's tasks, as their check runs are named.
var demoAppTasks = []string{
	"akira: 1.1 Add `Add(a, b int) int` in calc.go, with a table test",
	"akira: 1.2 Add `Sub(a, b int) int`, with a test",
	"akira: 1.3 Add `Div(a, b int) (int, error)` that returns an error when b is 0",
	"akira: 2.1 Evaluate `calc 2 + 3` style expressions in main.go",
	"akira: 2.2 Document the supported operators in README.md",
}

// TestDemoApp runs make demo-app's program (the demoapp build of akira) as a newcomer does and reads
// what it prints: the team's view of the App's whole flow on the fake GitHub, in the order the team
// sees it, then a dashboard that serves the run until Ctrl-C.
func TestDemoApp(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo is built with the go tool, and its verify commands need it")
	}
	wantSandbox := sandbox.Available("") == nil
	if !wantSandbox && os.Getenv(sandboxtest.EnvRequired) != "" {
		sandboxtest.Require(t) // fails, saying why
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The akira people install and deploy carries no fake GitHub and no embedded Redis: only the
	// demoapp build does.
	fakes := []string{"github.com/akira-bot/akira/internal/githubtest", "github.com/akira-bot/akira/internal/redistest", "github.com/alicebob/miniredis/v2"}
	for _, tags := range []string{"", "demoapp"} {
		deps, err := exec.Command("go", "list", "-deps", "-tags", tags, ".").Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q: %v", tags, err)
		}
		for _, fake := range fakes {
			if got, want := strings.Contains("\n"+string(deps), "\n"+fake+"\n"), tags != ""; got != want {
				t.Errorf("with tags %q, akira depends on %s: %v, want %v", tags, fake, got, want)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "akira-demo")
	build := exec.Command("go", "build", "-tags", "demoapp", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags demoapp: %v\n%s", err, out)
	}

	demo := exec.Command(bin, "demo-app", "--examples", filepath.Join(root, "examples", "demo"), "--keep-serving")
	// The demo's files under the test's directory. REDIS_URL (TestMain's, where nothing answers), a
	// REDIS_PASSWORD and a GitHub App of the user's must not reach the demo's server: it has its own.
	demo.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "REDIS_PASSWORD=the-users", "GITHUB_APP_ID=1", "GITHUB_API_URL=http://127.0.0.1:1/")
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	demo.Stderr = stderr
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	out := &lockedLines{}
	serving := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			out.add(sc.Text())
			if strings.HasPrefix(sc.Text(), "The server keeps serving") {
				close(serving)
			}
		}
		waitErr = demo.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = demo.Process.Kill()
			<-exited
		}
	})

	// Waiting, not timing: the bound only keeps a broken demo from holding the suite.
	select {
	case <-serving:
	case <-exited:
		t.Fatalf("the demo ended before it served the dashboard: %v\nstdout:\n%s\nstderr:\n%s", waitErr, out.String(), stderr.String())
	case <-time.After(eventuallyLimit(t)):
		t.Fatalf("the demo did not finish its run\nstdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	}
	text := out.String()

	sandboxLine := "WITHOUT a sandbox"
	if wantSandbox {
		sandboxLine = "in the sandbox (bubblewrap) behind the egress proxy"
	}
	// What the team sees, in the order GitHub shows it to them.
	inOrder := []string{
		sandboxLine,
		`#1  alice opened the issue "Grow the calculator":`,
		"#1  alice commented:\n    │ /akira run\n",
		"#1  akira-demo[bot] reacted 👀 to alice's comment",
		"#2  akira-demo[bot] opened a draft pull request: Grow the calculator (akira/issue-1 into main)",
		"    │ Closes #1",
		"#2  akira-demo[bot] posted the run's summary",
		"check run \"" + demoAppTasks[0] + "\": in progress",
		"akira-demo[bot] pushed",
		"check run \"" + demoAppTasks[0] + "\": ✓ success",
		"check run \"" + demoAppTasks[2] + "\": ! action required: Needs a decision [Approve] [Retry] [Skip]",
		"#2  akira-demo[bot] asks for a decision:\n    │ ## ✋ Akira needs a decision: `1.3`",
		"    │ @alice: this run waits for your answer.",
		"    │ panic: runtime error: integer divide by zero",
		"#2  alice commented:\n    │ /akira retry ",
		"#2  akira-demo[bot] reacted 👀 to alice's comment",
		"check run \"" + demoAppTasks[2] + "\": ✓ success",
		"check run \"" + demoAppTasks[3] + "\": ✓ success",
		"check run \"" + demoAppTasks[4] + "\": ✓ success",
		"#2  akira-demo[bot] marked the pull request ready for review",
		"#2  akira-demo[bot] updated the summary: done · 5 tasks: 5 passed",
		"The pull request #2 at the end. Its summary comment:",
		"    │ All tasks are done.",
		"The run on the dashboard: ",
	}
	at := 0
	for _, want := range inOrder {
		i := strings.Index(text[at:], want)
		if i < 0 {
			t.Fatalf("after %q the demo's output lacks %q:\n%s", text[max(0, at-200):at], want, text)
		}
		at += i + len(want)
	}
	// One checkpoint per task, pushed to the pull request's branch in the roadmap's order; one
	// success per task's check run, and every check run green at the end.
	pushes := regexp.MustCompile(`(?m)^      akira-demo\[bot\] pushed [0-9a-f]{7} to akira/issue-1: (.*)$`).FindAllStringSubmatch(text, -1)
	var pushed []string
	for _, p := range pushes {
		pushed = append(pushed, p[1])
	}
	wantPushed := append([]string{"akira: start run"}, demoAppTasks...)
	if len(pushed) != len(wantPushed) {
		t.Fatalf("pushes = %q, want the run's start and one checkpoint per task %q", pushed, wantPushed)
	}
	for i, want := range wantPushed {
		if !strings.HasPrefix(pushed[i], want) {
			t.Errorf("push %d = %q, want %q", i, pushed[i], want)
		}
	}
	_, end, _ := strings.Cut(text, "Its check runs:\n")
	for _, task := range demoAppTasks {
		if n := strings.Count(text, "check run \""+task+"\": ✓ success"); n != 1 {
			t.Errorf("check run %q succeeded %d times, want once", task, n)
		}
		if !strings.Contains(end, "  ✓ "+task+"  ") {
			t.Errorf("at the end, check run %q is not green:\n%s", task, end)
		}
	}

	// The dashboard serves the run while the demo runs, to the token it printed.
	m := regexp.MustCompile(`The run on the dashboard: (http://127\.0\.0\.1:\d+)(/ui/runs/(\w+)) \(log in with the token (\S+)\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no dashboard link in the output:\n%s", text)
	}
	base, runPath, runID, token := m[1], m[2], m[3], m[4]
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	resp, err := client.PostForm(base+"/ui/login", url.Values{"token": {token}, "next": {runPath}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != runPath {
		t.Fatalf("logging in with the demo's token: %d at %s:\n%s", resp.StatusCode, resp.Request.URL, page)
	}
	for _, want := range []string{runID, "octo/calc", `id="state">finished<`, "Document the supported operators"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the dashboard's page of the run lacks %q:\n%s", want, page)
		}
	}

	// Ctrl-C ends the demo, and with it the server, cleanly.
	if err := demo.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-exited
	if waitErr != nil {
		t.Fatalf("after Ctrl-C the demo exited with %v\nstderr:\n%s", waitErr, stderr.String())
	}
	if _, err := client.Get(base + "/healthz"); err == nil {
		t.Error("the dashboard still answers after the demo ended")
	}
}

// eventuallyLimit bounds a wait of the test far above what the step takes on a loaded machine,
// within the test's own deadline.
func eventuallyLimit(t *testing.T) time.Duration {
	limit := 8 * time.Minute
	if d, ok := t.Deadline(); ok && time.Until(d)-30*time.Second < limit {
		limit = time.Until(d) - 30*time.Second
	}
	return limit
}

// lockedLines collects a process's output lines as it prints them.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n"
}

// lockedBuffer is a process's stderr, readable while the process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
