package intake

import (
	"context"
	"errors"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

func (h *Intake) onCheckRun(ctx context.Context, in *intake) (string, error) {
	cr := in.p.Body.(*queue.CheckRunIntake)
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed && in.recovered {
		return metrics.ResultRefused, nil // refused when it first came
	}
	if !acc.allowed {
		if cr.Number != 0 {
			if err := in.reply(ctx, cr.Number, publish.RefusalText(in.p.Sender, string(cr.Decision), acc.level)); err != nil {
				return "", err
			}
		}
		return metrics.ResultRefused, nil
	}
	if cr.Decision == ports.StopDecision {
		_, asked, err := h.d.Store.RequestStop(ctx, cr.RunID, in.p.Sender, false)
		if errors.Is(err, store.ErrNotFound) {
			return metrics.ResultNoop, nil
		}
		if err != nil {
			return "", err
		}
		in.log.Info("intake: Stop pressed", "run", cr.RunID, "by", in.p.Sender, "asked", asked)
		return metrics.ResultAccepted, nil
	}
	err = h.d.Enqueuer.EnqueueResume(ctx, queue.ResumePayload{TaskHeader: in.p.By(in.p.Sender),
		Number: cr.Number, Decision: cr.Decision, RunID: cr.RunID, TaskID: cr.TaskID,
		ByButton: true, Recovered: in.recovered, AnsweredAt: in.answeredAt})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

// onReview starts a follow-up task for a review: only from someone who may command Akira, and only on a
// pull request Akira opened or runs on. Anything else is left alone without a word: reviews are
