package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/akira-bot/akira/jobs/queue"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// WorkerConfig configures NewWorker.
type WorkerConfig struct {
	// Concurrency is how many jobs run at once (asynq's default, the number of CPUs, when zero). Each
	// running job is one workspace and one agent.
	Concurrency int
	// ShutdownTimeout is how long a stopping worker lets jobs finish before cancelling them; a
	// cancelled run job is retried and carries on from its last checkpoint.
	ShutdownTimeout time.Duration
	// Queue is the queue to work on (Queue when empty); it must match the Enqueuer's TaskOptions.Queue.
	Queue string
	// RetryDelay defaults to RetryDelay.
	RetryDelay asynq.RetryDelayFunc
	Logger     *slog.Logger
}

// TaskCheckInterval is how often an idle worker asks Redis for a task (asynq sleeps between half and
// one and a half of it).
const TaskCheckInterval = 200 * time.Millisecond

// NewWorker returns an asynq server set up for this package's tasks: its queue, retries that do not
// count a busy branch as a failure, and logs through slog. Run it with NewServeMux.
func NewWorker(rdb redis.UniversalClient, cfg WorkerConfig) *asynq.Server {
	delay := cfg.RetryDelay
	if delay == nil {
		delay = RetryDelay
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	queues := queue.Queues()
	if cfg.Queue != "" {
		queues = map[string]int{cfg.Queue: 1}
	}
	return asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:     cfg.Concurrency,
		Queues:          queues,
		IsFailure:       IsFailure,
		RetryDelayFunc:  delay,
		ShutdownTimeout: cfg.ShutdownTimeout,
		// Runs the fair gate refused come back as retries: moving them to pending every second (not
		// asynq's 5 s) is what lets a slot that frees go to the run whose turn it is at once.
		DelayedTaskCheckInterval: time.Second,
		Logger:                   slogAsynq{log.With("component", "asynq")},
		LogLevel:                 asynq.WarnLevel,
		// asynq itself logs only "Retry exhausted for task id=…": the error of each attempt is said here.
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) { logJobError(ctx, log, t, err) }),
		// An idle worker looks for new tasks every 0.1-0.3 s instead of asynq's 0.5-1.5 s: a run the
		// reaper continues after its worker died starts that much sooner (the recovery goal of issue
		// 35 is 5 s in all), for one cheap dequeue script per poll.
		TaskCheckInterval: TaskCheckInterval,
	})
}

// AsynqLogger is an asynq.Logger writing through log.
func AsynqLogger(log *slog.Logger) asynq.Logger { return slogAsynq{log.With("component", "asynq")} }

// slogAsynq writes asynq's log lines through slog.
type slogAsynq struct{ l *slog.Logger }

func (s slogAsynq) Debug(args ...any) { s.l.Debug(fmt.Sprint(args...)) }
func (s slogAsynq) Info(args ...any)  { s.l.Info(fmt.Sprint(args...)) }
func (s slogAsynq) Warn(args ...any)  { s.l.Warn(fmt.Sprint(args...)) }
func (s slogAsynq) Error(args ...any) { s.l.Error(fmt.Sprint(args...)) }

// Fatal exits, as asynq's Logger contract says.
func (s slogAsynq) Fatal(args ...any) {
	s.l.Error(fmt.Sprint(args...))
	os.Exit(1)
}

// logJobError logs one failed attempt of a job, once, with what an operator needs to find it: the
// task's type and id, the delivery and the run it works for (when its payload names them), the
// attempt and the error. A job that waits (a busy branch, the fair gate's turn) has not failed: its
// line is at debug level.
func logJobError(ctx context.Context, log *slog.Logger, t *asynq.Task, err error) {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	id, _ := asynq.GetTaskID(ctx)
	delivery, run := jobOf(t)
	attrs := []any{"type", t.Type(), "task_id", id, "delivery", delivery, "run", run,
		"attempt", retried + 1, "max_attempts", maxRetry + 1, "err", err.Error()}
	switch {
	case !IsFailure(err):
		log.DebugContext(ctx, "job: waits; tried again later", attrs...)
	case errors.Is(err, asynq.RevokeTask):
		log.ErrorContext(ctx, "job failed; dropped", attrs...)
	case errors.Is(err, asynq.SkipRetry) || retried >= maxRetry:
		log.ErrorContext(ctx, "job failed; not retried (archived)", attrs...)
	default:
		log.WarnContext(ctx, "job failed; retried", attrs...)
	}
}

// jobOf reads the delivery and the run a task's payload names. A run job names its run by the
// delivery that created it until it continues one (run_id), as a handoff does.
func jobOf(t *asynq.Task) (delivery, run string) {
	var h struct {
		DeliveryID string `json:"delivery_id"`
		RunID      string `json:"run_id"`
	}
	if json.Unmarshal(t.Payload(), &h) != nil {
		return "", ""
	}
	if h.RunID == "" && h.DeliveryID != "" && (t.Type() == queue.TypeRun || t.Type() == queue.TypeHandoff) {
		h.RunID = queue.RunIDFor(h.DeliveryID)
	}
	return h.DeliveryID, h.RunID
}
