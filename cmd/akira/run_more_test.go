package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/gittest"
)

// The tests here run `akira run` in the test process (runCmd) with --repo naming the user's clone;
// run_test.go runs the binary.

// TestRunFlagErrors: each bad flag is a usage error (exit 2) naming the flag and what it wants,
// before any agent runs.
func TestRunFlagErrors(t *testing.T) {
	f := newRunFixture(t, "")
	badConfig := filepath.Join(t.TempDir(), "akira.yaml")
	mustWrite(t, badConfig, "agents: [not a map\n")
	tests := []struct {
		name  string
		extra []string
		want  string
	}{
		{"parallel too low", []string{"--parallel", "0"}, "--parallel: 0 is out of range (1 to 32)"},
		{"parallel too high", []string{"--parallel", "33"}, "--parallel: 33 is out of range (1 to 32)"},
		{"negative attempts", []string{"--max-attempts", "-1"}, "--max-attempts must be positive"},
		{"unknown format", []string{"--format", "jira"}, `--format "jira": want one of`},
		{"bad author", []string{"--author", "nobody"}, "--author:"},
		{"unreadable config", []string{"--config", badConfig}, "akira.yaml"},
		{"unknown sandbox", []string{"--sandbox", "chroot"}, "chroot"},
		{"missing repository", []string{"--repo", f.repo.Work + "-gone"}, "--repo " + f.repo.Work + "-gone"},
		{"unknown skip id", []string{"--skip", "9.9"}, "no such task"},
		{"missing roadmap", []string{"--roadmap", "NOPE.md"}, "NOPE.md not found"},
		{"model key unset", []string{"--env", "OPENAI_API_KEY"}, "the API key is empty: set $OPENAI_API_KEY"},
	}
	t.Setenv("OPENAI_API_KEY", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, f.inProcess(t, tt.extra...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", code, stderr, tt.want)
			}
		})
	}
	if calls := f.calls(t); len(calls) != 0 {
		t.Fatalf("the agent ran: %v", calls)
	}
}

// TestRunJSONAndDryRun: --dry-run shows the diff the branch would get and pushes nothing; --json
// prints one event per line ending in the outcome.
func TestRunJSONAndDryRun(t *testing.T) {
	f := newRunFixture(t, "")
	stdout, stderr, code := runCmd(t, f.inProcess(t, "--dry-run", "--verbose")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"akira: dry run: nothing was pushed; branch akira/roadmap would get:", "diff --git", "+First file"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout)
		}
	}
	if _, code := gittest.TryGit(t, f.repo.Work, "rev-parse", "--verify", "-q", "refs/heads/akira/roadmap"); code == 0 {
		t.Fatalf("a dry run pushed akira/roadmap: %q", f.branch(t))
	}

	stdout, stderr, code = runCmd(t, f.inProcess(t, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d\n%s", code, stderr)
	}
	var last runner.Event
	checkpoints := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev runner.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("a line that is no JSON event: %q: %v", sc.Text(), err)
		}
		if ev.Type == "task_checkpointed" {
			checkpoints++
		}
		last = ev
	}
	if checkpoints != 3 || last.Type != runner.EventRunFinished || last.Outcome == nil || last.Outcome.Status != runner.StatusSucceeded {
		t.Fatalf("%d checkpoints, last event %+v", checkpoints, last)
	}
}

// TestRunModelKeyStaysWithTheProxy: a model key passed with --env never reaches the agent: it gets a
// placeholder and a base URL pointing at the egress proxy, which holds the key.
func TestRunModelKeyStaysWithTheProxy(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1.1 First file\n  - verify: `test -f 1.1.txt`\n")
	for _, key := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		t.Run(key, func(t *testing.T) {
			const secret = "sk-test-real-key-1234567890"
			t.Setenv(key, secret)
			t.Setenv("OPENAI_BASE_URL", "")
			t.Setenv("ANTHROPIC_BASE_URL", "")
			stdout, stderr, code := runCmd(t, f.inProcess(t, "--env", key, "--branch", "akira/"+strings.ToLower(key))...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			env, err := os.ReadFile(filepath.Join(f.logs, "env-1.1-1"))
			if err != nil {
				t.Fatal(err)
			}
			committed := gittest.Git(t, f.repo.Work, "log", "-p", "akira/"+strings.ToLower(key))
			if strings.Contains(string(env)+committed, secret) {
				t.Fatalf("the real %s reached the agent or a commit", key)
			}
			vars := map[string]string{}
			for _, line := range strings.Split(string(env), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					vars[k] = v
				}
			}
			if !strings.HasPrefix(vars[key], "akira-placeholder-") {
				t.Errorf("the agent's %s = %q; want the proxy's placeholder", key, vars[key])
			}
			baseVar := "OPENAI_BASE_URL"
			if key == "ANTHROPIC_API_KEY" {
				baseVar = "ANTHROPIC_BASE_URL"
			}
			if !strings.HasPrefix(vars[baseVar], "http://127.0.0.1:") {
				t.Errorf("the agent's %s = %q; want the proxy's loopback address", baseVar, vars[baseVar])
			}
		})
	}
}

// TestRunOperatorProfileTimeouts: --agent picks a profile of --config, --sandbox-ro and the
// configuration's verify and stall timeouts are taken, and an agent slower than the profile's
// timeout is stopped and its task parked with the reason.
func TestRunOperatorProfileTimeouts(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1.1 First file\n  - verify: `test -f 1.1.txt`\n")
	cfg := filepath.Join(t.TempDir(), "akira.yaml")
	mustWrite(t, cfg, "agents:\n  scripted:\n    kind: exec\n    command: "+f.agent+"\n    env: [AKIRA_TEST_LOG]\n"+
		"  slow:\n    kind: exec\n    command: sleep 30\n    timeout: 1s\n"+
		"verify_timeout: 2m\nstall_timeout: 5m\nsandbox:\n  mode: none\n")
	t.Setenv("AKIRA_TEST_LOG", f.logs)
	stdout, stderr, code := runCmd(t, "run", "--repo", f.repo.Work, "--config", cfg, "--agent", "scripted", "--sandbox-ro", t.TempDir(),
		"--work-dir", f.workDir, "--non-interactive")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if got := f.branch(t); !slices.Equal(got, []string{"akira: 1.1 First file|1.1"}) {
		t.Fatalf("branch = %q", got)
	}

	stdout, stderr, code = runCmd(t, "run", "--repo", f.repo.Work, "--config", cfg, "--agent", "slow", "--branch", "akira/slow",
		"--max-attempts", "1", "--work-dir", f.workDir, "--non-interactive")
	if code != 3 || !strings.Contains(stderr, "task 1.1 (First file) needs a decision") || !strings.Contains(stdout+stderr, "timed out") {
		t.Errorf("an agent over its profile's timeout: exit %d, want 3 with the task parked for timing out\n%s%s", code, stdout, stderr)
	}
}
