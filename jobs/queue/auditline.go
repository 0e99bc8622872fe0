package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// TypeAuditLine posts the line on a pull request that mirrors an operator's control action.
const TypeAuditLine = "akira:audit-line"

// AuditLinePayload is the payload of TypeAuditLine: the comment, already rendered.
type AuditLinePayload struct {
	Version        int    `json:"v"`
	ID             string `json:"id"`
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	Number         int    `json:"number"`
	Body           string `json:"body"`
}

// JobID makes one line per control request.
func (p AuditLinePayload) JobID() string { return "audit-line:" + p.ID }

// Validate reports what is missing from an audit line payload.
func (p AuditLinePayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.ID == "" || p.InstallationID <= 0 || p.Owner == "" || p.Repo == "" || p.Number <= 0 || p.Body == "" {
		errs = append(errs, errors.New("id, installation, repository, number and body are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit line payload: %w", err)
	}
	return nil
}

// EnqueueAuditLine enqueues a TypeAuditLine task; ErrDuplicate when this line was queued already.
func (e *Enqueuer) EnqueueAuditLine(ctx context.Context, p AuditLinePayload) error {
	t, err := e.opts.NewAuditLineTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

// NewAuditLineTask builds a TypeAuditLine task. A zero Version is filled in.
func (o TaskOptions) NewAuditLineTask(p AuditLinePayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.withDefaults().newTask(TypeAuditLine, p, ResumeTimeout, IntakeMaxRetry)
}
