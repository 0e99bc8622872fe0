package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/hibiken/asynq"
)

// Queue is the asynq queue every task type goes to. A worker must list it in asynq.Config.Queues
// (see Queues).
const Queue = "akira"

// PayloadVersion is written into every payload. A handler refuses (without retrying) a payload of a
// version it does not know, which is what a rolling deploy needs: an old worker leaves a new task alone
// to fail loudly rather than misread it.
const PayloadVersion = 2

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

// Intake and resume jobs only talk to GitHub and Redis; their budget is for waiting out GitHub.
const (
	IntakeTimeout = 10 * time.Minute
	// IntakeMaxRetry with RetryDelay's backoff spans about an hour: a delivery survives a long
	// secondary rate limit or a GitHub incident.
	IntakeMaxRetry = 12
	ResumeTimeout  = 5 * time.Minute
	// PlanTimeout bounds a plan job: a clone and up to two agent calls.
	PlanTimeout = time.Hour
)

// ErrInvalidPayload is returned when a payload cannot make a task: the delivery it came from is
// malformed, and no retry or redelivery will change that.
var ErrInvalidPayload = errors.New("jobs: invalid payload")

// ErrDuplicate is returned by the Enqueuer when a task with the same id was already Enqueued: the
// webhook was delivered twice, or the comment was seen before. Callers treat it as success.
var ErrDuplicate = errors.New("jobs: duplicate task")

// Payload is what every task payload has: a version, a check, and a task id that makes a redelivery
// enqueue nothing new.
type Payload interface {
	Validate() error
	JobID() string
}

// CheckVersion refuses a payload of a version this worker does not know (see PayloadVersion).
func CheckVersion(v int) error {
	if v != PayloadVersion {
		return fmt.Errorf("version %d, want %d", v, PayloadVersion)
	}
	return nil
}

// RunIDFor derives a run id from the key of the task that created the run: short, stable across
// retries and redeliveries, and safe in a branch trailer or a Redis key.
func RunIDFor(deliveryID string) string {
	sum := sha256.Sum256([]byte(deliveryID))
	return hex.EncodeToString(sum[:6])
}

// TaskOptions are the asynq options of the tasks this package creates.
type TaskOptions struct {
	// Timeout bounds one run job (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxRetry is the retry budget of run and resume jobs for transient failures (DefaultMaxRetry
	// when zero; negative means none).
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

// newTask validates and encodes a payload as a task of the type.
func (o TaskOptions) newTask(typ string, p Payload, timeout time.Duration, maxRetry int) (*asynq.Task, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("jobs: %s payload: %w", typ, err)
	}
	o = o.withDefaults()
	return asynq.NewTask(typ, data,
		asynq.TaskID(p.JobID()),
		asynq.Queue(o.Queue),
		asynq.Timeout(timeout),
		asynq.MaxRetry(maxRetry),
		asynq.Retention(o.Retention),
	), nil
}

// Decode reads a task's payload into p. A payload that can never be processed is an error wrapping
// asynq.SkipRetry, so asynq archives it instead of retrying it.
func Decode(t *asynq.Task, typ string, p Payload) error {
	if t.Type() != typ {
		return fmt.Errorf("jobs: task type %q is not %s: %w", t.Type(), typ, asynq.SkipRetry)
	}
	if err := json.Unmarshal(t.Payload(), p); err != nil {
		return fmt.Errorf("jobs: %s payload: %v: %w", typ, err, asynq.SkipRetry)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("jobs: %v: %w", err, asynq.SkipRetry)
	}
	return nil
}

// Queues is the asynq.Config.Queues value for a worker of this package.
func Queues() map[string]int { return map[string]int{Queue: 1} }

// TaskEnqueuer is the part of *asynq.Client the Enqueuer uses.
type TaskEnqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Enqueuer puts tasks on the queue: the webhook server's intake tasks, the runs and resumes an intake
// starts, and the Continuation of a run after a decision.
type Enqueuer struct {
	client TaskEnqueuer
	opts   TaskOptions
	fair   *fair.Gate
}

// WithFair makes e list every run it enqueues in the fair gate's line (see Fair.List) and returns e.
func (e *Enqueuer) WithFair(f *fair.Gate) *Enqueuer {
	e.fair = f
	return e
}

// NewEnqueuer wraps an asynq client (or anything with its EnqueueContext method).
func NewEnqueuer(client TaskEnqueuer, opts TaskOptions) *Enqueuer {
	return &Enqueuer{client: client, opts: opts}
}

func (e *Enqueuer) enqueue(ctx context.Context, t *asynq.Task, opts ...asynq.Option) error {
	_, err := e.client.EnqueueContext(ctx, t, opts...)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict), errors.Is(err, asynq.ErrDuplicateTask):
		return fmt.Errorf("%w: %s", ErrDuplicate, t.Type())
	case err != nil:
		return fmt.Errorf("jobs: enqueue %s: %w", t.Type(), err)
	}
	return nil
}

// ContinueKey is the delivery id of the run task that continues runID after a decision; the resume
// task's own id makes it unique, so a retried resume job enqueues the Continuation once.
// Continuation is the run task that continues run; key tells continuations of the same run apart
// (it becomes the task id, so each key enqueues once).
func Continuation(run *lifecycle.Run, key, sender string) RunPayload {
	return RunPayload{TaskHeader: TaskHeader{DeliveryID: key, InstallationID: run.InstallationID, Owner: run.Owner, Repo: run.Repo, Sender: sender}, Trigger: lifecycle.TriggerContinue, RunID: run.ID}
}

// ContinueKey is the delivery id of the run task that continues runID after a decision; the resume
// task's own id makes it unique, so a retried resume job enqueues the continuation once.
func ContinueKey(runID, resumeTaskID string) string {
	return "continue:" + runID + ":" + strings.TrimPrefix(resumeTaskID, "resume:")
}

// Options are the task options of e's tasks, defaults filled in.
func (e *Enqueuer) Options() TaskOptions { return e.opts.withDefaults() }
