package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner"
)

// TestCIWatch follows a run through its CI: the tasks done start the watch on the head, a red check
// is a fix round, the last round's red parks the run on the CI task, a retry decision starts another
// round with the guidance, and approval (or green) ends the run with its pull request ready.
func TestCIWatch(t *testing.T) {
	run := fixtureRun(StatusRunning)
	run.OpenedPR = true
	watch := &CIWatch{Timeout: time.Hour, Grace: time.Minute, MaxRounds: 1}
	effects, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h1"}, CI: watch}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusWaitingCI || run.CI.Head != "h1" || !run.CI.Since.Equal(now) || !slices.Equal(kinds(effects), []EffectKind{EffectSummary}) {
		t.Fatalf("run %s, ci %+v, effects %v", run.Status, run.CI, kinds(effects))
	}
	if watch.Head != "" {
		t.Fatal("the watch handed in must not be shared with the run")
	}

	red := []CICheckResult{{Name: "lint", Conclusion: "success"}, {Name: "test", Conclusion: "failure", Required: true}}
	effects, err = Apply(run, CIFailed{Checks: red, Fix: CIFix{Checks: []string{"test"}, Evidence: "FAIL TestAdd"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusQueued || run.CI.Round != 1 || run.CI.Fix.String() != "test" || effects[0].Key != "ci-round-1-h1" {
		t.Fatalf("run %s, ci %+v, effects %+v", run.Status, run.CI, effects)
	}

	// The fix round's job ends with its checkpoint: the run waits for the new head.
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Minute)
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h2"}}, later); err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusWaitingCI || run.CI.Head != "h2" || run.CI.Fix != nil || !run.CI.Since.Equal(later) {
		t.Fatalf("after the fix round: %s %+v", run.Status, run.CI)
	}
	if _, err := Apply(run, CIFailed{Checks: red}, now); err == nil || !strings.Contains(err.Error(), "fix rounds") {
		t.Fatalf("a round past the last: %v", err)
	}
	effects, err = Apply(run, CIGaveUp{Checks: red, Reason: ReasonCIFailed, Summary: "test still fails", Evidence: "FAIL TestAdd"}, now)
	if err != nil {
		t.Fatal(err)
	}
	ci := run.Task(CITaskID)
	if run.Status != StatusParked || ci == nil || ci.Status != TaskStatusEscalated || ci.Escalations != 1 ||
		run.ParkedTask(CITaskID) == nil || run.CI.Fix.Evidence != "FAIL TestAdd" {
		t.Fatalf("parked: %s %+v %+v", run.Status, ci, run.Parked)
	}
	if !slices.Equal(kinds(effects), []EffectKind{EffectNotify, EffectEscalation, EffectSummary}) {
		t.Fatalf("effects %v", kinds(effects))
	}

	// A person retries with guidance: the next job runs another round.
	if _, err := Apply(run, Decided{Decision: Decision{Key: "k", TaskID: CITaskID, Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "the test is right"}}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, CIDecided{Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "the test is right"}}, now); err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusRunning || run.CI.Round != 2 || run.CI.MaxRounds != 2 || run.CI.Fix.Guidance != "the test is right" ||
		run.CI.Fix.Evidence != "FAIL TestAdd" || run.Task(CITaskID).Status != TaskStatusRunning || run.Decisions[CITaskID].Key != "" {
		t.Fatalf("retried: %s %+v", run.Status, run.CI)
	}

	// Green: ready and done.
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h3"}}, now); err != nil {
		t.Fatal(err)
	}
	effects, err = Apply(run, CIPassed{Checks: []CICheckResult{{Name: "test", Conclusion: "success"}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusSucceeded || !slices.Equal(kinds(effects), []EffectKind{EffectReady, EffectNotify, EffectSummary}) {
		t.Fatalf("green: %s %v", run.Status, kinds(effects))
	}
}

func TestCIDecisions(t *testing.T) {
	for _, tc := range []struct {
		kind runner.DecisionKind
		want string
		err  bool
	}{{runner.DecisionApprove, TaskStatusPassed, false}, {runner.DecisionSkip, TaskStatusSkipped, false}, {runner.DecisionAbort, "", true}} {
		run := fixture(StatusRunning)
		effects, err := Apply(run, CIDecided{Decision: runner.Decision{Kind: tc.kind, By: "alice"}}, now)
		if tc.err {
			if err == nil {
				t.Errorf("%s: want an error", tc.kind)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != StatusSucceeded || run.Task(CITaskID).Status != tc.want || !strings.Contains(run.Task(CITaskID).Note, "@alice") ||
			kinds(effects)[0] != EffectNotify {
			t.Errorf("%s: %s %+v %v", tc.kind, run.Status, run.Task(CITaskID), kinds(effects))
		}
	}
	run := fixtureRun(StatusRunning)
	if _, err := Apply(run, CIDecided{Decision: runner.Decision{Kind: runner.DecisionApprove}}, now); err == nil {
		t.Error("a run without a CI escalation takes no CI decision")
	}
	// A rerun starts the wait again; a reading changes nothing but the checks.
	run = fixture(StatusWaitingCI)
	if _, err := Apply(run, CIRerun{Names: []string{"test"}}, now.Add(time.Hour)); err != nil || !run.CI.Since.Equal(now.Add(time.Hour)) || run.CI.Reran[0] != "test" {
		t.Fatalf("rerun: %v %+v", err, run.CI)
	}
	if _, err := Apply(run, CIPassed{None: true}, now); err != nil || !run.CI.None || run.Status != StatusSucceeded {
		t.Fatalf("no CI: %v %+v", err, run.CI)
	}
	if got := failedNames([]CICheckResult{{Name: "a", Conclusion: "success"}, {Name: "b"}, {Name: "c", Conclusion: "timed_out"}}); !slices.Equal(got, []string{"c"}) {
		t.Errorf("failed = %v", got)
	}
	if CIScope(3) != "ci-3" {
		t.Error(CIScope(3))
	}
}

// TestCIWatchEach: with ci.watch: each, a job that yields after its task waits for the CI with tasks
// left; green queues the next job instead of ending the run; a fix round in between keeps the tasks
// left; approving a red CI lets the same job go on; the last task's green readies the pull request.
func TestCIWatchEach(t *testing.T) {
	run := fixtureRun(StatusRunning)
	run.OpenedPR, run.Pause = true, nil
	watch := &CIWatch{Timeout: time.Hour, Grace: time.Minute, MaxRounds: 2, Each: true}
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h1"}, CI: watch, Yielded: true}, now); err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusWaitingCI || !run.CI.More || run.CI.Head != "h1" {
		t.Fatalf("after task 1: %s %+v", run.Status, run.CI)
	}
	// Red: a fix round, whose job ends without yielding; the tasks are still left.
	if _, err := Apply(run, CIFailed{Fix: CIFix{Checks: []string{"test"}}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h2"}}, now); err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusWaitingCI || !run.CI.More {
		t.Fatalf("after the fix round: %s %+v", run.Status, run.CI)
	}
	effects, err := Apply(run, CIPassed{Checks: []CICheckResult{{Name: "test", Conclusion: "success"}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusQueued || run.CI.More || !slices.Equal(kinds(effects), []EffectKind{EffectContinue, EffectSummary}) || effects[0].Key != "ci-next-h2" {
		t.Fatalf("green with tasks left: %s %+v %+v", run.Status, run.CI, effects)
	}
	// The next job yields again, and its CI stays red past the rounds: approved, the job goes on.
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h3"}, Yielded: true}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, CIGaveUp{Reason: ReasonCIFailed, Summary: "lint fails"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, Decided{Decision: Decision{Key: "k", TaskID: CITaskID, Decision: runner.Decision{Kind: runner.DecisionApprove, By: "alice"}}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(run, JobStarted{}, now); err != nil {
		t.Fatal(err)
	}
	effects, err = Apply(run, CIDecided{Decision: runner.Decision{Kind: runner.DecisionApprove, By: "alice"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusRunning || run.CI.More || !slices.Equal(kinds(effects), []EffectKind{EffectSummary}) {
		t.Fatalf("approved with tasks left: %s %+v %v", run.Status, run.CI, kinds(effects))
	}
	// The last task: no yield, green ends the run.
	if _, err := Apply(run, EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Head: "h4"}}, now); err != nil {
		t.Fatal(err)
	}
	effects, err = Apply(run, CIPassed{}, now)
	if err != nil || run.Status != StatusSucceeded || kinds(effects)[0] != EffectReady {
		t.Fatalf("last green: %v %s %v", err, run.Status, kinds(effects))
	}

	// A run without a pull request has no CI to wait for: a yield queues the next job at once.
	bare := fixtureRun(StatusRunning)
	bare.PR, bare.Pause = 0, nil
	effects, err = Apply(bare, EngineFinished{Status: StatusSucceeded, Yielded: true}, now)
	if err != nil || bare.Status != StatusQueued || kinds(effects)[0] != EffectContinue {
		t.Fatalf("yield without a pull request: %v %s %v", err, bare.Status, kinds(effects))
	}
}
