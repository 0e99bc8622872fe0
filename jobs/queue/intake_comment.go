package queue

import (
	"errors"
	"time"
)

// EventIssueComment is a comment on an issue or a pull request: a slash command.
const EventIssueComment = "issue_comment"

// CommentEvent registers the comment body (see IntakeEvents); its commands are intake_commands.go.
var CommentEvent = IntakeEvent{Events: []string{EventIssueComment}, Key: "comment",
	New: func() IntakeBody { return new(CommentIntake) }}

// CommentIntake is a new comment that holds an /akira command (ParseComment did not ignore it).
type CommentIntake struct {
	ID int64 `json:"id"`
	// Number is the issue or pull request the comment is on; OnPullRequest says which.
	Number        int    `json:"number"`
	OnPullRequest bool   `json:"on_pull_request,omitempty"`
	Author        string `json:"author"`
	Body          string `json:"body"`
	// CreatedAt is the comment's created_at, GitHub's time: a fork's head pushed after it is not
	// run by its command.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

func (c *CommentIntake) check() error {
	if c.ID == 0 || c.Number <= 0 {
		return errors.New("comment without an id and a number")
	}
	return nil
}

// answer: a comment may hold an answer to an escalation, which a recovery replays.
func (c *CommentIntake) Answer() bool { return true }
