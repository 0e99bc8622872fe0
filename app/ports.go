package app

import (
	"context"
	"errors"

	"github.com/akira-bot/akira/runner/config"
)

// Enqueuer takes the work the webhook intake accepts. The jobs layer implements it over asynq, using
// DeliveryID (or CommentID) as the task id so that a redelivered webhook enqueues once.
type Enqueuer interface {
	EnqueueRun(ctx context.Context, r RunRequest) error
	EnqueueResume(ctx context.Context, r ResumeRequest) error
	// Status is the Markdown answer to /akira status for an issue or pull request.
	Status(ctx context.Context, owner, repo string, number int) (string, error)
}

// ErrDuplicate is what an Enqueuer returns (possibly wrapped) when the task already exists, e.g. for a
// redelivered webhook. The intake answers it like a success: the work is queued.
var ErrDuplicate = errors.New("app: duplicate task")

// GitHub is what the intake asks of GitHub before it accepts work. Every call is made with the token of the
// installation that sent the webhook.
type GitHub interface {
	// PermissionLevel is the user's role on the repository: admin, maintain, write, triage, read or none
	// (GET /repos/{owner}/{repo}/collaborators/{user}/permission, role_name). A user GitHub does not know is
	// "none", not an error.
	PermissionLevel(ctx context.Context, installationID int64, owner, repo, user string) (string, error)
	// RepoConfig is the repository's .github/akira.yml read from the default branch (never from a pull
	// request's head), or the defaults when there is none. defaultBranch may be empty when unknown. A file
	// that cannot be used is a *gh.ConfigError, answered on the issue; other errors are failures to ask.
	RepoConfig(ctx context.Context, installationID int64, owner, repo, defaultBranch string) (config.Repo, error)
	// PullRequest describes a pull request's head, to tell a fork's from the repository's own.
	PullRequest(ctx context.Context, installationID int64, owner, repo string, number int) (PullRequestInfo, error)
	// PullRequestFiles lists the paths a pull request changes.
	PullRequestFiles(ctx context.Context, installationID int64, owner, repo string, number int) ([]string, error)
	// CreateComment posts a comment on an issue or pull request.
	CreateComment(ctx context.Context, installationID int64, owner, repo string, number int, body string) error
	// AddReaction reacts to an issue comment; content is GitHub's name for it, e.g. "eyes".
	AddReaction(ctx context.Context, installationID int64, owner, repo string, commentID int64, content string) error
}

// PullRequestInfo is the part of a pull request the intake looks at.
type PullRequestInfo struct {
	Number int
	// HeadRepo and BaseRepo are "owner/name". HeadRepo is empty when the head repository was deleted.
	HeadRepo, BaseRepo string
	HeadRef, HeadSHA   string
}

// Trigger is what started a run.
type Trigger string

// Triggers of a run.
const (
	TriggerIssueComment Trigger = "issue_comment"
	TriggerPush         Trigger = "push"
	TriggerPullRequest  Trigger = "pull_request"
)

// RunRequest asks for a run to start (or to pick up new tasks on its branch).
type RunRequest struct {
	// DeliveryID is X-GitHub-Delivery; GitHub keeps it on redelivery, so it makes a stable task id.
	DeliveryID     string
	InstallationID int64
	Owner, Repo    string
	DefaultBranch  string
	Trigger        Trigger
	// IssueNumber is the issue or pull request a /akira run comment was posted on.
	IssueNumber int
	// CommentID is the /akira run comment.
	CommentID int64
	// PRNumber is the pull request whose branch receives the checkpoints (pull_request, or /akira run on
	// a pull request of this repository).
	PRNumber int
	// Branch is the pull request's head branch, or the default branch for a push.
	Branch string
	// HeadSHA is the commit the event is about: the push's after, the pull request's head.
	HeadSHA string
	// Path replaces the repository's roadmap (/akira run path).
	Path   string
	Sender string
}

// Decision is a human's answer to an escalation.
type Decision string

// Decisions, from comments and check-run buttons.
const (
	DecisionApprove Decision = "approve"
	DecisionRetry   Decision = "retry"
	DecisionSkip    Decision = "skip"
	DecisionAbort   Decision = "abort"
)

// ResumeSource says where a decision came from.
type ResumeSource string

// Sources of a decision.
const (
	SourceComment             ResumeSource = "comment"
	SourceCheckRunAction      ResumeSource = "check_run_action"
	SourceCheckRunRerequested ResumeSource = "check_run_rerequested"
)

// ResumeRequest carries a decision to a parked run.
type ResumeRequest struct {
	DeliveryID string
	Source     ResumeSource
	// CommentID is the comment that holds the decision (comments only); it makes a stable task id.
	CommentID int64
	// CheckRunID is the check run whose button was pressed (check runs only).
	CheckRunID     int64
	InstallationID int64
	Owner, Repo    string
	// Number is the issue or pull request of the run; 0 when a check run is not attached to one.
	Number   int
	Decision Decision
	// Guidance is the text after /akira retry.
	Guidance string
	Sender   string
	// RunID and TaskID come from the check run's external_id "<run id>/<task id>" (check runs only).
	RunID, TaskID string
}
