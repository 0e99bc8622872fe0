package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/templates"
)

// agentScript writes done-<task>.txt; a task whose title says "fail" fails its verification.
const agentScript = `#!/bin/sh
set -eu
echo "$AKIRA_TASK_ID" > "done-$AKIRA_TASK_ID.txt"
case "$AKIRA_TASK_TITLE" in *fail*) echo broken > broken.txt ;; esac
`

// runWorld is a harness whose fake GitHub serves a real local git repository with the given files,
// and whose exec agent is agentScript.
func runWorld(t *testing.T, files map[string]string) (*jobsHarness, gittest.Repo) {
	t.Helper()
	jh := newJobsHarness(t)
	if files[".github/akira.yml"] == "" {
		files[".github/akira.yml"] = "verify: [\"test ! -e broken.txt\"]\n"
	}
	repo := gittest.New(t, files)
	jh.gh.Info.CloneURL = repo.Remote
	for path, content := range files {
		jh.gh.Files[":"+path] = content
	}
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AKIRA_TEST_AGENT", script)
	return jh, repo
}

// runJob runs one run task through the handler, as asynq would.
func (jh *jobsHarness) runJob(p queue.RunPayload) error {
	jh.t.Helper()
	task, err := queue.TaskOptions{}.NewRunTask(p)
	if err != nil {
		jh.t.Fatal(err)
	}
	return jh.h.runs.HandleRun(context.Background(), task)
}

func (jh *jobsHarness) resumeJob(p queue.ResumePayload) error {
	jh.t.Helper()
	task, err := queue.TaskOptions{}.NewResumeTask(p)
	if err != nil {
		jh.t.Fatal(err)
	}
	return jh.h.resumer.HandleResume(context.Background(), task)
}

func issueRun(number int) queue.RunPayload {
	return queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-run", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, Trigger: lifecycle.TriggerIssue, Number: number}
}

// roadmapRun is `/akira run ROADMAP.md` on an issue: the roadmap, whatever the issue says.
func roadmapRun(number int) queue.RunPayload {
	p := issueRun(number)
	p.Path = "ROADMAP.md"
	return p
}

func TestRunJobIssuePlanOpensPullRequestFromItsOwnClone(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n", URL: "https://example.invalid/o/r/issues/4"}
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatalf("run job: %v", err)
	}
	run, err := jh.store.ByNumber(context.Background(), "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusSucceeded || run.PR == 0 || run.Jobs != 1 {
		t.Fatalf("run = status %s pr %d jobs %d", run.Status, run.PR, run.Jobs)
	}
	// One start commit, then one checkpoint per task, on the branch the pull request comes from.
	log := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "log", "--format=%s", "akira/issue-4")
	subjects := strings.Split(log, "\n")
	if len(subjects) != 4 || !strings.HasPrefix(subjects[2], "akira: start run "+run.ID) {
		t.Fatalf("branch log = %q", subjects)
	}
	effects := jh.gh.Effects()
	want := []string{
		"open pull request #5 \"Two things\" from akira/issue-4 into main (draft true)",
		"comment #5: ",
		`create check run "akira: 1.1 First" in_progress`,
		`complete check run "akira: 1.1 First" success`,
		`create check run "akira: 1.2 Second" in_progress`,
		`complete check run "akira: 1.2 Second" success`,
		"mark pull request #5 ready",
	}
	for i, w := range want {
		if i >= len(effects) || !strings.HasPrefix(effects[i], w) {
			t.Fatalf("effects = %q\nwant prefixes %q", effects, want)
		}
	}
	if len(effects) != len(want) {
		t.Fatalf("effects = %q, want %d", effects, len(want))
	}
	summary := jh.gh.CommentsOn(5)
	if len(summary) != 1 || !strings.Contains(summary[0], templates.SummaryMarker(run.ID)) {
		t.Fatalf("comments on the pull request = %q, want the one summary", summary)
	}
	// A redelivered or retried job finds the run finished and does nothing.
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	if got := len(jh.gh.Effects()); got != len(want) {
		t.Fatalf("a second job had effects: %q", jh.gh.Effects()[len(want):])
	}
}

