package publish

import (
	"slices"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/templates"
)

// What the run's record keeps besides its state: usage, notes, and the ids of what was published (check
// runs, comments, the pull request). Status changes are the lifecycle's (jobs/lifecycle); these only
// change the *Run they are given (Store.Update may call them again when another writer got in
// between), so they are tested as plain functions. A task is changed through EditTask, never in
// place: the run's tasks are shared with the runs the store returned before (see lifecycle.Run.Tasks).

// RecordUsage adds an attempt's tokens and cost to its task.
func RecordUsage(run *lifecycle.Run, ev runner.Event) error {
	if ev.Usage == nil {
		return nil
	}
	if t := run.EditTask(ev.TaskID); t != nil {
		t.InputTokens += ev.Usage.InputTokens
		t.OutputTokens += ev.Usage.OutputTokens
		t.CostUSD += ev.Usage.CostUSD
		t.UsageEstimated = t.UsageEstimated || ev.Usage.Estimated
	}
	return nil
}

// RecordBlocked keeps the destinations an attempt was refused on its task.
func RecordBlocked(run *lifecycle.Run, ev runner.Event) error {
	if t := run.EditTask(ev.TaskID); t != nil {
		t.Note = ev.Message
	}
	return nil
}

// recordCheckRunOpened stores a task's new check run at once, so a crash cannot make a second one.
func recordCheckRunOpened(taskID string, id int64, url, head string) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if t := run.EditTask(taskID); t != nil {
			t.CheckRunID, t.CheckRunURL, t.CheckRunDone, t.CheckRunAsked, t.CheckRunHead = id, url, false, false, head
		}
		return nil
	}
}

// recordCheckRunAsked marks a task whose check run is about to be asked of GitHub (see openCheckRun).
func recordCheckRunAsked(taskID string) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if t := run.EditTask(taskID); t != nil {
			t.CheckRunAsked = true
		}
		return nil
	}
}

func recordCheckRunDone(taskID string) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if t := run.EditTask(taskID); t != nil {
			t.CheckRunDone = true
		}
		return nil
	}
}

func recordEscalationComment(taskID string, id int64, url string) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if t := run.EditTask(taskID); t != nil {
			t.EscalationCommentID, t.EscalationURL = id, url
		}
		return nil
	}
}

func recordPullRequest(pr *ports.PullRequest) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		run.PR, run.PRURL, run.PRNodeID = pr.Number, pr.URL, pr.NodeID
		run.OpenedPR = true
		return nil
	}
}

// forgetSummaryComment drops the stored summary comment when it is still the deleted one.
func forgetSummaryComment(deleted int64) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if run.SummaryCommentID == deleted {
			run.SummaryCommentID, run.SummaryURL = 0, ""
		}
		return nil
	}
}

func recordSummaryComment(id int64, url string) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		if run.SummaryCommentID == 0 {
			run.SummaryCommentID, run.SummaryURL = id, url
		}
		return nil
	}
}

// maxBlocked bounds what a task keeps of the destinations refused to it: a hostile agent could try
// thousands.
const maxBlocked = 50

// recordRefused keeps the destinations the egress proxy refused an attempt's agent or verification
// (who), one entry per attempt, who and destination.
func recordRefused(taskID string, attempt int, who string, refused []egress.Blocked) func(*lifecycle.Run) error {
	return func(run *lifecycle.Run) error {
		t := run.EditTask(taskID)
		if t == nil {
			return nil
		}
		t.Blocked = slices.Clone(t.Blocked) // a task's slices are replaced, not changed in place
		for _, b := range refused {
			i := slices.IndexFunc(t.Blocked, func(x templates.Blocked) bool {
				return x.Attempt == attempt && x.Who == who && x.Host == b.Host && x.Port == b.Port && x.Method == b.Method && x.Path == b.Path &&
					(b.Path == "" || x.Reason == b.Reason)
			})
			if i >= 0 {
				t.Blocked[i].Count = b.Count
				continue
			}
			if len(t.Blocked) >= maxBlocked {
				break
			}
			t.Blocked = append(t.Blocked, templates.Blocked{TaskID: taskID, Attempt: attempt, Who: who, Host: b.Host, Port: b.Port,
				Method: b.Method, Path: b.Path, Count: b.Count, First: b.First, Reason: b.Reason, Allow: runner.AllowLine(b)})
		}
		return nil
	}
}
