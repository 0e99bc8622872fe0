package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// DefaultReapInterval is how often each worker looks for runs whose worker died.
const DefaultReapInterval = 5 * time.Second

// A run is marked running only while a job holds its branch lock: the job sets it under the lock and
// changes it (to where the run stands, or to queued when asynq will retry the job) before releasing
// the lock. A running run whose branch lock is free therefore lost its worker (killed, out of
// memory, the machine gone). asynq would find the job again only when its lease expires and its
// recoverer next runs, a minute or more later; the reaper finds the run within one lock TTL and one
// interval, and queues a job that continues it from the branch. asynq's own recovery of the dead job
// later finds the run moving (or done) and exits.

// Reap queues a continuation for each running run whose branch lock nobody holds, and returns how
// many it queued. Every worker may reap at once: the continuation's task id is derived from the run
// and its job count, so the same dead job is continued once.
func (h *Handler) Reap(ctx context.Context) (int, error) {
	ids, err := h.d.Store.Running(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, id := range ids {
		queued, err := h.reapOne(ctx, id)
		if err != nil {
			errs = append(errs, err)
		}
		if queued {
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (h *Handler) reapOne(ctx context.Context, id string) (bool, error) {
	run, err := h.d.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, h.d.Store.forgetRunning(ctx, id)
	}
	if err != nil {
		return false, err
	}
	if run.Status != StatusRunning {
		return false, h.d.Store.forgetRunning(ctx, id)
	}
	held, err := h.d.Locker.Held(ctx, BranchLockName(run.Owner, run.Repo, run.Branch))
	if err != nil || held {
		return false, err
	}
	// The job count names the dead job: one continuation per job that died.
	err = h.d.Enqueuer.EnqueueRun(ctx, continuation(run, "reap:"+run.ID+":"+strconv.Itoa(run.Jobs), run.Sender))
	if errors.Is(err, ErrDuplicate) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("jobs: continue run %s: %w", run.ID, err)
	}
	h.log.Warn("reaper: run lost its worker; continuing it", "run", run.ID, "repo", run.Owner+"/"+run.Repo,
		"branch", run.Branch, "job", run.Jobs, "since", time.Since(run.UpdatedAt).Round(time.Second))
	h.d.Metrics.reaped()
	return true, nil
}

// RunReaper reaps every interval (DefaultReapInterval when zero) until ctx ends, starting at once so
// that a restarted worker picks up its own dead runs as soon as their locks expire.
func (h *Handler) RunReaper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultReapInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := h.Reap(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("reaper: sweep failed", "err", err)
		}
		if _, err := h.Relay(ctx, RelayAge); err != nil && ctx.Err() == nil {
			h.log.Warn("relay: sweep failed", "err", err)
		}
		if err := h.PollCI(ctx, time.Now()); err != nil && ctx.Err() == nil {
			h.log.Warn("ci poll failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
