package publish

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// lockedClock is a reporter clock a test moves while the held-back edit's timer may read it.
type lockedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *lockedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *lockedClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func twoTaskRun(t *testing.T, jh *harness, id string) *lifecycle.Run {
	t.Helper()
	run, _, err := jh.store.Create(context.Background(), &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: "akira/issue-4", Issue: 4, PR: 5,
		Status: lifecycle.StatusRunning, Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusRunning}, {ID: "1.2", Title: "Two", Status: lifecycle.TaskStatusPending}}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// lastSummary is the body of the run's summary comment as GitHub has it.
func (jh *harness) lastSummary(t *testing.T, pr int) string {
	t.Helper()
	bodies := jh.gh.CommentsOn(pr)
	if len(bodies) != 1 {
		t.Fatalf("%d comments on #%d, want the one summary", len(bodies), pr)
	}
	return bodies[0]
}

// TestHeldBackSummaryEdit: a task that ends right after the summary was edited is shown when the
// interval is over, without waiting for another event; once the job is over (Close), nothing held
// back is edited any more (the job's end publishes the state itself).
func TestHeldBackSummaryEdit(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	rep := NewReporter(jh.gh, jh.store, nil, nil, twoTaskRun(t, jh, "r-held"))
	defer rep.Close()
	clock := &lockedClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	rep.now, rep.summaryEvery = clock.now, 50*time.Millisecond
	edits := func() int { return jh.gh.Calls("CreateComment") + jh.gh.Calls("EditComment") }

	if err := rep.Report(ctx, runner.Event{Type: runner.EventTaskSkipped, TaskID: "1.1", Message: "skipped"}); err != nil {
		t.Fatal(err)
	}
	if edits() != 1 || !strings.Contains(jh.lastSummary(t, 5), "1.1") {
		t.Fatalf("first task end: %d edits; want the summary posted at once", edits())
	}
	if err := rep.Report(ctx, runner.Event{Type: runner.EventTaskSkipped, TaskID: "1.2", Message: "skipped too"}); err != nil {
		t.Fatal(err)
	}
	if edits() != 1 {
		t.Fatalf("a task end at once after an edit made %d edits, want it held back", edits())
	}
	clock.advance(rep.summaryEvery)
	deadline := time.Now().Add(time.Minute)
	for edits() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the held-back edit was never made")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if body := jh.lastSummary(t, 5); strings.Count(body, "skipped") < 2 {
		t.Errorf("the held-back edit does not show both skipped tasks:\n%s", body)
	}

	// Held back again, then the job ends: no edit after Close.
	rep.mu.Lock()
	err := rep.sums.progress(ctx, "one more thing")
	if err == nil {
		err = rep.sums.taskSummary(ctx)
	}
	rep.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	clock.advance(rep.summaryEvery)
	time.Sleep(5 * rep.summaryEvery)
	if n := edits(); n != 2 {
		t.Errorf("%d edits, want none after the job ended", n)
	}
}

