package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/gittest"
)

// modelKeys are one test's model keys: random, so that a match is never a coincidence.
type modelKeys struct{ anthropic, openai, codex string }

func newModelKeys(t *testing.T) modelKeys {
	t.Helper()
	gen := func(prefix string) string {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		return prefix + hex.EncodeToString(b[:])
	}
	return modelKeys{anthropic: gen("sk-ant-test-"), openai: gen("sk-oa-test-"), codex: gen("sk-cx-test-")}
}

// leaks says where in text a key, or a 16-character piece of its middle, shows up: a script that
// found only part of a key has still found it.
func (k modelKeys) leaks(what, text string) []string {
	var out []string
	for name, key := range map[string]string{"ANTHROPIC_API_KEY": k.anthropic, "OPENAI_API_KEY": k.openai, "CODEX_API_KEY": k.codex} {
		piece := key[len(key)/2-8 : len(key)/2+8]
		if i := strings.Index(text, piece); i >= 0 {
			start, end := max(0, i-300), min(len(text), i+100)
			out = append(out, fmt.Sprintf("%s holds the real %s:\n…%s…", what, name, text[start:end]))
		}
	}
	return out
}

// hostileKeyRepo are the files of a repository whose every seam tries to read the model keys
// (testdata/keys/steal.sh): setup, the repository-wide verification (the base check), a service,
// and a task whose verification is the script too. The agent is the same script.
func hostileKeyRepo(t *testing.T, roadmap string) map[string]string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", "keys", "steal.sh"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"steal.sh": string(script),
		".github/akira.yml": "setup: [sh steal.sh setup]\nverify: [sh steal.sh base]\n" +
			"services:\n  leak: sh \"$AKIRA_WORK_TREE/steal.sh\" service\n",
		"README.md": "Run it with akira run --env TEAM_TOKEN (your team's model key).\n",
	}
	if roadmap != "" {
		files["ROADMAP.md"] = roadmap
	}
	return files
}

// checkLoot checks what the hostile script's roles left: each of them ran and reported (the test
// would prove nothing otherwise), the agent held the proxy's placeholder, and no key is anywhere.
func checkLoot(t *testing.T, keys modelKeys, loot string, more map[string]string) {
	t.Helper()
	for _, role := range []string{"agent", "setup", "base", "service", "verify"} {
		if !strings.Contains(loot, "== "+role+": environment") || !strings.Contains(loot, "== "+role+": the egress proxy") {
			t.Errorf("the %s's findings are not on the branch: it did not run, or did not hand them over", role)
		}
	}
	if !strings.Contains(loot, "== agent: done") {
		t.Error("the hostile agent did not finish")
	}
	if !strings.Contains(loot, "ANTHROPIC_API_KEY=akira-placeholder-") {
		t.Error("the agent was not given the proxy's placeholder in ANTHROPIC_API_KEY")
	}
	leaks := keys.leaks("the pushed branch", loot)
	for what, text := range more {
		leaks = append(leaks, keys.leaks(what, text)...)
	}
	for _, l := range leaks {
		t.Error(l)
	}
}

// checkUpstream checks that the model server got the agent's calls, each with the real key: the
// key was in reach, and the proxy alone used it.
func checkUpstream(t *testing.T, fake *modeltest.Server, key string) {
	t.Helper()
	calls := 0
	for _, r := range fake.Requests() {
		if r.Key != key {
			t.Errorf("the model server got %s %s with key %q, want the real one", r.Method, r.Path, r.Key)
		}
		if r.Method == "POST" {
			calls++
		}
	}
	if calls == 0 {
		t.Error("the agent's model calls never reached the model server through the proxy")
	}
}

