package app

import (
	"context"
	"fmt"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/runner/config"
)

// AppGitHub implements GitHub over the app's installation clients.
type AppGitHub struct {
	app      *gh.App
	validate []func(config.Repo) error
}

// NewAppGitHub adapts app to the intake. validate (typically the operator's ValidateRepo) checks a
// repository's configuration, so a bad choice is answered on the issue before anything is queued.
func NewAppGitHub(app *gh.App, validate ...func(config.Repo) error) *AppGitHub {
	return &AppGitHub{app: app, validate: validate}
}

var _ GitHub = (*AppGitHub)(nil)

func (a *AppGitHub) client(id int64) (*gh.Client, error) {
	c, err := a.app.Installation(id)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return c, nil
}

// PermissionLevel implements GitHub.
func (a *AppGitHub) PermissionLevel(ctx context.Context, installationID int64, owner, repo, user string) (string, error) {
	c, err := a.client(installationID)
	if err != nil {
		return "", err
	}
	return c.Permission(ctx, owner, repo, user)
}

// RepoConfig implements GitHub.
func (a *AppGitHub) RepoConfig(ctx context.Context, installationID int64, owner, repo, defaultBranch string) (config.Repo, error) {
	c, err := a.client(installationID)
	if err != nil {
		return config.Repo{}, err
	}
	return gh.LoadRepoConfig(ctx, knownDefaultBranch{c, defaultBranch}, owner, repo, a.validate...)
}

// knownDefaultBranch saves the GET of the repository when the webhook payload named its default branch.
type knownDefaultBranch struct {
	*gh.Client
	branch string
}

func (k knownDefaultBranch) DefaultBranch(ctx context.Context, owner, repo string) (string, error) {
	if k.branch != "" {
		return k.branch, nil
	}
	return k.Client.DefaultBranch(ctx, owner, repo)
}

// PullRequest implements GitHub.
func (a *AppGitHub) PullRequest(ctx context.Context, installationID int64, owner, repo string, number int) (PullRequestInfo, error) {
	c, err := a.client(installationID)
	if err != nil {
		return PullRequestInfo{}, err
	}
	pr, err := c.GetPullRequest(ctx, owner, repo, number)
	if err != nil {
		return PullRequestInfo{}, err
	}
	return PullRequestInfo{Number: pr.Number, HeadRepo: pr.HeadRepo, BaseRepo: owner + "/" + repo,
		HeadRef: pr.HeadRef, HeadSHA: pr.HeadSHA}, nil
}

// PullRequestFiles implements GitHub.
func (a *AppGitHub) PullRequestFiles(ctx context.Context, installationID int64, owner, repo string, number int) ([]string, error) {
	c, err := a.client(installationID)
	if err != nil {
		return nil, err
	}
	return c.PullRequestFiles(ctx, owner, repo, number)
}

// CreateComment implements GitHub.
func (a *AppGitHub) CreateComment(ctx context.Context, installationID int64, owner, repo string, number int, body string) error {
	c, err := a.client(installationID)
	if err != nil {
		return err
	}
	_, _, err = c.CreateComment(ctx, owner, repo, number, body)
	return err
}

// AddReaction implements GitHub.
func (a *AppGitHub) AddReaction(ctx context.Context, installationID int64, owner, repo string, commentID int64, content string) error {
	c, err := a.client(installationID)
	if err != nil {
		return err
	}
	return c.AddReaction(ctx, owner, repo, commentID, content)
}
