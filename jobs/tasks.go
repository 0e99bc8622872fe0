// Package jobs runs Akira's work in the background: asynq task types and payloads, their handlers, the
// run state and branch locks kept in Redis, and the bridge from engine events to GitHub.
//
// jobs declares the few GitHub operations it needs as small interfaces (see github.go); app/gh implements
// them and cmd/akira wires the two, so this package never imports app, gin or go-github.
package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// Task types.
const (
	// TypeRun starts a run or continues one (after a resume decision, or after a crash).
	TypeRun = "akira:run"
	// TypeResume carries a human decision on a parked run: approve, retry, skip or abort.
	TypeResume = "akira:resume"
)

// Queue is the asynq queue both task types go to. A worker must list it in asynq.Config.Queues
// (see Queues).
const Queue = "akira"

// PayloadVersion is written into every payload. A handler refuses (without retrying) a payload of a
// version it does not know, which is what a rolling deploy needs: an old worker leaves a new task alone
// to fail loudly rather than misread it.
const PayloadVersion = 1

// Defaults for task options.
const (
	// DefaultTimeout bounds one run job. asynq's own default (30 minutes) is too short for agent work.
	DefaultTimeout = 3 * time.Hour
	// DefaultMaxRetry is how often a job that failed for a transient reason is retried.
	DefaultMaxRetry = 5
	// DefaultRetention keeps the id of a finished task so that a webhook redelivered after the run
	// ended is still recognised as a duplicate (GitHub lets people redeliver for days).
	DefaultRetention = 72 * time.Hour
)

// ErrDuplicate is returned by the Enqueuer when a task with the same id was already enqueued: the
// webhook was delivered twice, or the comment was seen before. Callers treat it as success.
var ErrDuplicate = errors.New("jobs: duplicate task")

// Trigger is what started a run.
type Trigger string

const (
	// TriggerIssue is `/akira run` on an issue: branch akira/issue-<n>, a draft PR closing the issue.
	TriggerIssue Trigger = "issue"
	// TriggerPush is a push to the default branch that added unchecked tasks: branch akira/roadmap.
	TriggerPush Trigger = "push"
	// TriggerPullRequest is a same-repository pull request that changed the roadmap: its own branch.
	TriggerPullRequest Trigger = "pull_request"
	// TriggerContinue continues an existing run (RunPayload.RunID) after a decision.
	TriggerContinue Trigger = "continue"
)

// RunPayload is the payload of TypeRun.
type RunPayload struct {
	Version int `json:"v"`
	// DeliveryID is the webhook's X-GitHub-Delivery; with Trigger continue it is the resume task's key.
	// It becomes the task id, so a redelivered webhook enqueues nothing.
	DeliveryID     string  `json:"delivery_id"`
	Trigger        Trigger `json:"trigger"`
	InstallationID int64   `json:"installation_id"`
	Owner          string  `json:"owner"`
	Repo           string  `json:"repo"`
	// Number is the issue (trigger issue) or pull request (trigger pull_request) number.
	Number int `json:"number,omitempty"`
	// Branch is the pull request's head branch (trigger pull_request).
	Branch string `json:"branch,omitempty"`
	// HeadSHA is the pushed commit (push) or the pull request's head (pull_request).
	HeadSHA string `json:"head_sha,omitempty"`
	// Path is the roadmap named by `/akira run <path>`; empty means the repository's configured one.
	Path string `json:"path,omitempty"`
	// Sender is the login that triggered the run.
	Sender string `json:"sender,omitempty"`
	// CommentID is the `/akira run` comment, which gets the 👀 reaction.
	CommentID int64 `json:"comment_id,omitempty"`
	// DefaultBranch and CloneURL are the repository's, from the webhook; when empty the job asks GitHub.
	DefaultBranch string `json:"default_branch,omitempty"`
	CloneURL      string `json:"clone_url,omitempty"`
	// RunID names the run to continue (trigger continue). For a new run it is left empty and derived
	// from DeliveryID, so a retried or redelivered job finds the run it already created.
	RunID string `json:"run_id,omitempty"`
}

// Action is a human decision on a parked run.
type Action string

