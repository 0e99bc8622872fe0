package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/testproc"
)

// akiraBin is the real binary, built once by TestMain, for the tests of exit codes and signals.
var akiraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "akira-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	akiraBin = filepath.Join(dir, "akira")
	// The binary's repository cache stays in the test's directory, never the user's cache.
	os.Setenv("AKIRA_CACHE_DIR", filepath.Join(dir, "cache"))
	// So do the dependency caches and setup snapshots of akira run (default: the user's cache directory).
	os.Setenv("AKIRA_DEPS_CACHE_DIR", filepath.Join(dir, "deps"))
	// And its memory: lessons live in the test's directory.
	os.Setenv("AKIRA_MEMORY_DIR", filepath.Join(dir, "lessons"))
	// And the attempts its runs keep (their timelines and logs).
	os.Setenv("AKIRA_RUNS_DIR", filepath.Join(dir, "runs"))
	// A command a test runs without naming its Redis (redistest.Own) must fail, not fall back to
	// the default Redis URL (port 6379 of this machine, a developer's own Redis). Port 1 refuses at once.
	os.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	build := exec.Command("go", "build", "-o", akiraBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build akira:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runFixture is a user's repository (a working clone with uncommitted work, which `akira run` must
// never touch) holding testdata/run/ROADMAP.md, its bare remote, the scripted agent's log directory
// and the directory for workspaces.
type runFixture struct {
	repo     gittest.Repo
	logs     string
	workDir  string
	agent    string
	snapshot string
}

func newRunFixture(t *testing.T, roadmap string) *runFixture {
	t.Helper()
	if roadmap == "" {
		data, err := os.ReadFile(filepath.Join("testdata", "run", "ROADMAP.md"))
		if err != nil {
			t.Fatal(err)
		}
		roadmap = string(data)
	}
	agent, err := filepath.Abs(filepath.Join("testdata", "run", "agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	f := &runFixture{repo: gittest.New(t, map[string]string{"ROADMAP.md": roadmap, "README.md": "test\n"}),
		logs: t.TempDir(), workDir: t.TempDir(), agent: agent}
	gittest.WriteFiles(t, f.repo.Work, map[string]string{"notes.txt": "uncommitted\n", "README.md": "edited, not staged\n"})
	f.snapshot = gittest.Snapshot(t, f.repo.Work)
	t.Cleanup(func() {
		if got := gittest.Snapshot(t, f.repo.Work); got != f.snapshot {
			t.Errorf("the user's working tree, index or branch changed:\nbefore:\n%s\nafter:\n%s", f.snapshot, got)
		}
		if left, _ := os.ReadDir(f.workDir); len(left) != 0 {
			t.Errorf("workspace left behind: %v", left)
		}
	})
	return f
}

func (f *runFixture) touch(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		gittest.WriteFiles(t, f.logs, map[string]string{n: ""})
	}
}

func (f *runFixture) remove(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.logs, name)); err != nil {
		t.Fatal(err)
	}
}

func (f *runFixture) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.logs, "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(data)), " ", ":"))
}

// args are the flags every test run uses; the repository is the current directory (the user's clone).
func (f *runFixture) args(extra ...string) []string {
	// The scripted agent reports to a log directory outside the work tree, which a sandbox would hide:
	// these tests are about the run, TestRunSandboxedByDefault and runner/sandbox about confinement.
	return append([]string{"run", "--agent-cmd", f.agent, "--env", "AKIRA_TEST_LOG", "--work-dir", f.workDir, "--non-interactive", "--sandbox", "none"}, extra...)
}

func (f *runFixture) command(args ...string) *exec.Cmd {
	cmd := exec.Command(akiraBin, args...)
	cmd.Dir = f.repo.Work
	cmd.Env = append(os.Environ(), "AKIRA_TEST_LOG="+f.logs)
	return cmd
}

