package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner"
)

// EventKind names an event of a run's life.
type EventKind string

const (
	EventCreated          EventKind = "created"
	EventRebuilt          EventKind = "rebuilt"
	EventJobStarted       EventKind = "job started"
	EventJobRequeued      EventKind = "job requeued"
	EventPlanRead         EventKind = "plan read"
	EventTaskStarted      EventKind = "task started"
	EventAttemptStarted   EventKind = "attempt started"
	EventTaskCheckpointed EventKind = "task checkpointed"
	EventTaskSkipped      EventKind = "task skipped"
	EventTaskParked       EventKind = "task parked"
	EventEngineFinished   EventKind = "engine finished"
	EventDecided          EventKind = "decided"
	EventStopAsked        EventKind = "stop asked"
	EventStopped          EventKind = "stopped"
	EventTakenAway        EventKind = "taken away"
	EventFailed           EventKind = "failed"
	EventRevived          EventKind = "revived"
	EventBudgetRaised     EventKind = "budget raised"
	EventRolledBack       EventKind = "rolled back"
	EventCIRead           EventKind = "ci read"
	EventCIPassed         EventKind = "ci passed"
	EventCIRerun          EventKind = "ci rerun"
	EventCIFailed         EventKind = "ci failed"
	EventCIGaveUp         EventKind = "ci gave up"
	EventCIDecided        EventKind = "ci decided"
	EventCIAborted        EventKind = "ci aborted"
	EventPauseAsked       EventKind = "pause asked"
	EventPaused           EventKind = "paused"
	EventResumed          EventKind = "resumed"
	EventPauseAborted     EventKind = "paused run aborted"
)

// Event is something that happened to a run. Apply checks it against the table and lets it change
// the run; apply must change nothing but the run it is given, since a store may call it again when
// another writer got in between.
type Event interface {
	Kind() EventKind
	apply(r *Run, now time.Time) ([]Effect, error)
}

// Created: a new run, queued for its first job.
type Created struct{}

func (Created) Kind() EventKind { return EventCreated }
func (Created) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Status = StatusQueued
	return nil, nil
}

// RebuiltTask is a task of a run rebuilt from its branch: done (with its checkpoint, if any), parked
// (its parked ref is on GitHub) or pending.
type RebuiltTask struct {
	ID, Title, Checkpoint string
	Done, Parked          bool
}

// Rebuilt: Redis lost the record of a run that waits for a decision; its branch says which tasks are
// done and which are parked. The run is parked, so that the decision applies to it as to any parked
// run.
type Rebuilt struct {
	Tasks []RebuiltTask
	Head  string
	// Settled rebuilds a run for a command on a run at rest (`/akira rollback`): with no task parked it
	// is succeeded when every task is done, else stopped (a later `/akira run` continues it). Without
	// it a run with nothing parked is refused: a decision needs something waiting for it.
	Settled bool
}

func (Rebuilt) Kind() EventKind { return EventRebuilt }
func (e Rebuilt) apply(r *Run, now time.Time) ([]Effect, error) {
	if r.Rev != 0 {
		return nil, fmt.Errorf("run %s is stored: only a run just planned is rebuilt from its branch", r.ID)
	}
	r.Tasks, r.Parked = nil, nil
	for _, t := range e.Tasks {
		ts := &TaskState{ID: t.ID, Title: t.Title, Status: TaskStatusPending}
		switch {
		case t.Done:
			ts.Status, ts.Checkpoint = TaskStatusPassed, t.Checkpoint
		case t.Parked:
			ts.Status = TaskStatusEscalated
			r.Parked = append(r.Parked, Parked{TaskID: t.ID, HeadSHA: e.Head, At: now,
				Summary: "waiting for a decision (rebuilt from the branch)"})
		}
		r.Tasks = append(r.Tasks, ts)
	}
	switch {
	case len(r.Parked) > 0:
		r.Status = StatusParked
	case !e.Settled:
		return nil, fmt.Errorf("no task of run %s is parked", r.ID)
	case !slices.ContainsFunc(r.Tasks, func(t *TaskState) bool { return t.Status != TaskStatusPassed }):
		r.Status, r.FinishedAt = StatusSucceeded, now
	default:
		r.Status = StatusStopped
	}
	return nil, nil
}