const (
	ActionApprove Action = "approve"
	ActionRetry   Action = "retry"
	ActionSkip    Action = "skip"
	ActionAbort   Action = "abort"
)

// ResumePayload is the payload of TypeResume.
type ResumePayload struct {
	Version        int    `json:"v"`
	DeliveryID     string `json:"delivery_id"`
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	// Number is the issue or pull request the reply was written on (0 for a check-run button).
	Number int `json:"number,omitempty"`
	// CommentID is the reply; when set it is the task id, so the same comment acts once.
	CommentID int64  `json:"comment_id,omitempty"`
	Action    Action `json:"action"`
	// Guidance is the text after `/akira retry`; it reaches the agent's next prompt.
	Guidance string `json:"guidance,omitempty"`
	Sender   string `json:"sender,omitempty"`
	// RunID and TaskID are known when the decision came from a check-run button (its external_id);
	// a reply names neither and the run is found by Number.
	RunID  string `json:"run_id,omitempty"`
	TaskID string `json:"task_id,omitempty"`
}

// RunIDFor derives a run id from the key of the task that created the run: short, stable across
// retries and redeliveries, and safe in a branch trailer or a Redis key.
func RunIDFor(deliveryID string) string {
	sum := sha256.Sum256([]byte(deliveryID))
	return hex.EncodeToString(sum[:6])
}

// Validate reports what is missing from a run payload.
func (p RunPayload) Validate() error {
	var errs []error
	if p.Version != PayloadVersion {
		errs = append(errs, fmt.Errorf("version %d, want %d", p.Version, PayloadVersion))
	}
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
	case TriggerIssue:
		if p.Number <= 0 {
			errs = append(errs, errors.New("issue trigger without an issue number"))
		}
	case TriggerPush:
	case TriggerPullRequest:
		if p.Number <= 0 || p.Branch == "" {
			errs = append(errs, errors.New("pull_request trigger without a number and a branch"))
		}
	case TriggerContinue:
		if p.RunID == "" {
			errs = append(errs, errors.New("continue without a run id"))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown trigger %q", p.Trigger))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run payload: %w", err)
	}
	return nil
}

// Validate reports what is missing from a resume payload.
func (p ResumePayload) Validate() error {
	var errs []error
	if p.Version != PayloadVersion {
		errs = append(errs, fmt.Errorf("version %d, want %d", p.Version, PayloadVersion))
	}
	if p.DeliveryID == "" && p.CommentID == 0 {
		errs = append(errs, errors.New("neither a delivery id nor a comment id"))
	}
	if p.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if p.Owner == "" || p.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	if p.Number <= 0 && p.RunID == "" {
		errs = append(errs, errors.New("neither an issue number nor a run id"))
	}
	switch p.Action {
	case ActionApprove, ActionRetry, ActionSkip, ActionAbort:
	default:
		errs = append(errs, fmt.Errorf("unknown action %q", p.Action))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resume payload: %w", err)
	}
	return nil
}

// JobID is the asynq task id of the payload: the delivery id, so GitHub redelivering a webhook
// enqueues nothing new.
func (p RunPayload) JobID() string { return "run:" + p.DeliveryID }

// JobID is the asynq task id of the payload: the comment id when there is one (GitHub sends an edited
// comment as a new delivery, and the same reply must still act once), else the delivery id.
func (p ResumePayload) JobID() string {
	if p.CommentID != 0 {
		return "resume:comment:" + strconv.FormatInt(p.CommentID, 10)
	}
	return "resume:" + p.DeliveryID
}

// TaskOptions are the asynq options of the tasks this package creates.
type TaskOptions struct {
	// Timeout bounds one run job (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxRetry is the retry budget for transient failures (DefaultMaxRetry when zero; negative means none).
	MaxRetry int
	// Retention keeps finished task ids for duplicate detection (DefaultRetention when zero).
	Retention time.Duration
	// Queue defaults to Queue.
	Queue string
}

func (o TaskOptions) withDefaults() TaskOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRetry == 0 {
		o.MaxRetry = DefaultMaxRetry
	}
	if o.MaxRetry < 0 {
		o.MaxRetry = 0
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Queue == "" {
		o.Queue = Queue
	}
	return o
}

// resumeTimeout bounds a resume job: it only reads state, checks the branch and enqueues.
const resumeTimeout = 5 * time.Minute

