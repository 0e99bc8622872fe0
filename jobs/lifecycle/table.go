package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// StatusNew is the state of a run before it is stored: Created and Rebuilt start from it.
const StatusNew RunStatus = ""

// Move is a change of a run's state, from one state to another (or to the same: progress).
type Move struct{ From, To RunStatus }

// Rule is one row of the run's transition table: the moves an event may make (which one, the event's
// data decides) and the effects it may require.
type Rule struct {
	Event EventKind
	Moves []Move
	// Effects are the kinds of effects the transition may return, for people reading the table; Apply
	// checks every effect an event returns is among them.
	Effects []EffectKind
	// Durable says the effects are written to the run's outbox with the transition, so that a worker
	// that dies before performing them leaves them to the next (see Effect). The effects of engine
	// progress are not: the job that continues a dead worker's run reads the branch again, finds its
	// tasks where they are and shows them (check runs left in progress are concluded, escalation
	// comments found by their markers), which repairs more than a replay could.
	Durable bool
}

// From are the states the rule's event may happen in.
func (r Rule) From() []RunStatus {
	var out []RunStatus
	for _, m := range r.Moves {
		if !slices.Contains(out, m.From) {
			out = append(out, m.From)
		}
	}
	return out
}

// moves makes a move from each of from to each of to.
func moves(from []RunStatus, to ...RunStatus) []Move {
	var out []Move
	for _, f := range from {
		for _, t := range to {
			out = append(out, Move{f, t})
		}
	}
	return out
}

// stay is progress within each state.
func stay(states ...RunStatus) []Move {
	out := make([]Move, len(states))
	for i, s := range states {
		out[i] = Move{s, s}
	}
	return out
}

func one(s RunStatus) []RunStatus { return []RunStatus{s} }

var progress = []EffectKind{EffectCheckRun, EffectSummary}

