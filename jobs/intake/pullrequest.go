package intake

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
)

func (h *Intake) onPullRequest(ctx context.Context, in *intake) (string, error) {
	pr := in.p.Body.(*queue.PullRequestIntake)
	rc, err := h.d.RepoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if ce, bad := flow.AsRepoConfigError(err); bad {
		// Said once when the pull request opens, not on every push to it.
		if pr.Action == "synchronize" {
			return metrics.ResultNoop, nil
		}
		if err := in.reply(ctx, pr.Number, publish.ConfigErrorText(ce, "start a run for this pull request", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(pr.HeadRef, rc.BranchPrefix) || !rc.Triggers.PullRequest {
		return metrics.ResultNoop, nil
	}
	files, err := in.gh.PullRequestFiles(ctx, in.p.Owner, in.p.Repo, pr.Number)
	if err != nil {
		return "", fmt.Errorf("jobs: files of pull request #%d: %w", pr.Number, err)
	}
	if !slices.ContainsFunc(files, func(f string) bool { return f == rc.Roadmap || config.MatchAny(rc.Specs, f) }) {
		return metrics.ResultNoop, nil
	}
	// Pushing to a branch of the repository needs write access, but reopening a pull request needs only
	// triage: the person who set it going must be allowed to start runs.
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		return metrics.ResultRefused, nil
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, queue.RunPayload{TaskHeader: in.p.By(in.p.Sender),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerPullRequest, Number: pr.Number, Branch: pr.HeadRef,
		HeadSHA: pr.HeadSHA})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}