// TestRunModelKeysReachOnlyTheProxy: `akira run --env ANTHROPIC_API_KEY --env OPENAI_API_KEY --env
// CODEX_API_KEY --env TEAM_TOKEN` (TEAM_TOKEN holding the same key, as the repository's README asked
// for) on a repository whose agent, setup, base check, task verification and service all try to read
// the keys — from their environment, every /proc entry they see, the files they can read and the
// egress proxy — and leave what they found on the pushed branch. With the real proxy in front of a
// scripted Anthropic server: the proxy alone holds the Anthropic key (the model server gets it, the
// agent a placeholder), no other command gets any key, and run says which keys it held back. In
// bubblewrap; and without a sandbox, where the commands run as akira's own user and /proc shows
// akira itself, whose environment holds the keys (run as a user other than root, to whom every
// process is open).
func TestRunModelKeysReachOnlyTheProxy(t *testing.T) {
	for _, mode := range []string{"bubblewrap", "none"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "bubblewrap" {
				sandboxtest.Require(t)
			}
			keys := newModelKeys(t)
			fake := modeltest.NewAnthropic(t, keys.anthropic)
			repo := gittest.New(t, hostileKeyRepo(t, "# Roadmap\n\n- [ ] 1.1 Do the task\n  - verify: `sh steal.sh verify`\n"))
			cmd := exec.Command(akiraBin, "run", "--repo", repo.Work, "--agent-cmd", "sh steal.sh agent",
				"--env", "ANTHROPIC_API_KEY", "--env", "OPENAI_API_KEY", "--env", "CODEX_API_KEY", "--env", "TEAM_TOKEN",
				"--sandbox", mode, "--work-dir", t.TempDir(), "--non-interactive", "--json", "-v")
			cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY="+keys.anthropic, "OPENAI_API_KEY="+keys.openai,
				"CODEX_API_KEY="+keys.codex, "TEAM_TOKEN="+keys.anthropic, "ANTHROPIC_BASE_URL="+fake.BaseURL(), "OPENAI_BASE_URL=",
				"AKIRA_DEPS_CACHE_DIR=off") // setup runs every time, never restored from an earlier run's snapshot
			restore := func() {}
			if mode == "none" && os.Geteuid() == 0 {
				restore = asUnprivileged(t, cmd, repo.Work, repo.Remote)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			restore()
			if err != nil {
				t.Fatalf("akira run: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			checkLoot(t, keys, branchFiles(t, repo.Work, "akira/roadmap"), map[string]string{"akira run's output": stdout.String() + stderr.String()})
			checkUpstream(t, fake, keys.anthropic)
			if want := "akira: warning: OPENAI_API_KEY, CODEX_API_KEY, TEAM_TOKEN: model keys held back from the agent, setup, verification and services"; !strings.Contains(stderr.String(), want) {
				t.Errorf("akira run did not say which keys it held back (want %q):\n%s", want, stderr.String())
			}
		})
	}
}

// unprivilegedUID is the user a root test runs akira as: nobody.
const unprivilegedUID = 65534

// asUnprivileged makes cmd (the akira binary, with --repo and --work-dir in its arguments) run as
// nobody, who owns a copy of the binary, the repositories dirs and every directory named in its
// arguments, and has a HOME, TMPDIR, git configuration and caches of its own. The returned function
// gives the repositories back to root, so that the test can read them.
func asUnprivileged(t *testing.T, cmd *exec.Cmd, dirs ...string) func() {
	t.Helper()
	own := func(uid int, paths ...string) {
		for _, p := range paths {
			if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), p).CombinedOutput(); err != nil {
				t.Fatalf("chown %s: %v: %s", p, err, out)
			}
		}
	}
	home := t.TempDir()
	bin := filepath.Join(home, "akira")
	data, err := os.ReadFile(akiraBin)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, bin, string(data))
	cmd.Path, cmd.Args[0] = bin, bin
	for i, a := range cmd.Args {
		if a == "--work-dir" {
			dirs = append(dirs, cmd.Args[i+1])
		}
	}
	dirs = append(dirs, home)
	for _, d := range dirs {
		// The test's temporary directories are root's alone: let nobody through to its own.
		for p := filepath.Dir(d); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	own(unprivilegedUID, dirs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	cmd.Env = append(cmd.Env, "HOME="+home, "TMPDIR="+home, "GIT_CONFIG_GLOBAL=/dev/null", "AKIRA_CACHE_DIR=off", "AKIRA_MEMORY_DIR=off")
	return func() { own(0, dirs...) }
}

// TestServeModelKeysReachOnlyTheProxy: the same hostile repository, run by the real `akira serve`
// from an issue's plan. The worker holds the Anthropic key for a profile with api: anthropic; the
// operator passes two variables that hold it under other names (the profile's env: TEAM_TOKEN and
// LLM_URL, a URL with the key in it; the verification's env: SHARED_TOKEN). The proxy alone uses the
// key; the agent, setup, base check, verification and service find it nowhere, and neither does
// anything Akira published on GitHub.
func TestServeModelKeysReachOnlyTheProxy(t *testing.T) {
	keys := newModelKeys(t)
	model := modeltest.NewAnthropic(t, keys.anthropic)
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", hostileKeyRepo(t, ""))
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Do it", User: "alice", Body: "- [ ] Do the task\n  - verify: `sh steal.sh verify`\n"})
	base, _, logs := startServeWith(t, fake, serveSetup{
		operator: "default_agent: hostile\nagents:\n  hostile:\n    kind: exec\n    command: sh steal.sh agent\n" +
			"    api: anthropic\n    base_url: " + model.BaseURL() + "\n    model: claude-sonnet-4-5\n    env: [TEAM_TOKEN, LLM_URL]\n" +
			"env: [SHARED_TOKEN]\nsandbox:\n  mode: bubblewrap\nci:\n  watch: off\n",
		env: []string{"ANTHROPIC_API_KEY=" + keys.anthropic, "OPENAI_API_KEY=" + keys.openai, "CODEX_API_KEY=" + keys.codex,
			"TEAM_TOKEN=" + keys.anthropic, "LLM_URL=https://team:" + keys.anthropic + "@llm.example/v1", "SHARED_TOKEN=" + keys.anthropic,
			"AKIRA_CACHE_DIR=off"}, // and with it the setup snapshots: setup runs every time
	})
	deliver(t, fake, base, "issue_comment", "keys-1", commentPayload(fake, issue, "alice", "/akira run"))
	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the hostile agent's work to be checkpointed, or the run to fail", func() bool {
		got, ok := fake.FileAt("octo", "svc", branch, "loot.txt")
		return ok && strings.Contains(got, "== agent: done") || strings.Contains(logs.String(), "run job: run failed")
	})
	if strings.Contains(logs.String(), "run job: run failed") {
		t.Fatal("the run failed")
	}
	published := map[string]string{"akira serve's log": logs.String()}
	for _, cr := range fake.CheckRuns("octo", "svc") {
		published["check run "+cr.Name] = fmt.Sprintf("%+v", cr)
	}
	for _, c := range fake.Comments("octo", "svc", issue.Number) {
		published["a comment"] += c.Body
	}
	for _, pr := range fake.PullRequests("octo", "svc") {
		published["pull request"] += fmt.Sprintf("%+v", pr)
		for _, c := range fake.Comments("octo", "svc", pr.Number) {
			published["a comment"] += c.Body
		}
	}
	checkLoot(t, keys, branchFiles(t, fake.GitDir("octo", "svc"), branch), published)
	checkUpstream(t, model, keys.anthropic)
	for _, want := range []string{"agent hostile: env: TEAM_TOKEN, LLM_URL: model keys, held back", "env: SHARED_TOKEN holds a model key"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("akira serve did not warn %q at start", want)
		}
	}
}

