package jobs

import (
	"context"
	"errors"
	"strings"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/store"
)

// EventReview is a review submitted on a pull request; EventReviewComment a comment on its diff.
const (
	EventReview        = "pull_request_review"
	EventReviewComment = "pull_request_review_comment"
)

// reviewEvent registers the review body (see intakeEvents).
var reviewEvent = intakeEvent{Events: []string{EventReview, EventReviewComment}, Key: "review",
	New: func() IntakeBody { return new(ReviewIntake) }, Handle: (*Intake).onReview}

// ReviewIntake is a review that requests changes, or a review comment holding `/akira fix`, on a
// same-repository pull request.
type ReviewIntake struct {
	Number   int   `json:"number"`
	ReviewID int64 `json:"review_id"`
	// CommentID is the review comment holding /akira fix (0 for a review).
	CommentID int64  `json:"comment_id,omitempty"`
	Author    string `json:"author"`
	Body      string `json:"body,omitempty"`
	Guidance  string `json:"guidance,omitempty"`
	HeadRef   string `json:"head_ref"`
}

func (rv *ReviewIntake) check() error {
	if rv.Number <= 0 || rv.ReviewID <= 0 || rv.Author == "" || rv.HeadRef == "" {
		return errors.New("review without a pull request, a review id, an author and a head branch")
	}
	return nil
}

// onReview starts a follow-up task for a review: only from someone who may command Akira, and only on a
// pull request Akira opened or runs on. Anything else is left alone without a word: reviews are
// everyday traffic, not commands.
func (h *Intake) onReview(ctx context.Context, in *intake) (string, error) {
	rv := in.p.Body.(*ReviewIntake)
	acc, err := h.authorize(ctx, in, rv.Author)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		in.log.Info("intake: review by someone who may not command Akira", "author", rv.Author, "permission", acc.level)
		return metrics.ResultRefused, nil
	}
	rc, err := h.configOf(ctx, in, acc)
	if _, bad := asRepoConfigError(err); bad {
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
	err = h.d.Enqueuer.EnqueueRun(ctx, RunPayload{TaskHeader: in.p.by(rv.Author),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerReview, Number: rv.Number, Branch: rv.HeadRef,
		Review: &lifecycle.ReviewRequest{ID: rv.ReviewID, By: rv.Author, Body: command.CapUserText(rv.Body), Guidance: rv.Guidance, CommentID: rv.CommentID}})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}
