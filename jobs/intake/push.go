package intake

import (
	"context"
	"slices"
	"strings"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
)

// onPush acts on a push to a branch. Akira's branches that stand on it (the bases of their runs and
// pull requests) are marked first: their next run job merges the base before its next task (jobs/runs
// sync.go). A push to the default branch that changes the roadmap then starts a run of its new tasks.
func (h *Intake) onPush(ctx context.Context, in *intake) (string, error) {
	push := in.p.Body.(*queue.PushIntake)
	if push.After != "" {
		marked, err := h.d.Store.BaseMoved(ctx, in.p.Owner, in.p.Repo, push.Branch, push.After)
		if err != nil {
			return "", err
		}
		if len(marked) > 0 {
			in.log.Info("intake: the base moved under Akira's branches; each merges it before its next task", "base", push.Branch, "head", push.After, "branches", marked)
		}
	}
	if in.p.DefaultBranch != "" && push.Branch != in.p.DefaultBranch {
		return metrics.ResultNoop, nil // only the default branch's roadmap starts runs
	}
	rc, err := h.d.RepoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := flow.AsRepoConfigError(err); bad {
		// Nobody to answer on a push; the next command or pull request reports it.
		in.log.Warn("intake: invalid repository configuration", "err", err)
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(push.Branch, rc.BranchPrefix), !rc.Triggers.Push:
		return metrics.ResultNoop, nil
	case !push.Truncated && !slices.Contains(push.Changed, rc.Roadmap):
		return metrics.ResultNoop, nil
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, queue.RunPayload{TaskHeader: in.p.By(in.p.Sender),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerPush, HeadSHA: push.After})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}
