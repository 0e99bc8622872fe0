package lifecycle

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner"
)

// A run whose tasks are done waits for its pull request's own CI (the checks and statuses other apps
// report on the head commit) before it succeeds: green readies the pull request; red becomes a fix
// round (one task whose prompt holds what failed, run like any task), for at most MaxRounds rounds,
// then an escalation on the task CITaskID, which a person answers like any other.

// CITaskID is the task a CI escalation parks: the pull request's CI itself.
const CITaskID = "ci"

// Reasons of a CI escalation.
const (
	ReasonCIFailed  = "ci_failed"
	ReasonCITimeout = "ci_timeout"
)

// CIWatch is what the run knows of its CI.
type CIWatch struct {
	// Head is the commit whose checks the run waits for, and Since when it started waiting.
	Head  string    `json:"head,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Timeout and Grace bound the wait (see config.CI); MaxRounds the fix rounds; RerunFlaky re-runs a
	// failed Actions job once first.
	Timeout    time.Duration `json:"timeout"`
	Grace      time.Duration `json:"grace"`
	MaxRounds  int           `json:"max_rounds"`
	RerunFlaky bool          `json:"rerun_flaky,omitempty"`
	// Round counts the fix rounds started; Fix is the one the next job runs.
	Round int    `json:"round,omitempty"`
	Fix   *CIFix `json:"fix,omitempty"`
	// Checks are the latest reading of the head's checks, for the summary; None says the commit showed
	// no check within the grace period.
	Checks []CICheckResult `json:"checks,omitempty"`
	None   bool            `json:"none,omitempty"`
	// Reran names the checks re-run once as flaky.
	Reran []string `json:"reran,omitempty"`
	// Each waits after every checkpoint (ci.watch: each), not only after the last task; More says
	// tasks remain after this wait, so green continues the run instead of ending it.
	Each bool `json:"each,omitempty"`
	More bool `json:"more,omitempty"`
}

// CICheckResult is one check as the summary shows it.
type CICheckResult struct {
	Name       string `json:"name"`
	Conclusion string `json:"conclusion,omitempty"` // empty while it runs
	URL        string `json:"url,omitempty"`
	Required   bool   `json:"required,omitempty"`
}

// CIFix is a fix round: the checks that failed and what explains them (masked), and a person's
// guidance when a retry decision started it.
type CIFix struct {
	Checks   []string `json:"checks"`
	Evidence string   `json:"evidence"`
	Guidance string   `json:"guidance,omitempty"`
}

// Scope is the task scope of fix round n: its task is "ci-<n>#fix".
func CIScope(round int) string { return "ci-" + strconv.Itoa(round) }

// WaitForCI is EngineFinished's status for a run whose tasks are done and whose CI it watches.
func waitForCI(r *Run, head string, now time.Time) {
	r.Status = StatusWaitingCI
	r.CI.Fix, r.CI.None, r.CI.Checks = nil, false, nil
	if head != "" {
		r.CI.Head = head
	} else if r.CI.Head == "" {
		r.CI.Head = r.Head
	}
	r.CI.Since = now.UTC()
}

// CIRead records a reading of the head's checks that decides nothing yet (some still run).
type CIRead struct{ Checks []CICheckResult }

func (CIRead) Kind() EventKind { return EventCIRead }
func (e CIRead) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.CI.Checks = e.Checks
	return []Effect{{Kind: EffectSummary}}, nil
}

// CIPassed: every check on the head passed, or the commit showed none within the grace period (None).
// The pull request is marked ready and the run succeeds.
type CIPassed struct {
	Checks []CICheckResult
	None   bool
	// Sync: the base moved while the run waited, so the pull request does not turn ready yet: the run
	// continues with a job that merges the base, and waits for the CI of the merge.
	Sync bool
}

func (CIPassed) Kind() EventKind { return EventCIPassed }
func (e CIPassed) apply(r *Run, _ time.Time) ([]Effect, error) {
	r.CI.Checks, r.CI.None = e.Checks, e.None
	if r.CI.More || e.Sync {
		// ci.watch: each: green lets the next task start; a base that moved is merged first.
		key := "ci-next-" + short(r.CI.Head)
		if !r.CI.More {
			key = "ci-sync-" + short(r.CI.Head)
		}
		r.CI.More = false
		r.Status = StatusQueued
		return []Effect{{Kind: EffectContinue, Key: key, By: r.Sender}, {Kind: EffectSummary}}, nil
	}
	r.Status = StatusSucceeded
	return succeeded(r), nil
}

// succeeded are the effects of a run that ends well: its own draft pull request ready, the operator
// told, the summary final.
func succeeded(r *Run) []Effect {
	var out []Effect
	if r.PR != 0 && r.OpenedPR {
		out = append(out, Effect{Kind: EffectReady})
	}
	return append(out, Effect{Kind: EffectNotify, Event: "run_finished", Occasion: "finished-" + strconv.Itoa(r.Jobs)}, Effect{Kind: EffectSummary})
}

// CIRerun: failed GitHub Actions jobs were re-run once as possibly flaky; the run waits again.
type CIRerun struct {
	Checks []CICheckResult
	Names  []string
}

func (CIRerun) Kind() EventKind { return EventCIRerun }
func (e CIRerun) apply(r *Run, now time.Time) ([]Effect, error) {
	r.CI.Checks = e.Checks
	r.CI.Reran = append(r.CI.Reran, e.Names...)
	r.CI.Since = now.UTC()
	return []Effect{{Kind: EffectSummary}}, nil
}

// CIFailed: checks on the head failed and a fix round is left: the run is queued for the job that
// runs the fix task.
type CIFailed struct {
	Checks []CICheckResult
	Fix    CIFix
}

func (CIFailed) Kind() EventKind { return EventCIFailed }
func (e CIFailed) apply(r *Run, _ time.Time) ([]Effect, error) {
	if r.CI.Round >= r.CI.MaxRounds {
		return nil, fmt.Errorf("run %s has used its %d fix rounds", r.ID, r.CI.MaxRounds)
	}
	fix := e.Fix
	r.CI.Checks, r.CI.Fix = e.Checks, &fix
	r.CI.Round++
	r.Status = StatusQueued
	return []Effect{{Kind: EffectContinue, Key: "ci-round-" + strconv.Itoa(r.CI.Round) + "-" + short(r.CI.Head), By: r.Sender},
		{Kind: EffectSummary}}, nil
}

// CIGaveUp: the head's checks stay red after the last fix round, or did not finish in time: the run
// parks on the task CITaskID with what failed, until a person decides (retry starts another round,
// approve or skip accept the pull request as it is, abort ends the run).
type CIGaveUp struct {
	Checks   []CICheckResult
	Reason   string // ReasonCIFailed or ReasonCITimeout
	Summary  string
	Evidence string
}

func (CIGaveUp) Kind() EventKind { return EventCIGaveUp }
func (e CIGaveUp) apply(r *Run, now time.Time) ([]Effect, error) {
	r.CI.Checks = e.Checks
	t := r.EditTask(CITaskID)
	if t == nil {
		t = &TaskState{ID: CITaskID, Title: "the pull request's CI", Status: TaskStatusPending}
		r.Tasks = append(r.Tasks, t)
	}
	if err := setTask(t, TaskStatusEscalated); err != nil {
		return nil, err
	}
	t.Escalations++
	t.EscalationCommentID, t.EscalationURL, t.Note = 0, "", e.Summary
	t.Attempts = r.CI.Round
	r.Parked = append(removeParked(r.Parked, CITaskID), Parked{TaskID: CITaskID, Attempt: r.CI.Round, HeadSHA: r.CI.Head,
		Reason: e.Reason, Summary: e.Summary, At: now.UTC()})
	r.CI.Fix = &CIFix{Checks: failedNames(e.Checks), Evidence: e.Evidence}
	r.Status = StatusParked
	ids := []string{CITaskID}
	return []Effect{{Kind: EffectNotify, Event: "escalation", Occasion: CITaskID + "-" + strconv.Itoa(t.Escalations), Reason: e.Summary, TaskIDs: ids},
		{Kind: EffectEscalation, TaskIDs: ids}, {Kind: EffectSummary}}, nil
}

func failedNames(cs []CICheckResult) []string {
	var out []string
	for _, c := range cs {
		switch c.Conclusion {
		case "", "success", "neutral", "skipped":
		default:
			out = append(out, c.Name)
		}
	}
	return out
}

// CIDecided: the job continuing a run whose CI escalation a person answered acts on the decision:
// retry starts another fix round (with the guidance), approve and skip accept the pull request as it
// is and the run succeeds.
type CIDecided struct{ Decision runner.Decision }

func (CIDecided) Kind() EventKind { return EventCIDecided }
func (e CIDecided) apply(r *Run, _ time.Time) ([]Effect, error) {
	t := r.EditTask(CITaskID)
	if t == nil || r.CI == nil {
		return nil, fmt.Errorf("run %s has no CI escalation", r.ID)
	}
	delete(r.Decisions, CITaskID)
	switch e.Decision.Kind {
	case runner.DecisionRetry:
		if err := setTask(t, TaskStatusRunning); err != nil {
			return nil, err
		}
		fix := CIFix{Guidance: e.Decision.Guidance}
		if r.CI.Fix != nil {
			fix.Checks, fix.Evidence = r.CI.Fix.Checks, r.CI.Fix.Evidence
		}
		r.CI.Fix = &fix
		r.CI.Round++
		r.CI.MaxRounds = max(r.CI.MaxRounds, r.CI.Round)
		return []Effect{{Kind: EffectSummary}}, nil
	case runner.DecisionApprove, runner.DecisionSkip:
		status := TaskStatusPassed
		if e.Decision.Kind == runner.DecisionSkip {
			status = TaskStatusSkipped
		}
		if err := setTask(t, status); err != nil {
			return nil, err
		}
		t.Note = "accepted by " + Who(e.Decision.By)
		r.CI.Fix = nil
		if r.CI.More {
			// Tasks remain (ci.watch: each): the job that applies this goes on with them.
			r.CI.More = false
			return []Effect{{Kind: EffectSummary}}, nil
		}
		r.Status = StatusSucceeded
		return succeeded(r), nil
	}
	return nil, fmt.Errorf("a CI escalation takes approve, retry or skip, not %s", e.Decision.Kind)
}

// CIAborted: a person aborted a run while it waited for its CI (/akira abort): it ends, its pushed
// checkpoints stay on the branch.
type CIAborted struct{ By string }

func (CIAborted) Kind() EventKind { return EventCIAborted }
func (e CIAborted) apply(r *Run, _ time.Time) ([]Effect, error) {
	if err := abort(r, e.By, ""); err != nil {
		return nil, err
	}
	r.CI.Fix = nil
	return []Effect{{Kind: EffectSummary}}, nil
}

// CIFixRound names a fix round for people: the checks it addresses.
func (f *CIFix) String() string { return strings.Join(f.Checks, ", ") }

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
