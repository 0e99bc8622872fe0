package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// waitingRun stores a run that waits for its pull request's CI on head.
func waitingRun(t *testing.T, jh *jobsHarness, head string, w lifecycle.CIWatch) *lifecycle.Run {
	t.Helper()
	ctx := context.Background()
	jh.gh.Pulls[7] = &ports.PullRequest{Number: 7, Draft: true, HeadRef: "akira/issue-5"}
	w.Head = head
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "ci-" + randomHex(t, 3), Owner: "o", Repo: "r", InstallationID: 7,
		Trigger: lifecycle.TriggerIssue, Branch: "akira/issue-5", Base: "main", Issue: 5, PR: 7, OpenedPR: true, Sender: "alice",
		Plan: "- [ ] one\n  - verify: `go test ./...`\n", PlanSource: "issue #5",
		Tasks: []*lifecycle.TaskState{{ID: "1", Title: "one", Status: lifecycle.TaskStatusPassed, Checkpoint: head}}, CI: &w})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Update(ctx, run.ID, func(r *lifecycle.Run) error { r.Status = lifecycle.StatusWaitingCI; return nil }); err != nil {
		t.Fatal(err)
	}
	return run
}

func (jh *jobsHarness) readCI(t *testing.T, run *lifecycle.Run, key string) *lifecycle.Run {
	t.Helper()
	if _, err := jh.h.ci.ReadCI(context.Background(), queue.CIPayload{RunID: run.ID, InstallationID: 7, Key: key}); err != nil {
		t.Fatal(err)
	}
	r, err := jh.store.Get(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCIReadings: a waiting run's CI read again and again, as deliveries and polls would: running
// checks wait (and show in the summary), a red check starts one fix round however often it is read,
// with the failing line quoted and a token in the log masked; green marks the pull request ready.
func TestCIReadings(t *testing.T) {
	jh := newJobsHarness(t)
	run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 2})
	jh.gh.CI.Required = []string{"test"}
	jh.gh.CI.Checks["h1"] = []ports.CICheck{{Name: "lint", Source: ports.CISourceCheckRun, App: ports.CIAppActions, ID: 1, Status: "completed", Conclusion: "success"}}
	run = jh.readCI(t, run, "d1")
	if run.Status != lifecycle.StatusWaitingCI || len(run.CI.Checks) != 2 || run.CI.Checks[0].Name != "test" || !run.CI.Checks[0].Required {
		t.Fatalf("a required check that has not reported is waited for: %s %+v", run.Status, run.CI.Checks)
	}
	if sum := jh.gh.CommentsOn(7); len(sum) != 1 || !strings.Contains(sum[0], "⏳ running") || !strings.Contains(sum[0], "waiting for CI") {
		t.Fatalf("summary = %v", sum)
	}

	token := "ghs_" + strings.Repeat("A1b2", 9)
	jh.gh.CI.Checks["h1"] = append(jh.gh.CI.Checks["h1"], ports.CICheck{Name: "test", Source: ports.CISourceCheckRun, App: ports.CIAppActions, ID: 2,
		Status: "completed", Conclusion: "failure", URL: "https://example.invalid/job/2"})
	jh.gh.CI.Evidence["test"] = "##[group]Run go test\ncurl -H 'Authorization: token " + token + "'\n--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\n##[error]Process completed with exit code 1.\n"
	for _, key := range []string{"d2", "d2-again", "poll-1"} {
		run = jh.readCI(t, run, key)
	}
	if run.Status != lifecycle.StatusQueued || run.CI.Round != 1 || run.CI.Fix == nil || !slices.Equal(run.CI.Fix.Checks, []string{"test"}) {
		t.Fatalf("red: %s %+v", run.Status, run.CI)
	}
	if !strings.Contains(run.CI.Fix.Evidence, "add_test.go:9: got 3, want 4") || strings.Contains(run.CI.Fix.Evidence, token) {
		t.Fatalf("evidence = %q", run.CI.Fix.Evidence)
	}
	if n := len(queued[queue.RunPayload](jh, queue.TypeRun)); n != 1 {
		t.Fatalf("%d continuations for one red head, want 1", n)
	}
	for _, c := range jh.gh.CommentsOn(7) {
		if strings.Contains(c, token) {
			t.Fatal("a token from the log reached a comment")
		}
	}

	// The fix round's prompt and checkpoint.
	plan, source := runs.CIFixPlan(run)
	if !strings.Contains(plan, `"fix CI: test"`) || !strings.Contains(plan, "go test ./...") || source != "ci-1.json" {
		t.Errorf("fix plan = %s (%s)", plan, source)
	}
	if ctx := runs.CIFixContext(run); !strings.Contains(ctx, "got 3, want 4") {
		t.Errorf("fix prompt = %s", ctx)
	}

	// The fix is pushed (h2) and CI turns green.
	if _, _, err := jh.store.Apply(context.Background(), run.ID, lifecycle.JobStarted{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jh.store.Apply(context.Background(), run.ID, lifecycle.EngineFinished{Status: lifecycle.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Update(context.Background(), run.ID, func(r *lifecycle.Run) error { r.CI.Head = "h2"; return nil }); err != nil {
		t.Fatal(err)
	}
	jh.gh.CI.Checks["h2"] = []ports.CICheck{{Name: "test", Source: ports.CISourceCheckRun, Status: "completed", Conclusion: "success"},
		{Name: "ci/jenkins", Source: ports.CISourceStatus, Status: "completed", Conclusion: "success"}}
	if _, err := jh.h.ci.ReadCI(context.Background(), queue.CIPayload{RunID: run.ID, InstallationID: 7, Head: "h1", Key: "stale"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := jh.store.Get(context.Background(), run.ID); r.Status != lifecycle.StatusWaitingCI {
		t.Fatalf("a delivery about an old head moved the run: %s", r.Status)
	}
	run = jh.readCI(t, run, "d3")
	if run.Status != lifecycle.StatusSucceeded || jh.gh.Pulls[7].Draft || len(run.Outbox) != 0 {
		t.Fatalf("green: %s, draft %v, outbox %+v", run.Status, jh.gh.Pulls[7].Draft, run.Outbox)
	}
}

// TestCIGivesUp: red after the last fix round parks the run on the CI with the evidence in the
// escalation; a repository with no CI at all succeeds at once, one whose CI has not reported on the
// commit after the grace period; checks that never finish park it after the timeout; a flaky Actions
// job is re-run once first.
func TestCIGivesUp(t *testing.T) {
	ctx := context.Background()
	t.Run("red after the last round", func(t *testing.T) {
		jh := newJobsHarness(t)
		run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 1, Round: 1})
		jh.gh.CI.Checks["h1"] = []ports.CICheck{{Name: "build", Source: ports.CISourceCheckRun, App: "circleci", ID: 3, Status: "completed", Conclusion: "failure"}}
		jh.gh.CI.Evidence["build"] = "main.go:3: undefined: x"
		run = jh.readCI(t, run, "d1")
		run = jh.readCI(t, run, "d2")
		if run.Status != lifecycle.StatusParked || run.ParkedTask(lifecycle.CITaskID) == nil {
			t.Fatalf("%s %+v", run.Status, run.Parked)
		}
		var escalations []string
		for _, c := range jh.gh.CommentsOn(7) {
			if strings.Contains(c, "escalation-round") {
				escalations = append(escalations, c)
			}
		}
		if len(escalations) != 1 || !strings.Contains(escalations[0], "undefined: x") || !strings.Contains(escalations[0], "CI stays red") {
			t.Fatalf("escalations = %v", escalations)
		}
	})
	t.Run("no CI", func(t *testing.T) {
		// No workflow at the head and nothing of another app on the base: nothing could report, so
		// the first reading ends the wait, well within the grace period.
		jh := newJobsHarness(t)
		run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Hour, MaxRounds: 1})
		jh.gh.Refs["heads/main"] = "b1"
		if run = jh.readCI(t, run, "d1"); run.Status != lifecycle.StatusSucceeded || !run.CI.None || jh.gh.Pulls[7].Draft {
			t.Fatalf("a repository without CI: %s %+v", run.Status, run.CI)
		}
		if sum := jh.gh.CommentsOn(7); !strings.Contains(sum[0], "No CI reported a check") {
			t.Errorf("summary = %s", sum[0])
		}
	})
	// A CI that could report and has not yet is waited for until the grace period ends: a workflow at
	// the head (GitHub Actions starts it), or another app's check or status on the base's head.
	for _, tc := range []struct {
		name       string
		workflows  []string
		baseChecks []ports.CICheck
	}{
		{name: "a workflow at the head", workflows: []string{".github/workflows/ci.yml"}},
		{name: "another app's check on the base", baseChecks: []ports.CICheck{{Name: "build", Source: ports.CISourceCheckRun, App: "circleci", Status: "completed", Conclusion: "success"}}},
		{name: "a status on the base", baseChecks: []ports.CICheck{{Name: "ci/jenkins", Source: ports.CISourceStatus, Status: "completed", Conclusion: "success"}}},
	} {
		t.Run("CI not reported yet: "+tc.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Hour, MaxRounds: 1})
			jh.gh.Refs["heads/main"] = "b1"
			jh.gh.CI.Workflows["h1"] = tc.workflows
			jh.gh.CI.Checks["b1"] = tc.baseChecks
			if run = jh.readCI(t, run, "d1"); run.Status != lifecycle.StatusWaitingCI {
				t.Fatalf("within the grace period: %s", run.Status)
			}
			if _, err := jh.store.Update(ctx, run.ID, func(r *lifecycle.Run) error { r.CI.Since = time.Now().Add(-2 * time.Hour); return nil }); err != nil {
				t.Fatal(err)
			}
			if run = jh.readCI(t, run, "d2"); run.Status != lifecycle.StatusSucceeded || !run.CI.None || jh.gh.Pulls[7].Draft {
				t.Fatalf("after it: %s %+v", run.Status, run.CI)
			}
			if sum := jh.gh.CommentsOn(7); !strings.Contains(sum[0], "No CI reported a check") {
				t.Errorf("summary = %s", sum[0])
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		jh := newJobsHarness(t)
		run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now().Add(-time.Hour), Timeout: time.Minute, Grace: time.Minute, MaxRounds: 1})
		jh.gh.CI.Checks["h1"] = []ports.CICheck{{Name: "slow", Source: ports.CISourceStatus, Status: "in_progress"}}
		if run = jh.readCI(t, run, "d1"); run.Status != lifecycle.StatusParked || run.Parked[0].Reason != lifecycle.ReasonCITimeout {
			t.Fatalf("%s %+v", run.Status, run.Parked)
		}
	})
	t.Run("flaky", func(t *testing.T) {
		jh := newJobsHarness(t)
		run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 1, RerunFlaky: true})
		// e2e lost its runner; unit failed a test: only e2e is re-run, unit waits for the fix task.
		jh.gh.CI.Checks["h1"] = []ports.CICheck{{Name: "e2e", Source: ports.CISourceCheckRun, App: ports.CIAppActions, ID: 9, Status: "completed", Conclusion: "failure"},
			{Name: "unit", Source: ports.CISourceCheckRun, App: ports.CIAppActions, ID: 10, Status: "completed", Conclusion: "failure"}}
		jh.gh.CI.Evidence["e2e"] = "##[group]Run make e2e\nok so far\n##[error]The runner has received a shutdown signal.\n"
		jh.gh.CI.Evidence["unit"] = "--- FAIL: TestAdd\n##[error]Process completed with exit code 1.\n"
		run = jh.readCI(t, run, "d1")
		if run.Status != lifecycle.StatusWaitingCI || !slices.Equal(jh.gh.CI.Reruns, []int64{9}) || !slices.Equal(run.CI.Reran, []string{"e2e"}) {
			t.Fatalf("%s reruns %v %+v", run.Status, jh.gh.CI.Reruns, run.CI)
		}
		if run = jh.readCI(t, run, "d2"); run.Status != lifecycle.StatusQueued || len(jh.gh.CI.Reruns) != 1 {
			t.Fatalf("red again after the re-run: %s, reruns %v", run.Status, jh.gh.CI.Reruns)
		}
	})
}

