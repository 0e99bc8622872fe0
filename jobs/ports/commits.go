package ports

import (
	"context"

	"github.com/akira-bot/akira/runner/workspace"
)

// SignedCommits makes a run's checkpoints through GitHub's API, so that GitHub signs them: the base
// branch's rules may accept only signed commits, and a commit Akira makes and pushes with git is
// refused there.
type SignedCommits interface {
	// SignaturesRequired says whether branch accepts only signed commits: an active ruleset's
	// required_signatures rule, or branch protection's required signatures where the App may read it.
	SignaturesRequired(ctx context.Context, owner, repo, branch string) (bool, error)
	// CommitAPI makes commits on a repository through GitHub's API (GitHub signs them); the engine
	// publishes its checkpoints through it (runner.Options.CommitAPI).
	CommitAPI(owner, repo string) workspace.CommitAPI
}

// Grants says what an installation was granted beyond what every run needs.
type Grants interface {
	// WorkflowsGranted says whether the installation holds GitHub's workflows permission (write):
	// without it GitHub refuses every commit that changes a file under .github/workflows.
	WorkflowsGranted(ctx context.Context) (bool, error)
}
