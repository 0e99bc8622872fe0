package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/gittest"
	attempt "github.com/akira-bot/akira/runner/timeline"
)

// timelineAgent is a coding agent that calls its model through the egress proxy and reports its
// steps as Claude Code does: its first attempt calls the model twice, runs a command that fails
// (with a token it found, as an agent may print one), changes two files and misses the file
// verification wants; its second calls the model once and writes it.
const timelineAgent = `call() {
  curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
    -d '{"model":"claude-sonnet-4-5","stream":'"$1"',"messages":[]}' "$ANTHROPIC_BASE_URL/v1/messages" > /dev/null || exit 9
}
if [ "$AKIRA_ATTEMPT" = 1 ]; then
  call true
  call false
  echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make greet TOKEN=ghp_localTokenNeverKept0123456789"}}]}}'
  printf '%s\n' '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 2\nmake: *** No rule to make target greet","is_error":true}]}}'
  echo "hello" >> README.md
  mkdir -p src && printf 'echo hi\n' > src/greet.sh
  echo '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"greeted"}'
else
  call false
  echo ok > ok.txt
fi
`

// The case through akira run, end to end: the real binary, the real sandbox and egress
// proxy (which holds the model key and meters each call), a scripted model server. The first
// attempt fails verification, the second passes; `akira status --attempt` prints each attempt's
// timeline from what the run kept locally, in order, with each call's tokens and cost and the
// cost so far, the agent's steps, the files from the work tree, the verification, the end; the
// timeline files agree with the task's cost, and hold no key.
func TestRunKeepsAttemptTimelines(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	const realKey = "sk-ant-real-key-held-by-the-proxy-0123"
	fake := modeltest.NewAnthropic(t, realKey)
	f := newRunFixture(t, "# R\n\n## P\n\n- [ ] 1.1 Greet\n  - verify: `test -f ok.txt`\n")
	gittest.WriteFiles(t, f.repo.Work, map[string]string{"agent.sh": timelineAgent})
	gittest.Git(t, f.repo.Work, "add", "agent.sh")
	gittest.Git(t, f.repo.Work, "commit", "-q", "-m", "the agent")
	f.snapshot = gittest.Snapshot(t, f.repo.Work)
	runs := t.TempDir()
	env := []string{"AKIRA_RUNS_DIR=" + runs, "ANTHROPIC_API_KEY=" + realKey, "ANTHROPIC_BASE_URL=" + fake.BaseURL(), "GITHUB_TOKEN=ghp_localTokenNeverKept0123456789"}

	cmd := f.command("run", "--agent-cmd", "sh agent.sh", "--env", "ANTHROPIC_API_KEY", "--model", "claude-sonnet-4-5",
		"--sandbox", "bubblewrap", "--work-dir", f.workDir, "--non-interactive", "--max-attempts", "2")
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("akira run: %v\n%s", err, out)
	}
	perCall, ok := profiles.Pricer(nil)("claude-sonnet-4-5", egress.Tokens{Input: fake.Usage.Input, Output: fake.Usage.Output})
	if !ok {
		t.Fatal("no price for claude-sonnet-4-5")
	}
	status := func(args ...string) string {
		t.Helper()
		cmd := f.command(append([]string{"status"}, args...)...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("akira status %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	first := status("--attempt", "1.1/1")
	second := status("--attempt", "1.1/2")
	cost := func(v float64) string { return usd(v) }
	wantLines(t, first, []string{
		`^\+\S+ +` + re(cost(0)) + ` +attempt started +from [0-9a-f]{7}; the run had cost ` + re(cost(0)) + `$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +model call +claude-sonnet-4-5, 1200 in / 80 out tokens \(200 read from cache\), \S+, streamed, ` + re(cost(perCall)) + `$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +model call +claude-sonnet-4-5, 1200 in / 80 out tokens \(200 read from cache\), \S+, ` + re(cost(perCall)) + `$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +agent +Bash make greet TOKEN=\[masked\] → \d+ bytes, exit 2, error$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +agent +result: success after 2 turns: greeted$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +agent finished +returned after \S+$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +file modified +README\.md \+1 -0$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +file added +src/greet\.sh \+1 -0$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +verify failed +\$ test -f ok\.txt → exit 1 \(\S+\)$`,
		`^\+\S+ +` + re(cost(2*perCall)) + ` +attempt ended +failed: .* · the attempt cost ` + re(cost(2*perCall)) + `, the run ` + re(cost(2*perCall)) + ` so far$`,
	})
	wantLines(t, second, []string{
		`^\+\S+ +` + re(cost(0)) + ` +attempt started +from [0-9a-f]{7}, told what failed before; the run had cost ` + re(cost(2*perCall)) + `$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +model call +claude-sonnet-4-5, 1200 in / 80 out tokens \(200 read from cache\), \S+, ` + re(cost(perCall)) + `$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +agent finished +returned after \S+$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +file added +ok\.txt \+1 -0$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +verify passed +\$ test -f ok\.txt → exit 0 \(\S+\)$`,
		`^\+\S+ +` + re(cost(perCall)) + ` +attempt ended +checkpointed [0-9a-f]{7} · the attempt cost ` + re(cost(perCall)) + `, the run ` + re(cost(3*perCall)) + ` so far$`,
	})

	// The files themselves: every event in order, the cost so far the sum of the calls, the run's
	// cost at the end the task's, no key anywhere.
	events := filepath.Join(runs, "*", "1.1", "*.jsonl")
	files, _ := filepath.Glob(events)
	if len(files) != 2 {
		t.Fatalf("timeline files %v", files)
	}
	var last attempt.Event
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), realKey) || strings.Contains(string(data), "ghp_localToken") {
			t.Errorf("%s holds a key", file)
		}
		var sum float64
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev attempt.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Call != nil {
				sum += ev.Call.CostUSD
			}
			if ev.V != attempt.Version || ev.Seq != i+1 || ev.TaskID != "1.1" || math.Abs(ev.CostUSD-sum) > 1e-12 || (i > 0 && ev.Time.Before(last.Time)) {
				t.Errorf("%s line %d: %s", file, i+1, line)
			}
			last = ev
		}
	}
	if last.End == nil || math.Abs(last.End.RunCostUSD-3*perCall) > 1e-12 {
		t.Errorf("the last attempt's end = %+v, want the run at $%v", last.End, 3*perCall)
	}
	logs, _ := filepath.Glob(filepath.Join(runs, "*", "1.1", "1.log"))
	if len(logs) != 1 {
		t.Fatalf("attempt logs %v", logs)
	}
	if log, _ := os.ReadFile(logs[0]); !strings.Contains(string(log), "$ test -f ok.txt") || !strings.Contains(string(log), `"num_turns":2`) ||
		!strings.Contains(string(log), "TOKEN=[masked]") || strings.Contains(string(log), "ghp_localToken") {
		t.Errorf("attempt 1's log lacks its verification or the agent's output, or keeps the token:\n%s", log)
	}
	if out := status("--attempt", "1.1/1"); !strings.Contains(out, "log:") {
		t.Errorf("status does not point at the attempt's log:\n%s", out)
	}

	// Asking for what does not exist says what was looked for.
	cmd = f.command("status", "--attempt", "1.1/3")
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no attempt 3 of task 1.1") {
		t.Errorf("status --attempt 1.1/3: %v\n%s", err, out)
	}
	cmd = f.command("status", "--attempt", "1.1")
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "want TASK/N") {
		t.Errorf("status --attempt 1.1: %v\n%s", err, out)
	}
}