func TestFlakyCause(t *testing.T) {
	for _, tc := range []struct{ log, want string }{
		{"##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped", "the runner was lost"},
		{"The self-hosted runner: r1 lost communication with the server.", "the runner was lost"},
		{"write /tmp/x: no space left on device", "the runner's disk was full"},
		{"npm ERR! code ECONNRESET", "a network failure"},
		{"dial tcp: lookup proxy.golang.org: i/o timeout", "a network failure"},
		{"curl: (22) The requested URL returned error: 503 Service Unavailable", "a service answered with an error"},
		{"--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4", ""},
		{"main.go:3:2: undefined: frobnicate", ""},
		{"", ""},
	} {
		if got := runs.FlakyCause(tc.log); got != tc.want {
			t.Errorf("flakyCause(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
}

func TestMaskTokensAndExcerpt(t *testing.T) {
	for _, tok := range []string{"ghp_" + strings.Repeat("x", 36), "github_pat_" + strings.Repeat("A", 40), "sk-ant-" + strings.Repeat("k", 30),
		"AKIAABCDEFGHIJKLMNOP", "xoxb-1234567890-abc", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abcdefghijklmnop",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"} {
		if got := runs.MaskTokens("before " + tok + " after"); got != "before [masked] after" {
			t.Errorf("MaskTokens(%q) = %q", tok, got)
		}
	}
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("line " + strings.Repeat("x", 10) + "\n")
		if i == 500 {
			b.WriteString("--- FAIL: TestImportant\n")
		}
	}
	out := runs.LogExcerpt(b.String(), 4096)
	if !strings.Contains(out, "--- FAIL: TestImportant") || len(out) > 4096+4 || !strings.Contains(out, "…") {
		t.Errorf("excerpt (%d bytes) lost the failure: %q", len(out), out[:min(200, len(out))])
	}
	if runs.LogExcerpt("short\n", 100) != "short\n" {
		t.Error("a short log is kept whole")
	}
}

// TestAbortWhileWaitingForCI: `/akira abort` ends a run that waits for its CI (no job works on it to
// hand the request to), and the summary says so.
func TestAbortWhileWaitingForCI(t *testing.T) {
	jh := newJobsHarness(t)
	run := waitingRun(t, jh, "h1", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 1})
	jh.gh.Refs["heads/akira/issue-5"] = "h1"
	if _, err := jh.h.resumer.Resume(context.Background(), queue.ResumePayload{TaskHeader: queue.TaskHeader{Version: queue.PayloadVersion, DeliveryID: "d", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"},
		Number: 7, CommentID: 99, Decision: "abort"}); err != nil {
		t.Fatal(err)
	}
	run, err := jh.store.Get(context.Background(), run.ID)
	if err != nil || run.Status != lifecycle.StatusAborted || run.AbortedBy != "alice" {
		t.Fatalf("run = %+v, %v", run, err)
	}
	if sum := jh.gh.CommentsOn(7); len(sum) != 1 || !strings.Contains(sum[0], "aborted by @alice") {
		t.Fatalf("summary = %v", sum)
	}
}
