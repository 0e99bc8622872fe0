package lifecycle

import "strconv"

// EffectKind names what a transition requires outside the run's record.
type EffectKind string

const (
	// EffectSummary refreshes the run's summary comment from its record.
	EffectSummary EffectKind = "summary"
	// EffectCheckRun shows a task's new state on its check run (Phase says which).
	EffectCheckRun EffectKind = "check_run"
	// EffectConcludeCheckRuns completes the open check runs of the tasks named, with Conclusion, Title
	// and Text: a stopped, aborted or rolled-back run's tasks.
	EffectConcludeCheckRuns EffectKind = "conclude_check_runs"
	// EffectEscalation posts the escalation comment of a task's current round.
	EffectEscalation EffectKind = "escalation_comment"
	// EffectNotify tells the operator's notification sinks (Event, Occasion, Reason).
	EffectNotify EffectKind = "notify"
	// EffectContinue queues the job that continues the run (Key is its task id's key).
	EffectContinue EffectKind = "continue"
	// EffectReply posts a reply once (Key), on the issue the run came from.
	EffectReply EffectKind = "reply"
	// EffectClosePullRequest closes the run's own empty draft pull request.
	EffectClosePullRequest EffectKind = "close_pull_request"
	// EffectMetric counts a task's end in the metrics (Event: passed, escalated).
	EffectMetric EffectKind = "metric"
	// EffectReady marks the run's own draft pull request ready for review.
	EffectReady EffectKind = "ready_pull_request"
)

// Check-run phases of EffectCheckRun.
const (
	PhaseOpen      = "open"
	PhaseAttempt   = "attempt"
	PhasePassed    = "passed"
	PhaseSkipped   = "skipped"
	PhaseEscalated = "escalated"
)

// Check-run conclusions of EffectConcludeCheckRuns (GitHub's words).
const (
	ConclusionCancelled = "cancelled"
	ConclusionNeutral   = "neutral"
)

// Effect is one thing a transition requires: data, performed by the jobs' publisher. Every effect is
// safe to perform twice (a comment is found again by its marker, a check run by its id, a job by its
// task id), so an effect replayed after a crash is applied once.
type Effect struct {
	// ID is unique within the run and stable across replays: the revision of the run that the
	// transition wrote, and the effect's place among its effects.
	ID   string     `json:"id"`
	Kind EffectKind `json:"kind"`
	// TaskIDs are the tasks the effect is about (check runs, escalation, metric).
	TaskIDs []string `json:"task_ids,omitempty"`
	// Phase is the check-run phase (EffectCheckRun).
	Phase string `json:"phase,omitempty"`
	// Conclusion, Title and Text are what a concluded check run says (EffectConcludeCheckRuns).
	Conclusion string `json:"conclusion,omitempty"`
	Title      string `json:"title,omitempty"`
	Text       string `json:"text,omitempty"`
	// Event and Occasion name a notification (EffectNotify) or a metric (EffectMetric); Reason says why.
	Event    string `json:"event,omitempty"`
	Occasion string `json:"occasion,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Key makes a continuation or a reply happen once; By is who caused it.
	Key string `json:"key,omitempty"`
	By  string `json:"by,omitempty"`
}

// Kinds lists the kinds of effects, in the order the publisher's documentation names them.
var Kinds = []EffectKind{EffectCheckRun, EffectConcludeCheckRuns, EffectEscalation, EffectSummary, EffectReply,
	EffectNotify, EffectContinue, EffectClosePullRequest, EffectMetric, EffectReady}

// stamp gives the effects of one transition their ids and appends them to the run's outbox.
func stamp(r *Run, effects []Effect) []Effect {
	// Several transitions may be applied in one write: the place in the outbox tells them apart.
	for i := range effects {
		effects[i].ID = strconv.FormatInt(r.Rev+1, 10) + "." + strconv.Itoa(len(r.Outbox)+i+1)
	}
	r.Outbox = append(r.Outbox, effects...)
	return effects
}

// Done removes a performed effect from the run's outbox; it says false when the effect was not there
// (another worker performed it first).
func Done(r *Run, id string) bool {
	for i, e := range r.Outbox {
		if e.ID == id {
			r.Outbox = append(r.Outbox[:i:i], r.Outbox[i+1:]...)
			return true
		}
	}
	return false
}
