// Package ports holds the GitHub operations the flows of jobs need, declared in Akira's own types
// (consumer-owned) and implemented by app/gh.
package ports

import (
	"context"
	"errors"
	"time"

	"github.com/akira-bot/akira/runner"
)

// The GitHub operations jobs needs, declared here (consumer-owned) in this package's own types and
// implemented by app/gh. Each is small; a function takes the one or two it uses, so a test fake only
// needs what the code under test calls.

// ErrGitHubNotFound is what an implementation returns (wrapped) when GitHub answers 404, or a search
// (FindComment, FindPullRequest) finds nothing.
var ErrGitHubNotFound = errors.New("not found on GitHub")

// Check run statuses and conclusions, as GitHub spells them.
const (
	CheckInProgress = "in_progress"

	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionNeutral        = "neutral"
	ConclusionActionRequired = "action_required"
	ConclusionCancelled      = "cancelled"
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

// Button is a check run action button. Its identifier is the decision it stands for, so a
// check_run requested_action event names a runner.DecisionKind.
type Button struct {
	Label       string
	Description string
	Decision    runner.DecisionKind
}

// EscalationButtons are the buttons of an escalated task's check run.
func EscalationButtons() []Button {
	return []Button{
		{Label: "Approve", Description: "Accept the task as it is and go on", Decision: runner.DecisionApprove},
		{Label: "Retry", Description: "Try the task again", Decision: runner.DecisionRetry},
		{Label: "Skip", Description: "Leave the task undone and go on", Decision: runner.DecisionSkip},
	}
}

// StopDecision is the identifier of the "Stop" button of a task's check run while it is in progress.
const StopDecision runner.DecisionKind = "stop"

// RunningButtons are the buttons of a task's check run while the task is in progress.
func RunningButtons() []Button {
	return []Button{{Label: "Stop", Description: "Stop the run at its last checkpoint", Decision: StopDecision}}
}

// RerunDecision is what "Re-run" on a task's check run decides.
const RerunDecision = runner.DecisionRetry

// ButtonDecision is the decision of a check-run button identifier; ok is false for an identifier that
// is not one of Akira's buttons.
func ButtonDecision(identifier string) (runner.DecisionKind, bool) {
	for _, b := range append(EscalationButtons(), RunningButtons()...) {
		if string(b.Decision) == identifier {
			return b.Decision, true
		}
	}
	return "", false
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
	// MayExist says an earlier try of this create may have reached GitHub (a job died before the id
	// was stored): the App's check run with this ExternalID, name and head is looked for and updated
	// instead of created. Without it, create is one request.
	MayExist bool
}

// CheckRunExternalID is the external_id of a task's check run, "<run id>/<task id>": a button pressed
// on it names the run and the task.
func CheckRunExternalID(runID, taskID string) string { return runID + "/" + taskID }

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
	// CommentBody returns a comment's text, or an error wrapping ErrGitHubNotFound.
	CommentBody(ctx context.Context, owner, repo string, id int64) (string, error)
}

// ThreadComment is one comment of an issue's or pull request's conversation.
type ThreadComment struct {
	ID     int64
	Author string
	// ByApp says Akira itself wrote it (its bot user): only such comments carry markers it trusts.
	ByApp     bool
	Body      string
	CreatedAt time.Time
}

// Threads reads a conversation back: after Redis lost a parked run, which answer came after its
// escalation is on GitHub only.
type Threads interface {
	// Thread returns every comment of the issue or pull request, oldest first.
	Thread(ctx context.Context, owner, repo string, number int) ([]ThreadComment, error)
}

// Reactions acknowledges a comment with a reaction; content is GitHub's name for it, e.g. "eyes".
type Reactions interface {
	AddReaction(ctx context.Context, owner, repo string, commentID int64, content string) error
}

// Permission levels a Permissions port reports, from most to least access.
const (
	PermAdmin    = "admin"
	PermMaintain = "maintain"
	PermWrite    = "write"
	PermTriage   = "triage"
	PermRead     = "read"
	PermNone     = "none"
)

// Permissions tells a user's role on a repository.
type Permissions interface {
	// Permission is admin, maintain, write, triage, read or none (role_name of
	// GET /repos/{owner}/{repo}/collaborators/{user}/permission); a user GitHub does not know is "none".
	Permission(ctx context.Context, owner, repo, user string) (string, error)
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
	// HeadRepo is "owner/name" of the head branch's repository; empty when it was deleted.
	HeadRepo string
	// Closed is true for a closed pull request, Merged for a merged one (closed too).
	Closed, Merged bool
	// MergeableState is GitHub's word on the pull request's merge when it was read by number
	// (MergeStateDirty, MergeStateBehind, clean, blocked, ...; "unknown" while GitHub computes it, ""
	// when the listing it came from does not say).
	MergeableState string
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
	// PullRequestFiles lists the paths a pull request changes.
	PullRequestFiles(ctx context.Context, owner, repo string, number int) ([]string, error)
	// MarkReady marks a draft ready for review; a pull request that is not a draft is left alone.
	MarkReady(ctx context.Context, owner, repo string, pr *PullRequest) error
	// ClosePullRequest closes a pull request; one already closed stays closed.
	ClosePullRequest(ctx context.Context, owner, repo string, number int) error
}

// Issue is what jobs knows of an issue.
type Issue struct {
	Number int
	Title  string
	Body   string
	URL    string
	// Author wrote the issue; only they and people with write access can edit its body.
	Author string
}

// BranchCommit is a commit of a branch and its message.
type BranchCommit struct {
	SHA     string
	Message string
}

