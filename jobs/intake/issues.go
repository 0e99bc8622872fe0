package intake

import (
	"context"
	"errors"
	"strings"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/templates"
)

// onIssueTrigger starts a run when a writer assigns the issue to Akira's bot or adds the repository's
// trigger label, exactly as `/akira run` on the issue would (the delivery makes it once); taking the
// assignment or the label back stops nothing, and the reply says how to.
func (h *Intake) onIssueTrigger(ctx context.Context, in *intake) (string, error) {
	tr := in.p.Body.(*queue.TriggerIntake)
	acc, err := h.authorize(ctx, in, tr.Actor)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		if tr.Action == queue.TriggerUnassigned || tr.Action == queue.TriggerUnlabeled {
			return metrics.ResultNoop, nil
		}
		if err := in.reply(ctx, tr.Number, publish.RefusalText(tr.Actor, string(command.CmdRun), acc.level)); err != nil {
			return "", err
		}
		in.auditAs(ctx, tr.Actor, triggerVia(tr.Action), tr.Number, "run", "refused: "+tr.Actor+" has "+acc.level+" access")
		return metrics.ResultRefused, nil
	}
	rc, err := h.configOf(ctx, in, acc)
	if ce, bad := flow.AsRepoConfigError(err); bad {
		if err := in.reply(ctx, tr.Number, publish.ConfigErrorText(ce, "start the run", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	label := rc.Triggers.Label
	if label == "" {
		label = config.DefaultTriggerLabel
	}
	labelled := tr.Action == queue.TriggerLabeled || tr.Action == queue.TriggerUnlabeled
	if !rc.Triggers.IssueComment || (labelled && !strings.EqualFold(tr.Label, label)) {
		return metrics.ResultNoop, nil
	}
	if tr.Action == queue.TriggerUnassigned || tr.Action == queue.TriggerUnlabeled {
		run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, tr.Number)
		if errors.Is(err, store.ErrNotFound) || (err == nil && run.Status.Terminal()) {
			return metrics.ResultNoop, nil
		}
		if err != nil {
			return "", err
		}
		what := "Unassigning Akira"
		if labelled {
			what = "Removing the `" + label + "` label"
		}
		text := publish.Render("trigger_removed", templates.TriggerRemoved{What: what, RunID: run.ID, SummaryURL: run.SummaryURL},
			what+" does not stop run "+run.ID+"; reply `/akira stop` to stop it.")
		if err := in.reply(ctx, tr.Number, text); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	err = queue.Enqueued(h.d.Enqueuer.EnqueueRun(ctx, queue.RunPayload{TaskHeader: in.p.By(tr.Actor), DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerIssue, Number: tr.Number}))
	if err != nil {
		return "", err
	}
	in.auditAs(ctx, tr.Actor, triggerVia(tr.Action), tr.Number, "run", metrics.ResultAccepted)
	return metrics.ResultAccepted, nil
}

// triggerVia is how an issue trigger reached Akira, for the audit.
func triggerVia(action string) string {
	if action == queue.TriggerLabeled || action == queue.TriggerUnlabeled {
		return store.ViaLabel
	}
	return store.ViaAssignment
}
