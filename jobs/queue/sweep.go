package queue

import (
	"time"

	"github.com/hibiken/asynq"
)

// TypeSweep is the periodic job that asks GitHub to redeliver the webhook deliveries Akira missed.
const TypeSweep = "akira:sweep"

// SweepInterval is how often the scheduler queues a sweep; one runs cluster-wide per interval.
const SweepInterval = time.Minute

// NewSweepTask returns the sweep task. Unique for most of an interval, so that when every worker's
// scheduler queues one, a single sweep runs.
func NewSweepTask(queue string) *asynq.Task {
	if queue == "" {
		queue = Queue
	}
	return asynq.NewTask(TypeSweep, []byte("{}"), asynq.Queue(queue), asynq.Unique(SweepInterval-5*time.Second),
		asynq.MaxRetry(0), asynq.Timeout(SweepInterval))
}
