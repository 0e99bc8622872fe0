package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/hibiken/asynq"
)

// TypeRun starts a run or continues one (after a resume decision, or after a crash).
const TypeRun = "akira:run"

// RunPayload is the payload of TypeRun.
type RunPayload struct {
	TaskHeader
	Trigger lifecycle.Trigger `json:"trigger"`
	// Number is the issue (trigger issue, and a hand-off that names one: trigger api) or pull request
	// (trigger pull_request) number.
	Number int `json:"number,omitempty"`
	// Branch is the pull request's head branch (trigger pull_request).
	Branch string `json:"branch,omitempty"`
	// HeadSHA is the pushed commit (push) or the pull request's head (pull_request, fork): a fork run's
	// branch starts at this commit, the head a writer asked to run.
	HeadSHA string `json:"head_sha,omitempty"`
	// Path is the roadmap named by `/akira run <path>`; empty means the repository's configured one.
	Path string `json:"path,omitempty"`
	// TrustPlan is `/akira run --trust-plan`: a writer vouches for a plan whose author has no write
	// access, so its verify commands run.
	TrustPlan bool `json:"trust_plan,omitempty"`
	// Confirm is `/akira run --confirm`: run the plan Akira proposed for an issue whose checklist it
	// could not read with confidence (never run without it).
	Confirm bool `json:"confirm,omitempty"`
	// BudgetUSD is `/akira run --budget <usd>`: the run's cost limit, up to the operator's ceiling.
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// AllowRedBase is `/akira run --allow-red-base`: the run starts although its base branch fails
	// its repository-wide verification.
	AllowRedBase bool `json:"allow_red_base,omitempty"`
	// CommentID is the `/akira run` comment.
	CommentID int64 `json:"comment_id,omitempty"`
	// Plan is a plan pasted under `/akira run` in the comment (an issue run): it runs instead of the
	// issue's checklist, with the same rules as one.
	Plan string `json:"plan,omitempty"`
	// DefaultBranch is the repository's, from the webhook; when empty the job asks GitHub.
	DefaultBranch string `json:"default_branch,omitempty"`
	// Review is the review to address (trigger review).
	Review *lifecycle.ReviewRequest `json:"review,omitempty"`
	// RunID names the run to continue (trigger continue). For a new run it is left empty and derived
	// from DeliveryID, so a retried or redelivered job finds the run it already created.
	RunID string `json:"run_id,omitempty"`
	// Base, Reference, Agent and Notify are a handed-off run's (trigger api): the branch it starts
	// from, the caller's reference, the agent profile and the notification routes it asked for.
	Base      string              `json:"base,omitempty"`
	Reference string              `json:"reference,omitempty"`
	Agent     string              `json:"agent,omitempty"`
	Notify    map[string][]string `json:"notify,omitempty"`
}

// JobID is the asynq task id of the payload: the delivery id, so GitHub redelivering a webhook
// enqueues nothing new.
func (p RunPayload) JobID() string { return "run:" + p.DeliveryID }

// Validate reports what is missing from a run payload.
func (p RunPayload) Validate() error {
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
	switch p.Trigger {
	case lifecycle.TriggerIssue:
		if p.Number <= 0 {
			errs = append(errs, errors.New("issue trigger without an issue number"))
		}
	case lifecycle.TriggerPush, TriggerAPI:
	case lifecycle.TriggerPullRequest:
		if p.Number <= 0 || p.Branch == "" {
			errs = append(errs, errors.New("pull_request trigger without a number and a branch"))
		}
	case lifecycle.TriggerFork:
		if p.Number <= 0 || p.HeadSHA == "" {
			errs = append(errs, errors.New("fork trigger without a pull request number and its head"))
		}
	case lifecycle.TriggerContinue:
		if p.RunID == "" {
			errs = append(errs, errors.New("continue without a run id"))
		}
	case lifecycle.TriggerReview:
		if p.Number <= 0 || p.Branch == "" || p.Review == nil || p.Review.ID <= 0 || p.Review.By == "" {
			errs = append(errs, errors.New("review trigger without a pull request, a branch and a review"))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown trigger %q", p.Trigger))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run payload: %w", err)
	}
	return nil
}

// NewRunTask builds a TypeRun task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewRunTask(p RunPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypeRun, p, o.Timeout, o.MaxRetry)
}

// DecodeRunPayload reads a TypeRun payload; see Decode.
func DecodeRunPayload(t *asynq.Task) (RunPayload, error) {
	var p RunPayload
	return p, Decode(t, TypeRun, &p)
}

// EnqueueRun enqueues a TypeRun task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueRun(ctx context.Context, p RunPayload) error {
	t, err := e.opts.NewRunTask(p)
	if err != nil {
		return err
	}
	if err := e.enqueue(ctx, t); err != nil {
		return err
	}
	// The task is safe in asynq; a listing that fails now is made by the gate at the job's first
	// try, so the run keeps its turn either way, only shown a moment later.
	_ = e.fair.List(ctx, p.Ticket())
	return nil
}

// Ticket is the run job of p as the fair gate sees it.
func (p RunPayload) Ticket() fair.Ticket {
	id := p.RunID
	if id == "" {
		id = RunIDFor(p.DeliveryID)
	}
	return fair.Ticket{JobID: p.JobID(), RunID: id, Installation: p.InstallationID, Repo: p.Owner + "/" + p.Repo, Number: p.Number}
}
