// Package bridge connects the GitHub edge (app, app/gh) and package jobs: it adapts app/gh's installation
// client to the GitHub ports jobs declares, and jobs' Enqueuer to the app.Enqueuer the webhook server calls.
//
// jobs never imports the GitHub edge (app, go-github); its ports use jobs' own plain types, and this
// package converts between the two. It is wiring, used by cmd/akira and the end-to-end tests.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/jobs"
)

// Client is a *gh.Client seen as a jobs.GitHub.
type Client struct {
	c      *gh.Client
	webURL string
}

var _ jobs.GitHub = (*Client)(nil)

// New adapts c. webURL is GitHub's web root ("https://github.com", a GitHub Enterprise host), used for
// clone and page URLs; see WebURL.
func New(c *gh.Client, webURL string) *Client {
	return &Client{c: c, webURL: strings.TrimSuffix(webURL, "/")}
}

// Installations hands out adapted clients of an app's installations.
func Installations(app *gh.App, webURL string) jobs.Installations {
	return jobs.InstallationsFunc(func(_ context.Context, id int64) (jobs.GitHub, error) {
		c, err := app.Installation(id)
		if err != nil {
			return nil, err
		}
		return New(c, webURL), nil
	})
}

// WebURL derives GitHub's web root from its REST root: api.github.com is github.com, a GitHub
// Enterprise Server's https://host/api/v3/ is https://host, and any other root (a test server) is
// itself.
func WebURL(apiURL string) string {
	u, err := url.Parse(apiURL)
	if err != nil {
		return strings.TrimSuffix(apiURL, "/")
	}
	switch {
	case u.Host == "api.github.com":
		return "https://github.com"
	case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3"):
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3")
	}
	return strings.TrimSuffix(u.String(), "/")
}

// notFound makes gh's not-found errors match jobs.ErrGitHubNotFound too.
func notFound(err error) error {
	if errors.Is(err, gh.ErrNotFound) {
		return fmt.Errorf("%w: %w", jobs.ErrGitHubNotFound, err)
	}
	return err
}

// CreateCheckRun implements jobs.Checks.
func (a *Client) CreateCheckRun(ctx context.Context, owner, repo string, cr jobs.CheckRun) (int64, string, error) {
	id, u, err := a.c.CreateCheckRun(ctx, owner, repo, checkRun(cr))
	return id, u, notFound(err)
}

// UpdateCheckRun implements jobs.Checks.
func (a *Client) UpdateCheckRun(ctx context.Context, owner, repo string, id int64, cr jobs.CheckRun) error {
	return notFound(a.c.UpdateCheckRun(ctx, owner, repo, id, checkRun(cr)))
}

func checkRun(cr jobs.CheckRun) gh.CheckRun {
	out := gh.CheckRun{
		Name: cr.Name, HeadSHA: cr.HeadSHA, Status: cr.Status, Conclusion: cr.Conclusion, ExternalID: cr.ExternalID,
		DetailsURL: cr.DetailsURL, Title: cr.Title, Summary: cr.Summary, Text: cr.Text,
	}
	for _, an := range cr.Annotations {
		out.Annotations = append(out.Annotations, gh.Annotation{Path: an.Path, StartLine: an.StartLine, EndLine: an.EndLine,
			Level: an.Level, Message: an.Message, Title: an.Title})
	}
	if cr.Buttons != nil {
		out.Actions = []gh.Action{}
		for _, b := range cr.Buttons {
			out.Actions = append(out.Actions, gh.Action{Label: b.Label, Description: b.Description, Identifier: b.Identifier})
		}
	}
	return out
}

// CreateComment implements jobs.Comments.
func (a *Client) CreateComment(ctx context.Context, owner, repo string, number int, body string) (int64, string, error) {
	id, u, err := a.c.CreateComment(ctx, owner, repo, number, body)
	return id, u, notFound(err)
}

// EditComment implements jobs.Comments.
func (a *Client) EditComment(ctx context.Context, owner, repo string, id int64, body string) error {
	return notFound(a.c.EditComment(ctx, owner, repo, id, body))
}