// NewRunTask builds a TypeRun task with default options.
func NewRunTask(p RunPayload) (*asynq.Task, error) { return TaskOptions{}.NewRunTask(p) }

// NewResumeTask builds a TypeResume task with default options.
func NewResumeTask(p ResumePayload) (*asynq.Task, error) { return TaskOptions{}.NewResumeTask(p) }

// NewRunTask builds a TypeRun task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewRunTask(p RunPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("run payload: %w", err)
	}
	o = o.withDefaults()
	return asynq.NewTask(TypeRun, data,
		asynq.TaskID(p.JobID()),
		asynq.Queue(o.Queue),
		asynq.Timeout(o.Timeout),
		asynq.MaxRetry(o.MaxRetry),
		asynq.Retention(o.Retention),
	), nil
}

// NewResumeTask builds a TypeResume task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewResumeTask(p ResumePayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("resume payload: %w", err)
	}
	o = o.withDefaults()
	return asynq.NewTask(TypeResume, data,
		asynq.TaskID(p.JobID()),
		asynq.Queue(o.Queue),
		asynq.Timeout(resumeTimeout),
		asynq.MaxRetry(o.MaxRetry),
		asynq.Retention(o.Retention),
	), nil
}

// DecodeRunPayload reads a TypeRun payload. A payload that can never be processed is an error wrapping
// asynq.SkipRetry, so asynq archives it instead of retrying it.
func DecodeRunPayload(t *asynq.Task) (RunPayload, error) {
	var p RunPayload
	if t.Type() != TypeRun {
		return p, fmt.Errorf("jobs: task type %q is not %s: %w", t.Type(), TypeRun, asynq.SkipRetry)
	}
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("jobs: run payload: %v: %w", err, asynq.SkipRetry)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("jobs: %v: %w", err, asynq.SkipRetry)
	}
	return p, nil
}

// DecodeResumePayload reads a TypeResume payload; see DecodeRunPayload.
func DecodeResumePayload(t *asynq.Task) (ResumePayload, error) {
	var p ResumePayload
	if t.Type() != TypeResume {
		return p, fmt.Errorf("jobs: task type %q is not %s: %w", t.Type(), TypeResume, asynq.SkipRetry)
	}
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("jobs: resume payload: %v: %w", err, asynq.SkipRetry)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("jobs: %v: %w", err, asynq.SkipRetry)
	}
	return p, nil
}

// Queues is the asynq.Config.Queues value for a worker of this package.
func Queues() map[string]int { return map[string]int{Queue: 1} }

// taskEnqueuer is the part of *asynq.Client the Enqueuer uses.
type taskEnqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Enqueuer puts tasks on the queue. It is what the webhook server calls (through cmd/akira's adapter to
// app.Enqueuer) and what a resume job uses to continue a run.
type Enqueuer struct {
	client taskEnqueuer
	opts   TaskOptions
}

// NewEnqueuer wraps an asynq client (or anything with its EnqueueContext method).
func NewEnqueuer(client taskEnqueuer, opts TaskOptions) *Enqueuer {
	return &Enqueuer{client: client, opts: opts}
}

// EnqueueRun enqueues a TypeRun task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueRun(ctx context.Context, p RunPayload) error {
	t, err := e.opts.NewRunTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

// EnqueueResume enqueues a TypeResume task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueResume(ctx context.Context, p ResumePayload) error {
	t, err := e.opts.NewResumeTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}

func (e *Enqueuer) enqueue(ctx context.Context, t *asynq.Task) error {
	_, err := e.client.EnqueueContext(ctx, t)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict), errors.Is(err, asynq.ErrDuplicateTask):
		return fmt.Errorf("%w: %s", ErrDuplicate, t.Type())
	case err != nil:
		return fmt.Errorf("jobs: enqueue %s: %w", t.Type(), err)
	}
	return nil
}

// continueKey is the delivery id of the run task that continues runID after a decision; the resume
// task's own id makes it unique, so a retried resume job enqueues the continuation once.
func continueKey(runID, resumeTaskID string) string {
	return "continue:" + runID + ":" + strings.TrimPrefix(resumeTaskID, "resume:")
}
