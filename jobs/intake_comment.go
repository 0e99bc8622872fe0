package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/store"
)

// EventIssueComment is a comment on an issue or a pull request: a slash command.
const EventIssueComment = "issue_comment"

// commentEvent registers the comment body (see intakeEvents); its commands are intake_commands.go.
var commentEvent = intakeEvent{Events: []string{EventIssueComment}, Key: "comment",
	New: func() IntakeBody { return new(CommentIntake) }, Handle: (*Intake).onComment}

// CommentIntake is a new comment that holds an /akira command (ParseComment did not ignore it).
type CommentIntake struct {
	ID int64 `json:"id"`
	// Number is the issue or pull request the comment is on; OnPullRequest says which.
	Number        int    `json:"number"`
	OnPullRequest bool   `json:"on_pull_request,omitempty"`
	Author        string `json:"author"`
	Body          string `json:"body"`
}

func (c *CommentIntake) check() error {
	if c.ID == 0 || c.Number <= 0 {
		return errors.New("comment without an id and a number")
	}
	return nil
}

// answer: a comment may hold an answer to an escalation, which a recovery replays.
func (c *CommentIntake) answer() bool { return true }

func (h *Intake) onComment(ctx context.Context, in *intake) (string, error) {
	c := in.comment()
	res := command.ParseComment(c.Body)
	if _, ok := res.(command.Ignore); ok {
		return metrics.ResultNoop, nil
	}
	if in.recovered {
		// Replayed after Redis lost its data: only an answer can have been lost unacted.
		if cmd, ok := res.(command.Command); !ok {
			return metrics.ResultNoop, nil
		} else if _, ok := cmd.Decision(); !ok {
			return metrics.ResultNoop, nil
		}
	}
	acc, err := h.authorize(ctx, in, c.Author)
	if err != nil {
		return "", err
	}
	if !acc.allowed && in.recovered {
		return metrics.ResultRefused, nil // refused when it first came
	}
	if !acc.allowed {
		if err := in.reply(ctx, c.Number, refusalText(c.Author, commandText(res), acc.level)); err != nil {
			return "", err
		}
		in.audit(ctx, commandText(res), "refused: "+c.Author+" has "+acc.level+" access")
		return metrics.ResultRefused, nil
	}
	switch r := res.(type) {
	case command.Reply:
		if err := in.reply(ctx, c.Number, r.Text); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	case command.Command:
		if d, ok := r.Decision(); ok {
			result, err := h.commandDecision(ctx, in, d, r.Guidance)
			if err == nil {
				in.audit(ctx, commandText(res), result)
			}
			return result, err
		}
		if handle, ok := commandHandlers[r.Name]; ok {
			result, err := handle(h, ctx, in, acc, r)
			if err == nil {
				in.audit(ctx, commandText(res), result)
			}
			return result, err
		}
	}
	return metrics.ResultNoop, nil
}

// audit records a slash command in the audit trail (and so its stream): who wrote it, where, through
// which delivery, and how it ended. A retried intake may record it twice; a failure to record is
// logged, not the command's failure.
func (in *intake) audit(ctx context.Context, action, result string) {
	c := in.comment()
	in.auditAs(ctx, c.Author, store.ViaComment, c.Number, "/akira "+action, result)
}

// auditAs records an action actor took on issue or pull request number through via.
func (in *intake) auditAs(ctx context.Context, actor, via string, number int, action, result string) {
	e := store.AuditEntry{Time: time.Now().UTC(), Actor: actor, Via: via, Action: action, Result: result,
		Target: fmt.Sprintf("#%d", number), InstallationID: in.p.InstallationID, Repo: in.p.Owner + "/" + in.p.Repo, DeliveryID: in.p.DeliveryID}
	if err := in.store.Audit(ctx, e); err != nil {
		in.log.Warn("intake: command not audited", "err", err)
	}
}

// comment is the delivery's comment; the commands (intake_commands.go) are only run from onComment.
func (in *intake) comment() *CommentIntake { return in.p.Body.(*CommentIntake) }