// FindComment implements jobs.Comments.
func (a *Client) FindComment(ctx context.Context, owner, repo string, number int, marker string) (int64, string, error) {
	cm, err := a.c.FindComment(ctx, owner, repo, number, marker)
	if err != nil {
		return 0, "", notFound(err)
	}
	return cm.ID, cm.HTMLURL, nil
}

// AddReaction implements jobs.Comments.
func (a *Client) AddReaction(ctx context.Context, owner, repo string, commentID int64, content string) error {
	return notFound(a.c.AddReaction(ctx, owner, repo, commentID, content))
}

func pull(p *gh.PR) *jobs.PullRequest {
	if p == nil {
		return nil
	}
	return &jobs.PullRequest{Number: p.Number, NodeID: p.NodeID, URL: p.HTMLURL, Draft: p.Draft, HeadRef: p.HeadRef,
		HeadSHA: p.HeadSHA, BaseRef: p.BaseRef, HeadRepo: p.HeadRepo}
}

// FindPullRequest implements jobs.Pulls.
func (a *Client) FindPullRequest(ctx context.Context, owner, repo, head, base string) (*jobs.PullRequest, error) {
	p, err := a.c.FindPullRequest(ctx, owner, repo, head, base)
	return pull(p), notFound(err)
}

// CreatePullRequest implements jobs.Pulls.
func (a *Client) CreatePullRequest(ctx context.Context, owner, repo string, spec jobs.NewPullRequest) (*jobs.PullRequest, error) {
	p, err := a.c.CreatePullRequest(ctx, owner, repo, gh.PRSpec{Title: spec.Title, Body: spec.Body, Head: spec.Head, Base: spec.Base, Draft: spec.Draft})
	return pull(p), notFound(err)
}

// GetPullRequest implements jobs.Pulls.
func (a *Client) GetPullRequest(ctx context.Context, owner, repo string, number int) (*jobs.PullRequest, error) {
	p, err := a.c.GetPullRequest(ctx, owner, repo, number)
	return pull(p), notFound(err)
}

// MarkReady implements jobs.Pulls.
func (a *Client) MarkReady(ctx context.Context, owner, repo string, pr *jobs.PullRequest) error {
	p := &gh.PR{Number: pr.Number, NodeID: pr.NodeID, Draft: pr.Draft}
	if err := a.c.MarkReady(ctx, owner, repo, p); err != nil {
		return notFound(err)
	}
	pr.Draft = p.Draft
	return nil
}

// GetIssue implements jobs.Repos.
func (a *Client) GetIssue(ctx context.Context, owner, repo string, number int) (jobs.Issue, error) {
	is, err := a.c.GetIssue(ctx, owner, repo, number)
	if err != nil {
		return jobs.Issue{}, notFound(err)
	}
	return jobs.Issue{Number: is.Number, Title: is.Title, Body: is.Body, URL: is.HTMLURL}, nil
}

// GetFile implements jobs.Repos.
func (a *Client) GetFile(ctx context.Context, owner, repo, ref, path string) ([]byte, error) {
	data, err := a.c.GetFile(ctx, owner, repo, ref, path)
	return data, notFound(err)
}

// GetRef implements jobs.Repos.
func (a *Client) GetRef(ctx context.Context, owner, repo, ref string) (string, error) {
	sha, err := a.c.GetRef(ctx, owner, repo, ref)
	return sha, notFound(err)
}

// Repository implements jobs.Repos.
func (a *Client) Repository(ctx context.Context, owner, repo string) (jobs.RepoInfo, error) {
	def, err := a.c.DefaultBranch(ctx, owner, repo)
	if err != nil {
		return jobs.RepoInfo{}, notFound(err)
	}
	page := a.webURL + "/" + owner + "/" + repo
	return jobs.RepoInfo{DefaultBranch: def, CloneURL: page + ".git", HTMLURL: page}, nil
}

// GitAuthHeader implements jobs.GitAuth.
func (a *Client) GitAuthHeader(ctx context.Context) (string, error) { return a.c.GitAuthHeader(ctx) }
