package lifecycle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner"
)

var now = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// fixture is a run in the given state with a task of each kind: 1.1 running with an open check run,
// 1.2 escalated and parked, 1.3 pending, 1.4 passed with a completed check run.
func fixture(s RunStatus) *Run {
	r := fixtureRun(s)
	r.CI = &CIWatch{Head: "h", Since: now.Add(-time.Minute), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 2}
	r.Tasks = append(r.Tasks, &TaskState{ID: CITaskID, Title: "the pull request's CI", Status: TaskStatusEscalated})
	return r
}

func fixtureRun(s RunStatus) *Run {
	return &Run{ID: "r1", Status: s, Issue: 5, PR: 7, Sender: "alice", Jobs: 2, Rev: 9, Roadmap: "ROADMAP.md",
		Tasks: []*TaskState{
			{ID: "1.1", Title: "one", Status: TaskStatusRunning, CheckRunID: 11},
			{ID: "1.2", Title: "two", Status: TaskStatusEscalated, CheckRunID: 12, CheckRunDone: true},
			{ID: "1.3", Title: "three", Status: TaskStatusPending},
			{ID: "1.4", Title: "four", Status: TaskStatusPassed, CheckRunID: 14, CheckRunDone: true, Checkpoint: "c4"},
		},
		Parked: []Parked{{TaskID: "1.2", HeadSHA: "h"}},
		Stop:   &StopRequest{By: "bob", At: now},
		Pause:  &PauseRequest{By: "gina", Now: true, At: now},
	}
}

// sample is an event of each kind, as the jobs make them.
func sample(kind EventKind) Event {
	switch kind {
	case EventCreated:
		return Created{}
	case EventRebuilt:
		return Rebuilt{Head: "h", Tasks: []RebuiltTask{{ID: "1.1", Done: true, Checkpoint: "c1"}, {ID: "1.2", Parked: true}, {ID: "1.3"}}}
	case EventJobStarted:
		return JobStarted{Dashboard: "https://akira.example"}
	case EventJobRequeued:
		return JobRequeued{}
	case EventPlanRead:
		return PlanRead{Engine: runner.Event{Commit: "h2", Tasks: []runner.TaskResult{{ID: "1.1", Title: "one", Status: runner.TaskPending},
			{ID: "1.2", Title: "two", Status: runner.TaskPending}, {ID: "1.3", Title: "three", Status: runner.TaskPending},
			{ID: "1.4", Title: "four", Status: runner.TaskDone, Commit: "c4"}}}}
	case EventTaskStarted:
		return TaskStarted{Engine: runner.Event{TaskID: "1.3", Accept: []string{"works"}}}
	case EventAttemptStarted:
		return AttemptStarted{Engine: runner.Event{TaskID: "1.3", Attempt: 1}}
	case EventTaskCheckpointed:
		return TaskCheckpointed{Engine: runner.Event{TaskID: "1.1", Commit: "c1", Attempt: 2, Duration: time.Minute}}
	case EventTaskSkipped:
		return TaskSkipped{Engine: runner.Event{TaskID: "1.2", Message: "skipped by alice"}}
	case EventTaskParked:
		return TaskParked{Fresh: true, Escalation: &runner.Escalation{TaskID: "1.1", Attempts: 3, Reason: "max_attempts", Summary: "tests fail"}}
	case EventEngineFinished:
		return EngineFinished{Status: StatusSucceeded, Outcome: runner.Outcome{Status: runner.StatusSucceeded, Head: "h3"}}
	case EventDecided:
		return Decided{Decision: Decision{Key: "resume:1", TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, By: "carol"}}}
	case EventStopAsked:
		return StopAsked{Request: StopRequest{By: "dave", At: now}}
	case EventStopped:
		return Stopped{}
	case EventTakenAway:
		return TakenAway{Why: "pull request #7 was closed"}
	case EventFailed:
		return Failed{Message: "the plan no longer parses"}
	case EventRevived:
		return Revived{}
	case EventBudgetRaised:
		return BudgetRaised{CostUSD: 20, Key: "budget-d1", By: "erin"}
	case EventRolledBack:
		return RolledBack{Reverted: map[string]string{"1.4": "rolled back by @frank (r4)"}, Texts: map[string]string{"1.4": "reverted"},
			Head: "h4", By: "frank", Task: "1.4", Key: "rollback:1"}
	case EventCIRead:
		return CIRead{Checks: []CICheckResult{{Name: "test"}}}
	case EventCIPassed:
		return CIPassed{Checks: []CICheckResult{{Name: "test", Conclusion: "success"}}}
	case EventCIRerun:
		return CIRerun{Checks: []CICheckResult{{Name: "test"}}, Names: []string{"test"}}
	case EventCIFailed:
		return CIFailed{Checks: []CICheckResult{{Name: "test", Conclusion: "failure"}}, Fix: CIFix{Checks: []string{"test"}, Evidence: "FAIL"}}
	case EventCIGaveUp:
		return CIGaveUp{Checks: []CICheckResult{{Name: "test", Conclusion: "failure"}}, Reason: ReasonCIFailed, Summary: "test fails", Evidence: "FAIL"}
	case EventCIAborted:
		return CIAborted{By: "alice"}
	case EventCIDecided:
		return CIDecided{Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "look at the log"}}
	case EventPauseAsked:
		return PauseAsked{Request: PauseRequest{By: "gina", At: now}}
	case EventPaused:
		return Paused{}
	case EventResumed:
		return Resumed{By: "hank"}
	case EventPauseAborted:
		return PauseAborted{By: "ivan"}
	}
	panic("no sample for " + kind)
}