// JobStarted: a job took the branch lock and works on the run.
type JobStarted struct {
	// Dashboard is the dashboard's address the job links to.
	Dashboard string
}

func (JobStarted) Kind() EventKind { return EventJobStarted }
func (e JobStarted) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Status = StatusRunning
	r.Jobs++
	r.Dashboard = e.Dashboard
	return nil, nil
}

// JobRequeued: the job working on the run failed and asynq will try it again; the run waits queued so
// that the reaper does not take it for dead and defeat the retry's backoff.
type JobRequeued struct{}

func (JobRequeued) Kind() EventKind { return EventJobRequeued }
func (JobRequeued) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Status = StatusQueued
	return nil, nil
}

// PlanRead: the engine read the plan and the branch. Tasks found done on the branch are passed, and a
// task left running by a job that died is pending again.
type PlanRead struct {
	Engine runner.Event
	// Past, when not nil, are the repository's recent task durations for the estimate.
	Past []time.Duration
}

func (PlanRead) Kind() EventKind { return EventPlanRead }
func (e PlanRead) apply(r *Run, _ time.Time) ([]Effect, error) {
	if e.Past != nil {
		r.PastDurations = e.Past
	}
	old := map[string]*TaskState{}
	for _, t := range r.Tasks {
		old[t.ID] = t
	}
	tasks := make([]*TaskState, 0, len(e.Engine.Tasks))
	for _, tr := range e.Engine.Tasks {
		t, stored := old[tr.ID]
		if !stored {
			t = &TaskState{ID: tr.ID, Status: TaskStatusPending}
		}
		// A task the plan leaves as it was stays the stored one: the store writes only the tasks
		// replaced, and a job's first event should not rewrite the whole run.
		edit := func() *TaskState {
			if stored {
				c := *t
				c.Interrupted = slices.Clip(c.Interrupted)
				t, stored = &c, false
			}
			return t
		}
		if t.Title != tr.Title {
			edit().Title = tr.Title
		}
		switch tr.Status {
		case runner.TaskDone:
			if t.Status != TaskStatusPassed {
				if err := setTask(edit(), TaskStatusPassed); err != nil {
					return nil, err
				}
				t.Note = tr.Note
			}
			if tr.Commit != "" && t.Checkpoint != tr.Commit {
				edit().Checkpoint = tr.Commit
			}
		case runner.TaskSkipped:
			if t.Status != TaskStatusSkipped {
				if err := setTask(edit(), TaskStatusSkipped); err != nil {
					return nil, err
				}
			}
		case runner.TaskPending:
			if t.Status == TaskStatusRunning {
				if err := setTask(edit(), TaskStatusPending); err != nil {
					return nil, err
				}
				if t.Attempts > 0 && !slices.Contains(t.Interrupted, t.Attempts) {
					t.Interrupted = append(t.Interrupted, t.Attempts)
				}
			}
		}
		tasks = append(tasks, t)
	}
	// A run over several plans starts the engine once per plan: the tasks of the other plans stay, in
	// the plans' order.
	scope := ""
	if len(e.Engine.Tasks) > 0 {
		scope = ScopeOf(e.Engine.Tasks[0].ID)
	}
	var before, after []*TaskState
	for _, t := range r.Tasks {
		switch ts := ScopeOf(t.ID); {
		case ts == scope && IsSyncTask(t.ID) && !slices.ContainsFunc(tasks, func(n *TaskState) bool { return n.ID == t.ID }):
			// The merge of the base is in no plan: a sync an earlier job parked (or finished) stays.
			tasks = append(tasks, t)
		case ts == scope:
		case r.PlanIndex(ts) < r.PlanIndex(scope), ts != scope && r.PlanIndex(ts) == r.PlanIndex(scope) && strings.HasPrefix(scope, "ci-"):
			// Earlier plans, and earlier fix rounds of the CI, come first.
			before = append(before, t)
		default:
			after = append(after, t)
		}
	}
	r.Tasks = append(append(before, tasks...), after...)
	r.Head = e.Engine.Commit
	return []Effect{{Kind: EffectSummary}}, nil
}

