package flow

import (
	"context"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
)

// Handle is every task handler's frame, so that each type is counted the same way: it decodes t as
// a payload of type typ (one that can never be processed is counted invalid and not retried, see
// queue.Decode), does the job and counts its result under typ. A job says its own result (retry,
// queued, replied...) because only it knows why it failed.
func Handle[P any, PP interface {
	*P
	queue.Payload
}](ctx context.Context, t *asynq.Task, m *metrics.Metrics, typ string, do func(context.Context, P) (string, error)) error {
	var p P
	if err := queue.Decode(t, typ, PP(&p)); err != nil {
		m.Job(typ, metrics.ResultInvalid)
		return err
	}
	result, err := do(ctx, p)
	m.Job(typ, result)
	return err
}

// Paused is a job's first step when it must not call GitHub while the installation is rate-limited:
// the job goes back to the queue (result queued) and waits out the limit there.
func (d *Deps) Paused(ctx context.Context, installationID int64) (string, error) {
	if err := d.Fair.Paused(ctx, installationID); err != nil {
		return metrics.ResultQueued, err
	}
	return "", nil
}