// RepoInfo is a repository's default branch, clone URL and web page.
type RepoInfo struct {
	DefaultBranch string
	CloneURL      string
	HTMLURL       string
}

// Repos reads repository content and metadata.
type Repos interface {
	GetIssue(ctx context.Context, owner, repo string, number int) (Issue, error)
	// GetFile returns a file at ref (empty: the default branch), or an error wrapping
	// ErrGitHubNotFound.
	GetFile(ctx context.Context, owner, repo, ref, path string) ([]byte, error)
	// GetRef returns the sha of "heads/<branch>", or an error wrapping ErrGitHubNotFound.
	GetRef(ctx context.Context, owner, repo, ref string) (string, error)
	// BranchCommits returns the commits head has over base, oldest first (GitHub's compare lists at
	// most 250), or an error wrapping ErrGitHubNotFound when either is missing.
	BranchCommits(ctx context.Context, owner, repo, base, head string) ([]BranchCommit, error)
	// Repository returns the default branch, the clone URL and the web page.
	Repository(ctx context.Context, owner, repo string) (RepoInfo, error)
}

// Refs creates branches.
type Refs interface {
	// CreateRef creates ref ("heads/<branch>") at sha, a commit of the repository or of a fork's
	// pull request into it (GitHub keeps those as refs/pull/<n>/head); an existing ref is an error.
	CreateRef(ctx context.Context, owner, repo, ref, sha string) error
}

// ReviewComment is a comment of a review on a line of a pull request's diff.
type ReviewComment struct {
	ID       int64
	Path     string
	Line     int
	DiffHunk string
	Body     string
	User     string
	// InReplyTo is the thread's first comment when this one is a reply.
	InReplyTo int64
}

// Reviews reads a review's comments and answers it.
type Reviews interface {
	// ReviewComments lists the comments of one review of a pull request.
	ReviewComments(ctx context.Context, owner, repo string, number int, reviewID int64) ([]ReviewComment, error)
	// ReplyToReviewComment answers in the thread of a review comment.
	ReplyToReviewComment(ctx context.Context, owner, repo string, number int, commentID int64, body string) error
	// RequestReview asks the people for a review of the pull request again.
	RequestReview(ctx context.Context, owner, repo string, number int, logins []string) error
}

// GitAuth gives git a fresh credential for each operation that talks to the remote.
type GitAuth interface {
	// GitAuthHeader returns a complete http.extraheader value ("Authorization: Basic ...") carrying a
	// freshly minted installation token.
	GitAuthHeader(ctx context.Context) (string, error)
}

// GitHub is everything the jobs do on GitHub as one installation: what an installation client
// provides, and what Installations hands out. Functions take the parts they use.
type GitHub interface {
	Checks
	Comments
	Threads
	Reactions
	Permissions
	Pulls
	Repos
	Refs
	Reviews
	GitAuth
	CI
	SignedCommits
	Grants
	Bases
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

// CICheck is one check on a commit that is not Akira's own: a check run of another app (each job of a
// GitHub Actions workflow is one) or a commit status.
type CICheck struct {
	// Name is the check run's name or the status's context.
	Name string `json:"name"`
	// Source is CISourceCheckRun or CISourceStatus.
	Source string `json:"source"`
	// App is the slug of the app that reported a check run (CIAppActions for GitHub Actions).
	App string `json:"app,omitempty"`
	// ID is the check run's id (for GitHub Actions, the job's).
	ID int64 `json:"id,omitempty"`
	// Status is queued, in_progress or completed (a pending commit status is in_progress).
	Status string `json:"status"`
	// Conclusion of a completed check: GitHub's check-run conclusions, or a status's success, failure
	// or error.
	Conclusion string `json:"conclusion,omitempty"`
	URL        string `json:"url,omitempty"`
	// Title and Summary are a check run's output (a status's description is its Summary).
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// Sources and apps of CI checks.
const (
	CISourceCheckRun = "check_run"
	CISourceStatus   = "status"
	CIAppActions     = "github-actions"
)

// Done reports whether the check has finished.
func (c CICheck) Done() bool { return c.Status == "completed" }

// Failed reports whether the check finished with a conclusion that keeps a pull request red.
func (c CICheck) Failed() bool {
	switch c.Conclusion {
	case "failure", "error", "timed_out", "cancelled", "action_required", "startup_failure", "stale":
		return c.Done()
	}
	return false
}

// CI reads what the pull request's own CI reports on a commit, and asks it to try again.
type CI interface {
	// CIChecks lists a commit's checks that are not Akira's own: every other app's check runs (the
	// latest of each name) and the commit statuses (the latest of each context).
	CIChecks(ctx context.Context, owner, repo, sha string) ([]CICheck, error)
	// CIEvidence is what explains a failed check, untrimmed and unmasked: the tail of a GitHub Actions
	// job's log, else a check run's output and annotations, else a status's description.
	CIEvidence(ctx context.Context, owner, repo string, c CICheck) (string, error)
	// RerunFailedJobs re-runs the failed jobs of the workflow run a GitHub Actions job belongs to.
	RerunFailedJobs(ctx context.Context, owner, repo string, jobID int64) error
	// RequiredChecks are the checks the branch's protection requires, when the App may read it (nil
	// otherwise).
	RequiredChecks(ctx context.Context, owner, repo, branch string) ([]string, error)
	// WorkflowFiles lists the GitHub Actions workflows at ref: the .yml and .yaml files directly in
	// .github/workflows (none when there is no such directory).
	WorkflowFiles(ctx context.Context, owner, repo, ref string) ([]string, error)
}
