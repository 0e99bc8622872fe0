package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// Results of a rollback job.
const (
	ResultRolledBack = "rolled_back"
)

// HandleRollback reverts a task's checkpoint on the branch of the run of an issue or pull request.
func (h *Rollbacks) HandleRollback(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeRollback, h.rollback)
}

func (h *Rollbacks) rollback(ctx context.Context, p queue.RollbackPayload) (string, error) {
	log := h.log.With("task", queue.TypeRollback, "delivery", p.DeliveryID, "installation", p.InstallationID,
		"repo", p.Owner+"/"+p.Repo, "number", p.Number, "rollback", p.TaskID, "by", p.Sender)
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	reply := func(data templates.RollbackReply, result string) (string, error) {
		data.TaskID = p.TaskID
		text := publish.Render("rollback_reply", data, "`/akira rollback "+p.TaskID+"`: "+data.Refusal+" "+data.Problem)
		retried, _ := asynq.GetRetryCount(ctx)
		if err := publish.ReplyOnce(ctx, h.replies, gh, p.Owner, p.Repo, p.Number, p.JobID(), text, retried > 0); err != nil {
			return metrics.ResultRetry, err
		}
		return result, nil
	}
	run, err := h.records.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	if errors.Is(err, store.ErrNotFound) {
		// Redis may have lost the run's record: its branch still says which tasks are done.
		run, err = h.rebuilds.rebuildLostRun(ctx, gh, lostRunRequest{Key: p.JobID(), InstallationID: p.InstallationID,
			Owner: p.Owner, Repo: p.Repo, Number: p.Number, Sender: p.Sender, Settled: true})
		if errors.Is(err, errNoLostRun) || errors.Is(err, ports.ErrGitHubNotFound) || isRepoConfigError(err) {
			log.Info("rollback job: no run, and no lost run to rebuild", "why", err)
			return reply(templates.RollbackReply{Refusal: templates.RollbackNoRun}, metrics.ResultReplied)
		}
		if err == nil {
			log.Warn("rollback job: rebuilt a lost run from its branch", "run", run.ID, "branch", run.Branch, "status", run.Status)
		}
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	log = log.With("run", run.ID)
	switch {
	case run.Status == lifecycle.StatusQueued || run.Status == lifecycle.StatusRunning:
		return reply(templates.RollbackReply{RunID: run.ID, Refusal: templates.RollbackWorking}, metrics.ResultReplied)
	case run.Status == lifecycle.StatusParked:
		return reply(templates.RollbackReply{RunID: run.ID, Refusal: templates.RollbackParked}, metrics.ResultReplied)
	case run.Status == lifecycle.StatusAborted:
		return reply(templates.RollbackReply{RunID: run.ID, Refusal: templates.RollbackAborted}, metrics.ResultReplied)
	case len(run.Plans) > 0 || run.Review != nil:
		return reply(templates.RollbackReply{Refusal: templates.RollbackSeveralPlans}, metrics.ResultReplied)
	case run.Task(p.TaskID) == nil:
		return reply(templates.RollbackReply{RunID: run.ID, Refusal: templates.RollbackNoTask}, metrics.ResultReplied)
	}

	lk, err := h.d.Locker.Acquire(ctx, store.BranchLockName(run.Owner, run.Repo, run.Branch))
	if errors.Is(err, store.ErrLocked) {
		log.Info("rollback job: branch locked by another job, waiting")
		return metrics.ResultBusy, fmt.Errorf("%w: %s", flow.ErrBusy, run.Branch)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	defer func() {
		if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn("rollback job: release branch lock", "err", err)
		}
	}()
	lctx := lk.Context()
	api, err := signedCommits(lctx, h.d, gh, run)
	if err != nil {
		return metrics.ResultRetry, err
	}
	opts := runner.RollbackOptions{CommitAPI: api, Repo: run.CloneURL, TaskID: p.TaskID, Roadmap: run.Roadmap, Branch: run.Branch, Base: run.Base,
		RunID: run.ID, Author: h.d.Author, WorkDir: h.d.WorkDir, Cache: h.d.Cache, GitAuth: gh.GitAuthHeader,
		// A retry of this job after its push finds its reverts instead of refusing.
		RequestID: p.JobID()}
	if run.Plan != "" {
		opts.Plan, opts.PlanSource = []byte(run.Plan), run.PlanSource
		// A plan named within a scope on the branch (handed off, pasted): its task "1.1" is
		// "<scope>#1.1" on the branch, as the run named it.
		if scope := planScope(run); scope != "" {
			opts.TaskScope, opts.TaskID = scope, strings.TrimPrefix(p.TaskID, scope+"#")
		}
	}
	out, err := runner.Rollback(lctx, opts)
	var conflict *runner.RevertConflictError
	switch {
	case errors.As(err, &conflict):
		log.Info("rollback job: the revert conflicts", "paths", conflict.Paths)
		return reply(templates.RollbackReply{Branch: run.Branch,
			Conflict: &templates.RollbackConflict{Commit: conflict.Commit, Paths: conflict.Paths, Diff: conflict.Diff}}, metrics.ResultReplied)
	case errors.Is(err, runner.ErrUsage), errors.Is(err, runner.ErrInvalidPlan):
		return reply(templates.RollbackReply{Refusal: templates.RollbackRefused, Problem: strings.TrimPrefix(err.Error(), "runner: ")}, metrics.ResultReplied)
	case err != nil:
		return metrics.ResultRetry, err
	}
	log.Info("rollback job: rolled back", "reverted", len(out.Reverted), "head", out.Head)

	// Pending tasks and no job (without --retry): a stopped run, which /akira run continues.
	rolled := lifecycle.RolledBack{Reverted: map[string]string{}, Texts: map[string]string{}, Head: out.Head, By: p.Sender,
		Task: p.TaskID, Key: p.JobID(), Guidance: p.Guidance, Retry: p.Retry}
	for _, rv := range out.Reverted {
		rolled.Reverted[rv.ID] = fmt.Sprintf("rolled back by @%s (%s)", p.Sender, publish.Short(rv.Revert))
		rolled.Texts[rv.ID] = fmt.Sprintf("@%s rolled this task back: its checkpoint %s is reverted by %s on `%s`; the task is pending again.",
			p.Sender, publish.Short(rv.Checkpoint), publish.Short(rv.Revert), run.Branch)
	}
	run, _, err = h.records.Apply(lctx, run.ID, rolled)
	if err != nil {
		return metrics.ResultRetry, err
	}
	if run, err = h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	data := templates.RollbackReply{Branch: run.Branch, By: p.Sender, Retry: p.Retry, Guidance: p.Guidance}
	for _, r := range out.Reverted {
		data.Reverted = append(data.Reverted, templates.RolledBack{ID: r.ID, Title: r.Title, Checkpoint: r.Checkpoint, Revert: r.Revert})
	}
	return reply(data, ResultRolledBack)
}