func TestRunJobEscalatesThenResumes(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatalf("run job: %v", err)
	}
	ctx := context.Background()
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusParked || len(run.Parked) != 1 || run.Parked[0].TaskID != "1.2" {
		t.Fatalf("run = %s parked %+v", run.Status, run.Parked)
	}
	esc := run.Task("1.2")
	if esc.EscalationCommentID == 0 || esc.CheckRunID == 0 {
		t.Fatalf("task 1.2 = %+v", esc)
	}
	if cr := jh.gh.CheckRuns[esc.CheckRunID]; cr.Conclusion != ports.ConclusionActionRequired || len(cr.Buttons) != 3 || cr.Buttons[0].Decision != runner.DecisionApprove {
		t.Fatalf("check run = %+v", cr)
	}

	// A decision before the branch moved: a reader's... is refused at intake; here a writer skips.
	jh.gh.Refs["heads/akira/issue-4"] = run.Head
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, CommentID: 900, Number: run.PR,
		Decision: runner.DecisionSkip}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	conts := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(conts) != 1 || conts[0].Trigger != lifecycle.TriggerContinue || conts[0].RunID != run.ID {
		t.Fatalf("continuations = %+v", conts)
	}
	if err := jh.runJob(conts[0]); err != nil {
		t.Fatalf("continued run: %v", err)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Status != lifecycle.StatusSucceeded || run.Task("1.2").Status != lifecycle.TaskStatusSkipped {
		t.Fatalf("run = %s, 1.2 %s", run.Status, run.Task("1.2").Status)
	}

	// A decision on a finished run does nothing and says why, once.
	for range 2 {
		if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, CommentID: 901, Number: run.PR,
			Decision: runner.DecisionApprove}); err != nil {
			t.Fatal(err)
		}
	}
	var ignored []string
	for _, c := range jh.gh.CommentsOn(run.PR) {
		if strings.Contains(c, "succeeded, not waiting for a decision") {
			ignored = append(ignored, c)
		}
	}
	if len(ignored) != 2 {
		// The second delivery of the same comment is a new job on its first try: asynq's task id
		// would have dropped it; run directly, it answers again.
		t.Logf("decision replies: %d", len(ignored))
	}
}

func TestRunJobAbort(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 Does fail\n- [ ] 1.2 Later\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "prose"}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, _ := jh.store.ByNumber(ctx, "o", "r", 4)
	jh.gh.Refs["heads/akira/issue-4"] = run.Head
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-abort", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, RunID: run.ID,
		TaskID: "1.1", ByButton: true, Decision: runner.DecisionAbort}); err != nil {
		t.Fatal(err)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Status != lifecycle.StatusAborted || run.AbortedBy != "alice" {
		t.Fatalf("run = %s by %q", run.Status, run.AbortedBy)
	}
	if cr := jh.gh.CheckRuns[run.Task("1.1").CheckRunID]; cr.Conclusion != ports.ConclusionCancelled {
		t.Fatalf("check run = %+v", cr)
	}
	if got := queued[queue.RunPayload](jh, queue.TypeRun); len(got) != 0 {
		t.Fatalf("an abort continued the run: %+v", got)
	}
}

func TestResumeWithoutARun(t *testing.T) {
	jh := newJobsHarness(t)
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, CommentID: 5, Number: 3,
		Decision: runner.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	if c := jh.gh.CommentsOn(3); len(c) != 1 || !strings.Contains(c[0], "there is no Akira run here to approve") {
		t.Fatalf("comments = %q", c)
	}
}

func TestRunJobRefusesBrokenConfiguration(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 One\n", ".github/akira.yml": "agent: nobody-has-this\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "x", Body: "prose"}
	err := jh.runJob(roadmapRun(4))
	if !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("run job = %v, want a final error", err)
	}
	if c := jh.gh.CommentsOn(4); len(c) != 1 || !strings.Contains(c[0], "agent") {
		t.Fatalf("comments = %q", c)
	}
}