// run runs the binary in the user's clone and returns stdout, stderr and the exit code.
func (f *runFixture) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := f.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// branch lists "subject|task" of the commits on the akira branch of the user's repository.
func (f *runFixture) branch(t *testing.T) []string {
	t.Helper()
	if _, code := gittest.TryGit(t, f.repo.Work, "rev-parse", "--verify", "-q", "refs/heads/akira/roadmap"); code != 0 {
		return nil
	}
	out := gittest.Git(t, f.repo.Work, "log", "--reverse", "--format=%s|%(trailers:key=Akira-Task,valueonly,separator=%x2C)", "main..akira/roadmap")
	return strings.Split(out, "\n")
}

func TestRunBinaryAllDone(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_cliSecretToken")
	t.Setenv("AKIRA_GITHUB_TOKEN", "ghs_cliAppSecret")
	f := newRunFixture(t, "")
	stdout, stderr, code := f.run(t, f.args()...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := []string{"akira: 1.1 First file|1.1", "akira: 1.2 Second file|1.2", "akira: 1.3 Third file|1.3"}
	if got := f.branch(t); !slices.Equal(got, want) {
		t.Fatalf("branch = %q, want %q", got, want)
	}
	for _, s := range []string{"TASK", "STATUS", "ATTEMPTS", "DURATION", "COMMIT", "1.2 Second file", "done · branch akira/roadmap"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	// The agent's environment and everything committed are free of secrets, although the agent dumps
	// its environment into a committed file.
	env, err := os.ReadFile(filepath.Join(f.logs, "env-1.1-1"))
	if err != nil {
		t.Fatal(err)
	}
	everything := string(env) + gittest.Git(t, f.repo.Work, "log", "-p", "--all")
	for _, s := range []string{"ghs_cliSecretToken", "ghs_cliAppSecret", "GITHUB_TOKEN"} {
		if strings.Contains(everything, s) {
			t.Errorf("%s leaked into the agent's environment or a commit", s)
		}
	}
	if !strings.Contains(string(env), "AKIRA_TEST_LOG=") {
		t.Fatal("--env did not pass AKIRA_TEST_LOG to the agent")
	}
}

func TestRunBinaryUsageErrors(t *testing.T) {
	f := newRunFixture(t, "")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no agent", []string{"run", "--work-dir", f.workDir}, "no agent"},
		{"unknown flag", []string{"run", "--agent-cmd", "true", "--bogus"}, "unknown flag"},
		{"unknown skip id", f.args("--skip", "9.9"), "no such task"},
		{"missing roadmap", f.args("--roadmap", "NOPE.md"), "NOPE.md not found"},
		{"bad branch", f.args("--branch", "bad..name"), "not a valid branch name"},
		{"not a repository", f.args("--repo", f.logs), "clone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := f.run(t, tt.args...)
			want := 2
			if tt.name == "not a repository" {
				want = 1 // the path exists but cloning it fails
			}
			if code != want || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d (want %d), stderr:\n%s", code, want, stderr)
			}
		})
	}
	if len(f.calls(t)) != 0 {
		t.Fatal("the agent ran")
	}
}

