package publish

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
)

func TestEstimate(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	task := func(status string, attempts int, d time.Duration) *lifecycle.TaskState {
		return &lifecycle.TaskState{ID: "x", Status: status, Attempts: attempts, Duration: d}
	}
	tests := []struct {
		name  string
		run   lifecycle.Run
		left  time.Duration
		known bool
	}{
		{"nothing finished yet", lifecycle.Run{Tasks: []*lifecycle.TaskState{task(lifecycle.TaskStatusRunning, 1, 0), task(lifecycle.TaskStatusPending, 0, 0)}}, 0, false},
		{"odd count: the median", lifecycle.Run{Tasks: []*lifecycle.TaskState{
			task(lifecycle.TaskStatusPassed, 1, time.Minute), task(lifecycle.TaskStatusPassed, 2, 5*time.Minute), task(lifecycle.TaskStatusPassed, 1, 3*time.Minute),
			task(lifecycle.TaskStatusPending, 0, 0), task(lifecycle.TaskStatusPending, 0, 0)}}, 6 * time.Minute, true},
		{"even count: the mean of the middle two", lifecycle.Run{Tasks: []*lifecycle.TaskState{
			task(lifecycle.TaskStatusPassed, 1, 2*time.Minute), task(lifecycle.TaskStatusPassed, 1, 4*time.Minute), task(lifecycle.TaskStatusPending, 0, 0)}}, 3 * time.Minute, true},
		{"done by an earlier run: not a measure", lifecycle.Run{Tasks: []*lifecycle.TaskState{
			task(lifecycle.TaskStatusPassed, 0, 0), task(lifecycle.TaskStatusPassed, 1, 10*time.Minute), task(lifecycle.TaskStatusPending, 0, 0)}}, 10 * time.Minute, true},
		{"the current task's time counts", lifecycle.Run{TaskStartedAt: now.Add(-4 * time.Minute), Tasks: []*lifecycle.TaskState{
			task(lifecycle.TaskStatusPassed, 1, 10*time.Minute), task(lifecycle.TaskStatusRunning, 1, 0), task(lifecycle.TaskStatusPending, 0, 0)}}, 16 * time.Minute, true},
		{"nothing finished yet, the repository's history known", lifecycle.Run{PastDurations: []time.Duration{2 * time.Minute, 8 * time.Minute, 4 * time.Minute},
			Tasks: []*lifecycle.TaskState{task(lifecycle.TaskStatusPending, 0, 0), task(lifecycle.TaskStatusPending, 0, 0)}}, 8 * time.Minute, true},
		{"this run's tasks and the history together", lifecycle.Run{PastDurations: []time.Duration{time.Minute, time.Minute},
			Tasks: []*lifecycle.TaskState{task(lifecycle.TaskStatusPassed, 1, 10*time.Minute), task(lifecycle.TaskStatusPending, 0, 0)}}, time.Minute, true},
		{"never negative", lifecycle.Run{TaskStartedAt: now.Add(-time.Hour), Tasks: []*lifecycle.TaskState{
			task(lifecycle.TaskStatusPassed, 1, time.Minute), task(lifecycle.TaskStatusRunning, 1, 0)}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left, known := Estimate(&tt.run, now)
			if left != tt.left || known != tt.known {
				t.Errorf("estimate = %v, %v; want %v, %v", left, known, tt.left, tt.known)
			}
		})
	}
}

