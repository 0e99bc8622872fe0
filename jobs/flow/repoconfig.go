package flow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner/config"
)

// DefaultBranchFiles reads files of a repository's default branch through GitHub, for
// config.LoadRepo; defaultBranch may be empty (GitHub's default is read then).
func DefaultBranchFiles(repos ports.Repos, owner, repo, defaultBranch string) config.FileReader {
	return func(ctx context.Context, path string) ([]byte, bool, error) {
		data, err := repos.GetFile(ctx, owner, repo, defaultBranch, path)
		if errors.Is(err, ports.ErrGitHubNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return data, true, nil
	}
}

// AsRepoConfigError says whether err is the repository's own mistake in its configuration.
func AsRepoConfigError(err error) (*config.RepoError, bool) {
	return errors.AsType[*config.RepoError](err)
}

// IsFork reports whether a pull request's head lives outside the repository. A deleted head repository
// counts as a fork: nothing proves it was this repository.
func IsFork(headRepo, owner, repo string) bool {
	return headRepo == "" || !strings.EqualFold(headRepo, owner+"/"+repo)
}

// ForkBranch is the branch of the repository a fork's pull request number runs on: Akira cannot push
// to a fork, so its run starts a branch of its own at the fork's head.
func ForkBranch(prefix string, number int) string {
	return prefix + "pr-" + strconv.Itoa(number)
}

// ForkOfBranch is the fork's pull request whose run branch is (ForkBranch); ok is false for any other
// branch. A fork run's branch holds the fork's content, so a plan file on it is not a writer's.
func ForkOfBranch(prefix, branch string) (number int, ok bool) {
	n, found := strings.CutPrefix(branch, prefix+"pr-")
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i <= 0 || strconv.Itoa(i) != n {
		return 0, false
	}
	return i, true
}

// RepoConfig reads the repository's .github/akira.yml (or .yaml) from its default branch, never from a
// branch a run works on, with the one loader akira run and the engine use too. A file that cannot be
// used is a *config.RepoError (see AsRepoConfigError): the repository's mistake, answered where its
// people see it; other errors are failures to ask GitHub.
func (d *Deps) RepoConfig(ctx context.Context, repos ports.Repos, owner, repo, defaultBranch string) (config.Repo, error) {
	rc, _, err := config.LoadRepo(ctx, DefaultBranchFiles(repos, owner, repo, defaultBranch), d.Operator.ValidateRepo)
	if _, bad := AsRepoConfigError(err); bad {
		return config.Repo{}, err
	}
	if err != nil {
		return config.Repo{}, fmt.Errorf("jobs: repository configuration: %w", err)
	}
	return rc, nil
}
