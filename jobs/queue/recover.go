package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// TypeRecover is the job that replays the answers Redis may have lost.
const TypeRecover = "akira:recover"

// RecoverPayload is the payload of TypeRecover.
type RecoverPayload struct {
	Version int `json:"v"`
	// Epoch is the epoch key's new value; Since when it was written: deliveries after it reached the
	// new Redis and need no replay.
	Epoch string    `json:"epoch"`
	Since time.Time `json:"since"`
}

// JobID makes one recovery per lost epoch, however many workers noticed.
func (p RecoverPayload) JobID() string { return "recover:" + p.Epoch }

// Validate reports what is missing from a recover payload.
func (p RecoverPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.Epoch == "" {
		errs = append(errs, errors.New("no epoch"))
	}
	if p.Since.IsZero() {
		errs = append(errs, errors.New("no time"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recover payload: %w", err)
	}
	return nil
}

// NewRecoverTask builds a TypeRecover task.
func (o TaskOptions) NewRecoverTask(p RecoverPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypeRecover, p, 10*time.Minute, o.MaxRetry)
}

// EnqueueRecover enqueues a TypeRecover task; ErrDuplicate when that epoch's recovery is queued.
func (e *Enqueuer) EnqueueRecover(ctx context.Context, p RecoverPayload) error {
	t, err := e.opts.NewRecoverTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