// Table is the run's transition table: every status change of a run is one of its rows.
var Table = []Rule{
	{Event: EventCreated, Moves: moves(one(StatusNew), StatusQueued)},
	// A run planned for a decision (created, not stored) whose branch belongs to a lost run that waits,
	// or (settled) for a rollback of a lost run at rest.
	{Event: EventRebuilt, Moves: moves(one(StatusQueued), StatusParked, StatusSucceeded, StatusStopped)},
	{Event: EventJobStarted, Moves: moves([]RunStatus{StatusQueued, StatusRunning}, StatusRunning)},
	{Event: EventJobRequeued, Moves: moves(one(StatusRunning), StatusQueued)},
	{Event: EventPlanRead, Moves: stay(StatusRunning), Effects: []EffectKind{EffectSummary}},
	{Event: EventTaskStarted, Moves: stay(StatusRunning), Effects: progress},
	{Event: EventAttemptStarted, Moves: stay(StatusRunning), Effects: progress},
	{Event: EventTaskCheckpointed, Moves: stay(StatusRunning), Effects: []EffectKind{EffectMetric, EffectCheckRun, EffectSummary}},
	{Event: EventTaskSkipped, Moves: stay(StatusRunning), Effects: []EffectKind{EffectMetric, EffectCheckRun, EffectSummary}},
	{Event: EventTaskParked, Moves: stay(StatusRunning),
		Effects: []EffectKind{EffectMetric, EffectNotify, EffectCheckRun, EffectEscalation, EffectSummary}},
	// A run aborted while its job ran stays aborted; decisions taken while it ran queue it again.
	{Event: EventEngineFinished,
		Moves: append(moves(one(StatusRunning), StatusSucceeded, StatusWaitingCI, StatusParked, StatusFailed, StatusAborted, StatusQueued, StatusPaused),
			stay(StatusAborted)...),
		Effects: []EffectKind{EffectContinue, EffectNotify, EffectSummary}, Durable: true},
	// A task is parked (in Parked) before its escalation comment appears, while the job may still work
	// on other tasks: a running run takes decisions too, and its job hands them on when it ends; a run
	// queued by a decision on one parked task still takes decisions on the rest.
	{Event: EventDecided,
		Moves: append(append(moves(one(StatusParked), StatusQueued, StatusAborted), moves(one(StatusQueued), StatusQueued, StatusAborted)...),
			moves(one(StatusRunning), StatusRunning, StatusAborted)...),
		Effects: []EffectKind{EffectConcludeCheckRuns, EffectContinue, EffectSummary}, Durable: true},
	{Event: EventStopAsked, Moves: stay(StatusQueued, StatusRunning)},
	{Event: EventPauseAsked, Moves: stay(StatusQueued, StatusRunning)},
	{Event: EventPaused, Moves: moves(one(StatusRunning), StatusPaused),
		Effects: []EffectKind{EffectConcludeCheckRuns, EffectSummary}, Durable: true},
	{Event: EventResumed, Moves: append(moves(one(StatusPaused), StatusQueued), stay(StatusQueued, StatusRunning)...),
		Effects: []EffectKind{EffectContinue, EffectSummary}, Durable: true},
	{Event: EventPauseAborted, Moves: moves(one(StatusPaused), StatusAborted), Effects: []EffectKind{EffectSummary}, Durable: true},
	{Event: EventStopped, Moves: moves(one(StatusRunning), StatusStopped, StatusAborted),
		Effects: []EffectKind{EffectConcludeCheckRuns, EffectSummary}, Durable: true},
	{Event: EventTakenAway, Moves: moves(one(StatusRunning), StatusAborted),
		Effects: []EffectKind{EffectConcludeCheckRuns, EffectSummary, EffectReply}, Durable: true},
	{Event: EventFailed, Moves: moves([]RunStatus{StatusQueued, StatusRunning}, StatusFailed),
		Effects: []EffectKind{EffectNotify, EffectClosePullRequest, EffectSummary}, Durable: true},
	{Event: EventRevived, Moves: moves(one(StatusStopped), StatusQueued)},
	{Event: EventBudgetRaised, Moves: moves(one(StatusParked), StatusQueued)},
	{Event: EventRolledBack, Moves: moves([]RunStatus{StatusSucceeded, StatusFailed, StatusStopped}, StatusQueued, StatusStopped),
		Effects: []EffectKind{EffectConcludeCheckRuns, EffectContinue, EffectSummary}, Durable: true},
	// The pull request's own CI (ci.go).
	{Event: EventCIRead, Moves: stay(StatusWaitingCI), Effects: []EffectKind{EffectSummary}, Durable: true},
	{Event: EventCIRerun, Moves: stay(StatusWaitingCI), Effects: []EffectKind{EffectSummary}, Durable: true},
	{Event: EventCIPassed, Moves: moves(one(StatusWaitingCI), StatusSucceeded, StatusQueued),
		Effects: []EffectKind{EffectReady, EffectNotify, EffectContinue, EffectSummary}, Durable: true},
	{Event: EventCIFailed, Moves: moves(one(StatusWaitingCI), StatusQueued), Effects: []EffectKind{EffectContinue, EffectSummary}, Durable: true},
	{Event: EventCIGaveUp, Moves: moves(one(StatusWaitingCI), StatusParked),
		Effects: []EffectKind{EffectNotify, EffectEscalation, EffectSummary}, Durable: true},
	{Event: EventCIAborted, Moves: moves(one(StatusWaitingCI), StatusAborted), Effects: []EffectKind{EffectSummary}, Durable: true},
	{Event: EventCIDecided, Moves: append(stay(StatusRunning), moves(one(StatusRunning), StatusSucceeded)...),
		Effects: []EffectKind{EffectReady, EffectNotify, EffectSummary}, Durable: true},
}

// TaskStatuses are a task's states.
var TaskStatuses = func() []string {
	out := make([]string, len(taskStatusTable))
	for i, info := range taskStatusTable {
		out[i] = info.Status
	}
	return out
}()

// TaskTable is the task's transition table: the states a task may go to from each state. A task is
// created pending (or, rebuilt from its branch, passed or escalated).
var TaskTable = map[string][]string{
	TaskStatusPending: {TaskStatusRunning, TaskStatusPassed, TaskStatusSkipped,
		TaskStatusEscalated, TaskStatusAborted},
	TaskStatusRunning: {TaskStatusRunning, TaskStatusPending, TaskStatusPassed, TaskStatusFailed,
		TaskStatusSkipped, TaskStatusEscalated, TaskStatusAborted},
	// An escalated task is attempted again (retry), approved, skipped or aborted; a gate escalates it twice.
	TaskStatusEscalated: {TaskStatusRunning, TaskStatusPassed, TaskStatusSkipped,
		TaskStatusEscalated, TaskStatusAborted},
	// A checkpoint is rolled back; the engine may find a task done again.
	TaskStatusPassed:  {TaskStatusPassed, TaskStatusPending},
	TaskStatusSkipped: {TaskStatusSkipped, TaskStatusPassed},
	TaskStatusFailed:  {TaskStatusPending},
	TaskStatusAborted: nil,
}

