package publish

import (
	"slices"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

// Live progress: the run's record keeps what the working job is doing (the current task, since
// when, the last sign of life), and the summary and /akira status show it with an estimate of the
// time left.

// MinSummaryInterval is how often a job edits the summary for progress alone; state changes (a
// checkpoint, an escalation, the end) are shown at once. A long run thus edits its summary at most
// every 10 s, far inside GitHub's limits for one installation.
const MinSummaryInterval = 10 * time.Second

// Estimate is the time the run's remaining tasks will take: the median duration of the tasks it
// finished itself and of the repository's recent tasks (Run.PastDurations), times the tasks left,
// less what the current one has run already. ok is false while neither is known.
func Estimate(run *lifecycle.Run, now time.Time) (left time.Duration, ok bool) {
	done := slices.Clone(run.PastDurations)
	pending := 0
	for _, t := range run.Tasks {
		switch t.Status {
		case lifecycle.TaskStatusPassed:
			if t.Attempts > 0 && t.Duration > 0 {
				done = append(done, t.Duration)
			}
		case lifecycle.TaskStatusPending, lifecycle.TaskStatusRunning:
			pending++
		}
	}
	if len(done) == 0 {
		return 0, false
	}
	slices.Sort(done)
	median := done[len(done)/2]
	if len(done)%2 == 0 {
		median = (done[len(done)/2-1] + done[len(done)/2]) / 2
	}
	left = median * time.Duration(pending)
	if !run.TaskStartedAt.IsZero() {
		left -= now.Sub(run.TaskStartedAt)
	}
	return max(left, 0), true
}

// progressData is what the summary and /akira status say about a working run.
func progressData(run *lifecycle.Run, now time.Time) templates.Progress {
	p := templates.Progress{Activity: run.Activity}
	if !run.TaskStartedAt.IsZero() {
		p.TaskFor = now.Sub(run.TaskStartedAt)
	}
	if !run.ActivityAt.IsZero() {
		p.ActivityAgo = now.Sub(run.ActivityAt)
	}
	p.Left, p.Estimated = Estimate(run, now)
	for _, t := range run.Tasks {
		p.CostUSD += t.CostUSD
		if t.Status != lifecycle.TaskStatusRunning {
			continue
		}
		// The first task in progress is told in full; in a parallel run the others are named.
		if p.TaskID == "" {
			p.TaskID, p.TaskTitle, p.Attempt = t.ID, t.Title, t.Attempts
		} else {
			p.Also = append(p.Also, templates.Task{ID: t.ID, Title: t.Title})
		}
	}
	p.MaxAttempts = run.MaxAttempts
	return p
}
