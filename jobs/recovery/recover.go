package recovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// Redis keeps the queue, and so the answers to escalations that were acknowledged to GitHub but not yet
// acted on. When Redis loses its data (a restart without persistence, a FLUSHALL, a failover to an
// empty replica), such an answer is in one place only: on GitHub, as a comment or as the delivery of a
// check run's button. Every worker checks, every few seconds (the reaper's sweep), that Redis still
// holds the deployment's epoch key; the first to find it gone writes a new one and queues one recover
// job. That job asks GitHub to deliver again the comments and button presses of the recent window whose
// intake Redis no longer has, marked as recovered: their intake acts only on answers (approve, retry,
// skip, abort), silently, and the resume job applies one only if it is still the answer the run waits
// for: the first answer after the run's latest escalation, read from the pull request's conversation.
// An answer the run acted on before the loss is older than the escalation that followed it, or its
// task is done on the branch, so it never acts twice.

const (
	// RecoverWindow is how far back a recovery looks: as far as the sweep, since an answer may wait
	// in a long queue before a job acts on it.
	RecoverWindow = SweepWindow
	// MaxRecoverDeliveries caps the comments one recovery asks GitHub to deliver again.
	MaxRecoverDeliveries = 500
	// recoverClockSkew is how far after the loss (by Akira's clock) a delivery's time (by GitHub's) may
	// be and still be looked at: what reached the new Redis is told apart by its intake task anyway.
	recoverClockSkew = 2 * time.Minute
)

// CheckEpoch queues a recovery when Redis has lost the epoch key. It reports whether it queued one.
func (h *Recovery) CheckEpoch(ctx context.Context, now time.Time) (bool, error) {
	epoch := now.UTC().Format(time.RFC3339Nano)
	fresh, err := h.d.Store.NewEpoch(ctx, epoch)
	if err != nil || !fresh {
		return false, err
	}
	// Through a client of its own: an asynq client names its queue in Redis once per process, so
	// after the loss the inspector (the queue metrics, the dashboard) would not know the queue until
	// a restart; a new client names it again.
	client := asynq.NewClientFromRedisClient(h.d.Store.Client())
	defer client.Close() // leaves the store's connection pool open
	err = queue.NewEnqueuer(client, h.d.Enqueuer.Options()).EnqueueRecover(ctx, queue.RecoverPayload{Epoch: epoch, Since: now})
	if err != nil && !errors.Is(err, queue.ErrDuplicate) {
		// Without its job the epoch would hide the loss: the next check tries again.
		h.d.Store.DropEpoch(ctx, epoch)
		return false, err
	}
	h.log.Warn("recover: Redis holds no epoch (it lost its data, or this deployment is new); replaying recent answers from GitHub",
		"epoch", epoch)
	return true, nil
}

// mayAnswer reports whether a delivery can carry an answer to an escalation: a comment written or
// edited, or a check run's button (Re-run included).
func mayAnswer(d ports.Delivery) bool {
	switch d.Event {
	case "issue_comment":
		return d.Action == "created" || d.Action == "edited"
	case "check_run":
		return d.Action == "requested_action" || d.Action == "rerequested"
	}
	return false
}

// RecoverResult counts what a recovery did.
type RecoverResult struct {
	Seen        int // comment deliveries of the window
	Kept        int // their intake task still in Redis: not lost
	Redelivered int
	Capped      int // left out by MaxRecoverDeliveries
}

// Recover asks GitHub to deliver again every comment delivery that Akira acknowledged in the window
// before since and whose intake task Redis no longer has (lost reports that), each marked recovered
// first. A delivery whose task is still queued, or done and kept, was not lost: marking it would
// make its own intake act as a replay.
func Recover(ctx context.Context, deliveries ports.Deliveries, st *store.Store, since time.Time, lost func(ctx context.Context, guid string) (bool, error)) (RecoverResult, error) {
	window, err := deliveriesSince(ctx, deliveries, since.Add(-RecoverWindow))
	if err != nil {
		return RecoverResult{}, fmt.Errorf("jobs: recover: %w", err)
	}
	latest := map[string]ports.Delivery{}
	first := map[string]time.Time{}
	acked := map[string]bool{}
	var order []string
	for _, d := range window {
		if !mayAnswer(d) || d.DeliveredAt.After(since.Add(recoverClockSkew)) {
			continue
		}
		if _, ok := latest[d.GUID]; !ok {
			latest[d.GUID] = d
			order = append(order, d.GUID)
		}
		first[d.GUID] = d.DeliveredAt // newest first: the last seen is the first attempt
		acked[d.GUID] = acked[d.GUID] || d.StatusCode/100 == 2
	}
	var res RecoverResult
	// Oldest first, so that answers arrive again in the order people gave them.
	for i := len(order) - 1; i >= 0; i-- {
		guid := order[i]
		if !acked[guid] {
			continue // never reached Redis: the sweep redelivers what failed
		}
		res.Seen++
		if gone, err := lost(ctx, guid); err != nil {
			return res, fmt.Errorf("jobs: recover: %w", err)
		} else if !gone {
			res.Kept++
			continue
		}
		if res.Redelivered >= MaxRecoverDeliveries {
			res.Capped++
			continue
		}
		// The first attempt's time is when the answer was given (a button has no comment to tell it).
		if err := st.MarkRecovered(ctx, guid, first[guid]); err != nil {
			return res, err
		}
		if err := deliveries.Redeliver(ctx, latest[guid].ID); err != nil {
			return res, fmt.Errorf("jobs: recover: redeliver %s: %w", guid, err)
		}
		res.Redelivered++
	}
	return res, nil
}

