package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner"
)

// The engine's merge of the base is a task of no plan: it joins the run when it starts, its checkpoint
// records the base commit merged, a plan read by a later job keeps it (parked, it still waits for its
// decision), and a merge after an earlier one (the base moved again) starts afresh.
func TestSyncTask(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	apply := func(t *testing.T, run *Run, ev Event) {
		t.Helper()
		if _, err := Apply(run, ev, now); err != nil {
			t.Fatalf("%s: %v", ev.Kind(), err)
		}
	}
	ids := func(run *Run) []string {
		var out []string
		for _, tk := range run.Tasks {
			out = append(out, tk.ID+"="+tk.Status)
		}
		return out
	}
	plan := PlanRead{Engine: runner.Event{Commit: "h1", Tasks: []runner.TaskResult{
		{ID: "1.1", Title: "one", Status: runner.TaskDone, Commit: "c1"}, {ID: "1.2", Title: "two", Status: runner.TaskPending}}}}
	sync := runner.Event{TaskID: runner.SyncTaskID, TaskTitle: "Bring akira/issue-1 up to date with main"}

	run := &Run{ID: "r1", Base: "main", Status: StatusRunning}
	apply(t, run, plan)
	apply(t, run, TaskStarted{Engine: sync})
	if got, want := ids(run), []string{"1.1=passed", "1.2=pending", "sync=running"}; !slices.Equal(got, want) {
		t.Fatalf("tasks = %v, want %v", got, want)
	}
	if got := run.Task(runner.SyncTaskID).Title; got != sync.TaskTitle {
		t.Errorf("sync title = %q", got)
	}
	parked := &runner.Escalation{TaskID: runner.SyncTaskID, Attempts: 2, Reason: "max_attempts", Summary: "the merge of main conflicts in a.txt: ..."}
	apply(t, run, TaskParked{Fresh: true, Escalation: parked})

	// The next job reads the plan again: the parked sync stays, after the plan's tasks.
	apply(t, run, plan)
	if got, want := ids(run), []string{"1.1=passed", "1.2=pending", "sync=escalated"}; !slices.Equal(got, want) {
		t.Fatalf("after the next plan read: %v, want %v", got, want)
	}
	apply(t, run, TaskStarted{Engine: sync})
	apply(t, run, AttemptStarted{Engine: runner.Event{TaskID: runner.SyncTaskID, Attempt: 1}})
	done := runner.Event{TaskID: runner.SyncTaskID, Commit: "m1", BaseCommit: "b1", Message: "brought up to date with main@b1"}
	apply(t, run, TaskCheckpointed{Engine: done})
	if run.Task(runner.SyncTaskID).Status != TaskStatusPassed || run.Head != "m1" || !slices.Equal(run.Synced, []string{"main@b1"}) {
		t.Fatalf("after the merge: %v, head %s, synced %v", ids(run), run.Head, run.Synced)
	}

	// The base moves again: a new merge, a fresh task (no attempts, no check run of the last one).
	apply(t, run, TaskStarted{Engine: sync})
	if got := run.Task(runner.SyncTaskID); got.Status != TaskStatusRunning || got.Attempts != 0 || got.Checkpoint != "" {
		t.Fatalf("second merge starts from %+v", *got)
	}
	apply(t, run, TaskCheckpointed{Engine: runner.Event{TaskID: runner.SyncTaskID, Commit: "m2", BaseCommit: "b2"}})
	if run.LastSynced() != "main@b2" || len(run.Synced) != 2 {
		t.Errorf("synced %v, want main@b1 then main@b2", run.Synced)
	}

	// A plan task is never one: only the sync id, alone or in a plan's scope.
	for id, want := range map[string]bool{"sync": true, "specs/a.md#sync": true, "1.2": false, "async": false, "sync-2": false} {
		if IsSyncTask(id) != want {
			t.Errorf("IsSyncTask(%q) = %t", id, !want)
		}
	}
	if _, err := Apply(&Run{ID: "r2", Status: StatusRunning}, TaskStarted{Engine: runner.Event{TaskID: "1.9"}}, now); err == nil {
		t.Error("a plan task the run does not have was started")
	}
}

// The CI is green but the base moved meanwhile: the pull request does not turn ready; the run is
// queued for the job that merges the base, and waits for the CI of the merge.
func TestCIPassedBehindTheBase(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	run := &Run{ID: "r1", Status: StatusRunning, PR: 5, OpenedPR: true}
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h1"}, CI: &CIWatch{Timeout: time.Hour}}, now); err != nil {
		t.Fatal(err)
	}
	effects, err := Apply(run, CIPassed{Sync: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusQueued || !slices.Equal(kinds(effects), []EffectKind{EffectContinue, EffectSummary}) || effects[0].Key != "ci-sync-h1" {
		t.Fatalf("run %s, effects %+v; want queued to merge the base, no ready", run.Status, effects)
	}
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "m1"}}, now); err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusWaitingCI || run.CI.Head != "m1" {
		t.Fatalf("after the merge: %s, CI of %q; want the merge's", run.Status, run.CI.Head)
	}
	effects, err = Apply(run, CIPassed{}, now)
	if err != nil || run.Status != StatusSucceeded || !slices.Contains(kinds(effects), EffectReady) {
		t.Fatalf("green on the merge: %s, %v, %v", run.Status, kinds(effects), err)
	}
}
