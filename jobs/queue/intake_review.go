package queue

import (
	"errors"
)

// EventReview is a review submitted on a pull request; EventReviewComment a comment on its diff.
const (
	EventReview        = "pull_request_review"
	EventReviewComment = "pull_request_review_comment"
)

// ReviewEvent registers the review body (see IntakeEvents).
var ReviewEvent = IntakeEvent{Events: []string{EventReview, EventReviewComment}, Key: "review",
	New: func() IntakeBody { return new(ReviewIntake) }}

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
