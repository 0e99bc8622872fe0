package jobs

import (
	"fmt"
	"time"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// The run state's side of the reporter: how each engine event and each thing published changes the
// stored run. Every function here only changes the *Run it is given (Store.Update may call it again
// when another writer got in between), so they are tested as plain functions.

// recordRunStarted takes the engine's task list: tasks found done on the branch are passed, and a task
// left running by a job that died is pending again.
func recordRunStarted(run *Run, ev runner.Event) error {
	old := map[string]TaskState{}
	for _, t := range run.Tasks {
		old[t.ID] = t
	}
	tasks := make([]TaskState, 0, len(ev.Tasks))
	for _, tr := range ev.Tasks {
		t, ok := old[tr.ID]
		if !ok {
			t = TaskState{ID: tr.ID, Status: templates.StatusPending}
		}
		t.Title = tr.Title
		switch tr.Status {
		case runner.TaskDone:
			if t.Status != templates.StatusPassed {
				t.Status = templates.StatusPassed
				t.Note = tr.Note
			}
			if tr.Commit != "" {
				t.Checkpoint = tr.Commit
			}
		case runner.TaskSkipped:
			t.Status = templates.StatusSkipped
		case runner.TaskPending:
			if t.Status == templates.StatusRunning {
				t.Status = templates.StatusPending
			}
		}
		tasks = append(tasks, t)
	}
	// A run over several plans starts the engine once per plan: the tasks of the other plans stay, in
	// the plans' order.
	scope := ""
	if len(ev.Tasks) > 0 {
		scope = scopeOf(ev.Tasks[0].ID)
	}
	var before, after []TaskState
	for _, t := range run.Tasks {
		switch ts := scopeOf(t.ID); {
		case ts == scope:
		case run.planIndex(ts) < run.planIndex(scope):
			before = append(before, t)
		default:
			after = append(after, t)
		}
	}
	run.Tasks = append(append(before, tasks...), after...)
	run.Head = ev.Commit
	return nil
}

// task returns the run's task or an error naming it.
func task(run *Run, id string) (*TaskState, error) {
	t := run.Task(id)
	if t == nil {
		return nil, fmt.Errorf("task %s is not in the run", id)
	}
	return t, nil
}

func recordTaskStarted(run *Run, ev runner.Event) error {
	t, err := task(run, ev.TaskID)
	if err != nil {
		return err
	}
	if t.Status != templates.StatusEscalated {
		t.Status = templates.StatusRunning
	}
	t.Accept = ev.Accept
	return nil
}

func recordAttemptStarted(run *Run, ev runner.Event) error {
	t, err := task(run, ev.TaskID)
	if err != nil {
		return err
	}
	t.Status = templates.StatusRunning
	t.Attempts = ev.Attempt
	return nil
}

func recordUsage(run *Run, ev runner.Event) error {
	if t := run.Task(ev.TaskID); t != nil && ev.Usage != nil {
		t.InputTokens += ev.Usage.InputTokens
		t.OutputTokens += ev.Usage.OutputTokens
		t.CostUSD += ev.Usage.CostUSD
	}
	return nil
}

func recordCheckpointed(run *Run, ev runner.Event) error {
	t, err := task(run, ev.TaskID)
	if err != nil {
		return err
	}
	t.Status, t.Checkpoint, t.Note, t.Unverified = templates.StatusPassed, ev.Commit, ev.Message, ev.Unverified
	if ev.Attempt > 0 {
		t.Attempts = ev.Attempt
	}
	t.Duration = ev.Duration
	run.Head = ev.Commit
	return nil
}

func recordSkipped(run *Run, ev runner.Event) error {
	t, err := task(run, ev.TaskID)
	if err != nil {
		return err
	}
	t.Status, t.Note = templates.StatusSkipped, ev.Message
	run.Parked = removeParked(run.Parked, ev.TaskID)
	return nil
}

func recordBlocked(run *Run, ev runner.Event) error {
	if t := run.Task(ev.TaskID); t != nil {
		t.Note = ev.Message
	}
	return nil
}

// recordParked records an escalation. A fresh one (not a task kept parked across jobs) counts as a new
// escalation round, whose comment is still to be posted.
func recordParked(run *Run, esc *runner.Escalation, fresh bool, now time.Time) error {
	t, err := task(run, esc.TaskID)
	if err != nil {
		return err
	}
	t.Status = templates.StatusEscalated
	if esc.Attempts > 0 {
		t.Attempts = esc.Attempts
	}
	if fresh || run.ParkedTask(t.ID) == nil {
		t.Escalations++
		t.EscalationCommentID, t.EscalationURL = 0, ""
		t.Note = esc.Summary
		run.Parked = append(removeParked(run.Parked, t.ID), Parked{TaskID: t.ID, Attempt: esc.Attempts,
			HeadSHA: esc.HeadSHA, Reason: esc.Reason, Summary: esc.Summary, At: now.UTC()})
	}
	return nil
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

// recordCheckRunOpened stores a task's new check run at once, so a crash cannot make a second one.
func recordCheckRunOpened(taskID string, id int64, url string) func(*Run) error {
	return func(run *Run) error {
		if t := run.Task(taskID); t != nil {
			t.CheckRunID, t.CheckRunURL, t.CheckRunDone = id, url, false
		}
		return nil
	}
}

func recordCheckRunDone(taskID string) func(*Run) error {
	return func(run *Run) error {
		if t := run.Task(taskID); t != nil {
			t.CheckRunDone = true
		}
		return nil
	}
}

func recordEscalationComment(taskID string, id int64, url string) func(*Run) error {
	return func(run *Run) error {
		if t := run.Task(taskID); t != nil {
			t.EscalationCommentID, t.EscalationURL = id, url
		}
		return nil
	}
}

func recordPullRequest(pr *PullRequest) func(*Run) error {
	return func(run *Run) error {
		run.PR, run.PRURL, run.PRNodeID = pr.Number, pr.URL, pr.NodeID
		run.OpenedPR = true
		return nil
	}
}

// forgetSummaryComment drops the stored summary comment when it is still the deleted one.
func forgetSummaryComment(deleted int64) func(*Run) error {
	return func(run *Run) error {
		if run.SummaryCommentID == deleted {
			run.SummaryCommentID, run.SummaryURL = 0, ""
		}
		return nil
	}
}

func recordSummaryComment(id int64, url string) func(*Run) error {
	return func(run *Run) error {
		if run.SummaryCommentID == 0 {
			run.SummaryCommentID, run.SummaryURL = id, url
		}
		return nil
	}
}

// recordFailed ends the run with the reason; a task that was running failed with it.
func recordFailed(run *Run, msg string) error {
	run.Status, run.Error = StatusFailed, msg
	for i := range run.Tasks {
		if run.Tasks[i].Status == templates.StatusRunning {
			run.Tasks[i].Status = templates.StatusFailed
		}
	}
	return nil
}

// recordAborted ends the run for good: by a person's /akira abort (by), or because people took its
// pull request or branch away (why). Tasks not done are aborted; parked ones keep their place in
// Parked so that their check runs can be cancelled.
func recordAborted(run *Run, by, why string) {
	run.Status, run.AbortedBy = StatusAborted, by
	if why != "" {
		run.Error = why
	}
	for i := range run.Tasks {
		if t := &run.Tasks[i]; t.Status == templates.StatusPending || t.Status == templates.StatusRunning || t.Status == templates.StatusEscalated {
			t.Status = templates.StatusAborted
		}
	}
	run.Decisions = nil
}

// checkpointed reports whether any task of the run has a checkpoint commit.
func checkpointed(run *Run) bool {
	for _, t := range run.Tasks {
		if t.Checkpoint != "" {
			return true
		}
	}
	return false
}

// recordFinished records how the engine's run ended. The decisions in handed were given to the engine
// and are done; a decision taken while the job ran (on a task parked during the job) is kept, its task
// leaves the parked list, and the run is queued for the job its decision enqueued. The parked tasks
// are those the engine says are parked. A run aborted while the job ran stays aborted.
func recordFinished(run *Run, status RunStatus, out runner.Outcome, handed map[string]Decision) error {
	if run.Status != StatusAborted {
		run.Status = status
	}
	run.Error = out.Error
	if out.Head != "" {
		run.Head = out.Head
	}
	late := map[string]Decision{}
	for id, d := range run.Decisions {
		if h, ok := handed[id]; !ok || h.Key != d.Key || h.Kind != d.Kind {
			late[id] = d
		}
	}
	run.Decisions = nil
	parked := map[string]bool{}
	for _, e := range out.Parked {
		if _, decided := late[e.TaskID]; !decided {
			parked[e.TaskID] = true
		}
	}
	kept := run.Parked[:0]
	for _, p := range run.Parked {
		if parked[p.TaskID] {
			kept = append(kept, p)
		}
	}
	run.Parked = kept
	if len(late) > 0 && run.Status == StatusParked {
		run.Decisions = late
		run.Status = StatusQueued
	}
	return nil
}
