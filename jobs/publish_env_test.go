package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
)

// countingAgent replaces runWorld's agent with one that records each call outside the workspace and
// runs fix first; it returns the file the calls are written to.
func countingAgent(t *testing.T, fix string) string {
	t.Helper()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := filepath.Join(dir, "agent.sh")
	body := "#!/bin/sh\nset -eu\necho \"$AKIRA_TASK_ID\" >> " + calls + "\n" + fix + "\necho \"$AKIRA_TASK_ID\" > \"done-$AKIRA_TASK_ID.txt\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AKIRA_TEST_AGENT", script)
	return calls
}

func agentCalls(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func TestRunJobRedBaseStopsBeforeAnyAgentCall(t *testing.T) {
	files := map[string]string{
		"check.sh":          "echo '--- FAIL: TestSum (want 3, got 4)'; exit 1\n",
		".github/akira.yml": "verify: [\"sh check.sh\"]\n",
	}
	ctx := context.Background()
	t.Run("red", func(t *testing.T) {
		jh, _ := runWorld(t, files)
		calls := countingAgent(t, "")
		jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
		if err := jh.runJob(issueRun(4)); err != nil {
			t.Logf("run job: %v", err)
		}
		run, err := jh.store.ByNumber(ctx, "o", "r", 4)
		if err != nil {
			t.Fatal(err)
		}
		if got := agentCalls(t, calls); len(got) != 0 {
			t.Fatalf("the agent was called %v, want never", got)
		}
		want := "the base branch fails `sh check.sh` before any change: --- FAIL: TestSum (want 3, got 4)"
		if run.Status != lifecycle.StatusFailed || !strings.Contains(run.Error, want) {
			t.Fatalf("run = status %s error %q, want failed saying %q", run.Status, run.Error, want)
		}
		cr := jh.gh.CheckRunNamed(publish.BaseCheckRunName)
		if cr == nil || cr.Conclusion != ports.ConclusionFailure || !strings.Contains(cr.Summary, "`sh check.sh`") ||
			!strings.Contains(cr.Summary, "TestSum (want 3, got 4)") || !strings.Contains(cr.Summary, "/akira run --allow-red-base") {
			t.Fatalf("akira / base check run = %+v, want a failure naming the command, its output and the way out", cr)
		}
		if run.BaseCheck == nil || run.BaseCheck.Passed || run.BaseCheck.CheckRunID == 0 {
			t.Errorf("run's base check = %+v", run.BaseCheck)
		}
		if !strings.Contains(strings.Join(jh.gh.CommentsOn(run.PR), "\n"), "**Environment:** base branch ❌ fails `sh check.sh`") {
			t.Errorf("the summary has no environment line: %q", jh.gh.CommentsOn(run.PR))
		}
	})
	t.Run("allowed", func(t *testing.T) {
		jh, _ := runWorld(t, files)
		calls := countingAgent(t, "echo 'exit 0' > check.sh")
		jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Fix the build", Body: "- [ ] 1.1 Fix it\n"}
		p := issueRun(4)
		p.AllowRedBase = true
		if err := jh.runJob(p); err != nil {
			t.Fatal(err)
		}
		run, err := jh.store.ByNumber(ctx, "o", "r", 4)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != lifecycle.StatusSucceeded || len(agentCalls(t, calls)) != 1 {
			t.Fatalf("run = status %s error %q, calls %v; want it done by one agent call", run.Status, run.Error, agentCalls(t, calls))
		}
		if cr := jh.gh.CheckRunNamed(publish.BaseCheckRunName); cr == nil || cr.Conclusion != ports.ConclusionNeutral {
			t.Errorf("akira / base check run = %+v, want neutral (red, allowed)", cr)
		}
	})
}

func TestRunJobSetupFailureShowsTheCommandAndKeepsTheLog(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{
		".github/akira.yml": "setup:\n  - echo fetching deps\n  - \"echo 'E: lockfile out of date' >&2; exit 2\"\nverify: [\"true\"]\n",
	})
	calls := countingAgent(t, "")
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "One", Body: "- [ ] 1.1 First\n"}
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Logf("run job: %v", err)
	}
	ctx := context.Background()
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentCalls(t, calls); len(got) != 0 || run.Status != lifecycle.StatusFailed {
		t.Fatalf("run = status %s, agent calls %v; want failed with no call", run.Status, got)
	}
	cr := jh.gh.CheckRunNamed(publish.SetupCheckRunName)
	if cr == nil || cr.Conclusion != ports.ConclusionFailure || !strings.Contains(cr.Title, "exit 2") ||
		!strings.Contains(cr.Summary, "**Failing command:** `echo 'E: lockfile out of date' >&2; exit 2` · exit code 2") ||
		!strings.Contains(cr.Summary, "E: lockfile out of date") {
		t.Fatalf("akira / setup check run = %+v", cr)
	}
	log, err := jh.store.Log(ctx, run.ID, publish.SetupLogTask, 1)
	if err != nil || !strings.Contains(log, "$ echo fetching deps\nfetching deps\n") {
		t.Fatalf("setup log = %q, %v", log, err)
	}
	if run.Setup == nil || run.Setup.Passed {
		t.Errorf("run's setup = %+v", run.Setup)
	}
}
