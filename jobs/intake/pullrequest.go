package intake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/store"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/templates"
)

func (h *Intake) onPullRequest(ctx context.Context, in *intake) (string, error) {
	pr := in.p.Body.(*queue.PullRequestIntake)
	if pr.Fork != "" {
		// When each head of a fork was first seen decides which head a writer's command may run.
		if err := h.d.Store.SawForkHead(ctx, in.p.Owner, in.p.Repo, pr.Number, pr.HeadSHA, pr.UpdatedAt); err != nil {
			return "", err
		}
		if pr.Action == "synchronize" {
			return metrics.ResultNoop, nil // never run by itself; told how once, when opened
		}
	}
	if pr.Action == "closed" {
		return h.pullRequestClosed(ctx, in, pr)
	}
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
	// A fork's branch may be named anything: only the repository's own akira/ branches are Akira's.
	if (pr.Fork == "" && strings.HasPrefix(pr.HeadRef, rc.BranchPrefix)) || !rc.Triggers.PullRequest {
		return metrics.ResultNoop, nil
	}
	files, err := in.gh.PullRequestFiles(ctx, in.p.Owner, in.p.Repo, pr.Number)
	if err != nil {
		return "", fmt.Errorf("jobs: files of pull request #%d: %w", pr.Number, err)
	}
	plans := slices.DeleteFunc(files, func(f string) bool { return f != rc.Roadmap && !config.MatchAny(rc.Specs, f) })
	if len(plans) == 0 {
		return metrics.ResultNoop, nil
	}
	if pr.Fork != "" {
		return h.forkNotice(ctx, in, pr, plans, rc)
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

// forkNotice answers a fork's pull request that changes plan files: nothing runs by itself, and a
// writer's `/akira run` runs it on a branch of the repository. Said once per pull request, however
// often it is reopened; no permission is asked, since nothing runs.
func (h *Intake) forkNotice(ctx context.Context, in *intake, pr *queue.PullRequestIntake, plans []string, rc config.Repo) (string, error) {
	text := publish.Render("fork_notice", templates.ForkNotice{Fork: pr.Fork, Files: plans, Branch: flow.ForkBranch(rc.BranchPrefix, pr.Number)},
		"Akira does not run pull requests from forks by themselves: someone with write access can reply `/akira run`.")
	key := "fork-notice-" + in.p.Owner + "/" + in.p.Repo + "#" + strconv.Itoa(pr.Number)
	if err := publish.ReplyOnce(ctx, in.store.Dedupe, in.gh, in.p.Owner, in.p.Repo, pr.Number, key, text, true); err != nil {
		return "", err
	}
	return metrics.ResultReplied, nil
}

// pullRequestClosed stops the run of a pull request a person closed or merged while the run still
// works or waits: closing says "not this", and a run that went on would push to a closed pull request
// and spend for nobody. Stopping needs write access, as /akira stop does (closing needs only triage):
// a closer without it stops nothing. The run can go on after a reopening and /akira run.
func (h *Intake) pullRequestClosed(ctx context.Context, in *intake, pr *queue.PullRequestIntake) (string, error) {
	run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, pr.Number)
	if errors.Is(err, store.ErrNotFound) {
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	if !lifecycle.Allowed(run.Status, lifecycle.EventStopAsked) {
		return metrics.ResultNoop, nil // ended already, or stopping
	}
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		in.log.Info("intake: pull request closed by someone who may not stop its run", "number", pr.Number, "run", run.ID, "by", in.p.Sender)
		return metrics.ResultRefused, nil
	}
	if _, asked, err := h.d.Store.RequestStop(ctx, run.ID, in.p.Sender, false); err != nil || !asked {
		return metrics.ResultNoop, err
	}
	in.log.Info("intake: pull request closed; its run stops", "number", pr.Number, "run", run.ID, "by", in.p.Sender)
	return metrics.ResultAccepted, nil
}