// TestSummaryEditsForProgressAreRateLimited: progress and a task's end edit the summary at most every
// minSummaryInterval.
func TestSummaryEditsForProgressAreRateLimited(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "r-progress", Owner: "o", Repo: "r", Branch: "akira/issue-4", Issue: 4, PR: 5,
		Status: lifecycle.StatusRunning, Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusPending}, {ID: "1.2", Title: "Two", Status: lifecycle.TaskStatusPending}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReporter(jh.gh, jh.store, nil, nil, run)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	rep.now = func() time.Time { return now }
	edits := func() int { return jh.gh.CallCounts["CreateComment"] + jh.gh.CallCounts["EditComment"] }

	if err := rep.sums.summary(ctx); err != nil {
		t.Fatal(err)
	}
	first := edits()
	for i := range 5 {
		now = now.Add(time.Second)
		if err := rep.sums.progress(ctx, "working "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := edits() - first; got != 0 {
		t.Errorf("%d summary edits for progress within %v, want 0", got, MinSummaryInterval)
	}
	now = now.Add(MinSummaryInterval)
	if err := rep.sums.progress(ctx, "verifying"); err != nil {
		t.Fatal(err)
	}
	if got := edits() - first; got != 1 {
		t.Errorf("%d summary edits after %v, want 1", got, MinSummaryInterval)
	}
	verifyingAt := now
	// A task's end right after an edit is held back (see TestHeldBackSummaryEdit)...
	defer rep.Close()
	if err := rep.Report(ctx, runner.Event{Type: runner.EventTaskSkipped, TaskID: "1.1", Message: "skipped"}); err != nil {
		t.Fatal(err)
	}
	if got := edits() - first; got != 1 {
		t.Errorf("%d summary edits after a task's end right after an edit, want 1 (held back)", got)
	}
	// ... and shown at once when the last edit is minSummaryInterval old.
	now = now.Add(MinSummaryInterval)
	if err := rep.Report(ctx, runner.Event{Type: runner.EventTaskSkipped, TaskID: "1.2", Message: "skipped"}); err != nil {
		t.Fatal(err)
	}
	if got := edits() - first; got != 2 {
		t.Errorf("%d summary edits after a task's end %v after the last edit, want 2 (at once)", got, MinSummaryInterval)
	}
	if stored, _ := jh.store.Get(ctx, run.ID); stored.Activity != "verifying" || !stored.ActivityAt.Equal(verifyingAt) {
		t.Errorf("stored activity %q at %v", stored.Activity, stored.ActivityAt)
	}
}

// TestTaskHistory: a task its agent finished joins its repository's history, which the next run of
// that repository (and no other) starts from, newest first and capped.
func TestTaskHistory(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	for i := 1; i <= store.HistoryLen+5; i++ {
		if err := jh.store.RecordTaskDuration(ctx, "Owner", "Repo", time.Duration(i)*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := jh.store.RecordTaskDuration(ctx, "owner", "repo", 0); err != nil {
		t.Fatal(err)
	}
	got, err := jh.store.TaskDurations(ctx, "owner", "repo")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != store.HistoryLen || got[0] != time.Duration(store.HistoryLen+5)*time.Second || got[store.HistoryLen-1] != 6*time.Second {
		t.Errorf("history = %v; want the %d newest, newest first", got, store.HistoryLen)
	}
	other, err := jh.store.TaskDurations(ctx, "owner", "other")
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != 0 {
		t.Errorf("another repository's history = %v; want none", other)
	}
}

// TestRunStartsFromItsRepositorysHistory: the reporter gives a new run the repository's history and
// adds the durations of the tasks its agent finishes; an approved task's time is not a measure.
func TestRunStartsFromItsRepositorysHistory(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	for _, d := range []time.Duration{3 * time.Minute, 5 * time.Minute} {
		if err := jh.store.RecordTaskDuration(ctx, "o", "r", d); err != nil {
			t.Fatal(err)
		}
	}
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "r-history", Owner: "o", Repo: "r", Branch: "akira/issue-6", Issue: 6, PR: 7,
		Status: lifecycle.StatusRunning, Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusPending}, {ID: "1.2", Title: "Two", Status: lifecycle.TaskStatusPending}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReporter(jh.gh, jh.store, nil, nil, run)
	tasks := []runner.TaskResult{{ID: "1.1", Title: "One", Status: runner.TaskPending}, {ID: "1.2", Title: "Two", Status: runner.TaskPending}}
	events := []runner.Event{
		{Type: runner.EventRunStarted, Tasks: tasks, Commit: "base"},
		{Type: runner.EventTaskStarted, TaskID: "1.1", Attempt: 1},
		{Type: runner.EventTaskCheckpointed, TaskID: "1.1", Attempt: 1, Commit: "c1", Duration: 7 * time.Minute},
		{Type: runner.EventTaskStarted, TaskID: "1.2", Attempt: 1},
		{Type: runner.EventTaskCheckpointed, TaskID: "1.2", Attempt: 1, Commit: "c2", Duration: time.Hour, Message: "approved by @alice"},
	}
	for _, ev := range events {
		if err := rep.Report(ctx, ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
	got, err := jh.store.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{5 * time.Minute, 3 * time.Minute}; !slices.Equal(got.PastDurations, want) {
		t.Errorf("run's history = %v; want %v", got.PastDurations, want)
	}
	history, err := jh.store.TaskDurations(ctx, "o", "r")
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{7 * time.Minute, 5 * time.Minute, 3 * time.Minute}; !slices.Equal(history, want) {
		t.Errorf("repository history = %v; want %v (the approved task left out)", history, want)
	}
}