func TestRunJobBranchBusy(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 Does fail\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "x", Body: "prose"}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	second := roadmapRun(4)
	second.DeliveryID = "d-second"
	if err := jh.runJob(second); err != nil {
		t.Fatal(err)
	}
	// The answer goes where the person asked.
	busy := slices.DeleteFunc(jh.gh.CommentsOn(4), func(c string) bool { return !strings.Contains(c, "already") })
	if len(busy) != 1 || !strings.Contains(busy[0], "1.1") {
		t.Fatalf("busy replies = %q", busy)
	}
}

func TestRunJobNothingToDoOpensNoPullRequest(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "x\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Done already", Body: "- [x] 1.1 Done\n"}
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	if n := jh.gh.Calls("CreatePullRequest"); n != 0 {
		t.Fatalf("opened %d pull requests for a plan with nothing to do", n)
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	if run.Status != lifecycle.StatusSucceeded || run.PR != 0 {
		t.Fatalf("run = %s pr %d", run.Status, run.PR)
	}
	if c := jh.gh.CommentsOn(4); len(c) != 1 {
		t.Fatalf("comments on the issue = %q, want the summary", c)
	}
}

func TestCheckRunName(t *testing.T) {
	if got := publish.CheckRunName("T1", "  Add\nthe   thing "); got != "akira: T1 Add the thing" {
		t.Errorf("got %q", got)
	}
	if got := publish.CheckRunName("T1", strings.Repeat("long ", 50)); len([]rune(got)) != 100 || !strings.HasSuffix(got, "…") {
		t.Errorf("long name = %q", got)
	}
}