// TestModelKeyWithoutAPIStopsAtStart: a profile without api given a model key (with --env, or in
// its env under network allow, where nothing else would stop it) is an error at start naming the
// profile and the fix; the agent never runs.
func TestModelKeyWithoutAPIStopsAtStart(t *testing.T) {
	keys := newModelKeys(t)
	t.Run("akira run --env", func(t *testing.T) {
		f := newRunFixture(t, "")
		cfg := filepath.Join(t.TempDir(), "akira.yaml")
		mustWrite(t, cfg, "agents:\n  claude:\n    kind: exec\n    command: "+f.agent+"\n    env: [AKIRA_TEST_LOG]\n    network: allow\n")
		t.Setenv("ANTHROPIC_API_KEY", keys.anthropic)
		t.Setenv("TEAM_TOKEN", keys.anthropic)
		for _, tt := range []struct{ env, want string }{
			{"ANTHROPIC_API_KEY", "agent claude: --env ANTHROPIC_API_KEY is a model key, which never enters the sandbox, and the profile has no api to hold it: " +
				"set api: anthropic in agents.claude of the configuration, so that the egress proxy holds $ANTHROPIC_API_KEY and the agent gets a placeholder, or leave out --env ANTHROPIC_API_KEY"},
			{"TEAM_TOKEN", "agent claude: --env TEAM_TOKEN holds a model key (the value of $ANTHROPIC_API_KEY), which never enters the sandbox, and the profile has no api to hold it: set api: anthropic in agents.claude"},
		} {
			_, stderr, code := runCmd(t, "run", "--repo", f.repo.Work, "--config", cfg, "--agent", "claude", "--env", tt.env,
				"--work-dir", f.workDir, "--non-interactive", "--sandbox", "none")
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("--env %s: exit %d, stderr %q; want exit 2 naming %q", tt.env, code, stderr, tt.want)
			}
		}
		if calls := f.calls(t); len(calls) != 0 {
			t.Errorf("the agent ran: %v", calls)
		}
	})
	t.Run("akira run --agent-cmd", func(t *testing.T) {
		f := newRunFixture(t, "")
		t.Setenv("ANTHROPIC_API_KEY", keys.anthropic)
		t.Setenv("TEAM_TOKEN", keys.anthropic)
		t.Setenv("GEMINI_API_KEY", keys.openai)
		for _, tt := range []struct{ env, want string }{
			{"TEAM_TOKEN", "--env TEAM_TOKEN holds a model key (the value of $ANTHROPIC_API_KEY), which never enters the sandbox: pass --env ANTHROPIC_API_KEY instead"},
			{"GEMINI_API_KEY", "--env GEMINI_API_KEY is a model key, which never enters the sandbox, and the egress proxy of an --agent-cmd holds the key of " +
				"--env ANTHROPIC_API_KEY, OPENAI_API_KEY or CODEX_API_KEY only"},
		} {
			_, stderr, code := runCmd(t, f.inProcess(t, "--env", tt.env)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("--env %s: exit %d, stderr %q; want exit 2 naming %q", tt.env, code, stderr, tt.want)
			}
		}
		if calls := f.calls(t); len(calls) != 0 {
			t.Errorf("the agent ran: %v", calls)
		}
	})
	t.Run("akira serve, env of the profile", func(t *testing.T) {
		sandboxtest.Require(t)
		code, out := serveAtStart(t, "agents:\n  claude:\n    kind: exec\n    command: sh agent.sh\n    env: [ANTHROPIC_API_KEY]\n    network: allow\n",
			"", "ANTHROPIC_API_KEY="+keys.anthropic)
		want := "agents.claude: env: ANTHROPIC_API_KEY is a model key, which never enters the sandbox: set api: anthropic in the profile"
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("akira serve: exit %d\n%s\nwant exit 2 naming %q", code, out, want)
		}
	})
}

