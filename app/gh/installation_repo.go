package gh

import (
	"context"
	"fmt"
)

// RepoInstallation is the id of the App's installation on a repository, for runs handed off through
// the REST API (they name a repository, not an installation); ports.ErrGitHubNotFound when the App
// is not installed there.
func (a *App) RepoInstallation(ctx context.Context, owner, repo string) (int64, error) {
	in, _, err := a.appClient.Apps.FindRepositoryInstallation(ctx, owner, repo)
	if err != nil {
		return 0, apiErr(fmt.Sprintf("installation of %s/%s", owner, repo), err)
	}
	return in.GetID(), nil
}