func kinds(es []Effect) []EffectKind {
	var out []EffectKind
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}

// TestEveryStateAndEvent walks every (state, event) pair: the allowed ones end in the documented state
// with the documented effects, the rest are a *TransitionError naming both and change nothing.
func TestEveryStateAndEvent(t *testing.T) {
	type outcome struct {
		to      RunStatus
		effects []EffectKind
	}
	sum, conclude := EffectSummary, EffectConcludeCheckRuns
	progress := []EffectKind{EffectCheckRun, sum}
	want := map[RunStatus]map[EventKind]outcome{
		StatusNew: {
			EventCreated: {StatusQueued, nil},
		},
		StatusQueued: {
			EventRebuilt:    {StatusParked, nil},
			EventJobStarted: {StatusRunning, nil},
			EventDecided:    {StatusQueued, []EffectKind{EffectContinue, sum}},
			EventStopAsked:  {StatusQueued, nil},
			EventFailed:     {StatusFailed, []EffectKind{EffectNotify, sum}},
			EventPauseAsked: {StatusQueued, nil},
			EventResumed:    {StatusQueued, nil},
		},
		StatusRunning: {
			EventJobStarted:       {StatusRunning, nil},
			EventJobRequeued:      {StatusQueued, nil},
			EventPlanRead:         {StatusRunning, []EffectKind{sum}},
			EventTaskStarted:      {StatusRunning, progress},
			EventAttemptStarted:   {StatusRunning, progress},
			EventTaskCheckpointed: {StatusRunning, []EffectKind{EffectMetric, EffectCheckRun, sum}},
			EventTaskSkipped:      {StatusRunning, []EffectKind{EffectMetric, EffectCheckRun, sum}},
			EventTaskParked:       {StatusRunning, []EffectKind{EffectMetric, EffectNotify, EffectCheckRun, EffectEscalation, sum}},
			EventEngineFinished:   {StatusWaitingCI, []EffectKind{sum}}, // the fixture watches its CI
			EventDecided:          {StatusRunning, []EffectKind{EffectContinue, sum}},
			EventStopAsked:        {StatusRunning, nil},
			EventStopped:          {StatusStopped, []EffectKind{conclude, sum}},
			EventCIDecided:        {StatusRunning, []EffectKind{sum}},
			EventTakenAway:        {StatusAborted, []EffectKind{conclude, sum, EffectReply}},
			EventFailed:           {StatusFailed, []EffectKind{EffectNotify, sum}},
			EventPauseAsked:       {StatusRunning, nil},
			EventPaused:           {StatusPaused, []EffectKind{conclude, sum}},
			EventResumed:          {StatusRunning, nil},
		},
		StatusPaused: {
			EventResumed:      {StatusQueued, []EffectKind{EffectContinue, sum}},
			EventPauseAborted: {StatusAborted, []EffectKind{sum}},
		},
		StatusWaitingCI: {
			EventCIRead:    {StatusWaitingCI, []EffectKind{sum}},
			EventCIPassed:  {StatusSucceeded, []EffectKind{EffectNotify, sum}},
			EventCIRerun:   {StatusWaitingCI, []EffectKind{sum}},
			EventCIFailed:  {StatusQueued, []EffectKind{EffectContinue, sum}},
			EventCIGaveUp:  {StatusParked, []EffectKind{EffectNotify, EffectEscalation, sum}},
			EventCIAborted: {StatusAborted, []EffectKind{sum}},
		},
		StatusParked: {
			EventDecided:      {StatusQueued, []EffectKind{EffectContinue, sum}},
			EventBudgetRaised: {StatusQueued, nil},
		},
		StatusStopped: {
			EventRevived:    {StatusQueued, nil},
			EventRolledBack: {StatusStopped, []EffectKind{conclude, sum}},
		},
		StatusSucceeded: {EventRolledBack: {StatusStopped, []EffectKind{conclude, sum}}},
		StatusFailed:    {EventRolledBack: {StatusStopped, []EffectKind{conclude, sum}}},
		StatusAborted:   {EventEngineFinished: {StatusAborted, []EffectKind{sum}}},
	}
	for _, from := range append([]RunStatus{StatusNew}, RunStatuses...) {
		for _, rule := range Table {
			t.Run(string(from)+"/"+string(rule.Event), func(t *testing.T) {
				run := fixture(from)
				if rule.Event == EventRebuilt {
					run.Rev = 0 // a run just planned, not stored
				}
				before, list, stored := clone(run), slices.Clone(run.Tasks), tasksAsStored(t, run)
				effects, err := Apply(run, sample(rule.Event), now)
				notChangedInPlace(t, stored)
				w, allowed := want[from][rule.Event]
				if allowed != Allowed(from, rule.Event) {
					t.Fatalf("the test says allowed=%v, the table %v", allowed, !allowed)
				}
				if !allowed {
					var te *TransitionError
					if !errors.As(err, &te) || te.Event != rule.Event || te.From != string(from) || !errors.Is(err, ErrTransition) {
						t.Fatalf("err = %v, want a TransitionError for %q in %q", err, rule.Event, from)
					}
					if !strings.Contains(err.Error(), string(rule.Event)) || (from != StatusNew && !strings.Contains(err.Error(), string(from))) {
						t.Fatalf("the error %q must name the event and the state", err)
					}
					if !reflect.DeepEqual(run, before) || !slices.Equal(run.Tasks, list) {
						t.Fatalf("a refused event changed the run:\n%+v\n%+v", run, before)
					}
					return
				}
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if run.Status != w.to {
					t.Fatalf("status = %q, want %q", run.Status, w.to)
				}
				if got := kinds(effects); !slices.Equal(got, w.effects) {
					t.Fatalf("effects = %v, want %v", got, w.effects)
				}
				if rule.Durable {
					if len(run.Outbox) != len(effects) {
						t.Fatalf("outbox = %+v, want the %d effects", run.Outbox, len(effects))
					}
					for i, e := range effects {
						if e.ID == "" || run.Outbox[i].ID != e.ID {
							t.Fatalf("effect %d has id %q, outbox %q", i, e.ID, run.Outbox[i].ID)
						}
					}
				} else if len(run.Outbox) != 0 {
					t.Fatalf("a transition that is not durable wrote its effects to the outbox: %+v", run.Outbox)
				}
			})
		}
	}
}