// serveAtStart starts `akira serve` (web and worker, bubblewrap) with the operator's file operator,
// --env-file envFile when not empty, and env, and returns its exit code and output once it stops:
// it must refuse to start. One that answers /healthz instead fails the test.
func serveAtStart(t *testing.T, operator, envFile string, env ...string) (int, string) {
	t.Helper()
	fake := githubtest.New(t)
	dir := t.TempDir()
	keyPath, opFile := filepath.Join(dir, "key.pem"), filepath.Join(dir, "akira.yaml")
	mustWrite(t, keyPath, string(fake.PrivateKeyPEM()))
	mustWrite(t, opFile, operator+"sandbox: bubblewrap\n")
	args := []string{"serve"}
	if envFile != "" {
		args = append(args, "--env-file", envFile)
	}
	cmd := exec.Command(akiraBin, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GITHUB_APP_ID=%d", fake.AppID()), "GITHUB_PRIVATE_KEY_PATH="+keyPath,
		"GITHUB_WEBHOOK_SECRET=serve-secret", "GITHUB_API_URL="+fake.URL(), "AKIRA_ADDR=127.0.0.1:0", "REDIS_URL=redis://"+redistest.Own(t)+"/0",
		"AKIRA_CONFIG="+opFile, "AKIRA_WORKDIR="+t.TempDir(), "AKIRA_ADMIN_ADDR=off")
	cmd.Env = append(cmd.Env, env...)
	out := &lockedLog{}
	cmd.Stdout, cmd.Stderr = &lineWriter{out}, &lineWriter{out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var err error
	waitFor(t, "akira serve to stop or to say it serves", func() bool {
		select {
		case err = <-exited:
			return true
		default:
		}
		if addr, _ := servingAddrs(out.String()); addr != "" {
			t.Fatalf("akira serve started:\n%s", out.String())
		}
		return false
	})
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("akira serve: %v\n%s", err, out.String())
	}
	return ee.ExitCode(), out.String()
}

// branchFiles is every file of ref in the git directory dir, each after a line naming it.
func branchFiles(t *testing.T, dir, ref string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range strings.Split(gittest.Git(t, dir, "ls-tree", "-r", "--name-only", ref), "\n") {
		if name == "" {
			continue
		}
		fmt.Fprintf(&b, "=== %s\n%s\n", name, gittest.Git(t, dir, "show", ref+":"+name))
	}
	return b.String()
}

// TestServeRefusesAnEnvFileTheSandboxShows: the settings file of `akira serve --env-file` holds the
// model keys (the README has the operator append ANTHROPIC_API_KEY to it) and the App's secrets; one
// under a directory the sandbox shows (here AKIRA_WORKDIR, where every workspace lives) would hand
// them to any agent that reads it, so the worker refuses to start, naming the file and the fix.
func TestServeRefusesAnEnvFileTheSandboxShows(t *testing.T) {
	sandboxtest.Require(t)
	keys := newModelKeys(t)
	workDir := t.TempDir()
	envFile := filepath.Join(workDir, "akira.env")
	mustWrite(t, envFile, "ANTHROPIC_API_KEY="+keys.anthropic+"\n")
	code, out := serveAtStart(t, "agents:\n  claude:\n    kind: exec\n    command: sh agent.sh\n    api: anthropic\n", envFile, "AKIRA_WORKDIR="+workDir)
	want := "--env-file: " + envFile + " is under a directory the sandbox shows to agents"
	if code != 2 || !strings.Contains(out, want) {
		t.Errorf("akira serve: exit %d\n%s\nwant exit 2 naming %q", code, out, want)
	}
}