// HandleRecover runs one recovery.
func (h *Recovery) HandleRecover(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeRecover, h.recoverEpoch)
}

func (h *Recovery) recoverEpoch(ctx context.Context, p queue.RecoverPayload) (string, error) {
	if h.d.Deliveries == nil {
		h.log.Warn("recover: no access to the App's deliveries; answers Redis lost are not replayed", "epoch", p.Epoch)
		return metrics.ResultNoop, nil
	}
	res, err := Recover(ctx, h.d.Deliveries, h.d.Store, p.Since, h.IntakeLost())
	if err != nil {
		return metrics.ResultRetry, err
	}
	h.log.Info("recover: done", "epoch", p.Epoch, "comments", res.Seen, "kept", res.Kept, "redelivered", res.Redelivered, "capped", res.Capped)
	return metrics.ResultSucceeded, nil
}

// IntakeLost returns a check of whether Redis no longer has the intake task of a delivery (the webhook
// enqueues it, with the delivery's GUID in its id, before it answers GitHub).
func (h *Recovery) IntakeLost() func(ctx context.Context, guid string) (bool, error) {
	insp := asynq.NewInspectorFromRedisClient(h.d.Store.Client()) // shares the store's pool; not closed
	name := h.d.Enqueuer.Options().Queue
	return func(ctx context.Context, guid string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		_, err := insp.GetTaskInfo(name, queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: guid}}.JobID())
		switch {
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("intake task of %s: %w", guid, err)
		}
		return false, nil
	}
}

// PendingAnswer reports whether a recovered decision is still the answer run waits for: the first
// answer, by someone who may give it, after the run's latest escalation. The escalation counts only
// when Akira wrote it (a person quoting its marker cannot hide an answer); a reply may be on the pull
// request or on the issue the run came from. A reply is placed by its comment's time, a button by
// the time GitHub delivered it (p.AnsweredAt), which the recovery kept.
func (h *Recovery) PendingAnswer(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, p queue.ResumePayload) (bool, string, error) {
	numbers := []int{}
	if pr := publish.SummaryNumber(run); pr != 0 {
		numbers = append(numbers, pr)
	}
	if p.Number != 0 && (len(numbers) == 0 || numbers[0] != p.Number) {
		numbers = append(numbers, p.Number)
	}
	var escalated time.Time
	var comments []ports.ThreadComment
	marker := strings.TrimSuffix(templates.EscalationMarker(run.ID, ""), " -->")
	for _, n := range numbers {
		thread, err := gh.Thread(ctx, run.Owner, run.Repo, n)
		if err != nil {
			return false, "", fmt.Errorf("jobs: conversation of #%d: %w", n, err)
		}
		for _, c := range thread {
			if c.ByApp && strings.Contains(c.Body, marker) && c.CreatedAt.After(escalated) {
				escalated = c.CreatedAt
			}
		}
		comments = append(comments, thread...)
	}
	if escalated.IsZero() {
		return false, "no escalation of run " + run.ID + " on GitHub", nil
	}
	// When this answer was given.
	at := p.AnsweredAt
	if p.CommentID != 0 {
		i := slices.IndexFunc(comments, func(c ports.ThreadComment) bool { return c.ID == p.CommentID })
		if i < 0 {
			return false, fmt.Sprintf("comment %d is no longer there", p.CommentID), nil
		}
		at = comments[i].CreatedAt
	}
	if at.IsZero() || at.Before(escalated) {
		return false, "the answer is older than the latest escalation", nil
	}
	for i := range comments {
		c := &comments[i]
		if c.ByApp || c.ID == p.CommentID || c.CreatedAt.Before(escalated) || !c.CreatedAt.Before(at) {
			continue
		}
		if cmd, ok := command.ParseComment(c.Body).(command.Command); !ok {
			continue
		} else if _, ok := cmd.Decision(); !ok {
			continue
		}
		// An earlier answer counts only if its author could give it.
		level, err := gh.Permission(ctx, run.Owner, run.Repo, c.Author)
		if err != nil {
			return false, "", fmt.Errorf("jobs: permission of %s: %w", c.Author, err)
		}
		if slices.Contains(flow.WriteLevels, strings.ToLower(level)) {
			return false, fmt.Sprintf("comment %d answered first", c.ID), nil
		}
	}
	return true, "", nil
}
