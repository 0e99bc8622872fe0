package queue

import (
	"errors"
	"time"
)

// EventPullRequest is a pull request opened, reopened or pushed to.
const EventPullRequest = "pull_request"

// PullRequestEvent registers the pull request body (see IntakeEvents).
var PullRequestEvent = IntakeEvent{Events: []string{EventPullRequest}, Key: "pull_request",
	New: func() IntakeBody { return new(PullRequestIntake) }}

// PullRequestIntake is a pull request opened, reopened or pushed to, from the repository itself, or
// opened or reopened from a fork (Fork names it): a fork's is only answered, never run by itself.
type PullRequestIntake struct {
	Number  int    `json:"number"`
	Action  string `json:"action"`
	HeadRef string `json:"head_ref"`
	HeadSHA string `json:"head_sha"`
	Fork    string `json:"fork,omitempty"`
	// UpdatedAt is the pull request's updated_at in the webhook: GitHub's time of the change that
	// sent it (for a fork, when its head was seen; see store.ForkHeads).
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

func (pr *PullRequestIntake) check() error {
	if pr.Number <= 0 || pr.HeadRef == "" {
		return errors.New("pull request without a number and a head branch")
	}
	return nil
}
