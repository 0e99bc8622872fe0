package gh

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
)

// apiErr wraps an API error with the operation's name; a 404 also matches ports.ErrGitHubNotFound.
func apiErr(op string, err error) error {
	if StatusOf(err) == http.StatusNotFound {
		return fmt.Errorf("gh: %s: %w: %w", op, ports.ErrGitHubNotFound, err)
	}
	return fmt.Errorf("gh: %s: %w", op, err)
}

// StatusOf returns the HTTP status of a failed GitHub call, 0 when the error did not come with one.
func StatusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) && rl.Response != nil {
		return rl.Response.StatusCode
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) && ab.Response != nil {
		return ab.Response.StatusCode
	}
	// Minting the installation token failed: a 404 there means GitHub knows no such installation.
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return he.Response.StatusCode
	}
	return 0
}

// Permission returns a user's permission on a repository: admin, maintain, write, triage, read or none.
// GitHub's "permission" field is the legacy one (maintain reads as write, triage as read); "role_name"
// has the real role and is used when it is one of the five built-in ones. A user GitHub does not know
// has none.
func (c *Client) Permission(ctx context.Context, owner, repo, user string) (string, error) {
	u := fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(user))
	req, err := c.gh.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("gh: permission: %w", err)
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.gh.Do(ctx, req, &out); err != nil {
		// No token for the installation is not "the user has no access": it is the installation
		// that GitHub does not know.
		if _, tokenErr := errors.AsType[*ghinstallation.HTTPError](err); !tokenErr && StatusOf(err) == http.StatusNotFound {
			return ports.PermNone, nil
		}
		return "", apiErr("permission", err)
	}
	switch out.RoleName {
	case ports.PermAdmin, ports.PermMaintain, ports.PermWrite, ports.PermTriage, ports.PermRead, ports.PermNone:
		return out.RoleName, nil
	}
	switch out.Permission {
	case ports.PermAdmin, ports.PermWrite, ports.PermRead, ports.PermNone:
		return out.Permission, nil
	}
	return ports.PermNone, nil
}

// Comment is an issue or pull request comment.
type Comment struct {
	ID        int64
	Body      string
	User      string
	UserType  string // "User" or "Bot"
	HTMLURL   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CreateComment posts a comment on an issue or pull request, cut to GitHub's limit.
func (c *Client) CreateComment(ctx context.Context, owner, repo string, number int, body string) (int64, string, error) {
	cm, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, number, &github.IssueComment{Body: github.String(TruncateComment(body))})
	if err != nil {
		return 0, "", apiErr("create comment", err)
	}
	return cm.GetID(), cm.GetHTMLURL(), nil
}

// EditComment replaces a comment's body, cut to GitHub's limit.
func (c *Client) EditComment(ctx context.Context, owner, repo string, id int64, body string) error {
	if _, _, err := c.gh.Issues.EditComment(ctx, owner, repo, id, &github.IssueComment{Body: github.String(TruncateComment(body))}); err != nil {
		return apiErr("edit comment", err)
	}
	return nil
}

// ListComments returns every comment of an issue or pull request, oldest first.
func (c *Client) ListComments(ctx context.Context, owner, repo string, number int) ([]Comment, error) {
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var out []Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, number, opt)
		if err != nil {
			return nil, apiErr("list comments", err)
		}
		for _, cm := range page {
			out = append(out, Comment{
				ID: cm.GetID(), Body: cm.GetBody(), User: cm.GetUser().GetLogin(), UserType: cm.GetUser().GetType(),
				HTMLURL: cm.GetHTMLURL(), CreatedAt: cm.GetCreatedAt().Time, UpdatedAt: cm.GetUpdatedAt().Time,
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// Thread implements ports.Threads: the conversation of an issue or pull request, oldest first, with
// the comments of the app's own bot user told apart.
func (c *Client) Thread(ctx context.Context, owner, repo string, number int) ([]ports.ThreadComment, error) {
	bot, err := c.app.BotLogin(ctx)
	if err != nil {
		return nil, fmt.Errorf("gh: thread: %w", err)
	}
	all, err := c.ListComments(ctx, owner, repo, number)
	if err != nil {
		return nil, err
	}
	out := make([]ports.ThreadComment, 0, len(all))
	for _, cm := range all {
		out = append(out, ports.ThreadComment{ID: cm.ID, Author: cm.User, ByApp: strings.EqualFold(cm.User, bot),
			Body: cm.Body, CreatedAt: cm.CreatedAt})
	}
	return out, nil
}

// FindComment implements ports.Comments: the oldest comment of the app's bot user that contains marker
// (a hidden line such as the run summary's), or an error wrapping ports.ErrGitHubNotFound. Comments by
// anyone else are ignored, so a person who quotes the marker cannot take the summary's place.
func (c *Client) FindComment(ctx context.Context, owner, repo string, number int, marker string) (int64, string, error) {
	bot, err := c.app.BotLogin(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("gh: find comment: %w", err)
	}
	all, err := c.ListComments(ctx, owner, repo, number)
	if err != nil {
		return 0, "", err
	}
	for _, cm := range all {
		if strings.EqualFold(cm.User, bot) && strings.Contains(cm.Body, marker) {
			return cm.ID, cm.HTMLURL, nil
		}
	}
	return 0, "", fmt.Errorf("gh: no comment with %q on #%d: %w", marker, number, ports.ErrGitHubNotFound)
}

// CommentBody implements ports.Comments.
func (c *Client) CommentBody(ctx context.Context, owner, repo string, id int64) (string, error) {
	cm, _, err := c.gh.Issues.GetComment(ctx, owner, repo, id)
	if err != nil {
		return "", apiErr("get comment", err)
	}
	return cm.GetBody(), nil
}

// Reaction contents GitHub accepts.
const (
	ReactionPlusOne  = "+1"
	ReactionMinusOne = "-1"
	ReactionLaugh    = "laugh"
	ReactionConfused = "confused"
	ReactionHeart    = "heart"
	ReactionHooray   = "hooray"
	ReactionRocket   = "rocket"
	ReactionEyes     = "eyes"
)

// AddReaction reacts to an issue comment (Akira uses eyes for "seen", +1 for "done", confused for
// "cannot"). Reacting twice with the same content is not an error.
func (c *Client) AddReaction(ctx context.Context, owner, repo string, commentID int64, content string) error {
	switch content {
	case ReactionPlusOne, ReactionMinusOne, ReactionLaugh, ReactionConfused, ReactionHeart, ReactionHooray, ReactionRocket, ReactionEyes:
	default:
		return fmt.Errorf("gh: reaction %q is not one GitHub accepts", content)
	}
	if _, _, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, owner, repo, commentID, content); err != nil {
		return apiErr("add reaction", err)
	}
	return nil
}

// GetIssue implements ports.Repos: an issue (or a pull request seen as an issue).
func (c *Client) GetIssue(ctx context.Context, owner, repo string, number int) (ports.Issue, error) {
	is, _, err := c.gh.Issues.Get(ctx, owner, repo, number)
	if err != nil {
		return ports.Issue{}, apiErr("get issue", err)
	}
	return ports.Issue{Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), URL: is.GetHTMLURL(), Author: is.GetUser().GetLogin()}, nil
}

// Repository implements ports.Repos: the default branch, the clone URL and the web page.
func (c *Client) Repository(ctx context.Context, owner, repo string) (ports.RepoInfo, error) {
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return ports.RepoInfo{}, apiErr("get repository", err)
	}
	if r.GetDefaultBranch() == "" {
		return ports.RepoInfo{}, fmt.Errorf("gh: %s/%s has no default branch (empty repository?)", owner, repo)
	}
	return ports.RepoInfo{DefaultBranch: r.GetDefaultBranch(), CloneURL: r.GetCloneURL(), HTMLURL: r.GetHTMLURL()}, nil
}

