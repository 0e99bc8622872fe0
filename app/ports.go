package app

import (
	"context"

	"github.com/akira-bot/akira/jobs/queue"
)

// Enqueuer takes the deliveries the webhook server accepts, one intake task each, whose id is the
// delivery id so that a redelivered webhook enqueues nothing new. *queue.Enqueuer is one; it returns an
// error wrapping queue.ErrDuplicate for a delivery already queued.
type Enqueuer interface {
	EnqueueIntake(ctx context.Context, p queue.IntakePayload) error
}