// ErrTransition is wrapped by every *TransitionError.
var ErrTransition = errors.New("lifecycle: transition not allowed")

// TransitionError names an event that may not happen in a run's (or a task's) current state.
type TransitionError struct {
	// Run and Task say whose state: a task's when Task is set.
	Run, Task string
	From      string
	Event     EventKind
	// To is the state the event led to, when the event was allowed but led somewhere the table does
	// not say.
	To string
}

func (e *TransitionError) Error() string {
	who := "run " + e.Run
	if e.Task != "" {
		who += " task " + e.Task
	}
	from := e.From
	if from == "" {
		from = "new"
	}
	if e.To != "" {
		return fmt.Sprintf("lifecycle: %s: %q in state %s led to %s, which the table does not allow", who, e.Event, from, e.To)
	}
	return fmt.Sprintf("lifecycle: %s: %q is not allowed in state %s", who, e.Event, from)
}

// Unwrap makes errors.Is(err, ErrTransition) true.
func (e *TransitionError) Unwrap() error { return ErrTransition }

// RuleOf returns the table's row of the event.
func RuleOf(kind EventKind) (Rule, bool) {
	i := slices.IndexFunc(Table, func(r Rule) bool { return r.Event == kind })
	if i < 0 {
		return Rule{}, false
	}
	return Table[i], true
}

// Allowed reports whether the event may happen to a run in the state.
func Allowed(s RunStatus, kind EventKind) bool {
	rule, ok := RuleOf(kind)
	return ok && slices.Contains(rule.From(), s)
}

// Apply lets the event change the run, after checking the table allows it in the run's state, and
// returns the effects the transition requires. Those of a durable transition are also appended to the
// run's outbox (with their ids), so that the store writes them with the new state. An event the table
// does not allow, or whose outcome the table does not list, is a *TransitionError and leaves the run
// as it was.
func Apply(r *Run, ev Event, now time.Time) ([]Effect, error) {
	kind := ev.Kind()
	rule, ok := RuleOf(kind)
	if !ok || !slices.Contains(rule.From(), r.Status) {
		return nil, &TransitionError{Run: r.ID, From: string(r.Status), Event: kind}
	}
	before := clone(r)
	var edits []taskEdit
	r.edits = &edits
	effects, err := ev.apply(r, now)
	r.edits = nil
	if err == nil && !slices.Contains(rule.Moves, Move{before.Status, r.Status}) {
		err = &TransitionError{Run: r.ID, From: string(before.Status), Event: kind, To: string(r.Status)}
	}
	for _, e := range effects {
		if err == nil && !slices.Contains(rule.Effects, e.Kind) {
			err = fmt.Errorf("lifecycle: %q returned a %s effect the table does not list", kind, e.Kind)
		}
	}
	if err != nil {
		var te *TransitionError
		if errors.As(err, &te) && te.Run == "" {
			te.Run = r.ID
		}
		for i := len(edits) - 1; i >= 0; i-- {
			e := edits[i]
			e.tasks[e.i] = e.old
		}
		*r = *before
		return nil, err
	}
	if rule.Durable {
		effects = stamp(r, effects)
	}
	return effects, nil
}

// setTask moves a task to a new state as the task table allows.
func setTask(t *TaskState, to string) error {
	if t.Status != to && !slices.Contains(TaskTable[t.Status], to) {
		return &TransitionError{Task: t.ID, From: t.Status, Event: EventKind("to " + to)}
	}
	t.Status = to
	return nil
}

// clone copies what apply may change in place, so that a refused event leaves the run as it was. The
// tasks are not copied, nor their list: an event changes a task through EditTask, which leaves the
// task as it was and notes the one it replaced in the list for Apply to put back (copying the list
// at every event would cost what the run's length does).
func clone(r *Run) *Run {
	c := *r
	c.Parked = slices.Clone(r.Parked)
	c.Outbox = slices.Clone(r.Outbox)
	if r.Decisions != nil {
		c.Decisions = make(map[string]Decision, len(r.Decisions))
		for k, v := range r.Decisions {
			c.Decisions[k] = v
		}
	}
	return &c
}
