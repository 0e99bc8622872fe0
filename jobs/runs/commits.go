package runs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/workspace"
)

// repoRules sets what the repository's rules and the installation's grants decide of a run's engine:
// its checkpoints go through GitHub's API, which signs them, when the base branch accepts only signed
// commits (or the operator wants every checkpoint signed: commits: github), since a commit pushed with
// git is refused there; and its tasks may change workflow files only where the installation holds
// GitHub's workflows permission, without which GitHub refuses the push of such a change. The rules
// are read at every job, so a ruleset added while a run waited for a decision holds for its next task.
func (h *Runs) repoRules(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, opts *runner.Options, log *slog.Logger) error {
	api, err := signedCommits(ctx, h.d, gh, run)
	if err != nil {
		return err
	}
	if api != nil {
		opts.CommitAPI = api
		log.Info("run job: checkpoints go through GitHub's API, which signs them", "base", run.Base, "operator", h.d.Operator.Commits == config.CommitsGitHub)
	}
	if opts.AllowWorkflows {
		granted, err := gh.WorkflowsGranted(ctx)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if !granted {
			// The operator's allow_workflows without the permission behind it: GitHub would refuse
			// the push, so the engine refuses the change first, where the attempt can say why.
			log.Warn("run job: allow_workflows is set, but the installation does not hold GitHub's workflows permission (akira setup --workflows; the installation must accept it): workflow files stay refused")
			opts.AllowWorkflows = false
		}
	}
	return nil
}

// signedCommits is GitHub's commit API for the commits Akira adds to run's branch when they must be
// signed (the base's rules accept only signed commits, or the operator's commits: github), nil when
// they may be pushed with git. Checkpoints and rollbacks ask it alike: a revert pushed with git
// would be refused by the same rule.
func signedCommits(ctx context.Context, d *flow.Deps, gh ports.GitHub, run *lifecycle.Run) (workspace.CommitAPI, error) {
	signed := d.Operator.Commits == config.CommitsGitHub
	if !signed {
		required, err := gh.SignaturesRequired(ctx, run.Owner, run.Repo, run.Base)
		if err != nil {
			return nil, fmt.Errorf("jobs: signature rules of %s: %w", run.Base, err)
		}
		signed = required
	}
	if !signed {
		return nil, nil
	}
	return gh.CommitAPI(run.Owner, run.Repo), nil
}
