package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/templates"
)

// DefaultNotifyRate is how many notifications a sink is sent per minute when the operator sets none.
const DefaultNotifyRate = 30

// Results of a notify job.
const (
	ResultSent     = "sent"
	ResultDeferred = "deferred"
)

// HandleNotify sends a notification, within the sink's rate: over it, the job is put back for the
// next minute. A sink that answers 5xx or 429 is retried by asynq; one that refuses (4xx) is not.
func (h *Effects) HandleNotify(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeNotify, h.sendNotification)
}

func (h *Effects) sendNotification(ctx context.Context, p queue.NotifyPayload) (string, error) {
	log := h.log.With("task", queue.TypeNotify, "sink", p.Sink, "event", p.Message.Event, "run", p.Message.RunID, "repo", p.Message.Repo)
	sink, ok := h.d.Sinks[p.Sink]
	if !ok {
		log.Warn("notify job: the sink is not configured (any more)")
		return metrics.ResultInvalid, fmt.Errorf("jobs: notify: no sink %q: %w", p.Sink, asynq.SkipRetry)
	}
	rate := h.d.Operator.Notify.RatePerMinute
	if rate == 0 {
		rate = DefaultNotifyRate
	}
	if wait, err := h.slots.TakeNotifySlot(ctx, p.Sink, rate); err != nil {
		return metrics.ResultRetry, err
	} else if wait > 0 {
		later := p
		later.ID = p.ID + ":later-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if err := h.d.Enqueuer.EnqueueNotify(ctx, later, asynq.ProcessIn(wait)); err != nil && !errors.Is(err, queue.ErrDuplicate) {
			return metrics.ResultRetry, err
		}
		log.Info("notify job: over the sink's rate; sent later", "in", wait)
		return ResultDeferred, nil
	}
	start := time.Now()
	err := sink.Send(ctx, h.d.NotifyClient, p.JobID(), p.Message)
	if se, ok := errors.AsType[*notify.SendError](err); ok && !se.Retry {
		log.Error("notify job: the sink refused the notification", "status", se.Status, "err", err)
		return metrics.ResultInvalid, fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry)
	}
	if err != nil {
		log.Warn("notify job: not delivered; retried", "err", err)
		return metrics.ResultRetry, fmt.Errorf("jobs: %w", err)
	}
	log.Info("notify job: sent", "ms", time.Since(start).Milliseconds(), "since_event_ms", time.Since(p.Message.Time).Milliseconds())
	return ResultSent, nil
}

// NotifyRun enqueues a notification of a run's event to every sink the event goes to. A notification
// is a courtesy: failing to enqueue one is logged, never a reason to fail the run's work.
func (h *Effects) NotifyRun(ctx context.Context, run *lifecycle.Run, event, occasion string, data templates.Notification) {
	sinks := h.d.Operator.NotifyRoute(run.Notify, event)
	if len(sinks) == 0 {
		return
	}
	data.Event, data.Repo, data.RunID = event, run.Owner+"/"+run.Repo, run.ID
	data.URL = cmp.Or(run.PRURL, run.SourceURL)
	title, err := templates.Render("notify_title", data)
	if err != nil {
		h.log.Error("notify: template", "err", err)
		return
	}
	text, err := templates.Render("notify_text", data)
	if err != nil {
		h.log.Error("notify: template", "err", err)
		return
	}
	if data.Reply, err = templates.Render("notify_reply", data); err != nil {
		h.log.Error("notify: template", "err", err)
		return
	}
	m := notify.Message{Event: event, Time: time.Now().UTC(), Repo: data.Repo, RunID: run.ID, TaskID: data.TaskID,
		Title: title, Text: text, URL: data.URL, Reply: data.Reply}
	for _, s := range sinks {
		err := h.d.Enqueuer.EnqueueNotify(ctx, queue.NotifyPayload{ID: run.ID + ":" + event + ":" + occasion, Sink: s, Message: m})
		if err != nil && !errors.Is(err, queue.ErrDuplicate) {
			h.log.Warn("notify: not enqueued", "sink", s, "event", event, "run", run.ID, "err", err)
		}
	}
}
