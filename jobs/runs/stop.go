package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// A person can stop a run while it works: `/akira stop` (the run keeps its branch and waits; `/akira
// run` continues it from the last checkpoint) or `/akira abort` (the run ends). The request is written
// into the run's record; the job working on the run polls the record and cancels the engine's context,
// which kills the agent's process group and discards the attempt. Whichever worker holds the run sees
// it, and a request for a run that is only queued is found by its job when it starts.

// stopPollInterval is how often a working job looks for a stop request: the agent is killed at most
// this long (plus the kill itself) after the request.
const stopPollInterval = time.Second

// errStopRequested is the cause of a job's context when a person stopped the run.
var errStopRequested = errors.New("jobs: stopped by a person")

// errPauseNow is the cause of a job's context when a person paused the run now.
var errPauseNow = errors.New("jobs: paused now by a person")

// pauseRun ends the job of a run paused now (or paused while it was queued): the task that was
// running is pending again, its check run cancelled, and the summary says who paused it.
func (h *Runs) pauseRun(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, log *slog.Logger) (string, error) {
	run, _, err := h.d.Store.Transition(ctx, run.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if r.Pause == nil || r.Status != lifecycle.StatusRunning {
			return nil, nil
		}
		return lifecycle.Paused{}, nil
	})
	if err != nil {
		return metrics.ResultRetry, err
	}
	if run, err = h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	log.Info("run job: paused by a person", "by", run.PausedBy, "status", run.Status)
	return metrics.ResultPaused, nil
}

// watchStop cancels the job's context when a stop request, or a request to pause now, appears in the
// run's record; a request to pause after the current task sets pause, which the engine reads before
// it starts the next.
func (h *Runs) watchStop(ctx context.Context, id string, cancel context.CancelCauseFunc, pause *atomic.Bool, log *slog.Logger) {
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
		if p := run.Pause; p != nil {
			if p.Now {
				log.Info("run job: pause requested now", "by", p.By)
				cancel(errPauseNow)
				return
			}
			if !pause.Swap(true) {
				log.Info("run job: pause requested after the current task", "by", p.By)
			}
		} else {
			pause.Store(false) // withdrawn by a resume
		}
	}
}

// stopRun ends the job of a run a person stopped: the run is stopped (or aborted), the check run of
// the task that was in progress is cancelled, and the summary says who did it.
func (h *Runs) stopRun(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, log *slog.Logger) (string, error) {
	run, _, err := h.d.Store.Transition(ctx, run.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if r.Stop == nil {
			return nil, nil
		}
		return lifecycle.Stopped{}, nil
	})
	if err != nil {
		return metrics.ResultRetry, err
	}
	by := run.StoppedBy
	if run.Status == lifecycle.StatusAborted {
		by = run.AbortedBy
	}
	if run, err = h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	log.Info("run job: stopped by a person", "by", by, "status", run.Status)
	return metrics.ResultAborted, nil
}

// reviveStopped continues a stopped run of the issue or pull request instead of starting a second one
// beside it; nil when its latest run is not stopped.
func (h *Runs) reviveStopped(ctx context.Context, p queue.RunPayload) (*lifecycle.Run, error) {
	if p.Number <= 0 || (p.Trigger != lifecycle.TriggerIssue && p.Trigger != lifecycle.TriggerPullRequest && p.Trigger != lifecycle.TriggerFork) {
		return nil, nil
	}
	prev, err := h.d.Store.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil || prev.Status != lifecycle.StatusStopped {
		return nil, err
	}
	run, _, err := h.d.Store.Transition(ctx, prev.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if !lifecycle.Allowed(r.Status, lifecycle.EventRevived) {
			return nil, ErrNothingToDo
		}
		return lifecycle.Revived{}, nil
	})
	if errors.Is(err, ErrNothingToDo) {
		return nil, nil
	}
	return run, err
}
