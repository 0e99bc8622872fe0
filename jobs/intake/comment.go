package intake

import (
	"context"
	"fmt"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

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
		if err := in.reply(ctx, c.Number, publish.RefusalText(c.Author, publish.CommandText(res), acc.level)); err != nil {
			return "", err
		}
		in.audit(ctx, publish.CommandText(res), "refused: "+c.Author+" has "+acc.level+" access")
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
				in.audit(ctx, publish.CommandText(res), result)
			}
			return result, err
		}
		if handle, ok := commandHandlers[r.Name]; ok {
			result, err := handle(h, ctx, in, acc, r)
			if err == nil {
				in.audit(ctx, publish.CommandText(res), result)
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
func (in *intake) comment() *queue.CommentIntake { return in.p.Body.(*queue.CommentIntake) }