// TestHeldBackSummaryAfterACrash: the job dies while a task's end is held back from the summary; the
// next job shows it with the plan it reads from the branch, so the summary converges.
func TestHeldBackSummaryAfterACrash(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	run := twoTaskRun(t, jh, "r-crash")
	rep := NewReporter(jh.gh, jh.store, nil, nil, run)
	if err := rep.sums.summary(ctx); err != nil {
		t.Fatal(err)
	}
	rep.head = "c0ffee1"
	if err := rep.Report(ctx, runner.Event{Type: runner.EventTaskCheckpointed, TaskID: "1.1", Commit: "c0ffee1", Attempt: 1, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if body := jh.lastSummary(t, 5); strings.Contains(body, "c0ffee1") {
		t.Fatalf("the checkpoint right after an edit was not held back:\n%s", body)
	}
	rep.Close() // the worker dies: its timer with it

	next := NewReporter(jh.gh, jh.store, nil, nil, mustGet(t, jh.store, run.ID))
	defer next.Close()
	if err := next.Report(ctx, runner.Event{Type: runner.EventRunStarted, Commit: "c0ffee1", Tasks: []runner.TaskResult{
		{ID: "1.1", Title: "One", Status: runner.TaskDone, Commit: "c0ffee1"}, {ID: "1.2", Title: "Two", Status: runner.TaskPending}}}); err != nil {
		t.Fatal(err)
	}
	if body := jh.lastSummary(t, 5); !strings.Contains(body, "c0ffee1") {
		t.Errorf("the next job's summary does not show the checkpoint held back before the crash:\n%s", body)
	}
}

// TestOneCheckRunUpdatePerStateChange: a task's check run is opened for its first attempt, so the
// attempt's start sends nothing; a failed attempt, the next attempt and the end each send one update.
func TestOneCheckRunUpdatePerStateChange(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "r-cr", Owner: "o", Repo: "r", Branch: "akira/issue-4", Issue: 4, PR: 5, MaxAttempts: 2,
		Status: lifecycle.StatusRunning, Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusPending}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReporter(jh.gh, jh.store, nil, nil, run)
	defer rep.Close()
	rep.head = "abc1234"
	calls := func() (int, int) { return jh.gh.Calls("CreateCheckRun"), jh.gh.Calls("UpdateCheckRun") }
	steps := []struct {
		ev              runner.Event
		creates, update int
	}{
		{runner.Event{Type: runner.EventTaskStarted, TaskID: "1.1", MaxAttempts: 2}, 1, 0},
		{runner.Event{Type: runner.EventAttemptStarted, TaskID: "1.1", Attempt: 1, MaxAttempts: 2}, 1, 0},
		{runner.Event{Type: runner.EventAttemptFailed, TaskID: "1.1", Attempt: 1, Message: "tests failed"}, 1, 1},
		{runner.Event{Type: runner.EventAttemptStarted, TaskID: "1.1", Attempt: 2, MaxAttempts: 2}, 1, 2},
		{runner.Event{Type: runner.EventTaskCheckpointed, TaskID: "1.1", Attempt: 2, Commit: "abc1234"}, 1, 3},
	}
	for _, s := range steps {
		if err := rep.Report(ctx, s.ev); err != nil {
			t.Fatalf("%s: %v", s.ev.Type, err)
		}
		if c, u := calls(); c != s.creates || u != s.update {
			t.Fatalf("after %s %d: %d creates, %d updates; want %d, %d", s.ev.Type, s.ev.Attempt, c, u, s.creates, s.update)
		}
	}
	id := mustGet(t, jh.store, run.ID).Task("1.1").CheckRunID
	cr := jh.gh.CheckRuns[id]
	if cr == nil || cr.Conclusion != ports.ConclusionSuccess {
		t.Fatalf("check run %+v, want it concluded success", cr)
	}
}

// TestParkedLabelReadsAsNeedsADecision: templates words a parked run "needs a decision" by the label
// lifecycle gives it; the two packages cannot import each other that way round, so this holds them
// together.
func TestParkedLabelReadsAsNeedsADecision(t *testing.T) {
	text, err := templates.Render("stop_reply", templates.StopReply{RunID: "r1", State: lifecycle.StatusParked.Label()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "needs a decision") || !strings.Contains(text, "Answer its escalation") {
		t.Errorf("stop reply for a parked run = %q; want it worded as needing a decision", text)
	}
}

// TestSummaryLeavesTheMergeOutOfTheTotals: the merge of the base has its row (its attempts count) but
// is no task of the plan, in a run's own tasks or a plan file's (scoped by its path).
func TestSummaryLeavesTheMergeOutOfTheTotals(t *testing.T) {
	run := &lifecycle.Run{ID: "r1", Status: lifecycle.StatusParked, Tasks: []*lifecycle.TaskState{
		{ID: "1.1", Status: lifecycle.TaskStatusPassed, Attempts: 1},
		{ID: "sync", Status: lifecycle.TaskStatusPassed, Attempts: 2},
		{ID: "specs/a/tasks.md#T001", Status: lifecycle.TaskStatusEscalated, Attempts: 3},
		{ID: "specs/a/tasks.md#sync", Status: lifecycle.TaskStatusEscalated, Attempts: 1},
	}}
	s := SummaryData(run)
	if len(s.Tasks) != 4 || s.PlanTasks() != 2 || s.Attempts() != 7 {
		t.Fatalf("rows %d, plan tasks %d, attempts %d; want 4, 2, 7", len(s.Tasks), s.PlanTasks(), s.Attempts())
	}
	if got, want := s.Tally(), "1 passed, 1 needs a decision"; got != want {
		t.Errorf("tally %q, want %q", got, want)
	}
}