// TestTaskTable: every move Apply makes of a task is one the task table lists, and a task event on a
// task in a state the table does not allow to move is refused with both named.
func TestTaskTable(t *testing.T) {
	for _, s := range TaskStatuses {
		if _, ok := TaskTable[s]; !ok {
			t.Errorf("task state %q has no row", s)
		}
	}
	run := fixture(StatusRunning)
	run.Task("1.1").Status = TaskStatusAborted // the fixture is the test's own: nothing shares it
	before, list, stored := clone(run), slices.Clone(run.Tasks), tasksAsStored(t, run)
	_, err := Apply(run, sample(EventTaskCheckpointed), now)
	notChangedInPlace(t, stored)
	var te *TransitionError
	if !errors.As(err, &te) || te.Task != "1.1" || te.From != TaskStatusAborted || !strings.Contains(err.Error(), "task 1.1") {
		t.Fatalf("err = %v, want the task's refusal", err)
	}
	if te.Run != "r1" {
		t.Errorf("the refusal names run %q", te.Run)
	}
	if !reflect.DeepEqual(run, before) || !slices.Equal(run.Tasks, list) {
		t.Fatal("a refused task event changed the run (or left a task it replaced in the list)")
	}
	// Events about a task the run does not have name it.
	for _, ev := range []Event{TaskStarted{Engine: runner.Event{TaskID: "9.9"}}, AttemptStarted{Engine: runner.Event{TaskID: "9.9"}},
		TaskCheckpointed{Engine: runner.Event{TaskID: "9.9"}}, TaskSkipped{Engine: runner.Event{TaskID: "9.9"}},
		TaskParked{Escalation: &runner.Escalation{TaskID: "9.9"}}} {
		if _, err := Apply(fixture(StatusRunning), ev, now); err == nil || !strings.Contains(err.Error(), "9.9") {
			t.Errorf("%s of an unknown task: err = %v", ev.Kind(), err)
		}
	}
}

