package jobs

import (
	"context"
	"errors"
)

// The GitHub operations jobs needs, declared here (consumer-owned) and implemented by app/gh. They use
// this package's plain types so that jobs never imports the GitHub edge; cmd/akira adapts app/gh's
// client to them (see package jobs/bridge).

// ErrGitHubNotFound is what an implementation returns (wrapped) when GitHub answers 404, or a search
// (FindComment, FindPullRequest) finds nothing.
var ErrGitHubNotFound = errors.New("not found on GitHub")

// Check run statuses, conclusions and button identifiers, as GitHub spells them.
const (
	CheckInProgress = "in_progress"

	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionNeutral        = "neutral"
	ConclusionActionRequired = "action_required"
	ConclusionCancelled      = "cancelled"

	ButtonApprove = "approve"
	ButtonRetry   = "retry"
	ButtonSkip    = "skip"
)

// Annotation is a message on a line range of a file in a check run.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // failure, warning or notice
	Message   string
	Title     string
}

// Button is a check run action button.
type Button struct {
	Label       string
	Description string
	Identifier  string
}

// EscalationButtons are the buttons of an escalated task's check run; a check_run requested_action
// event carries the identifier.
func EscalationButtons() []Button {
	return []Button{
		{Label: "Approve", Description: "Accept the task as it is and go on", Identifier: ButtonApprove},
		{Label: "Retry", Description: "Try the task again", Identifier: ButtonRetry},
		{Label: "Skip", Description: "Leave the task undone and go on", Identifier: ButtonSkip},
	}
}

// CheckRun is a check run to create, or the changes to one: on update, empty fields are left alone.
type CheckRun struct {
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	// Buttons: nil leaves them as they are (a conclusion other than action_required removes them).
	Buttons []Button
}

// Checks creates and updates check runs.
type Checks interface {
	CreateCheckRun(ctx context.Context, owner, repo string, cr CheckRun) (id int64, url string, err error)
	UpdateCheckRun(ctx context.Context, owner, repo string, id int64, cr CheckRun) error
}

// Comments posts and edits issue and pull request comments.
type Comments interface {
	CreateComment(ctx context.Context, owner, repo string, number int, body string) (id int64, url string, err error)
	EditComment(ctx context.Context, owner, repo string, id int64, body string) error
	// FindComment returns the oldest comment by the app itself that contains marker, or an error
	// wrapping ErrGitHubNotFound.
	FindComment(ctx context.Context, owner, repo string, number int, marker string) (id int64, url string, err error)
	AddReaction(ctx context.Context, owner, repo string, commentID int64, content string) error
}

// PullRequest is what jobs knows of a pull request.
type PullRequest struct {
	Number  int
	NodeID  string
	URL     string
	Draft   bool
	HeadRef string
	HeadSHA string
	BaseRef string
	// HeadRepo is "owner/name" of the head branch's repository.
	HeadRepo string
}

// NewPullRequest is a pull request to open.
type NewPullRequest struct {
	Title string
	Body  string
	Head  string
	Base  string
	Draft bool
}

// Pulls finds, opens and readies pull requests.
type Pulls interface {
	// FindPullRequest returns the open pull request from head into base (any base when empty), or an
	// error wrapping ErrGitHubNotFound.
	FindPullRequest(ctx context.Context, owner, repo, head, base string) (*PullRequest, error)
	// CreatePullRequest opens a pull request, or returns the open one with the same head and base.
	CreatePullRequest(ctx context.Context, owner, repo string, spec NewPullRequest) (*PullRequest, error)
	GetPullRequest(ctx context.Context, owner, repo string, number int) (*PullRequest, error)
	// MarkReady marks a draft ready for review; a pull request that is not a draft is left alone.
	MarkReady(ctx context.Context, owner, repo string, pr *PullRequest) error
}

// Issue is what jobs knows of an issue.
type Issue struct {
	Number int
	Title  string
	Body   string
	URL    string
}

// Repos reads repository content and metadata.
type Repos interface {
	GetIssue(ctx context.Context, owner, repo string, number int) (Issue, error)
	// GetFile returns a file at ref (empty: the default branch), or an error wrapping
	// ErrGitHubNotFound.
	GetFile(ctx context.Context, owner, repo, ref, path string) ([]byte, error)
	// GetRef returns the sha of "heads/<branch>", or an error wrapping ErrGitHubNotFound.
	GetRef(ctx context.Context, owner, repo, ref string) (string, error)
	// Repository returns the default branch and the clone URL.
	Repository(ctx context.Context, owner, repo string) (RepoInfo, error)
}

// RepoInfo is a repository's default branch and clone URL.
type RepoInfo struct {
	DefaultBranch string
	CloneURL      string
	HTMLURL       string
}

// GitAuth gives git a fresh credential for each operation that talks to the remote.
type GitAuth interface {
	// GitAuthHeader returns a complete http.extraheader value ("Authorization: Basic ...") carrying a
	// freshly minted installation token.
	GitAuthHeader(ctx context.Context) (string, error)
}

// GitHub is everything a job does on GitHub as one installation.
type GitHub interface {
	Checks
	Comments
	Pulls
	Repos
	GitAuth
}

// Installations hands out the GitHub client of an installation.
type Installations interface {
	Installation(ctx context.Context, id int64) (GitHub, error)
}

// InstallationsFunc adapts a function to Installations.
type InstallationsFunc func(ctx context.Context, id int64) (GitHub, error)

// Installation calls f.
func (f InstallationsFunc) Installation(ctx context.Context, id int64) (GitHub, error) {
	return f(ctx, id)
}
