package intake

import (
	"context"
	"errors"
	"strings"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// onReview starts a follow-up task for a review: only from someone who may command Akira, and only on a
// pull request Akira opened or runs on. Anything else is left alone without a word: reviews are
// everyday traffic, not commands.
func (h *Intake) onReview(ctx context.Context, in *intake) (string, error) {
	rv := in.p.Body.(*queue.ReviewIntake)
	acc, err := h.authorize(ctx, in, rv.Author)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		in.log.Info("intake: review by someone who may not command Akira", "author", rv.Author, "permission", acc.level)
		return metrics.ResultRefused, nil
	}
	rc, err := h.configOf(ctx, in, acc)
	if _, bad := flow.AsRepoConfigError(err); bad {
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	if _, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, rv.Number); errors.Is(err, store.ErrNotFound) {
		if !strings.HasPrefix(rv.HeadRef, rc.BranchPrefix) {
			return metrics.ResultNoop, nil // not a pull request Akira works on
		}
	} else if err != nil {
		return "", err
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, queue.RunPayload{TaskHeader: in.p.By(rv.Author),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerReview, Number: rv.Number, Branch: rv.HeadRef,
		Review: &lifecycle.ReviewRequest{ID: rv.ReviewID, By: rv.Author, Body: command.CapUserText(rv.Body), Guidance: rv.Guidance, CommentID: rv.CommentID}})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}
