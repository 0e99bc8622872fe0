package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/akira-bot/akira/templates"
)

// A person can stop a run while it works: `/akira stop` (the run keeps its branch and waits; `/akira
// run` continues it from the last checkpoint) or `/akira abort` (the run ends). The request is written
// into the run's record; the job working on the run polls the record and cancels the engine's context,
// which kills the agent's process group and discards the attempt. Whichever worker holds the run sees
// it, and a request for a run that is only queued is found by its job when it starts.

// StopRequest asks the job working on a run to stop it.
type StopRequest struct {
	By string `json:"by"`
	// Abort ends the run for good instead of stopping it.
	Abort bool      `json:"abort,omitempty"`
	At    time.Time `json:"at"`
}

// stopPollInterval is how often a working job looks for a stop request: the agent is killed at most
// this long (plus the kill itself) after the request.
const stopPollInterval = time.Second

// errStopRequested is the cause of a job's context when a person stopped the run.
var errStopRequested = errors.New("jobs: stopped by a person")

// RequestStop asks the job working on the run to stop it. It says false when the run is not working
// (queued or running), and changes nothing then.
func (s *Store) RequestStop(ctx context.Context, id, by string, abort bool) (*Run, bool, error) {
	asked := false
	run, err := s.Update(ctx, id, func(r *Run) error {
		if r.Status != StatusRunning && r.Status != StatusQueued {
			return nil
		}
		if r.Stop == nil || abort {
			r.Stop = &StopRequest{By: by, Abort: abort, At: s.now()}
		}
		asked = true
		return nil
	})
	return run, asked, err
}

// watchStop cancels the job's context when a stop request appears in the run's record.
func (h *Handler) watchStop(ctx context.Context, id string, cancel context.CancelCauseFunc, log *slog.Logger) {
	t := time.NewTicker(stopPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		run, err := h.d.Store.Get(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("run job: could not look for a stop request", "err", err)
			}
			continue
		}
		if run.Stop != nil {
			log.Info("run job: stop requested", "by", run.Stop.By, "abort", run.Stop.Abort)
			cancel(errStopRequested)
			return
		}
	}
}

// stopRun ends the job of a run a person stopped: the run is stopped (or aborted), the check run of
// the task that was in progress is cancelled, and the summary says who did it.
func (h *Handler) stopRun(ctx context.Context, gh GitHub, run *Run, log *slog.Logger) (string, error) {
	run, err := h.d.Store.Update(ctx, run.ID, func(r *Run) error {
		req := r.Stop
		if req == nil {
			return nil
		}
		r.Stop = nil
		if req.Abort {
			recordAborted(r, req.By, "")
			r.Parked = nil
			return nil
		}
		r.Status, r.StoppedBy = StatusStopped, req.By
		for i := range r.Tasks {
			if r.Tasks[i].Status == templates.StatusRunning {
				r.Tasks[i].Status = templates.StatusPending
			}
		}
		return nil
	})
	if err != nil {
		return ResultRetry, err
	}
	by := run.StoppedBy
	if run.Status == StatusAborted {
		by = run.AbortedBy
	}
	for _, t := range run.Tasks {
		if t.CheckRunID != 0 && !t.CheckRunDone {
			if err := gh.UpdateCheckRun(ctx, run.Owner, run.Repo, t.CheckRunID, CheckRun{Conclusion: ConclusionCancelled,
				Title: "Stopped", Summary: fmt.Sprintf("The run was stopped by %s; the attempt was discarded.", templates.Who(by))}); err != nil && !errors.Is(err, ErrGitHubNotFound) {
				return ResultRetry, fmt.Errorf("jobs: cancel check run of %s: %w", t.ID, err)
			}
			if run, err = h.d.Store.Update(ctx, run.ID, recordCheckRunDone(t.ID)); err != nil {
				return ResultRetry, err
			}
		}
	}
	p := publisher{gh: gh, store: h.d.Store, log: log}
	if _, err := p.publishSummary(ctx, run); err != nil {
		return ResultRetry, err
	}
	log.Info("run job: stopped by a person", "by", by, "status", run.Status)
	return ResultAborted, nil
}

// reviveStopped continues a stopped run of the issue or pull request instead of starting a second one
// beside it; nil when its latest run is not stopped.
func (h *Handler) reviveStopped(ctx context.Context, p RunPayload) (*Run, error) {
	if p.Number <= 0 || (p.Trigger != TriggerIssue && p.Trigger != TriggerPullRequest) {
		return nil, nil
	}
	prev, err := h.d.Store.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil || prev.Status != StatusStopped {
		return nil, err
	}
	run, err := h.d.Store.Update(ctx, prev.ID, func(r *Run) error {
		if r.Status != StatusStopped {
			return errNothingToDo
		}
		r.Status, r.StoppedBy, r.Stop = StatusQueued, "", nil
		return nil
	})
	if errors.Is(err, errNothingToDo) {
		return nil, nil
	}
	return run, err
}