// DefaultBranch returns a repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context, owner, repo string) (string, error) {
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return "", apiErr("get repository", err)
	}
	if r.GetDefaultBranch() == "" {
		return "", fmt.Errorf("gh: %s/%s has no default branch (empty repository?)", owner, repo)
	}
	return r.GetDefaultBranch(), nil
}

// GetFile returns a file's content at ref (a branch, tag or sha; empty for the default branch). A missing
// file or ref is ports.ErrGitHubNotFound; a directory is an error.
func (c *Client) GetFile(ctx context.Context, owner, repo, ref, path string) ([]byte, error) {
	var opt *github.RepositoryContentGetOptions
	if ref != "" {
		opt = &github.RepositoryContentGetOptions{Ref: ref}
	}
	fc, dir, _, err := c.gh.Repositories.GetContents(ctx, owner, repo, path, opt)
	if err != nil {
		return nil, apiErr("get "+path, err)
	}
	if fc == nil || dir != nil {
		return nil, fmt.Errorf("gh: get %s: is a directory", path)
	}
	if fc.GetType() != "" && fc.GetType() != "file" {
		return nil, fmt.Errorf("gh: get %s: is a %s, not a file", path, fc.GetType())
	}
	if fc.GetEncoding() == "none" && fc.GetSize() > 0 {
		// The contents API leaves files over 1 MB out; Akira only reads small files through the API.
		return nil, fmt.Errorf("gh: get %s: file of %d bytes is too large for the contents API", path, fc.GetSize())
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("gh: get %s: %w", path, err)
	}
	return []byte(s), nil
}

// GetRef returns the sha a ref points to. ref is "heads/<branch>", "tags/<tag>" or the same with a
// leading "refs/". A missing ref is ports.ErrGitHubNotFound.
func (c *Client) GetRef(ctx context.Context, owner, repo, ref string) (string, error) {
	r, _, err := c.gh.Git.GetRef(ctx, owner, repo, strings.TrimPrefix(ref, "refs/"))
	if err != nil {
		return "", apiErr("get ref "+ref, err)
	}
	return r.GetObject().GetSHA(), nil
}

// BranchCommits implements ports.Repos with the compare API: one request, which lists up to 250
// commits, enough for the checkpoints of a run.
func (c *Client) BranchCommits(ctx context.Context, owner, repo, base, head string) ([]ports.BranchCommit, error) {
	cmp, _, err := c.gh.Repositories.CompareCommits(ctx, owner, repo, base, head, nil)
	if err != nil {
		return nil, apiErr("compare "+base+"..."+head, err)
	}
	out := make([]ports.BranchCommit, 0, len(cmp.Commits))
	for _, rc := range cmp.Commits {
		out = append(out, ports.BranchCommit{SHA: rc.GetSHA(), Message: rc.GetCommit().GetMessage()})
	}
	return out, nil
}

// CreateRef creates a ref ("heads/<branch>" or "refs/heads/<branch>") at sha.
func (c *Client) CreateRef(ctx context.Context, owner, repo, ref, sha string) error {
	full := "refs/" + strings.TrimPrefix(ref, "refs/")
	if _, _, err := c.gh.Git.CreateRef(ctx, owner, repo, &github.Reference{Ref: github.String(full), Object: &github.GitObject{SHA: github.String(sha)}}); err != nil {
		return apiErr("create ref "+full, err)
	}
	return nil
}