// task returns the run's task to change (see Run.EditTask) or an error naming it.
func task(r *Run, id string) (*TaskState, error) {
	t := r.EditTask(id)
	if t == nil {
		return nil, fmt.Errorf("task %s is not in the run", id)
	}
	return t, nil
}

// TaskStarted: the engine starts a task (an escalated task stays escalated until an attempt starts:
// the engine reports a task kept parked as started too).
type TaskStarted struct{ Engine runner.Event }

func (TaskStarted) Kind() EventKind { return EventTaskStarted }
func (e TaskStarted) apply(r *Run, now time.Time) ([]Effect, error) {
	if IsSyncTask(e.Engine.TaskID) {
		startSync(r, e.Engine)
	}
	t, err := task(r, e.Engine.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status != TaskStatusEscalated {
		if err := setTask(t, TaskStatusRunning); err != nil {
			return nil, err
		}
	}
	t.Accept = e.Engine.Accept
	r.TaskStartedAt, r.Activity, r.ActivityAt = now, "task started", now
	var out []Effect
	if t.CheckRunID == 0 {
		out = append(out, Effect{Kind: EffectCheckRun, Phase: PhaseOpen, TaskIDs: []string{t.ID}})
	}
	return append(out, Effect{Kind: EffectSummary}), nil
}

// startSync gives the run the engine's merge of the base as a task when the merge starts: it is in no
// plan, so the plan read at the job's start does not list it. A task left from an earlier merge (done,
// or skipped by decision) is a new merge now: the base moved again. One waiting for a decision (or a
// dead job's) goes on as it is.
func startSync(r *Run, ev runner.Event) {
	t := r.Task(ev.TaskID)
	switch {
	case t == nil:
		r.Tasks = append(r.Tasks, &TaskState{ID: ev.TaskID, Title: ev.TaskTitle, Status: TaskStatusPending})
	case t.Status == TaskStatusPassed || t.Status == TaskStatusSkipped:
		*r.EditTask(ev.TaskID) = TaskState{ID: ev.TaskID, Title: ev.TaskTitle, Status: TaskStatusPending}
	}
}

// AttemptStarted: the agent starts an attempt at a task.
type AttemptStarted struct{ Engine runner.Event }

func (AttemptStarted) Kind() EventKind { return EventAttemptStarted }
func (e AttemptStarted) apply(r *Run, _ time.Time) ([]Effect, error) {
	t, err := task(r, e.Engine.TaskID)
	if err != nil {
		return nil, err
	}
	if err := setTask(t, TaskStatusRunning); err != nil {
		return nil, err
	}
	t.Attempts = e.Engine.Attempt
	return []Effect{{Kind: EffectCheckRun, Phase: PhaseAttempt, TaskIDs: []string{t.ID}}, {Kind: EffectSummary}}, nil
}

// TaskCheckpointed: a task's checkpoint commit is pushed (verified, or approved by a person).
type TaskCheckpointed struct{ Engine runner.Event }

func (TaskCheckpointed) Kind() EventKind { return EventTaskCheckpointed }
func (e TaskCheckpointed) apply(r *Run, _ time.Time) ([]Effect, error) {
	ev := e.Engine
	t, err := task(r, ev.TaskID)
	if err != nil {
		return nil, err
	}
	if err := setTask(t, TaskStatusPassed); err != nil {
		return nil, err
	}
	t.Checkpoint, t.Note, t.Unverified = ev.Commit, ev.Message, ev.Unverified
	t.Workflows = ev.Workflows
	if ev.Attempt > 0 {
		t.Attempts = ev.Attempt
	}
	t.Duration = ev.Duration
	r.Head = ev.Commit
	if synced := r.Base + "@" + ev.BaseCommit; IsSyncTask(t.ID) && ev.BaseCommit != "" && r.LastSynced() != synced {
		r.Synced = append(slices.Clone(r.Synced), synced)
	}
	ids := []string{t.ID}
	return []Effect{{Kind: EffectMetric, Event: TaskStatusPassed, TaskIDs: ids},
		{Kind: EffectCheckRun, Phase: PhasePassed, TaskIDs: ids}, {Kind: EffectSummary}}, nil
}

// TaskSkipped: a task is skipped (a person's /akira skip).
type TaskSkipped struct{ Engine runner.Event }

func (TaskSkipped) Kind() EventKind { return EventTaskSkipped }
func (e TaskSkipped) apply(r *Run, _ time.Time) ([]Effect, error) {
	t, err := task(r, e.Engine.TaskID)
	if err != nil {
		return nil, err
	}
	if err := setTask(t, TaskStatusSkipped); err != nil {
		return nil, err
	}
	t.Note = e.Engine.Message
	r.Parked = removeParked(r.Parked, t.ID)
	ids := []string{t.ID}
	return []Effect{{Kind: EffectMetric, Event: TaskStatusSkipped, TaskIDs: ids},
		{Kind: EffectCheckRun, Phase: PhaseSkipped, TaskIDs: ids}, {Kind: EffectSummary}}, nil
}

// TaskParked: a task is escalated and waits for a decision. A fresh escalation (not a task kept
// parked across jobs) counts as a new round, whose comment is still to be posted.
type TaskParked struct {
	Escalation *runner.Escalation
	Fresh      bool
}

func (TaskParked) Kind() EventKind { return EventTaskParked }
func (e TaskParked) apply(r *Run, now time.Time) ([]Effect, error) {
	esc := e.Escalation
	t, err := task(r, esc.TaskID)
	if err != nil {
		return nil, err
	}
	if err := setTask(t, TaskStatusEscalated); err != nil {
		return nil, err
	}
	if esc.Attempts > 0 {
		t.Attempts = esc.Attempts
	}
	if e.Fresh || r.ParkedTask(t.ID) == nil {
		t.Escalations++
		t.EscalationCommentID, t.EscalationURL = 0, ""
		t.Note = esc.Summary
		r.Parked = append(removeParked(r.Parked, t.ID), Parked{TaskID: t.ID, Attempt: esc.Attempts,
			HeadSHA: esc.HeadSHA, Reason: esc.Reason, Summary: esc.Summary, At: now.UTC(), Changed: esc.Changed})
	}
	ids := []string{t.ID}
	var out []Effect
	if e.Fresh {
		event := "escalation"
		if esc.Reason == runner.ReasonBudget {
			event = "budget_reached"
		}
		out = append(out, Effect{Kind: EffectMetric, Event: TaskStatusEscalated, TaskIDs: ids},
			Effect{Kind: EffectNotify, Event: event, Occasion: t.ID + "-" + strconv.Itoa(t.Escalations), Reason: esc.Summary, TaskIDs: ids})
	}
	if e.Fresh || !t.CheckRunDone {
		// A task kept parked across jobs whose check run already asks for a decision needs nothing new.
		out = append(out, Effect{Kind: EffectCheckRun, Phase: PhaseEscalated, TaskIDs: ids})
	}
	return append(out, Effect{Kind: EffectEscalation, TaskIDs: ids}, Effect{Kind: EffectSummary}), nil
}

func removeParked(ps []Parked, taskID string) []Parked {
	out := ps[:0]
	for _, p := range ps {
		if p.TaskID != taskID {
			out = append(out, p)
		}
	}
	return out
}

// EngineFinished: the engine's run ended (Status is how). The decisions in Handed were given to the
// engine and are done; a decision taken while the job ran (on a task parked during the job) is kept,
// its task leaves the parked list, and the run is queued for the job its decision enqueued. The parked
// tasks are those the engine says are parked. A run aborted while the job ran stays aborted.
type EngineFinished struct {
	Status  RunStatus
	Outcome runner.Outcome
	Handed  map[string]Decision
	// CI, when the run succeeds and watches its CI, starts the watch (the run waits for CI instead).
	CI *CIWatch
	// Yielded: the engine stopped before the next task to wait for CI (ci.watch: each); the tasks left
	// run after the checks of this head are green. Status is then StatusSucceeded.
	Yielded bool
}

func (EngineFinished) Kind() EventKind { return EventEngineFinished }
func (e EngineFinished) apply(r *Run, now time.Time) ([]Effect, error) {
	if r.Status != StatusAborted {
		r.Status = e.Status
		// Only a run with a pull request has CI to wait for.
		if e.Yielded && r.Pause != nil {
			// Paused after its task: the next job starts at the next task once someone resumes it.
			r.Status, r.PausedBy = StatusPaused, r.Pause.By
		} else if e.Status == StatusSucceeded && (e.CI != nil || r.CI != nil) && r.PR != 0 {
			if r.CI == nil {
				w := *e.CI
				r.CI = &w
			}
			waitForCI(r, e.Outcome.Head, now)
			if e.Yielded {
				// Set, never cleared here: a fix round's job ends without yielding, and tasks still remain.
				r.CI.More = true
			}
		} else if e.Yielded {
			// Nothing to wait for after all (no pull request): the next job goes on with the tasks left.
			r.Status = StatusQueued
		}
	}
	// A pause asked too late (no task was left to start) has nothing left to pause.
	r.Pause = nil
	r.Error = e.Outcome.Error
	if e.Outcome.Head != "" {
		r.Head = e.Outcome.Head
	}
	late := map[string]Decision{}
	for id, d := range r.Decisions {
		if h, ok := e.Handed[id]; !ok || h.Key != d.Key || h.Kind != d.Kind {
			late[id] = d
		}
	}
	r.Decisions = nil
	parked := map[string]bool{}
	for _, p := range e.Outcome.Parked {
		if _, decided := late[p.TaskID]; !decided {
			parked[p.TaskID] = true
		}
	}
	kept := r.Parked[:0]
	for _, p := range r.Parked {
		if parked[p.TaskID] {
			kept = append(kept, p)
		}
	}
	r.Parked = kept
	var out []Effect
	if e.Yielded && r.Status == StatusQueued {
		out = append(out, Effect{Kind: EffectContinue, Key: "yield-" + strconv.Itoa(r.Jobs), By: r.Sender})
	}
	if len(late) > 0 && r.Status == StatusParked {
		// Decisions taken while this job ran: their own continuation found the run moving and left it
		// to this job, which queues the next one.
		r.Decisions = late
		r.Status = StatusQueued
		out = append(out, Effect{Kind: EffectContinue, Key: "late-" + strconv.Itoa(r.Jobs), By: r.Sender})
	}
	switch r.Status {
	case StatusSucceeded:
		out = append(out, Effect{Kind: EffectNotify, Event: "run_finished", Occasion: "finished-" + strconv.Itoa(r.Jobs)})
	case StatusWaitingCI:
		// The CI job reads the head's checks when they report, or when the grace period is over.
	case StatusFailed:
		out = append(out, Effect{Kind: EffectNotify, Event: "run_failed", Occasion: "failed-" + strconv.Itoa(r.Jobs), Reason: e.Outcome.Error})
	}
	return append(out, Effect{Kind: EffectSummary}), nil
}

// Decided: a person decided on a parked task. The run is queued for the job that acts on it
// (approve, retry, skip), or ends (abort). A run still running keeps running: its job hands the
// decision on when it ends (see EngineFinished). Deciding twice, and deciding what is not parked, is
// for the store to refuse before the event is applied.
type Decided struct{ Decision Decision }

func (Decided) Kind() EventKind { return EventDecided }
func (e Decided) apply(r *Run, _ time.Time) ([]Effect, error) {
	d := e.Decision
	if r.ParkedTask(d.TaskID) == nil {
		return nil, fmt.Errorf("task %s is not parked", d.TaskID)
	}
	if d.By != "" {
		r.AnsweredBy = d.By
	}
	if d.Kind == runner.DecisionAbort {
		// The parked tasks keep their place in Parked so that their check runs are concluded.
		parked := make([]string, 0, len(r.Parked))
		for _, p := range r.Parked {
			parked = append(parked, p.TaskID)
		}
		if err := abort(r, d.By, ""); err != nil {
			return nil, err
		}
		return []Effect{{Kind: EffectConcludeCheckRuns, TaskIDs: parked, Conclusion: ConclusionCancelled, Title: "Aborted",
			Text: fmt.Sprintf("The run was aborted by %s.", Who(d.By))}, {Kind: EffectSummary}}, nil
	}
	r.Parked = removeParked(r.Parked, d.TaskID)
	if r.Decisions == nil {
		r.Decisions = map[string]Decision{}
	}
	r.Decisions[d.TaskID] = d
	if r.Status != StatusRunning {
		r.Status = StatusQueued
	}
	// The continuation of a running run finds it moving and leaves it to its job.
	return []Effect{{Kind: EffectContinue, Key: d.Key, By: d.By}, {Kind: EffectSummary}}, nil
}

// abort ends the run for good: by a person's /akira abort (by), or because people took its pull
// request or branch away (why). Tasks not done are aborted.
func abort(r *Run, by, why string) error {
	r.Status, r.AbortedBy = StatusAborted, by
	if why != "" {
		r.Error = why
	}
	for i, t := range r.Tasks {
		if t.Status == TaskStatusPending || t.Status == TaskStatusRunning || t.Status == TaskStatusEscalated {
			if err := setTask(r.editTaskAt(i), TaskStatusAborted); err != nil {
				return err
			}
		}
	}
	r.Decisions = nil
	return nil
}

// StopAsked: a person asked the job working on the run to stop it (or to abort it). The job polls for
// the request; a run that is only queued finds it when its job starts.
type StopAsked struct{ Request StopRequest }

func (StopAsked) Kind() EventKind { return EventStopAsked }
func (e StopAsked) apply(r *Run, _ time.Time) ([]Effect, error) {
	if r.Stop == nil || e.Request.Abort {
		req := e.Request
		r.Stop = &req
	}
	return nil, nil
}

// openCheckRuns are the tasks whose check run is still open.
func openCheckRuns(r *Run) []string {
	var ids []string
	for _, t := range r.Tasks {
		if t.CheckRunID != 0 && !t.CheckRunDone {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// Stopped: the job honoured the stop request: the run is stopped (or aborted), the attempt is
// discarded and the task that was running is pending again.
type Stopped struct{}

func (Stopped) Kind() EventKind { return EventStopped }
func (Stopped) apply(r *Run, _ time.Time) ([]Effect, error) {
	req := r.Stop
	if req == nil {
		return nil, fmt.Errorf("run %s has no stop request", r.ID)
	}
	r.Stop = nil
	by := req.By
	if req.Abort {
		if err := abort(r, req.By, ""); err != nil {
			return nil, err
		}
		r.Parked = nil
	} else {
		r.Status, r.StoppedBy = StatusStopped, req.By
		for i, t := range r.Tasks {
			if t.Status == TaskStatusRunning {
				if err := setTask(r.editTaskAt(i), TaskStatusPending); err != nil {
					return nil, err
				}
			}
		}
	}
	return []Effect{{Kind: EffectConcludeCheckRuns, TaskIDs: openCheckRuns(r), Conclusion: ConclusionCancelled, Title: "Stopped",
		Text: fmt.Sprintf("The run was stopped by %s; the attempt was discarded.", Who(by))}, {Kind: EffectSummary}}, nil
}

// TakenAway: people closed or merged the run's pull request or deleted its branch. The run ends
// (aborted, not failed: nothing went wrong), and the issue it came from gets a note, since the pull
// request's comments may no longer be read.
type TakenAway struct{ Why string }

func (TakenAway) Kind() EventKind { return EventTakenAway }
func (e TakenAway) apply(r *Run, _ time.Time) ([]Effect, error) {
	if err := abort(r, "", e.Why); err != nil {
		return nil, err
	}
	r.Parked = nil
	out := []Effect{{Kind: EffectConcludeCheckRuns, TaskIDs: openCheckRuns(r), Conclusion: ConclusionCancelled, Title: "Stopped",
		Text: "The run stopped: " + e.Why + "."}, {Kind: EffectSummary}}
	if r.Issue != 0 && r.Issue != r.PR {
		out = append(out, Effect{Kind: EffectReply, Key: "stopped-" + r.ID, Reason: e.Why})
	}
	return out, nil
}

// Failed: the run stopped on an error it cannot recover from; a task that was running failed with it.
type Failed struct{ Message string }

func (Failed) Kind() EventKind { return EventFailed }
func (e Failed) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Status, r.Error = StatusFailed, e.Message
	for i, t := range r.Tasks {
		if t.Status == TaskStatusRunning {
			if err := setTask(r.editTaskAt(i), TaskStatusFailed); err != nil {
				return nil, err
			}
		}
	}
	out := []Effect{{Kind: EffectNotify, Event: "run_failed", Occasion: "failed-" + strconv.Itoa(r.Jobs), Reason: e.Message}}
	if r.OpenedPR && !r.PRClosed && !r.Checkpointed() {
		// Nothing to review: the summary on it says why, and a later /akira run opens a new one.
		out = append(out, Effect{Kind: EffectClosePullRequest})
	}
	return append(out, Effect{Kind: EffectSummary}), nil
}

// Revived: `/akira run` on a stopped run continues it from its last checkpoint.
type Revived struct{}

func (Revived) Kind() EventKind { return EventRevived }
func (Revived) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Status, r.StoppedBy, r.Stop = StatusQueued, "", nil
	return nil, nil
}

// BudgetRaised: `/akira run --budget` raised the cost limit of a run parked because its budget was
// spent; every parked task is retried.
type BudgetRaised struct {
	CostUSD float64
	Key, By string
}

func (BudgetRaised) Kind() EventKind { return EventBudgetRaised }
func (e BudgetRaised) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.Budget.CostUSD = e.CostUSD
	if r.Decisions == nil {
		r.Decisions = map[string]Decision{}
	}
	for _, pk := range r.Parked {
		r.Decisions[pk.TaskID] = Decision{Key: e.Key, TaskID: pk.TaskID,
			Decision: runner.Decision{Kind: runner.DecisionRetry, By: e.By}}
	}
	r.Parked, r.Status, r.AnsweredBy = nil, StatusQueued, e.By
	return nil, nil
}

// RolledBack: `/akira rollback` reverted tasks' checkpoints on the branch; those tasks are pending
// again. With Retry the run is queued to do them again, else it is stopped (pending tasks and no job),
// which /akira run continues.
type RolledBack struct {
	// Reverted maps each reverted task to its note ("rolled back by @x (abc1234)") and Texts to what its
	// check run says now.
	Reverted map[string]string
	Texts    map[string]string
	Head     string
	By       string
	// Task is the task named in the command; Retry and Guidance its /akira rollback --retry.
	Task, Key, Guidance string
	Retry               bool
}

func (RolledBack) Kind() EventKind { return EventRolledBack }
func (e RolledBack) apply(r *Run, _ time.Time) ([]Effect, error) {
	var out []Effect
	for i := range r.Tasks {
		note, ok := e.Reverted[r.Tasks[i].ID]
		if !ok {
			continue
		}
		t := r.editTaskAt(i)
		if err := setTask(t, TaskStatusPending); err != nil {
			return nil, err
		}
		t.Checkpoint, t.Note = "", note
		if e.Retry {
			if r.Decisions == nil {
				r.Decisions = map[string]Decision{}
			}
			r.Decisions[t.ID] = Decision{Key: e.Key, TaskID: t.ID,
				Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: e.Guidance, By: e.By}}
		}
		if t.CheckRunID != 0 {
			// A completed check run is concluded again: it is the task's, and says what happened to it.
			out = append(out, Effect{Kind: EffectConcludeCheckRuns, TaskIDs: []string{t.ID}, Conclusion: ConclusionNeutral,
				Title: "Rolled back", Text: e.Texts[t.ID]})
		}
	}
	r.Head = e.Head
	if e.Retry {
		r.Status, r.StoppedBy, r.Stop = StatusQueued, "", nil
		out = append(out, Effect{Kind: EffectContinue, Key: e.Key, By: e.By})
	} else {
		r.Status, r.StoppedBy = StatusStopped, "@"+e.By+" (rollback of "+e.Task+")"
	}
	return append(out, Effect{Kind: EffectSummary}), nil
}
