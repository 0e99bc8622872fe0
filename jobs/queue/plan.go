package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// TypePlan asks the agent for a plan of an issue written in prose and posts it.
const TypePlan = "akira:plan"

// PlanPayload is the payload of TypePlan.
type PlanPayload struct {
	TaskHeader
	DefaultBranch string `json:"default_branch,omitempty"`
	Number        int    `json:"number"`
	// CommentID is the command that asked for the plan.
	CommentID int64  `json:"comment_id,omitempty"`
	Guidance  string `json:"guidance,omitempty"`
	// FromRun says `/akira run` asked for it (the plan may then run at once, under plan: auto);
	// otherwise `/akira plan` did and the plan is only posted.
	FromRun bool `json:"from_run,omitempty"`
	// Normalize: the issue holds a checklist no format reads with confidence; the planner agent
	// rewrites it, and the rewrite is posted to be confirmed (/akira run --confirm), never run at once.
	Normalize bool `json:"normalize,omitempty"`
}

// JobID is the delivery: a redelivered command plans once.
func (p PlanPayload) JobID() string { return "plan:" + p.DeliveryID }

// Validate reports what is missing from a plan payload.
func (p PlanPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.DeliveryID == "" {
		errs = append(errs, errors.New("no delivery id"))
	}
	if p.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if p.Owner == "" || p.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	if p.Number <= 0 {
		errs = append(errs, errors.New("no issue number"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("plan payload: %w", err)
	}
	return nil
}

// NewPlanTask builds a TypePlan task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewPlanTask(p PlanPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypePlan, p, PlanTimeout, o.MaxRetry)
}

// DecodePlanPayload reads a TypePlan payload; see Decode.
func DecodePlanPayload(t *asynq.Task) (PlanPayload, error) {
	var p PlanPayload
	return p, Decode(t, TypePlan, &p)
}

// EnqueuePlan enqueues a TypePlan task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueuePlan(ctx context.Context, p PlanPayload) error {
	t, err := e.opts.NewPlanTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