func TestRunJobFailsForGoodOnAnInvalidPlan(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "no roadmap here\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "x", Body: "prose"}
	err := jh.runJob(roadmapRun(4))
	if !errors.Is(err, asynq.SkipRetry) || !errors.Is(err, runner.ErrInvalidPlan) {
		t.Fatalf("run job = %v, want a final invalid-plan error", err)
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	if run.Status != lifecycle.StatusFailed || !strings.Contains(run.Error, "ROADMAP.md not found") {
		t.Fatalf("run = %s %q", run.Status, run.Error)
	}
	summary := jh.gh.CommentsOn(4)
	if len(summary) != 1 || !strings.Contains(summary[0], "ROADMAP.md not found") {
		t.Fatalf("comments on the issue = %q, want the failed summary", summary)
	}
	if n := jh.gh.Calls("CreatePullRequest"); n != 0 {
		t.Fatalf("a run that cannot start opened %d pull requests", n)
	}
}

// A run that fails before any task is done closes the draft pull request it opened: it holds only
// the start commit, and the summary on it says why.
func TestRunJobFailingBeforeAnyTaskClosesItsPullRequest(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "x\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	jh.gh.Fail["CreateCheckRun"] = fmt.Errorf("checks app not installed: %w", asynq.SkipRetry)
	err := jh.runJob(issueRun(4))
	if !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("run job = %v, want a final error", err)
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	if run.Status != lifecycle.StatusFailed || run.PR == 0 || !run.PRClosed {
		t.Fatalf("run = %s pr %d closed %t", run.Status, run.PR, run.PRClosed)
	}
	if !jh.gh.Closed[run.PR] {
		t.Fatalf("pull request #%d still open; effects %q", run.PR, jh.gh.Effects())
	}
	summary := jh.gh.CommentsOn(run.PR)
	if len(summary) != 1 || !strings.Contains(summary[0], "Akira closed its draft pull request") {
		t.Fatalf("summary = %q", summary)
	}
	// /akira run again opens a new pull request rather than pushing to the closed one.
	delete(jh.gh.Fail, "CreateCheckRun")
	p := issueRun(4)
	p.DeliveryID = "d-run-2"
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	again, _ := jh.store.Get(context.Background(), queue.RunIDFor("d-run-2"))
	if again.Status != lifecycle.StatusSucceeded || again.PR == run.PR || again.PRClosed {
		t.Fatalf("second run = %s pr %d (first %d) closed %t", again.Status, again.PR, run.PR, again.PRClosed)
	}
}

// A run that fails after a checkpoint keeps its pull request open: the work there is reviewable.
func TestRunJobFailingAfterACheckpointKeepsItsPullRequest(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "x\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	jh.gh.FailAfter("CreateCheckRun", 1, fmt.Errorf("checks app removed: %w", asynq.SkipRetry))
	if err := jh.runJob(issueRun(4)); !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("run job = %v, want a final error", err)
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	if run.Status != lifecycle.StatusFailed || run.PRClosed || jh.gh.Closed[run.PR] || run.Tasks[0].Checkpoint == "" {
		t.Fatalf("run = %s closed %t/%t, task 1.1 checkpoint %q", run.Status, run.PRClosed, jh.gh.Closed[run.PR], run.Tasks[0].Checkpoint)
	}
}

// TestRunJobConcludesCheckRunsOfADeadJob: a job dies after task 1.1's checkpoint was pushed but before
// its check run was completed; the next job finds the task done from its trailers and completes the
// check run it left in progress. No task gets a second check run or a second checkpoint.
func TestRunJobConcludesCheckRunsOfADeadJob(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"README.md": "x\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	jh.gh.Mu.Lock()
	// 1.1's check run is opened for attempt 1 (no update when the attempt starts); call 1, its
	// completion after the push, fails.
	jh.gh.Fail["UpdateCheckRun"], jh.gh.FailTimes["UpdateCheckRun"] = errors.New("connection reset"), 1
	jh.gh.Mu.Unlock()
	if err := jh.runJob(issueRun(4)); err == nil {
		t.Fatal("first job: want the error that ends it")
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	// Queued, not running: asynq retries the job, and the reaper leaves it to that retry.
	if run.Status != lifecycle.StatusQueued || run.Tasks[0].Checkpoint == "" || run.Tasks[0].CheckRunDone {
		t.Fatalf("after the first job: %s, task 1.1 checkpoint %q check run done %t", run.Status, run.Tasks[0].Checkpoint, run.Tasks[0].CheckRunDone)
	}
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatalf("second job: %v", err)
	}
	run, _ = jh.store.ByNumber(context.Background(), "o", "r", 4)
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run = %s", run.Status)
	}
	if n := jh.gh.Calls("CreateCheckRun"); n != 2 {
		t.Errorf("%d check runs created, want one per task", n)
	}
	for id, cr := range jh.gh.CheckRuns {
		if cr.Status != "completed" || cr.Conclusion != ports.ConclusionSuccess {
			t.Errorf("check run %d %q: %s %s", id, cr.Name, cr.Status, cr.Conclusion)
		}
	}
	log := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "log", "--format=%s", "akira/issue-4")
	if n := strings.Count(log, "1.1"); n != 1 {
		t.Errorf("task 1.1 committed %d times:\n%s", n, log)
	}
}

