package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// The relay of the run's outbox. A transition and the effects it requires are written together (see
// lifecycle.Effect and Run.Outbox); the job that made the transition performs them at once. When its
// worker dies in between, or GitHub fails it, the effects wait in the outbox: every worker's reaper
// looks for outboxes left longer than RelayAge and queues a publish job for each, which performs what
// is left in order. Its task id names the run's revision, so workers reaping at once queue it once.

// RelayAge is how long effects may wait in an outbox before the relay takes them for left behind:
// longer than the job that wrote them needs to perform them.
const RelayAge = 30 * time.Second

// HandlePublish performs what the run's outbox holds.
func (h *Effects) HandlePublish(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypePublish, h.publishLeftBehind)
}

func (h *Effects) publishLeftBehind(ctx context.Context, p queue.PublishPayload) (string, error) {
	log := h.log.With("task", queue.TypePublish, "installation", p.InstallationID, "run", p.RunID)
	run, err := h.records.Get(ctx, p.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return metrics.ResultNoop, h.records.ForgetOutbox(ctx, p.RunID)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	if len(run.Outbox) == 0 {
		return metrics.ResultNoop, nil
	}
	gh, err := flow.Installation(ctx, h.d.GitHub, run.InstallationID)
	if err == nil {
		log.Info("publish job: performing effects left behind", "effects", len(run.Outbox), "repo", run.Owner+"/"+run.Repo)
		_, err = h.Publish(ctx, gh, run, log)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	return metrics.ResultSucceeded, nil
}

// Relay queues a publish job for each run whose effects waited longer than age, and returns how many
// it queued.
func (h *Effects) Relay(ctx context.Context, age time.Duration) (int, error) {
	ids, err := h.records.LeftEffects(ctx, age)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range ids {
		run, err := h.records.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			errs = append(errs, h.records.ForgetOutbox(ctx, id))
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(run.Outbox) == 0 {
			continue
		}
		err = h.d.Enqueuer.EnqueuePublish(ctx, queue.PublishPayload{RunID: id, InstallationID: run.InstallationID, Rev: run.Rev})
		switch {
		case errors.Is(err, queue.ErrDuplicate):
		case err != nil:
			errs = append(errs, fmt.Errorf("jobs: relay effects of run %s: %w", id, err))
		default:
			n++
			h.log.Warn("relay: effects left behind; publishing them", "run", id, "effects", len(run.Outbox))
		}
	}
	return n, errors.Join(errs...)
}