func TestOutcomes(t *testing.T) {
	t.Run("stop asked to abort ends the run and cancels its open check runs", func(t *testing.T) {
		run := fixture(StatusRunning)
		run.Stop = nil
		if _, err := Apply(run, StopAsked{Request: StopRequest{By: "bob"}}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(run, StopAsked{Request: StopRequest{By: "carol", Abort: true}}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(run, StopAsked{Request: StopRequest{By: "dave"}}, now); err != nil {
			t.Fatal(err)
		}
		if run.Stop.By != "carol" || !run.Stop.Abort {
			t.Fatalf("stop = %+v: an abort wins over a stop, and a later stop does not undo it", run.Stop)
		}
		effects, err := Apply(run, Stopped{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != StatusAborted || run.AbortedBy != "carol" || run.Stop != nil || len(run.Parked) != 0 {
			t.Fatalf("run = %+v", run)
		}
		if !slices.Equal(effects[0].TaskIDs, []string{"1.1"}) || effects[0].Conclusion != ConclusionCancelled ||
			!strings.Contains(effects[0].Text, "@carol") {
			t.Fatalf("effects = %+v", effects)
		}
		for _, id := range []string{"1.1", "1.2", "1.3"} {
			if s := run.Task(id).Status; s != TaskStatusAborted {
				t.Errorf("task %s = %s", id, s)
			}
		}
		if run.Task("1.4").Status != TaskStatusPassed {
			t.Error("a passed task must stay passed")
		}
	})
	t.Run("stopped without a request is refused", func(t *testing.T) {
		run := fixture(StatusRunning)
		run.Stop = nil
		if _, err := Apply(run, Stopped{}, now); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("stopped: the running task is pending again", func(t *testing.T) {
		run := fixture(StatusRunning)
		if _, err := Apply(run, Stopped{}, now); err != nil {
			t.Fatal(err)
		}
		if run.StoppedBy != "bob" || run.Task("1.1").Status != TaskStatusPending {
			t.Fatalf("run = %+v", run)
		}
	})
	t.Run("abort decision keeps the parked tasks for their check runs", func(t *testing.T) {
		run := fixture(StatusParked)
		effects, err := Apply(run, Decided{Decision: Decision{TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionAbort, By: "carol"}}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != StatusAborted || run.AnsweredBy != "carol" || run.AbortedBy != "carol" || len(run.Parked) != 1 || run.Decisions != nil {
			t.Fatalf("run = %+v", run)
		}
		if kinds(effects)[0] != EffectConcludeCheckRuns || !slices.Equal(effects[0].TaskIDs, []string{"1.2"}) || effects[0].Title != "Aborted" {
			t.Fatalf("effects = %+v", effects)
		}
	})
	t.Run("a decision on a task that is not parked is refused", func(t *testing.T) {
		run := fixture(StatusParked)
		if _, err := Apply(run, Decided{Decision: Decision{TaskID: "1.3"}}, now); err == nil || !strings.Contains(err.Error(), "1.3") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("engine finished with decisions taken meanwhile queues the run", func(t *testing.T) {
		run := fixture(StatusRunning)
		run.Decisions = map[string]Decision{"1.2": {Key: "k", TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry}}}
		effects, err := Apply(run, EngineFinished{Status: StatusParked, Outcome: runner.Outcome{Status: runner.StatusParked,
			Parked: []runner.Escalation{{TaskID: "1.2"}}}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != StatusQueued || len(run.Parked) != 0 || !slices.Equal(kinds(effects), []EffectKind{EffectContinue, EffectSummary}) ||
			effects[0].Key != "late-2" || effects[0].By != "alice" {
			t.Fatalf("run %s, effects %+v", run.Status, effects)
		}
	})
	t.Run("engine failed", func(t *testing.T) {
		run := fixture(StatusRunning)
		effects, err := Apply(run, EngineFinished{Status: StatusFailed, Outcome: runner.Outcome{Error: "boom"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if run.Error != "boom" || effects[0].Event != "run_failed" || effects[0].Reason != "boom" || effects[0].Occasion != "failed-2" {
			t.Fatalf("effects = %+v", effects)
		}
	})
	t.Run("failed before any checkpoint closes its own empty pull request", func(t *testing.T) {
		run := fixture(StatusRunning)
		run.OpenedPR, run.Tasks[3].Checkpoint = true, ""
		effects, err := Apply(run, Failed{Message: "bad"}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kinds(effects), []EffectKind{EffectNotify, EffectClosePullRequest, EffectSummary}) || run.Task("1.1").Status != TaskStatusFailed {
			t.Fatalf("effects %v, task %s", kinds(effects), run.Task("1.1").Status)
		}
	})
	t.Run("parked: a task kept parked across jobs posts nothing new", func(t *testing.T) {
		run := fixture(StatusRunning)
		effects, err := Apply(run, TaskParked{Escalation: &runner.Escalation{TaskID: "1.2", Reason: "awaiting_decision"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kinds(effects), []EffectKind{EffectEscalation, EffectSummary}) || run.Task("1.2").Escalations != 0 {
			t.Fatalf("effects %v, task %+v", kinds(effects), run.Task("1.2"))
		}
	})
	t.Run("budget parked notifies budget_reached", func(t *testing.T) {
		run := fixture(StatusRunning)
		effects, err := Apply(run, TaskParked{Fresh: true, Escalation: &runner.Escalation{TaskID: "1.1", Reason: runner.ReasonBudget}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if effects[1].Event != "budget_reached" || effects[1].Occasion != "1.1-1" || len(run.Parked) != 2 {
			t.Fatalf("effects = %+v", effects)
		}
	})
	t.Run("budget raised retries every parked task", func(t *testing.T) {
		run := fixture(StatusParked)
		if _, err := Apply(run, sample(EventBudgetRaised), now); err != nil {
			t.Fatal(err)
		}
		if d := run.Decisions["1.2"]; d.Kind != runner.DecisionRetry || d.Key != "budget-d1" || run.Budget.CostUSD != 20 || len(run.Parked) != 0 {
			t.Fatalf("run = %+v", run)
		}
	})
	t.Run("rolled back with retry queues the run with a decision", func(t *testing.T) {
		run := fixture(StatusSucceeded)
		ev := sample(EventRolledBack).(RolledBack)
		ev.Retry, ev.Guidance = true, "smaller"
		effects, err := Apply(run, ev, now)
		if err != nil {
			t.Fatal(err)
		}
		tk := run.Task("1.4")
		if run.Status != StatusQueued || tk.Status != TaskStatusPending || tk.Checkpoint != "" || run.Decisions["1.4"].Guidance != "smaller" || run.Head != "h4" {
			t.Fatalf("run = %+v", run)
		}
		if !slices.Equal(kinds(effects), []EffectKind{EffectConcludeCheckRuns, EffectContinue, EffectSummary}) || effects[0].Conclusion != ConclusionNeutral {
			t.Fatalf("effects = %+v", effects)
		}
	})
	t.Run("rebuilt with nothing parked is refused", func(t *testing.T) {
		run := &Run{ID: "r2", Status: StatusQueued}
		if _, err := Apply(run, Rebuilt{Tasks: []RebuiltTask{{ID: "1.1"}}}, now); err == nil || run.Status != StatusQueued {
			t.Fatalf("err %v, status %q", err, run.Status)
		}
	})
	t.Run("a settled rebuild with nothing parked is at rest", func(t *testing.T) {
		for _, tt := range []struct {
			tasks []RebuiltTask
			want  RunStatus
		}{
			{[]RebuiltTask{{ID: "1.1", Done: true}, {ID: "1.2", Done: true}}, StatusSucceeded},
			{[]RebuiltTask{{ID: "1.1", Done: true}, {ID: "1.2"}}, StatusStopped},
			{[]RebuiltTask{{ID: "1.1", Done: true}, {ID: "1.2", Parked: true}}, StatusParked},
		} {
			run := &Run{ID: "r5", Status: StatusQueued}
			if _, err := Apply(run, Rebuilt{Tasks: tt.tasks, Settled: true}, now); err != nil || run.Status != tt.want {
				t.Errorf("%+v: status %q, err %v; want %q", tt.tasks, run.Status, err, tt.want)
			}
		}
	})
	t.Run("a stored run is not rebuilt", func(t *testing.T) {
		run := fixture(StatusQueued)
		if _, err := Apply(run, sample(EventRebuilt), now); err == nil || !strings.Contains(err.Error(), "stored") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("plan read keeps the other plans' tasks in order", func(t *testing.T) {
		run := &Run{ID: "r3", Status: StatusRunning, Roadmap: "ROADMAP.md", Plans: []string{"a.md", "b.md", "c.md"},
			Tasks: []*TaskState{{ID: "a.md#1", Status: TaskStatusPassed}, {ID: "b.md#1", Status: TaskStatusRunning},
				{ID: "c.md#1", Status: TaskStatusPending}}}
		_, err := Apply(run, PlanRead{Engine: runner.Event{Tasks: []runner.TaskResult{{ID: "b.md#1", Status: runner.TaskPending},
			{ID: "b.md#2", Status: runner.TaskSkipped}}}, Past: []time.Duration{time.Second}}, now)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tk := range run.Tasks {
			ids = append(ids, tk.ID+"="+tk.Status)
		}
		if want := []string{"a.md#1=passed", "b.md#1=pending", "b.md#2=skipped", "c.md#1=pending"}; !slices.Equal(ids, want) || len(run.PastDurations) != 1 {
			t.Fatalf("tasks = %v, want %v", ids, want)
		}
	})
	t.Run("a task a dead job left running keeps its attempt as interrupted, once", func(t *testing.T) {
		run := &Run{ID: "r4", Status: StatusRunning, Tasks: []*TaskState{
			{ID: "1", Status: TaskStatusPassed, Attempts: 1},
			{ID: "2", Status: TaskStatusRunning, Attempts: 2},
			{ID: "3", Status: TaskStatusRunning}, // the job died before its first attempt
		}}
		read := PlanRead{Engine: runner.Event{Tasks: []runner.TaskResult{{ID: "1", Status: runner.TaskDone},
			{ID: "2", Status: runner.TaskPending}, {ID: "3", Status: runner.TaskPending}}}}
		for i := range 2 { // the second read (a later plan, a retried job) finds nothing running
			kept := slices.Clone(run.Tasks)
			if _, err := Apply(run, read, now); err != nil {
				t.Fatal(err)
			}
			// A task the read leaves as it was stays the stored one (the store writes the tasks
			// replaced); the first read changes 2 and 3 only.
			for j, tk := range run.Tasks {
				if same, want := tk == kept[j], i == 1 || tk.ID == "1"; same != want {
					t.Errorf("read %d: task %s kept its pointer: %v, want %v", i+1, tk.ID, same, want)
				}
			}
		}
		if got := run.Task("2"); got.Status != TaskStatusPending || !slices.Equal(got.Interrupted, []int{2}) {
			t.Errorf("task 2 = %s %v, want pending with attempt 2 interrupted", got.Status, got.Interrupted)
		}
		if got := run.Task("3"); got.Interrupted != nil {
			t.Errorf("task 3 interrupted %v, want none (no attempt started)", got.Interrupted)
		}
		if got := run.Task("1"); got.Interrupted != nil {
			t.Errorf("task 1 interrupted %v, want none", got.Interrupted)
		}
	})
}

// tasksAsStored is each task of the run as JSON, by its pointer: what a store's readers share.
func tasksAsStored(t *testing.T, r *Run) map[*TaskState]string {
	t.Helper()
	out := make(map[*TaskState]string, len(r.Tasks))
	for _, tk := range r.Tasks {
		data, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		out[tk] = string(data)
	}
	return out
}

// notChangedInPlace fails when a task held before an event was changed in place: an event changes a
// task through EditTask, since a stored run's tasks are shared with its readers.
func notChangedInPlace(t *testing.T, stored map[*TaskState]string) {
	t.Helper()
	for tk, was := range stored {
		if data, _ := json.Marshal(tk); string(data) != was {
			t.Errorf("task %s was changed in place:\n%s\nwas\n%s", tk.ID, data, was)
		}
	}
}

// TestOutbox: effects of one write get distinct ids, Done removes one once, and a refused event leaves
// the outbox as it was.
func TestOutbox(t *testing.T) {
	run := fixture(StatusRunning)
	a, err := Apply(run, TakenAway{Why: "gone"}, now)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range run.Outbox {
		if ids[e.ID] {
			t.Fatalf("duplicate effect id %s", e.ID)
		}
		ids[e.ID] = true
	}
	if len(ids) != len(a) || !strings.HasPrefix(a[0].ID, "10.") {
		t.Fatalf("effect ids %v (revision 9 writes revision 10)", ids)
	}
	if !Done(run, a[0].ID) || Done(run, a[0].ID) || len(run.Outbox) != len(a)-1 {
		t.Fatalf("Done: outbox %+v", run.Outbox)
	}
	if _, err := Apply(run, Revived{}, now); err == nil || len(run.Outbox) != len(a)-1 {
		t.Fatal("a refused event must leave the outbox alone")
	}
	if rule, ok := RuleOf("no such event"); ok || rule.Event != "" || Allowed(StatusQueued, "no such event") {
		t.Fatal("an unknown event has no rule")
	}
}

// TestEffectKindsAreListed: every effect kind a rule names is a known kind, so the publisher can
// perform it.
func TestEffectKindsAreListed(t *testing.T) {
	for _, rule := range Table {
		for _, k := range rule.Effects {
			if !slices.Contains(Kinds, k) {
				t.Errorf("%s names unknown effect %s", rule.Event, k)
			}
		}
		if len(rule.Moves) == 0 {
			t.Errorf("%s has no moves", rule.Event)
		}
	}
	te := &TransitionError{Run: "r", From: "running", Event: EventCreated, To: "parked"}
	if !strings.Contains(te.Error(), "led to parked") {
		t.Errorf("error = %q", te)
	}
}

// TestDiagramInDocs: the architecture page (docs/architecture.md) shows the diagram and the table generated
// from the code; run `go test ./jobs/lifecycle -run TestDiagramInDocs -update` after changing the
// table to write them.
func TestDiagramInDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "architecture.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	want := "<!-- lifecycle:begin (generated: AKIRA_UPDATE_README=1 go test ./jobs/lifecycle) -->\n```mermaid\n" + Diagram() +
		"```\n\n" + TableMarkdown() + "<!-- lifecycle:end -->"
	start := strings.Index(readme, "<!-- lifecycle:begin")
	end := strings.Index(readme, "<!-- lifecycle:end -->")
	if start < 0 || end < start {
		t.Fatal("docs/architecture.md has no lifecycle section (<!-- lifecycle:begin … --> … <!-- lifecycle:end -->)")
	}
	got := readme[start : end+len("<!-- lifecycle:end -->")]
	if got == want {
		return
	}
	if os.Getenv("AKIRA_UPDATE_README") == "1" {
		if err := os.WriteFile(path, []byte(readme[:start]+want+readme[end+len("<!-- lifecycle:end -->"):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("the lifecycle diagram of docs/architecture.md differs from the table; regenerate it with AKIRA_UPDATE_README=1 go test ./jobs/lifecycle -run TestDiagramInDocs\n--- got\n%s\n--- want\n%s", got, want)
}

// TestDiagramDrawsEveryMove: each move between two states is an arrow labelled with its event.
func TestDiagramDrawsEveryMove(t *testing.T) {
	d := Diagram()
	for _, rule := range Table {
		for _, m := range rule.Moves {
			if m.From == m.To {
				continue
			}
			from := string(m.From)
			if m.From == StatusNew {
				from = "[*]"
			}
			line := ""
			for _, l := range strings.Split(d, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), from+" --> "+string(m.To)+":") {
					line = l
				}
			}
			if !strings.Contains(line, string(rule.Event)) {
				t.Errorf("no arrow %s --> %s labelled %q", from, m.To, rule.Event)
			}
		}
	}
}
