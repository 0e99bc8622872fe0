package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/hibiken/asynq"
)

// TypePublish performs the effects a run's transitions left in its outbox.
const TypePublish = "akira:publish"

// PublishPayload is the payload of TypePublish.
type PublishPayload struct {
	Version        int    `json:"v"`
	RunID          string `json:"run_id"`
	InstallationID int64  `json:"installation_id"`
	// Rev is the run's revision when the relay found the effects left.
	Rev int64 `json:"rev"`
}

// JobID makes one publish job per run revision.
func (p PublishPayload) JobID() string {
	return "publish:" + p.RunID + ":" + strconv.FormatInt(p.Rev, 10)
}

// Validate reports what is missing from a publish payload.
func (p PublishPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.RunID == "" || p.InstallationID <= 0 {
		errs = append(errs, errors.New("run and installation are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("publish payload: %w", err)
	}
	return nil
}

// EnqueuePublish enqueues a TypePublish task; ErrDuplicate when this revision's is queued already.
func (e *Enqueuer) EnqueuePublish(ctx context.Context, p PublishPayload) error {
	t, err := e.opts.NewPublishTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

// NewPublishTask builds a TypePublish task. A zero Version is filled in.
func (o TaskOptions) NewPublishTask(p PublishPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.withDefaults().newTask(TypePublish, p, ResumeTimeout, IntakeMaxRetry)
}