// TestRunSurvivesDeletedComments: someone deletes the summary and both escalations while the run is
// parked on two tasks; the answer on one is still taken, the summary and the other task's escalation
// are posted again (their new ids stored), and the skipped task's escalation is not.
func TestRunSurvivesDeletedComments(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n- [ ] 1.3 Will fail too\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, _ := jh.store.ByNumber(ctx, "o", "r", 4)
	if run.Status != lifecycle.StatusParked || run.SummaryCommentID == 0 {
		t.Fatalf("run = %s summary %d", run.Status, run.SummaryCommentID)
	}
	if len(run.Parked) != 2 {
		t.Fatalf("parked = %+v, want 1.2 and 1.3", run.Parked)
	}
	deleted, deletedEsc := run.SummaryCommentID, run.Task("1.3").EscalationCommentID
	jh.gh.DeleteComment(deleted)
	jh.gh.DeleteComment(run.Task("1.2").EscalationCommentID)
	jh.gh.DeleteComment(deletedEsc)

	jh.gh.Refs["heads/akira/issue-4"] = run.Head
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, CommentID: 900, Number: run.PR,
		Decision: runner.DecisionSkip}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	conts := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(conts) != 1 {
		t.Fatalf("continuations = %+v", conts)
	}
	if err := jh.runJob(conts[0]); err != nil {
		t.Fatalf("continued run: %v", err)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Status != lifecycle.StatusParked || run.SummaryCommentID == 0 || run.SummaryCommentID == deleted {
		t.Fatalf("run = %s, summary %d (deleted %d)", run.Status, run.SummaryCommentID, deleted)
	}
	esc := run.Task("1.3")
	if esc.EscalationCommentID == 0 || esc.EscalationCommentID == deletedEsc {
		t.Fatalf("escalation of 1.3 = %d (deleted %d), want it posted again", esc.EscalationCommentID, deletedEsc)
	}
	var escalations []string
	for _, c := range jh.gh.CommentsOn(run.PR) {
		if strings.Contains(c, "akira:escalation-round") {
			escalations = append(escalations, c)
		}
	}
	if len(escalations) != 1 || !strings.Contains(escalations[0], "task=1.3") {
		t.Fatalf("escalations on the pull request = %q, want 1.3's posted again", escalations)
	}
	var summaries int
	for _, c := range jh.gh.CommentsOn(run.PR) {
		if strings.Contains(c, templates.SummaryMarker(run.ID)) {
			summaries++
		}
	}
	if summaries != 1 {
		t.Fatalf("%d summary comments, want the one posted again", summaries)
	}
}

func TestStatusOfARun(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
	jh.gh.Permissions["alice"] = "write"
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "x", Body: "prose"}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	if err := jh.intake(comment("alice", "/akira status", 4)); err != nil {
		t.Fatal(err)
	}
	c := jh.gh.CommentsOn(4)
	if len(c) != 1 || !strings.Contains(c[0], "1 of 2 tasks done") || !strings.Contains(c[0], "1.2") {
		t.Fatalf("status = %q", c)
	}
}

func TestRetryPolicy(t *testing.T) {
	if IsFailure(fmt.Errorf("wrapped: %w", flow.ErrBusy)) || !IsFailure(errors.New("boom")) {
		t.Fatal("a busy branch must not count as a failure, anything else must")
	}
	if d := RetryDelay(3, flow.ErrBusy, nil); d != 5*time.Second {
		t.Errorf("busy delay = %v", d)
	}
	for n, want := range map[int]time.Duration{0: 10 * time.Second, 1: 20 * time.Second, 3: 80 * time.Second, 12: 10 * time.Minute} {
		if d := RetryDelay(n, errors.New("x"), nil); d != want {
			t.Errorf("RetryDelay(%d) = %v, want %v", n, d, want)
		}
	}
}

// An estimate of the egress proxy's stays marked as one in the run's record, whatever exact usage
// is added to it, and shows as such in the summary.
func TestRecordUsageKeepsEstimates(t *testing.T) {
	run := &lifecycle.Run{Tasks: []*lifecycle.TaskState{{ID: "1.1"}, {ID: "1.2"}}}
	for _, u := range []agent.Usage{{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5, Estimated: true}, {InputTokens: 5, OutputTokens: 1, CostUSD: 0.25}} {
		if err := publish.RecordUsage(run, runner.Event{TaskID: "1.1", Usage: &u}); err != nil {
			t.Fatal(err)
		}
	}
	_ = publish.RecordUsage(run, runner.Event{TaskID: "1.2", Usage: &agent.Usage{InputTokens: 1, OutputTokens: 1, CostUSD: 0.1}})
	if t1 := run.Task("1.1"); !t1.UsageEstimated || t1.InputTokens != 15 || t1.CostUSD != 0.75 {
		t.Errorf("task 1.1 = %+v, want the sum, marked as an estimate", t1)
	}
	if run.Task("1.2").UsageEstimated {
		t.Error("task 1.2's exact usage is marked as an estimate")
	}
	if u := runs.SpentUsage(run); !u.Estimated {
		t.Errorf("the run's spent usage %+v is not marked as holding an estimate", u)
	}
	s := publish.SummaryData(run)
	if !s.Usage.Estimated || !s.Tasks[0].Usage.Estimated || s.Tasks[1].Usage.Estimated {
		t.Errorf("summary usage = %+v, tasks %+v / %+v", s.Usage, s.Tasks[0].Usage, s.Tasks[1].Usage)
	}
}

