package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner"
)

// TestPauseAndResume: a pause asked while a task runs takes effect when the engine yields before the
// next task (the run holds no worker, the CI is not waited for); resuming queues the next job; a
// pause asked now ends the attempt (its task pending again, its check run cancelled); a pause that
// comes when no task is left is dropped; resuming a run whose pause has not taken effect withdraws it.
func TestPauseAndResume(t *testing.T) {
	run := fixtureRun(StatusRunning)
	run.Pause = nil
	run.CI = &CIWatch{Timeout: time.Hour, Each: true}
	if _, err := Apply(run, PauseAsked{Request: PauseRequest{By: "gina", At: now}}, now); err != nil || run.Pause == nil || run.Pause.Now {
		t.Fatalf("asked: %v %+v", err, run.Pause)
	}
	effects, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h2"}, Yielded: true}, now)
	if err != nil || run.Status != StatusPaused || run.PausedBy != "gina" || run.Pause != nil || run.Head != "h2" ||
		!slices.Equal(kinds(effects), []EffectKind{EffectSummary}) {
		t.Fatalf("paused after the task: %v %s %q %v", err, run.Status, run.PausedBy, kinds(effects))
	}
	if _, err := Apply(run, JobStarted{}, now); err == nil {
		t.Fatal("a paused run's job started")
	}
	effects, err = Apply(run, Resumed{By: "hank"}, now)
	if err != nil || run.Status != StatusQueued || run.PausedBy != "" || kinds(effects)[0] != EffectContinue || effects[0].By != "hank" {
		t.Fatalf("resumed: %v %s %+v", err, run.Status, effects)
	}

	now1 := fixtureRun(StatusRunning)
	effects, err = Apply(now1, Paused{}, now) // the fixture's request is for now
	if err != nil || now1.Status != StatusPaused || now1.Task("1.1").Status != TaskStatusPending ||
		effects[0].Kind != EffectConcludeCheckRuns || !slices.Equal(effects[0].TaskIDs, []string{"1.1"}) || effects[0].Conclusion != ConclusionCancelled {
		t.Fatalf("paused now: %v %s %+v", err, now1.Status, effects)
	}

	late := fixtureRun(StatusRunning)
	late.PR = 0
	if _, err := Apply(late, EngineFinished{Status: StatusSucceeded}, now); err != nil || late.Status != StatusSucceeded || late.Pause != nil {
		t.Fatalf("a pause with nothing left to pause: %v %s %+v", err, late.Status, late.Pause)
	}

	withdrawn := fixtureRun(StatusRunning)
	if effects, err := Apply(withdrawn, Resumed{By: "gina"}, now); err != nil || withdrawn.Status != StatusRunning || withdrawn.Pause != nil || len(effects) != 0 {
		t.Fatalf("withdrawn: %v %s %+v", err, withdrawn.Status, withdrawn.Pause)
	}
	if _, err := Apply(withdrawn, Resumed{By: "gina"}, now); err == nil {
		t.Fatal("resuming a run that is neither paused nor asked to pause must fail")
	}
}
