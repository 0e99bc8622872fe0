package runs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// DefaultReapInterval is how often each worker looks for runs whose worker died: with the lease
// (DefaultLockTTL) it bounds recovery. A sweep costs one SMEMBERS and, per running run, a GET and an
// EXISTS.
const DefaultReapInterval = time.Second

// sweepInterval is how often the reaper loop also relays left effects and polls waiting CI: neither
// bounds recovery, and the CI poll costs GitHub calls.
const sweepInterval = 5 * time.Second

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
func (h *Reaper) Reap(ctx context.Context) (int, error) {
	n, _, err := h.reap(ctx)
	return n, err
}

// reap is Reap, which also says when the soonest held lease lapses unless renewed (0: none held), so
// that the reaper can look again right then instead of up to an interval later.
func (h *Reaper) reap(ctx context.Context) (int, time.Duration, error) {
	ids, err := h.records.Running(ctx)
	if err != nil {
		return 0, 0, err
	}
	var errs []error
	n := 0
	var soonest time.Duration
	for _, id := range ids {
		queued, lapse, err := h.reapOne(ctx, id)
		if err != nil {
			errs = append(errs, err)
		}
		if queued {
			n++
		}
		if lapse > 0 && (soonest == 0 || lapse < soonest) {
			soonest = lapse
		}
	}
	return n, soonest, errors.Join(errs...)
}

func (h *Reaper) reapOne(ctx context.Context, id string) (bool, time.Duration, error) {
	run, err := h.records.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, 0, h.records.ForgetRunning(ctx, id)
	}
	if err != nil {
		return false, 0, err
	}
	if run.Status != lifecycle.StatusRunning {
		return false, 0, h.records.ForgetRunning(ctx, id)
	}
	// The lease of the job on the run: renewed every third of its TTL while the job's worker lives.
	lapse, err := h.d.Locker.Lapse(ctx, store.BranchLockName(run.Owner, run.Repo, run.Branch))
	if err != nil || lapse > 0 {
		return false, lapse, err
	}
	// The job count names the dead job: one continuation per job that died.
	err = h.d.Enqueuer.EnqueueRun(ctx, queue.Continuation(run, "reap:"+run.ID+":"+strconv.Itoa(run.Jobs), run.Sender))
	if errors.Is(err, queue.ErrDuplicate) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("jobs: continue run %s: %w", run.ID, err)
	}
	h.log.Warn("reaper: run lost its worker; continuing it", "run", run.ID, "repo", run.Owner+"/"+run.Repo,
		"branch", run.Branch, "job", run.Jobs, "since", time.Since(run.UpdatedAt).Round(time.Second))
	h.d.Metrics.Reaped()
	return true, 0, nil
}

// RunReaper reaps every interval (DefaultReapInterval when zero) until ctx ends, starting at once so
// that a restarted worker picks up its own dead runs as soon as their leases lapse. The epoch check
// (see checkEpoch), the relay of left effects and the CI poll run at the first round and then every
// sweepInterval (or every interval, when that is longer).
func (h *Reaper) RunReaper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultReapInterval
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	var swept time.Time
	for {
		_, lapse, err := h.reap(ctx)
		if err != nil && ctx.Err() == nil {
			h.log.Warn("reaper: sweep failed", "err", err)
		}
		if time.Since(swept) >= sweepInterval-interval/2 {
			swept = time.Now()
			if _, err := h.recovery.CheckEpoch(ctx, swept); err != nil && ctx.Err() == nil {
				h.log.Warn("recover: epoch check failed", "err", err)
			}
			if _, err := h.pub.Relay(ctx, publish.RelayAge); err != nil && ctx.Err() == nil {
				h.log.Warn("relay: sweep failed", "err", err)
			}
			if err := h.ci.PollCI(ctx, time.Now()); err != nil && ctx.Err() == nil {
				h.log.Warn("ci poll failed", "err", err)
			}
		}
		// A lease that lapses before the next round is looked at again right after: a live worker
		// renews it well before (every third of the TTL), a dead one's run is continued at once.
		next := interval
		if lapse > 0 && lapse+reapSlack < next {
			next = lapse + reapSlack
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reapSlack is how long after a lease's expiry the reaper looks at it again.
const reapSlack = 50 * time.Millisecond
