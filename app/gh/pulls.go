package gh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
)

func toPR(p *github.PullRequest) *ports.PullRequest {
	return &ports.PullRequest{
		Number: p.GetNumber(), NodeID: p.GetNodeID(), URL: p.GetHTMLURL(), Draft: p.GetDraft(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), BaseRef: p.GetBase().GetRef(),
		HeadRepo: p.GetHead().GetRepo().GetFullName(), Closed: p.GetState() == "closed", Merged: p.GetMerged(),
		MergeableState: p.GetMergeableState(),
	}
}

// GetPullRequest returns a pull request by number.
func (c *Client) GetPullRequest(ctx context.Context, owner, repo string, number int) (*ports.PullRequest, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return nil, apiErr("get pull request", err)
	}
	return toPR(p), nil
}

// FindPullRequest returns the open pull request from head (a branch of owner/repo) into base, or
// an error wrapping ports.ErrGitHubNotFound. An empty base matches any.
func (c *Client) FindPullRequest(ctx context.Context, owner, repo, head, base string) (*ports.PullRequest, error) {
	opt := &github.PullRequestListOptions{State: "open", Head: owner + ":" + head, Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	pulls, _, err := c.gh.PullRequests.List(ctx, owner, repo, opt)
	if err != nil {
		return nil, apiErr("find pull request", err)
	}
	for _, p := range pulls {
		if p.GetHead().GetRef() == head && (base == "" || p.GetBase().GetRef() == base) {
			return toPR(p), nil
		}
	}
	return nil, fmt.Errorf("gh: no open pull request from %s into %q: %w", head, base, ports.ErrGitHubNotFound)
}

// CreatePullRequest opens a pull request, or returns the open one from the same head into the same base:
// a retried job must not fail because its first attempt already opened it.
func (c *Client) CreatePullRequest(ctx context.Context, owner, repo string, spec ports.NewPullRequest) (*ports.PullRequest, error) {
	np := &github.NewPullRequest{
		Title: github.String(spec.Title), Head: github.String(spec.Head), Base: github.String(spec.Base),
		Body: github.String(TruncateComment(spec.Body)), Draft: github.Bool(spec.Draft),
	}
	p, _, err := c.gh.PullRequests.Create(ctx, owner, repo, np)
	if err == nil {
		return toPR(p), nil
	}
	if StatusOf(err) == http.StatusUnprocessableEntity && alreadyExists(err) {
		existing, ferr := c.FindPullRequest(ctx, owner, repo, spec.Head, spec.Base)
		if ferr == nil {
			return existing, nil
		}
		return nil, fmt.Errorf("gh: create pull request: GitHub says it exists but it was not found: %w", ferr)
	}
	return nil, apiErr("create pull request", err)
}

func alreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		return false
	}
	if strings.Contains(er.Message, "already exists") {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "A pull request already exists") {
			return true
		}
	}
	return false
}

// EditPullRequestBody sets the body of a pull request Akira opened, whose current body holds marker;
// a body someone replaced (without the marker) is theirs and is left alone, and an unchanged one is
// not sent again. The read is conditional (see conditional.go), so a body that did not change costs
// no rate limit.
func (c *Client) EditPullRequestBody(ctx context.Context, owner, repo string, number int, marker, body string) error {
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return apiErr("read pull request body", err)
	}
	body = TruncateComment(body)
	if cur := p.GetBody(); cur == body || !strings.Contains(cur, marker) {
		return nil
	}
	if _, _, err := c.gh.PullRequests.Edit(ctx, owner, repo, number, &github.PullRequest{Body: github.String(body)}); err != nil {
		return apiErr("edit pull request body", err)
	}
	return nil
}

// ClosePullRequest closes a pull request (PATCH state=closed); closing a closed one changes nothing.
func (c *Client) ClosePullRequest(ctx context.Context, owner, repo string, number int) error {
	if _, _, err := c.gh.PullRequests.Edit(ctx, owner, repo, number, &github.PullRequest{State: github.String("closed")}); err != nil {
		return apiErr("close pull request", err)
	}
	return nil
}

