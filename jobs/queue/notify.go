package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/akira-bot/akira/jobs/notify"
	"github.com/hibiken/asynq"
)

// TypeNotify sends one notification to one sink. A job per sink: one sink that is down neither
// delays nor repeats the others.
const TypeNotify = "akira:notify"

// NotifyTimeout bounds one notify job; NotifyMaxRetry with RetryDelay's backoff spans about an hour.
const (
	NotifyTimeout  = time.Minute
	NotifyMaxRetry = 10
)

// NotifyPayload is the payload of TypeNotify.
type NotifyPayload struct {
	Version int    `json:"v"`
	ID      string `json:"id"`
	Sink    string `json:"sink"`
	// Message is what the sink is told; sinks are the operator's, so no installation is involved.
	Message notify.Message `json:"message"`
}

// JobID makes one notification per event, sink and occasion.
func (p NotifyPayload) JobID() string { return "notify:" + p.Sink + ":" + p.ID }

// Validate reports what is missing from a notify payload.
func (p NotifyPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.ID == "" || p.Sink == "" {
		errs = append(errs, errors.New("no id or no sink"))
	}
	if p.Message.Event == "" || p.Message.Title == "" {
		errs = append(errs, errors.New("no event or no title"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("notify payload: %w", err)
	}
	return nil
}

// NewNotifyTask builds a TypeNotify task.
func (o TaskOptions) NewNotifyTask(p NotifyPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypeNotify, p, NotifyTimeout, NotifyMaxRetry)
}

// EnqueueNotify enqueues a TypeNotify task; ErrDuplicate when this notification was sent already.
func (e *Enqueuer) EnqueueNotify(ctx context.Context, p NotifyPayload, opts ...asynq.Option) error {
	t, err := e.opts.NewNotifyTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t, opts...)
}
