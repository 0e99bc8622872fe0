package lifecycle

import (
	"fmt"
	"strconv"
	"time"
)

// A person pauses a run (/akira pause, POST /api/v1/runs/{id}/pause): the job working on it lets the
// current task finish and stops before the next (EngineFinished with Yielded), or, asked to pause
// now, ends the attempt at once as /akira stop does (Paused). A queued run pauses when its job
// starts, before any clone. A paused run holds no worker and no lock; Resumed queues the job that
// starts at the next task, on any worker.

// PauseAsked records the request on a queued or running run; asking again only makes it sooner.
type PauseAsked struct{ Request PauseRequest }

func (PauseAsked) Kind() EventKind { return EventPauseAsked }
func (e PauseAsked) apply(r *Run, _ time.Time) ([]Effect, error) {
	if r.Pause == nil || e.Request.Now {
		req := e.Request
		r.Pause = &req
	}
	return nil, nil
}

// Paused ends the job of a run asked to pause now, or of a queued run asked to pause before its job
// started: a task that was running is pending again and its check run is cancelled.
type Paused struct{}

func (Paused) Kind() EventKind { return EventPaused }
func (Paused) apply(r *Run, _ time.Time) ([]Effect, error) {
	req := r.Pause
	if req == nil {
		return nil, fmt.Errorf("run %s has no pause request", r.ID)
	}
	r.Pause = nil
	r.Status, r.PausedBy = StatusPaused, req.By
	for i, t := range r.Tasks {
		if t.Status == TaskStatusRunning {
			if err := setTask(r.editTaskAt(i), TaskStatusPending); err != nil {
				return nil, err
			}
		}
	}
	return []Effect{{Kind: EffectConcludeCheckRuns, TaskIDs: openCheckRuns(r), Conclusion: ConclusionCancelled, Title: "Paused",
		Text: fmt.Sprintf("The run was paused by %s; the attempt was discarded and the task runs again when the run is resumed.", Who(req.By))},
		{Kind: EffectSummary}}, nil
}

// Resumed continues a paused run at its next task (the job is queued); on a run whose pause has not
// taken effect yet it withdraws the request, and the run goes on as if never paused.
type Resumed struct{ By string }

func (Resumed) Kind() EventKind { return EventResumed }
func (e Resumed) apply(r *Run, _ time.Time) ([]Effect, error) {
	if r.Status != StatusPaused {
		if r.Pause == nil {
			return nil, fmt.Errorf("run %s is %s, not paused", r.ID, r.Status)
		}
		r.Pause = nil
		return nil, nil
	}
	r.Status, r.PausedBy = StatusQueued, ""
	return []Effect{{Kind: EffectContinue, Key: "resume-" + strconv.Itoa(r.Jobs), By: e.By}, {Kind: EffectSummary}}, nil
}

// PauseAborted: a person aborted a paused run (/akira abort): it ends, its pushed checkpoints stay on
// the branch.
type PauseAborted struct{ By string }

func (PauseAborted) Kind() EventKind { return EventPauseAborted }
func (e PauseAborted) apply(r *Run, _ time.Time) ([]Effect, error) {
	if err := abort(r, e.By, ""); err != nil {
		return nil, err
	}
	r.PausedBy = ""
	return []Effect{{Kind: EffectSummary}}, nil
}