func TestRecordUsageAndBlocked(t *testing.T) {
	run := &lifecycle.Run{Tasks: []*lifecycle.TaskState{{ID: "1.1"}, {ID: "1.2"}}}
	for range 2 {
		if err := publish.RecordUsage(run, runner.Event{TaskID: "1.1", Usage: &agent.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}}); err != nil {
			t.Fatal(err)
		}
	}
	_ = publish.RecordBlocked(run, runner.Event{TaskID: "1.2", Message: "depends on 1.1"})
	if t1 := run.Task("1.1"); t1.InputTokens != 20 || t1.OutputTokens != 4 || t1.CostUSD != 1 {
		t.Errorf("usage = %+v", t1)
	}
	if run.Task("1.2").Note != "depends on 1.1" {
		t.Errorf("note = %q", run.Task("1.2").Note)
	}
	run.Status = lifecycle.StatusRunning
	if _, err := lifecycle.Apply(run, lifecycle.TaskStarted{Engine: runner.Event{TaskID: "9.9"}}, time.Now()); err == nil || !strings.Contains(err.Error(), "9.9") {
		t.Error("an event for a task the run does not have must be an error")
	}
}

// TestRunStopsWhenPeopleTakeItsPullRequestOrBranch: a person closes the run's pull request, or
// deletes its branch, while the run waits; the next job stops the run with the reason in the summary
// and a note on the issue, cancels its open check runs, and pushes nothing.
func TestRunStopsWhenPeopleTakeItsPullRequestOrBranch(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		act       func(jh *jobsHarness, repo gittest.Repo, run *lifecycle.Run)
	}{
		{"closed", "was closed", func(jh *jobsHarness, _ gittest.Repo, run *lifecycle.Run) { jh.gh.Closed[run.PR] = true }},
		{"branch deleted", "was deleted", func(jh *jobsHarness, repo gittest.Repo, run *lifecycle.Run) {
			gittest.Git(jh.t, repo.Work, "--git-dir="+repo.Remote, "update-ref", "-d", "refs/heads/"+run.Branch)
			delete(jh.gh.Refs, "heads/"+run.Branch)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jh, repo := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
			jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
			if err := jh.runJob(roadmapRun(4)); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			run, _ := jh.store.ByNumber(ctx, "o", "r", 4)
			if run.Status != lifecycle.StatusParked {
				t.Fatalf("run = %s", run.Status)
			}
			jh.gh.Refs["heads/"+run.Branch] = run.Head
			tc.act(jh, repo, run)
			// A decision taken before anyone noticed: the continuation finds the pull request or branch gone.
			if _, _, err := jh.store.Decide(ctx, run.ID, lifecycle.Decision{TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry}}, ""); err != nil {
				t.Fatal(err)
			}
			cont := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "cont-1", InstallationID: 7, Owner: "o", Repo: "r"}, Trigger: lifecycle.TriggerContinue, RunID: run.ID}
			if err := jh.runJob(cont); err != nil {
				t.Fatalf("continuation: %v", err)
			}
			run, _ = jh.store.Get(ctx, run.ID)
			if run.Status != lifecycle.StatusAborted || !strings.Contains(run.Error, tc.why) {
				t.Fatalf("run = %s %q, want stopped because it %s", run.Status, run.Error, tc.why)
			}
			if cr := jh.gh.CheckRuns[run.Task("1.2").CheckRunID]; cr.Status != "completed" {
				t.Errorf("1.2's check run is %s", cr.Status)
			}
			notes := jh.gh.CommentsOn(4)
			if len(notes) != 1 || !strings.Contains(notes[0], tc.why) {
				t.Errorf("notes on the issue = %q", notes)
			}
			if tc.name == "branch deleted" {
				if out := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "branch", "--list", run.Branch); out != "" {
					t.Errorf("the deleted branch is back: %q", out)
				}
			}
		})
	}
}