// MarkReady marks a draft pull request ready for review. The REST API cannot do this; it takes the
// GraphQL mutation markPullRequestReadyForReview. A pull request that is not a draft is left alone.
func (c *Client) MarkReady(ctx context.Context, owner, repo string, pr *ports.PullRequest) error {
	if pr == nil {
		return errors.New("gh: mark ready: no pull request")
	}
	if !pr.Draft {
		return nil
	}
	nodeID := pr.NodeID
	if nodeID == "" {
		fresh, err := c.GetPullRequest(ctx, owner, repo, pr.Number)
		if err != nil {
			return fmt.Errorf("gh: mark ready: %w", err)
		}
		if !fresh.Draft {
			pr.Draft = false
			return nil
		}
		nodeID = fresh.NodeID
	}
	const mutation = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`
	var out struct {
		Data struct {
			Mark *struct {
				PullRequest struct {
					IsDraft bool `json:"isDraft"`
				} `json:"pullRequest"`
			} `json:"markPullRequestReadyForReview"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"errors"`
	}
	if err := c.graphQL(ctx, mutation, map[string]any{"id": nodeID}, &out); err != nil {
		return fmt.Errorf("gh: mark ready #%d: %w", pr.Number, err)
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		for i, e := range out.Errors {
			msgs[i] = e.Message
		}
		return fmt.Errorf("gh: mark ready #%d: %s", pr.Number, strings.Join(msgs, "; "))
	}
	if out.Data.Mark == nil || out.Data.Mark.PullRequest.IsDraft {
		return fmt.Errorf("gh: mark ready #%d: GitHub did not mark it ready", pr.Number)
	}
	pr.Draft = false
	return nil
}

// graphQL posts a query to the GraphQL endpoint through the installation's transport (token, retries).
func (c *Client) graphQL(ctx context.Context, query string, vars map[string]any, out any) error {
	req, err := c.gh.NewRequest(http.MethodPost, c.graphql, map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	var raw json.RawMessage
	if _, err := c.gh.Do(ctx, req, &raw); err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("graphql: decode: %w", err)
	}
	return nil
}

// PullRequestFiles lists the paths a pull request changes (GitHub lists at most 3000).
func (c *Client) PullRequestFiles(ctx context.Context, owner, repo string, number int) ([]string, error) {
	opt := &github.ListOptions{PerPage: 100}
	var out []string
	for {
		files, resp, err := c.gh.PullRequests.ListFiles(ctx, owner, repo, number, opt)
		if err != nil {
			return nil, apiErr("list pull request files", err)
		}
		for _, f := range files {
			out = append(out, f.GetFilename())
			// A rename changes the old path too: a roadmap moved away must count as changed.
			if prev := f.GetPreviousFilename(); prev != "" {
				out = append(out, prev)
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// ReviewComments implements ports.Reviews.
func (c *Client) ReviewComments(ctx context.Context, owner, repo string, number int, reviewID int64) ([]ports.ReviewComment, error) {
	var out []ports.ReviewComment
	opts := &github.ListOptions{PerPage: 100}
	for {
		page, resp, err := c.gh.PullRequests.ListReviewComments(ctx, owner, repo, number, reviewID, opts)
		if err != nil {
			return nil, apiErr("review comments", err)
		}
		for _, rc := range page {
			out = append(out, ports.ReviewComment{ID: rc.GetID(), Path: rc.GetPath(), Line: rc.GetLine(), DiffHunk: rc.GetDiffHunk(),
				Body: rc.GetBody(), User: rc.GetUser().GetLogin(), InReplyTo: rc.GetInReplyTo()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// ReplyToReviewComment implements ports.Reviews.
func (c *Client) ReplyToReviewComment(ctx context.Context, owner, repo string, number int, commentID int64, body string) error {
	// go-github v60 replies through POST /pulls/{n}/comments with in_reply_to, which GitHub no longer
	// documents; the replies endpoint is the one in GitHub's API description.
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(owner), url.PathEscape(repo), number, commentID)
	req, err := c.gh.NewRequest(http.MethodPost, u, map[string]string{"body": body})
	if err != nil {
		return fmt.Errorf("gh: reply to review comment: %w", err)
	}
	if _, err := c.gh.Do(ctx, req, nil); err != nil {
		return apiErr("reply to review comment", err)
	}
	return nil
}

// RequestReview implements ports.Reviews.
func (c *Client) RequestReview(ctx context.Context, owner, repo string, number int, logins []string) error {
	if _, _, err := c.gh.PullRequests.RequestReviewers(ctx, owner, repo, number, github.ReviewersRequest{Reviewers: logins}); err != nil {
		return apiErr("request reviewers", err)
	}
	return nil
}