// wantLines checks that the table's rows (the lines after its header) match want, in order.
func wantLines(t *testing.T, out string, want []string) {
	t.Helper()
	var rows []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "TIME"):
			in = true
		case in && l == "":
			in = false
		case in:
			rows = append(rows, strings.TrimRight(l, " "))
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d:\n%s", len(rows), len(want), out)
	}
	for i := range min(len(rows), len(want)) {
		if !regexp.MustCompile(want[i]).MatchString(rows[i]) {
			t.Errorf("row %d = %q\nwant match of %s", i+1, rows[i], want[i])
		}
	}
}

func re(s string) string { return regexp.QuoteMeta(s) }

// Runs older than AKIRA_LOG_RETENTION go when akira run starts; newer ones stay.
func TestPruneRuns(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for name, age := range map[string]time.Duration{"old": 400 * time.Hour, "new": time.Hour} {
		info := filepath.Join(dir, name, "run.json")
		gittest.WriteFiles(t, filepath.Dir(info), map[string]string{"run.json": "{}"})
		if err := os.Chtimes(info, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pruneRuns(dir, 336*time.Hour, now); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"new"}) {
		t.Errorf("left %v, want only the new run", left)
	}
}

// A task id or a run id is text of the plan or of the user: as a file name it stays one name.
func TestNameOfIsOneSafeName(t *testing.T) {
	for id, want := range map[string]string{"1.2": "1.2", "T001": "T001", "../x": "%2E.%2Fx", "a/b": "a%2Fb", "..": "%2E.", "": "%", "fix ci": "fix%20ci"} {
		if got := nameOf(id); got != want {
			t.Errorf("nameOf(%q) = %q, want %q", id, got, want)
		}
	}
}