func TestRunBinaryOutsideRepository(t *testing.T) {
	gittest.Isolate(t)
	cmd := exec.Command(akiraBin, "run", "--agent-cmd", "true")
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "not inside a git repository") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestRunBinaryInvalidRoadmap(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1 one (depends: 2)\n- [ ] 2 two (depends: 1)\n")
	_, stderr, code := f.run(t, f.args()...)
	if code != 2 || !strings.Contains(stderr, "ROADMAP.md:") || !strings.Contains(stderr, "cycle") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// A task that keeps failing is parked (exit 3) while the independent task still runs; the same
// command afterwards continues without redoing anything, and --approve/--skip steer parked tasks.
func TestRunBinaryEscalationAndResume(t *testing.T) {
	f := newRunFixture(t, "")
	f.touch(t, "fail-1.1")
	stdout, stderr, code := f.run(t, f.args()...)
	if code != 3 {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, s := range []string{"1.1 First file needs a decision", "refusing task 1.1", "parked"} {
		if !strings.Contains(stdout+stderr, s) {
			t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", s, stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "task 1.1 (First file) needs a decision") {
		t.Errorf("stderr does not name the escalation:\n%s", stderr)
	}
	if got := f.branch(t); !slices.Equal(got, []string{"akira: 1.3 Third file|1.3"}) {
		t.Fatalf("branch = %q", got)
	}

	f.remove(t, "fail-1.1")
	stdout, stderr, code = f.run(t, f.args()...)
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got, want := f.calls(t), []string{"1.1:1", "1.1:2", "1.3:1", "1.1:1", "1.2:1"}; !slices.Equal(got, want) {
		t.Fatalf("agent calls = %v, want %v (no task redone)", got, want)
	}
	if got := f.branch(t); len(got) != 3 {
		t.Fatalf("branch = %q", got)
	}
}

func TestRunBinaryApproveAndSkip(t *testing.T) {
	f := newRunFixture(t, "")
	f.touch(t, "need-banana-1.1")
	if _, stderr, code := f.run(t, f.args()...); code != 3 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// 1.1's failed attempt left env-1.1.txt; approving takes that work as the checkpoint.
	stdout, stderr, code := f.run(t, f.args("--approve", "1.1", "--skip", "1.2")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := f.branch(t); !slices.Equal(got, []string{"akira: 1.3 Third file|1.3", "akira: 1.1 First file|1.1"}) {
		t.Fatalf("branch = %q", got)
	}
	gittest.Git(t, f.repo.Work, "cat-file", "-e", "akira/roadmap:env-1.1.txt")
	if !strings.Contains(stdout, "skipped") || !strings.Contains(stdout, "approved without passing verification") {
		t.Fatalf("output:\n%s", stdout)
	}
}

func TestRunBinaryJSON(t *testing.T) {
	f := newRunFixture(t, "")
	stdout, stderr, code := f.run(t, f.args("--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last runner.Event
	for sc.Scan() {
		var ev runner.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not one JSON event: %q: %v", sc.Text(), err)
		}
		if ev.RunID == "" || ev.Time.IsZero() {
			t.Fatalf("event without run id or time: %s", sc.Text())
		}
		types = append(types, string(ev.Type))
		last = ev
	}
	if types[0] != "run_started" || last.Type != runner.EventRunFinished || last.Outcome == nil || last.Outcome.Status != runner.StatusSucceeded {
		t.Fatalf("events = %v, last = %+v", types, last)
	}
	if n := strings.Count(strings.Join(types, " "), "task_checkpointed"); n != 3 {
		t.Fatalf("%d checkpoints in %v", n, types)
	}
}

// Ctrl-C stops the agent (its whole process group), removes the workspace, exits 130 and leaves the
// branch at its last checkpoint.
func TestRunBinaryInterrupt(t *testing.T) {
	f := newRunFixture(t, "")
	f.touch(t, "hang-1.2")
	cmd := f.command(f.args()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(f.logs, "pid")
	for i := 0; ; i++ {
		// Written, not only created: the shell opens the file before it writes the pid.
		if data, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(data)) != "" {
			break
		}
		if i > 6000 {
			_ = cmd.Process.Kill()
			t.Fatalf("the agent never started task 1.2:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Fatalf("output:\n%s", out.String())
	}
	testproc.WaitGoneFromFile(t, pidFile)
	if got := f.branch(t); !slices.Equal(got, []string{"akira: 1.1 First file|1.1"}) {
		t.Fatalf("branch = %q, want the checkpoint of 1.1 only", got)
	}
}

// The interactive prompt, driven without a TTY: retry with guidance, then the agent succeeds.
func TestRunInteractiveRetryWithGuidance(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1.1 Needs guidance\n  - verify: `test -f 1.1.txt`\n")
	f.touch(t, "need-banana-1.1")
	t.Setenv("AKIRA_TEST_LOG", f.logs)
	t.Chdir(f.repo.Work)
	in := strings.NewReader("what\nr\nThe answer is banana.\n")
	old := isTerminal
	isTerminal = func(v any) bool { return v == in }
	defer func() { isTerminal = old }()

	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetArgs([]string{"run", "--agent-cmd", f.agent, "--env", "AKIRA_TEST_LOG", "--work-dir", f.workDir, "--max-attempts", "1", "--sandbox", "none"})
	root.SetIn(in)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "Please answer") || !strings.Contains(stderr.String(), "Guidance for the next attempt") {
		t.Fatalf("prompt:\n%s", stderr.String())
	}
	if got := f.calls(t); !slices.Equal(got, []string{"1.1:1", "1.1:2"}) {
		t.Fatalf("calls = %v", got)
	}
}

func TestLinePrompter(t *testing.T) {
	tests := []struct {
		input string
		want  runner.Decision
	}{
		{"r\nuse the other API\n", runner.Decision{Kind: runner.DecisionRetry, Guidance: "use the other API"}},
		{"retry\n\n", runner.Decision{Kind: runner.DecisionRetry}},
		{"s\n", runner.Decision{Kind: runner.DecisionSkip}},
		{"A\n", runner.Decision{Kind: runner.DecisionApprove}},
		{"p\n", runner.Decision{Kind: runner.DecisionPark}},
		{"b\n", runner.Decision{Kind: runner.DecisionAbort}},
		{"\nnonsense\nskip\n", runner.Decision{Kind: runner.DecisionSkip}},
		{"", runner.Decision{Kind: runner.DecisionPark}},
		{"approve", runner.Decision{Kind: runner.DecisionApprove}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		p := &linePrompter{in: bufio.NewReader(strings.NewReader(tt.input)), out: &out}
		got, err := p.Decide(context.Background(), runner.Escalation{TaskID: "2.1", Title: "x", Attempts: 3, Summary: "tests fail"})
		if err != nil || got != tt.want {
			t.Errorf("input %q: got %+v, %v; want %+v", tt.input, got, err, tt.want)
		}
		if !strings.Contains(out.String(), "Task 2.1 (x) needs a decision after 3 attempt(s): tests fail") {
			t.Errorf("prompt:\n%s", out.String())
		}
	}
}

func TestGitAuthFromEnv(t *testing.T) {
	t.Setenv("AKIRA_GITHUB_TOKEN", "")
	t.Setenv("GITHUB_TOKEN", "tok")
	auth := gitAuthFromEnv("https://github.com/o/r.git")
	if auth == nil {
		t.Fatal("no auth for an https remote with GITHUB_TOKEN")
	}
	h, _ := auth(context.Background())
	if h != "Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9r" { // x-access-token:tok
		t.Fatalf("header = %q", h)
	}
	for _, repo := range []string{"/local/path", "git@github.com:o/r.git", "https://user:pw@example.com/r.git", "http://example.com/r.git"} {
		if gitAuthFromEnv(repo) != nil {
			t.Errorf("%s: want no token auth", repo)
		}
	}
}

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{
		"https://github.com/o/r": true, "ssh://git@host/r": true, "git@github.com:o/r.git": true,
		"file:///tmp/r": true, "/tmp/r": false, "../r": false, "a@b/c:d": false, "": false,
	} {
		if got := isURL(s); got != want {
			t.Errorf("isURL(%q) = %v", s, got)
		}
	}
}

// akira run reads the repository's configuration with the same loader as the App: .github/akira.yaml
// counts as much as .github/akira.yml.
func TestRunBinaryReadsAkiraYaml(t *testing.T) {
	f := newRunFixture(t, "")
	gittest.WriteFiles(t, f.repo.Work, map[string]string{".github/akira.yaml": "branch_prefix: bot/\n"})
	gittest.Git(t, f.repo.Work, "add", ".github/akira.yaml")
	gittest.Git(t, f.repo.Work, "commit", "--quiet", "-m", "configure akira")
	f.snapshot = gittest.Snapshot(t, f.repo.Work)
	stdout, stderr, code := f.run(t, f.args()...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, code := gittest.TryGit(t, f.repo.Work, "rev-parse", "--verify", "-q", "refs/heads/bot/roadmap"); code != 0 {
		t.Fatalf("no branch bot/roadmap: the branch_prefix of .github/akira.yaml was ignored\n%s", stdout)
	}
}

// TestRunSandboxedByDefault: without --sandbox or a config saying otherwise, akira run confines the
// agent and the verification commands with bubblewrap where it runs. The agent records what it sees
// into the files the tasks ask for; the commits then show it ran inside (its own PID namespace, no
// view of the user's clone) and that verification did too.
func TestRunSandboxedByDefault(t *testing.T) {
	sandboxtest.Require(t)
	roadmap := "# R\n\n- [ ] 1.1 First file\n  - verify: `test \"$AKIRA_SANDBOX\" = bubblewrap && test -f 1.1.txt`\n"
	f := newRunFixture(t, roadmap)
	agent := `echo "sandbox=$AKIRA_SANDBOX pid1=$(cat /proc/1/comm) home=$HOME" > 1.1.txt; ` +
		`if test -e ` + f.repo.Work + `; then echo "sees the user's clone" >> 1.1.txt; fi`
	stdout, stderr, code := f.run(t, "run", "--agent-cmd", agent, "--work-dir", f.workDir, "--non-interactive")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "sandbox: none") {
		t.Errorf("akira run warned about running without a sandbox:\n%s", stderr)
	}
	got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:1.1.txt")
	if got != "sandbox=bubblewrap pid1=bwrap home=/home/akira" {
		t.Errorf("the agent saw %q, want it inside bubblewrap with a private HOME and no view of the clone", got)
	}

	// --sandbox none is the explicit opt-out, and it says so.
	f2 := newRunFixture(t, strings.ReplaceAll(roadmap, `test "$AKIRA_SANDBOX" = bubblewrap && `, ""))
	_, stderr, code = f2.run(t, "run", "--agent-cmd", "touch 1.1.txt", "--work-dir", f2.workDir, "--non-interactive", "--sandbox", "none")
	if code != 0 || !strings.Contains(stderr, "warning: sandbox: none") {
		t.Errorf("--sandbox none: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestRunBinaryDryRun: --dry-run runs the agent and verification, shows the diff, and pushes nothing.
func TestRunBinaryDryRun(t *testing.T) {
	f := newRunFixture(t, "")
	stdout, stderr, code := f.run(t, append(f.args(), "--dry-run")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := f.branch(t); len(got) != 0 {
		t.Fatalf("a dry run pushed %q", got)
	}
	for _, s := range []string{"dry run: nothing was pushed", "branch akira/roadmap would get", "diff --git", "ROADMAP.md", "- [x] 1.1 First file"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	// `akira run` in a clone pushes back to that clone, not to the clone's own remote.
	if refs := gittest.Git(t, f.repo.Work, "for-each-ref", "refs/akira/"); refs != "" {
		t.Errorf("a dry run left refs in the repository: %s", refs)
	}
}

// TestRunBinaryDryRunParks: a task that parks in a dry run names no parked ref, since none was
// pushed, and says its work is not kept; the same run without --dry-run names the ref it pushed.
func TestRunBinaryDryRunParks(t *testing.T) {
	f := newRunFixture(t, "")
	f.touch(t, "fail-1.1")
	const ref = "refs/akira/parked/akira/roadmap/1.1"
	stdout, stderr, code := f.run(t, append(f.args(), "--dry-run")...)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (a task is parked)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "refs/akira/parked") || strings.Contains(stdout+stderr, "saved on") {
		t.Errorf("a dry run names a parked ref it never pushed:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, s := range []string{"1.1 needs a decision", "dry run: its work is not kept, it goes with the temporary workspace"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	if !strings.Contains(stderr, "dry run: nothing was pushed and the parked work was removed with the temporary workspace") ||
		strings.Contains(stderr, "add --approve ID to accept the parked work") {
		t.Errorf("stderr offers to approve work a dry run did not keep:\n%s", stderr)
	}
	// `akira run` in a clone pushes back to that clone.
	if refs := gittest.Git(t, f.repo.Work, "for-each-ref", "refs/akira/", "refs/heads/akira/"); refs != "" {
		t.Fatalf("a dry run left refs in the repository: %s", refs)
	}

	stdout, stderr, code = f.run(t, f.args()...)
	if code != 3 {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "its work is saved on "+ref) || !strings.Contains(stderr, "--approve ID") {
		t.Errorf("a real run does not name the parked ref %s:\nstdout:\n%s\nstderr:\n%s", ref, stdout, stderr)
	}
	if refs := gittest.Git(t, f.repo.Work, "for-each-ref", "--format=%(refname)", "refs/akira/"); !strings.Contains(refs, ref) {
		t.Errorf("the repository lacks %s: %q", ref, refs)
	}
}

// TestStatusBinary: `akira status` reads the branch's progress from the remote: before any run
// everything is pending; after a run where 1.2 kept failing, 1.1 and 1.3 are done with their
// checkpoints and 1.2 is parked. It changes nothing.
func TestStatusBinary(t *testing.T) {
	f := newRunFixture(t, "")
	stdout, stderr, code := f.run(t, "status", "--work-dir", f.workDir)
	if code != 4 || !strings.Contains(stdout, "not pushed yet") || !strings.Contains(stdout, "0 done · 0 need a decision · 3 pending") {
		t.Fatalf("status before a run: exit %d\n%s%s", code, stdout, stderr)
	}
	f.touch(t, "fail-1.2")
	if _, stderr, code := f.run(t, f.args()...); code != 3 {
		t.Fatalf("run: exit %d, want 3 (parked)\n%s", code, stderr)
	}
	stdout, stderr, code = f.run(t, "status", "--work-dir", f.workDir)
	if code != 3 {
		t.Fatalf("status after the run: exit %d, want 3\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"branch akira/roadmap (on the remote", "1.1 First file", "1.2 Second file  needs a decision", "refs/akira/parked/akira/roadmap/1.2", "2 done · 1 need a decision · 0 pending"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
}

// TestRollbackBinary: `akira rollback` reverts a checkpoint on the branch with a revert commit and
// says so; `--retry -- <run flags>` runs the task again at once; a task without a checkpoint is a
// usage error.
func TestRollbackBinary(t *testing.T) {
	f := newRunFixture(t, "")
	if stdout, stderr, code := f.run(t, f.args()...); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code := f.run(t, "rollback", "1.3", "--work-dir", f.workDir)
	if code != 0 || !strings.Contains(stdout, "1.3 Third file: checkpoint") || !strings.Contains(stdout, "pending again") {
		t.Fatalf("rollback: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := []string{"akira: 1.1 First file|1.1", "akira: 1.2 Second file|1.2", "akira: 1.3 Third file|1.3", "akira: revert 1.3 Third file|"}
	if got := f.branch(t); !slices.Equal(got, want) {
		t.Fatalf("branch = %q, want %q", got, want)
	}
	runFlags := f.args()[1:]
	_, stderr, code = f.run(t, append([]string{"rollback", "1.3", "--work-dir", f.workDir, "--retry", "--"}, runFlags...)...)
	if code != 2 || !strings.Contains(stderr, "has no checkpoint") {
		t.Errorf("rollback of a rolled-back task: exit %d, %s; want exit 2, no checkpoint", code, stderr)
	}
	// Run it again, then roll it back and retry in one go.
	if _, stderr, code := f.run(t, f.args()...); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	stdout, stderr, code = f.run(t, append([]string{"rollback", "1.2", "--work-dir", f.workDir, "--retry", "--"}, runFlags...)...)
	if code != 0 || !strings.Contains(stdout, "1.2 Second file: checkpoint") || !strings.Contains(stdout, "done · branch akira/roadmap") {
		t.Fatalf("rollback --retry: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	got := f.branch(t)
	if n := len(got); n < 3 || got[n-2] != "akira: revert 1.2 Second file|" || got[n-1] != "akira: 1.2 Second file|1.2" {
		t.Errorf("branch ends %q; want the revert of 1.2 and 1.2 again", got)
	}
}
