package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// TypeCI reads a waiting run's CI and moves the run on.
const TypeCI = "akira:ci"

// CIPayload is the payload of TypeCI.
type CIPayload struct {
	Version        int    `json:"v"`
	RunID          string `json:"run_id"`
	InstallationID int64  `json:"installation_id"`
	// Head is the commit the delivery was about ("" from the poll: the run's head).
	Head string `json:"head,omitempty"`
	// Key tells readings apart: the delivery id, or the poll's time slot.
	Key string `json:"key"`
}

// JobID makes one reading per delivery or poll slot.
func (p CIPayload) JobID() string { return "ci:" + p.RunID + ":" + p.Head + ":" + p.Key }

// Validate reports what is missing from a CI payload.
func (p CIPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.RunID == "" || p.InstallationID <= 0 || p.Key == "" {
		errs = append(errs, errors.New("run, installation and key are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ci payload: %w", err)
	}
	return nil
}

// EnqueueCI enqueues a TypeCI task; ErrDuplicate when this reading is queued already.
func (e *Enqueuer) EnqueueCI(ctx context.Context, p CIPayload) error {
	t, err := e.opts.NewCITask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

// NewCITask builds a TypeCI task. A zero Version is filled in.
func (o TaskOptions) NewCITask(p CIPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.withDefaults().newTask(TypeCI, p, ResumeTimeout, IntakeMaxRetry)
}
