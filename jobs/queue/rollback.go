package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
)

// TypeRollback undoes a task's checkpoint (and its dependents') on a run's branch: /akira rollback.
const TypeRollback = "akira:rollback"

// RollbackPayload is the payload of TypeRollback.
type RollbackPayload struct {
	TaskHeader
	Number    int    `json:"number"`
	CommentID int64  `json:"comment_id,omitempty"`
	TaskID    string `json:"task_id"`
	// Retry runs the reverted tasks again at once, with Guidance in their prompts.
	Retry    bool   `json:"retry,omitempty"`
	Guidance string `json:"guidance,omitempty"`
}

// JobID is the comment when there is one (an edited comment comes as a new delivery), else the
// delivery: the same command rolls back once.
func (p RollbackPayload) JobID() string {
	if p.CommentID != 0 {
		return "rollback:comment:" + strconv.FormatInt(p.CommentID, 10)
	}
	return "rollback:" + p.DeliveryID
}

// Validate reports what is missing from a rollback payload.
func (p RollbackPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.DeliveryID == "" && p.CommentID == 0 {
		errs = append(errs, errors.New("neither a delivery id nor a comment id"))
	}
	if p.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if p.Owner == "" || p.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	if p.Number <= 0 {
		errs = append(errs, errors.New("no issue or pull request number"))
	}
	if p.TaskID == "" || strings.HasPrefix(p.TaskID, "-") {
		errs = append(errs, fmt.Errorf("task id %q", p.TaskID))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rollback payload: %w", err)
	}
	return nil
}

// NewRollbackTask builds a TypeRollback task. A zero Version is filled in; an invalid payload is an
// error.
func (o TaskOptions) NewRollbackTask(p RollbackPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypeRollback, p, PlanTimeout, o.MaxRetry)
}

// DecodeRollbackPayload reads a TypeRollback payload; see Decode.
func DecodeRollbackPayload(t *asynq.Task) (RollbackPayload, error) {
	var p RollbackPayload
	return p, Decode(t, TypeRollback, &p)
}

// EnqueueRollback enqueues a TypeRollback task. It returns ErrDuplicate when a task with the same id
// exists.
func (e *Enqueuer) EnqueueRollback(ctx context.Context, p RollbackPayload) error {
	t, err := e.opts.NewRollbackTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
