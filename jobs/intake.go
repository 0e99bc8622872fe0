package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/templates"
)

// TypeIntake is one webhook delivery Akira acts on: everything that talks to GitHub before work
// is queued (permission, configuration, replies) happens in its handler, where it can be retried.
const TypeIntake = "akira:intake"

// intakeTaskType is served by Intake.HandleIntake (see taskTypes).
var intakeTaskType = taskType{Name: TypeIntake, Handle: func(h *Handler) asynq.HandlerFunc { return h.intake.HandleIntake }}

// Webhook events the intake acts on.
const (
	EventIssueComment = "issue_comment"
	EventPush         = "push"
	EventPullRequest  = "pull_request"
	EventCheckRun     = "check_run"
	// EventReview is a review submitted on a pull request; EventReviewComment a comment on its diff.
	EventReview        = "pull_request_review"
	EventReviewComment = "pull_request_review_comment"
	// The pull request's own CI: another app's suite, an Actions workflow run, a commit status.
	EventCheckSuite  = "check_suite"
	EventWorkflowRun = "workflow_run"
	EventStatus      = "status"
	// EventIssues is an issue assigned or labelled (see TriggerIntake).
	EventIssues = "issues"
)

// Issue triggers: the issue assigned to the App's bot, or the trigger label added; and the same taken
// back, which stops nothing.
const (
	TriggerAssigned   = "assigned"
	TriggerUnassigned = "unassigned"
	TriggerLabeled    = "labeled"
	TriggerUnlabeled  = "unlabeled"
)

// TriggerIntake is an issue assigned to Akira's bot or labelled, which starts a run as `/akira run` on
// it would, with the same permission rules (the actor's).
type TriggerIntake struct {
	Number int    `json:"number"`
	Action string `json:"action"`
	Actor  string `json:"actor"`
	// Label is the label added or removed.
	Label string `json:"label,omitempty"`
}

// CIIntake is a CI's report on a commit: a check suite or workflow run completed, or a commit status.
type CIIntake struct {
	HeadSHA string `json:"head_sha"`
	// Branches are the branches whose head the commit is (the suite's head branch, a status's list).
	Branches []string `json:"branches"`
	// Name and Conclusion say what was reported, for the log.
	Name       string `json:"name,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
}

// IntakePayload is one webhook delivery Akira acts on, unpacked by the webhook server from GitHub's
// payload. Exactly one of Comment, Push, PullRequest and CheckRun is set, matching Event.
type IntakePayload struct {
	Version int `json:"v"`
	// DeliveryID is X-GitHub-Delivery; GitHub keeps it on redelivery, so it makes a stable task id.
	DeliveryID     string `json:"delivery_id"`
	Event          string `json:"event"`
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	// DefaultBranch and RepoURL (the repository's web page) are the payload's; empty when it had none.
	DefaultBranch string `json:"default_branch,omitempty"`
	RepoURL       string `json:"repo_url,omitempty"`
	// Sender is the login that caused the event.
	Sender string `json:"sender"`

	Comment     *CommentIntake     `json:"comment,omitempty"`
	Push        *PushIntake        `json:"push,omitempty"`
	PullRequest *PullRequestIntake `json:"pull_request,omitempty"`
	CheckRun    *CheckRunIntake    `json:"check_run,omitempty"`
	Review      *ReviewIntake      `json:"review,omitempty"`
	CI          *CIIntake          `json:"ci,omitempty"`
	Trigger     *TriggerIntake     `json:"trigger,omitempty"`
}

// ReviewIntake is a review that requests changes, or a review comment holding `/akira fix`, on a
// same-repository pull request.
type ReviewIntake struct {
	Number   int   `json:"number"`
	ReviewID int64 `json:"review_id"`
	// CommentID is the review comment holding /akira fix (0 for a review).
	CommentID int64  `json:"comment_id,omitempty"`
	Author    string `json:"author"`
	Body      string `json:"body,omitempty"`
	Guidance  string `json:"guidance,omitempty"`
	HeadRef   string `json:"head_ref"`
}

// CommentIntake is a new comment that holds an /akira command (ParseComment did not ignore it).
type CommentIntake struct {
	ID int64 `json:"id"`
	// Number is the issue or pull request the comment is on; OnPullRequest says which.
	Number        int    `json:"number"`
	OnPullRequest bool   `json:"on_pull_request,omitempty"`
	Author        string `json:"author"`
	Body          string `json:"body"`
}

// PushIntake is a push to the default branch.
type PushIntake struct {
	Branch string `json:"branch"`
	After  string `json:"after"`
	// Changed are the paths the listed commits added or modified. GitHub lists at most 20 commits;
	// Truncated says the list may be cut, so the roadmap may have changed unseen.
	Changed   []string `json:"changed,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// PullRequestIntake is a pull request opened, reopened or pushed to, from the repository itself.
type PullRequestIntake struct {
	Number  int    `json:"number"`
	Action  string `json:"action"`
	HeadRef string `json:"head_ref"`
	HeadSHA string `json:"head_sha"`
}

// CheckRunIntake is a button pressed on one of Akira's task check runs, or "Re-run".
type CheckRunIntake struct {
	ID int64 `json:"id"`
	// RunID and TaskID come from the check run's external_id (CheckRunExternalID).
	RunID    string              `json:"run_id"`
	TaskID   string              `json:"task_id"`
	Decision runner.DecisionKind `json:"decision"`
	// Number is the pull request the check run belongs to, 0 when GitHub named none.
	Number int `json:"number,omitempty"`
	// Rerequested says the decision is a "Re-run" rather than a button.
	Rerequested bool `json:"rerequested,omitempty"`
}

// JobID is the delivery id: GitHub redelivering a webhook enqueues nothing new.
func (p IntakePayload) JobID() string { return "intake:" + p.DeliveryID }

// Validate reports what is missing from an intake payload.
func (p IntakePayload) Validate() error {
	errs := []error{checkVersion(p.Version)}
	if p.DeliveryID == "" {
		errs = append(errs, errors.New("no delivery id"))
	}
	if p.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if p.Owner == "" || p.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	set := 0
	for _, ok := range []bool{p.Comment != nil, p.Push != nil, p.PullRequest != nil, p.CheckRun != nil, p.Review != nil, p.CI != nil, p.Trigger != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set != 1:
		errs = append(errs, fmt.Errorf("%d event bodies, want 1", set))
	case p.Event == EventIssueComment && p.Comment == nil,
		p.Event == EventPush && p.Push == nil,
		p.Event == EventPullRequest && p.PullRequest == nil,
		p.Event == EventCheckRun && p.CheckRun == nil,
		(p.Event == EventReview || p.Event == EventReviewComment) && p.Review == nil,
		(p.Event == EventCheckSuite || p.Event == EventWorkflowRun || p.Event == EventStatus) && p.CI == nil,
		p.Event == EventIssues && p.Trigger == nil:
		errs = append(errs, fmt.Errorf("event %s without its body", p.Event))
	case p.Trigger != nil && (p.Trigger.Number <= 0 || p.Trigger.Actor == "" ||
		!slices.Contains([]string{TriggerAssigned, TriggerUnassigned, TriggerLabeled, TriggerUnlabeled}, p.Trigger.Action)):
		errs = append(errs, errors.New("issue trigger without an issue, an actor and an action"))
	case p.CI != nil && (len(p.CI.HeadSHA) != 40 || len(p.CI.Branches) == 0):
		errs = append(errs, errors.New("CI report without a commit and a branch"))
	case p.Comment != nil && (p.Comment.ID == 0 || p.Comment.Number <= 0):
		errs = append(errs, errors.New("comment without an id and a number"))
	case p.PullRequest != nil && (p.PullRequest.Number <= 0 || p.PullRequest.HeadRef == ""):
		errs = append(errs, errors.New("pull request without a number and a head branch"))
	case p.CheckRun != nil && (p.CheckRun.RunID == "" || p.CheckRun.TaskID == "" || p.CheckRun.Decision == ""):
		errs = append(errs, errors.New("check run without a run, a task and a decision"))
	case p.Review != nil && (p.Review.Number <= 0 || p.Review.ReviewID <= 0 || p.Review.Author == "" || p.Review.HeadRef == ""):
		errs = append(errs, errors.New("review without a pull request, a review id, an author and a head branch"))
	}
	if !slices.Contains([]string{EventIssueComment, EventPush, EventPullRequest, EventCheckRun, EventReview, EventReviewComment, EventCheckSuite, EventWorkflowRun, EventStatus, EventIssues}, p.Event) {
		errs = append(errs, fmt.Errorf("unknown event %q", p.Event))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("intake payload: %w", err)
	}
	return nil
}

// reactionAccepted acknowledges a command Akira took.
const reactionAccepted = "eyes"

// intake is one delivery being handled: its payload, its installation's GitHub client and the log
// line fields every line of it carries.
type intake struct {
	p     IntakePayload
	store *store.Store
	gh    ports.GitHub
	log   *slog.Logger
	// retried says an earlier try of this job may have posted replies already.
	retried bool
	// recovered says a recovery asked GitHub for this delivery again after Redis lost its data: only
	// an answer to an escalation is acted on, and nothing is said (see intake_recover.go). answeredAt
	// is when GitHub first delivered it.
	recovered  bool
	answeredAt time.Time
}

// HandleIntake acts on one delivery. Nothing is written to GitHub or queued before the permission check
// passes, except the refusal itself. Every failure to talk to GitHub is returned, so asynq retries the
// job with backoff; every reply is keyed by the delivery, so a retry never posts it twice.
func (h *Intake) HandleIntake(ctx context.Context, t *asynq.Task) error {
	p, err := DecodeIntakePayload(t)
	if err != nil {
		h.d.Metrics.Job(TypeIntake, metrics.ResultInvalid)
		return err
	}
	if err := h.d.Fair.Paused(ctx, p.InstallationID); err != nil {
		h.d.Metrics.Job(TypeIntake, metrics.ResultQueued)
		return err
	}
	result, err := h.intake(ctx, p)
	h.d.Metrics.Job(TypeIntake, result)
	return err
}

func (h *Intake) intake(ctx context.Context, p IntakePayload) (string, error) {
	log := h.log.With("task", TypeIntake, "delivery", p.DeliveryID, "event", p.Event,
		"installation", p.InstallationID, "repo", p.Owner+"/"+p.Repo)
	if p.CI != nil {
		// Nothing to ask GitHub yet: a CI report only matters to a run waiting for that commit.
		return h.ci.onCI(ctx, p, log)
	}
	gh, err := installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	n, _ := asynq.GetRetryCount(ctx)
	in := &intake{p: p, store: h.d.Store, gh: gh, log: log, retried: n > 0}
	if in.answeredAt, in.recovered, err = h.d.Store.Recovered(ctx, p.DeliveryID); err != nil {
		return metrics.ResultRetry, err
	}
	if in.recovered {
		in.log = log.With("recovered", true)
		if p.Comment == nil && (p.CheckRun == nil || p.CheckRun.Decision == ports.StopDecision) {
			return metrics.ResultNoop, nil // only an answer can have been lost unacted
		}
	}
	var result string
	switch {
	case p.Comment != nil:
		result, err = h.onComment(ctx, in)
	case p.Push != nil:
		result, err = h.onPush(ctx, in)
	case p.PullRequest != nil:
		result, err = h.onPullRequest(ctx, in)
	case p.CheckRun != nil:
		result, err = h.onCheckRun(ctx, in)
	case p.Review != nil:
		result, err = h.onReview(ctx, in)
	case p.Trigger != nil:
		result, err = h.onIssueTrigger(ctx, in)
	}
	if errors.Is(err, ports.ErrGitHubNotFound) {
		// The delivery names a repository, issue or installation GitHub does not know (a forged or
		// stale payload): no retry will change that.
		log.Warn("intake: GitHub does not know what the delivery names; dropped", "err", err)
		return metrics.ResultInvalid, fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	if err != nil {
		log.Warn("intake: failed, will retry", "err", err)
		return metrics.ResultRetry, err
	}
	log.Info("intake: done", "result", result)
	return result, nil
}

// access is the answer to "may this user command Akira here?".
type access struct {
	allowed bool
	// level is the user's permission on the repository.
	level string
	// cfg is the repository configuration when it had to be read (allowlist), else nil.
	cfg *config.Repo
}

// writeLevels may command Akira whatever the repository's configuration says.
var writeLevels = []string{ports.PermAdmin, ports.PermMaintain, ports.PermWrite}

// authorize allows write, maintain and admin, then the repository's allowlist. Errors are failures to
// ask GitHub; a broken configuration only means the allowlist grants nothing.
func (h *Intake) authorize(ctx context.Context, in *intake, login string) (access, error) {
	level, err := in.gh.Permission(ctx, in.p.Owner, in.p.Repo, login)
	if err != nil {
		return access{}, fmt.Errorf("jobs: permission of %s: %w", login, err)
	}
	if slices.Contains(writeLevels, strings.ToLower(level)) {
		return access{allowed: true, level: level}, nil
	}
	rc, err := h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := asRepoConfigError(err); bad {
		in.log.Warn("intake: allowlist unavailable", "err", err)
		return access{level: level}, nil
	}
	if err != nil {
		return access{}, err
	}
	return access{allowed: rc.Allowed(login), level: level, cfg: &rc}, nil
}

// react acknowledges a comment. A failure is logged only: the work is queued, and retrying the whole
// intake for an emoji is not worth it.
func (in *intake) react(ctx context.Context, commentID int64) {
	if err := in.gh.AddReaction(ctx, in.p.Owner, in.p.Repo, commentID, reactionAccepted); err != nil {
		in.log.Warn("intake: could not react to the command", "comment", commentID, "err", err)
	}
}

// reply posts an answer on the issue or pull request, once per delivery.
func (in *intake) reply(ctx context.Context, number int, body string) error {
	return replyOnce(ctx, in.store, in.gh, in.p.Owner, in.p.Repo, number, "delivery-"+in.p.DeliveryID, body, in.retried)
}

// enqueued treats a duplicate as success: the work is queued already.
func enqueued(err error) error {
	if errors.Is(err, ErrDuplicate) {
		return nil
	}
	return err
}

func (h *Intake) onComment(ctx context.Context, in *intake) (string, error) {
	c := in.p.Comment
	res := command.ParseComment(c.Body)
	if _, ok := res.(command.Ignore); ok {
		return metrics.ResultNoop, nil
	}
	if in.recovered {
		// Replayed after Redis lost its data: only an answer can have been lost unacted.
		if cmd, ok := res.(command.Command); !ok {
			return metrics.ResultNoop, nil
		} else if _, ok := cmd.Decision(); !ok {
			return metrics.ResultNoop, nil
		}
	}
	acc, err := h.authorize(ctx, in, c.Author)
	if err != nil {
		return "", err
	}
	if !acc.allowed && in.recovered {
		return metrics.ResultRefused, nil // refused when it first came
	}
	if !acc.allowed {
		if err := in.reply(ctx, c.Number, refusalText(c.Author, commandText(res), acc.level)); err != nil {
			return "", err
		}
		return metrics.ResultRefused, nil
	}
	switch r := res.(type) {
	case command.Reply:
		if err := in.reply(ctx, c.Number, r.Text); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	case command.Command:
		if d, ok := r.Decision(); ok {
			return h.commandDecision(ctx, in, d, r.Guidance)
		}
		if handle, ok := commandHandlers[r.Name]; ok {
			return handle(h, ctx, in, acc, r)
		}
	}
	return metrics.ResultNoop, nil
}

// commandHandler runs a command whose author may run it, on the issue or pull request of in.
type commandHandler func(h *Intake, ctx context.Context, in *intake, acc access, cmd command.Command) (string, error)

// commandHandlers are the handlers of the commands the intake runs, one each. The four decisions go
// to commandDecision before this list is read, and help is answered by the parser. A new command is
// a constant and a pattern in jobs/command and a line here.
var commandHandlers = map[command.CommandName]commandHandler{
	command.CmdRun: (*Intake).commandRun,
	command.CmdPlan: func(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
		return h.commandPlan(ctx, in, cmd)
	},
	command.CmdFix: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		// /akira fix acts in a review comment (the review intake); in a conversation comment the
		// reply says where it goes.
		if err := in.reply(ctx, in.p.Comment.Number, commandElsewhereText(command.CmdFix)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	},
	command.CmdStop: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		return h.commandStop(ctx, in)
	},
	command.CmdPause:  pauseCommand,
	command.CmdResume: pauseCommand,
	command.CmdRollback: func(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
		return h.commandRollback(ctx, in, cmd)
	},
	command.CmdRemember: memoryCommand,
	command.CmdForget:   memoryCommand,
	command.CmdStatus: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		return h.commandStatus(ctx, in)
	},
}

func pauseCommand(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
	return h.commandPause(ctx, in, cmd)
}

func memoryCommand(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
	return h.commandMemory(ctx, in, cmd)
}

func (h *Intake) commandStatus(ctx context.Context, in *intake) (string, error) {
	c := in.p.Comment
	text, err := StatusText(ctx, h.d.Store.Records, in.p.Owner, in.p.Repo, c.Number)
	if err != nil {
		return "", err
	}
	if err := in.reply(ctx, c.Number, text); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultReplied, nil
}

// commandStop asks the job working on the run of this issue or pull request to stop it.
func (h *Intake) commandStop(ctx context.Context, in *intake) (string, error) {
	c := in.p.Comment
	run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, c.Number)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	data := templates.StopReply{}
	if run != nil {
		data.RunID, data.State = run.ID, run.Status.Label()
		if _, data.Asked, err = h.d.Store.RequestStop(ctx, run.ID, c.Author, false); err != nil {
			return "", err
		}
	}
	if err := in.reply(ctx, c.Number, render("stop_reply", data, "`/akira stop`: run "+data.RunID+" is "+data.State+".")); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	if data.Asked {
		return metrics.ResultAccepted, nil
	}
	return metrics.ResultReplied, nil
}

// commandPause pauses (/akira pause [--now]) or resumes (/akira resume) the run of the issue or pull
// request.
func (h *Intake) commandPause(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.p.Comment
	run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, c.Number)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	data := templates.PauseReply{Now: cmd.Now, Resume: cmd.Name == command.CmdResume}
	if run != nil {
		data.RunID, data.State = run.ID, run.Status.Label()
		if data.Resume {
			run, data.Asked, err = h.d.Store.Resume(ctx, run.ID, c.Author)
		} else {
			run, data.Asked, err = h.d.Store.RequestPause(ctx, run.ID, c.Author, cmd.Now)
		}
		if err != nil {
			return "", err
		}
		if data.Asked && len(run.Outbox) > 0 {
			// A resume queues the next job: the publisher performs it (the relay repairs a crash here).
			if _, err := h.pub.publish(ctx, in.gh, run, in.log); err != nil {
				return "", err
			}
		}
	}
	if err := in.reply(ctx, c.Number, render("pause_reply", data, "`/akira "+string(cmd.Name)+"`: run "+data.RunID+" is "+data.State+".")); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	if data.Asked {
		return metrics.ResultAccepted, nil
	}
	return metrics.ResultReplied, nil
}

// commandMemory adds (/akira remember) or removes (/akira forget) a lesson of the repository.
func (h *Intake) commandMemory(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.p.Comment
	mem := h.d.Store.Lessons(in.p.InstallationID, in.p.Owner, in.p.Repo)
	data := templates.MemoryReply{ID: cmd.TaskID, Remembered: cmd.Name == command.CmdRemember}
	if cmd.Name == command.CmdRemember {
		// The id comes from the comment: a retried or redelivered command keeps one lesson.
		sum := sha256.Sum256([]byte("remember:" + strconv.FormatInt(c.ID, 10)))
		l, err := mem.Add(ctx, lessons.Lesson{ID: "L" + hex.EncodeToString(sum[:4]), Text: cmd.Guidance, Origin: lessons.OriginPerson, Source: "note by @" + c.Author, Author: c.Author})
		if err != nil {
			return "", err
		}
		data.ID = l.ID
	} else {
		found, err := mem.Forget(ctx, cmd.TaskID)
		if err != nil {
			return "", err
		}
		data.Found = found
	}
	if err := in.reply(ctx, c.Number, render("memory_reply", data, "`/akira "+string(cmd.Name)+"`: "+data.ID)); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultReplied, nil
}

// commandRollback hands /akira rollback to a job, which takes the branch's lock.
func (h *Intake) commandRollback(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.p.Comment
	err := h.d.Enqueuer.EnqueueRollback(ctx, RollbackPayload{DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID,
		Owner: in.p.Owner, Repo: in.p.Repo, Number: c.Number, CommentID: c.ID, TaskID: cmd.TaskID, Retry: cmd.Retry,
		Guidance: cmd.Guidance, Sender: c.Author})
	if err := enqueued(err); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandPlan(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.p.Comment
	if c.OnPullRequest {
		if err := in.reply(ctx, c.Number, commandElsewhereText(command.CmdPlan)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	err := h.d.Enqueuer.EnqueuePlan(ctx, PlanPayload{DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID,
		Owner: in.p.Owner, Repo: in.p.Repo, DefaultBranch: in.p.DefaultBranch, Number: c.Number, CommentID: c.ID,
		Guidance: cmd.Guidance, Sender: c.Author})
	if err := enqueued(err); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandDecision(ctx context.Context, in *intake, d runner.DecisionKind, guidance string) (string, error) {
	c := in.p.Comment
	err := h.d.Enqueuer.EnqueueResume(ctx, ResumePayload{
		DeliveryID: in.p.DeliveryID, CommentID: c.ID, InstallationID: in.p.InstallationID, Owner: in.p.Owner,
		Repo: in.p.Repo, Number: c.Number, Decision: d, Guidance: guidance, Sender: c.Author,
		Recovered: in.recovered, AnsweredAt: in.answeredAt,
	})
	if err := enqueued(err); err != nil {
		return "", err
	}
	if !in.recovered {
		in.react(ctx, c.ID)
	}
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandRun(ctx context.Context, in *intake, acc access, cmd command.Command) (string, error) {
	c := in.p.Comment
	rc, err := h.configOf(ctx, in, acc)
	if ce, bad := asRepoConfigError(err); bad {
		if err := in.reply(ctx, c.Number, configErrorText(ce, "start the run", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	if !rc.Triggers.IssueComment {
		return metrics.ResultNoop, nil
	}
	run := RunPayload{
		DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID, Owner: in.p.Owner, Repo: in.p.Repo,
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerIssue, Number: c.Number, CommentID: c.ID, Path: cmd.Path,
		TrustPlan: cmd.TrustPlan, BudgetUSD: cmd.BudgetUSD, Confirm: cmd.Confirm, AllowRedBase: cmd.AllowRedBase,
		Sender: c.Author,
	}
	if plan, line, ok := roadmap.InlinePlan(c.Body, "/akira run"); ok && !c.OnPullRequest && cmd.Path == "" {
		// A plan pasted under the command runs like an issue's checklist; one that cannot be read is
		// answered now, before anything is queued.
		if _, err := roadmap.ParseMarkdown("comment", []byte(plan)); err != nil {
			problem := inlinePlanProblem(err, line-1)
			if err := in.reply(ctx, c.Number, render("inline_plan_error", templates.InlinePlanError{Problem: problem},
				"Akira did not start: the plan under your /akira run cannot be read: "+problem)); err != nil {
				return "", err
			}
			return metrics.ResultReplied, nil
		}
		run.Plan = command.CapUserText(plan)
	}
	if c.OnPullRequest {
		pr, err := in.gh.GetPullRequest(ctx, in.p.Owner, in.p.Repo, c.Number)
		if err != nil {
			return "", fmt.Errorf("jobs: pull request #%d: %w", c.Number, err)
		}
		if isFork(pr.HeadRepo, in.p.Owner, in.p.Repo) {
			if err := in.reply(ctx, c.Number, forkRefusalText()); err != nil {
				return "", err
			}
			return metrics.ResultRefused, nil
		}
		run.Trigger, run.Branch, run.HeadSHA = lifecycle.TriggerPullRequest, pr.HeadRef, pr.HeadSHA
	}
	if err := enqueued(h.d.Enqueuer.EnqueueRun(ctx, run)); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

// configOf is the repository configuration, reusing what authorize read for the allowlist.
func (h *Intake) configOf(ctx context.Context, in *intake, acc access) (config.Repo, error) {
	if acc.cfg != nil {
		return *acc.cfg, nil
	}
	return h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
}

// isFork reports whether a pull request's head lives outside the repository. A deleted head repository
// counts as a fork: nothing proves it was this repository.
func isFork(headRepo, owner, repo string) bool {
	return headRepo == "" || !strings.EqualFold(headRepo, owner+"/"+repo)
}

func (h *Intake) onPush(ctx context.Context, in *intake) (string, error) {
	push := in.p.Push
	rc, err := h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := asRepoConfigError(err); bad {
		// Nobody to answer on a push; the next command or pull request reports it.
		in.log.Warn("intake: invalid repository configuration", "err", err)
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(push.Branch, rc.BranchPrefix), !rc.Triggers.Push:
		return metrics.ResultNoop, nil
	case !push.Truncated && !slices.Contains(push.Changed, rc.Roadmap):
		return metrics.ResultNoop, nil
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, RunPayload{
		DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID, Owner: in.p.Owner, Repo: in.p.Repo,
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerPush, HeadSHA: push.After, Sender: in.p.Sender,
	})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

func (h *Intake) onPullRequest(ctx context.Context, in *intake) (string, error) {
	pr := in.p.PullRequest
	rc, err := h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if ce, bad := asRepoConfigError(err); bad {
		// Said once when the pull request opens, not on every push to it.
		if pr.Action == "synchronize" {
			return metrics.ResultNoop, nil
		}
		if err := in.reply(ctx, pr.Number, configErrorText(ce, "start a run for this pull request", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(pr.HeadRef, rc.BranchPrefix) || !rc.Triggers.PullRequest {
		return metrics.ResultNoop, nil
	}
	files, err := in.gh.PullRequestFiles(ctx, in.p.Owner, in.p.Repo, pr.Number)
	if err != nil {
		return "", fmt.Errorf("jobs: files of pull request #%d: %w", pr.Number, err)
	}
	if !slices.ContainsFunc(files, func(f string) bool { return f == rc.Roadmap || config.MatchAny(rc.Specs, f) }) {
		return metrics.ResultNoop, nil
	}
	// Pushing to a branch of the repository needs write access, but reopening a pull request needs only
	// triage: the person who set it going must be allowed to start runs.
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		return metrics.ResultRefused, nil
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, RunPayload{
		DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID, Owner: in.p.Owner, Repo: in.p.Repo,
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerPullRequest, Number: pr.Number, Branch: pr.HeadRef,
		HeadSHA: pr.HeadSHA, Sender: in.p.Sender,
	})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

func (h *Intake) onCheckRun(ctx context.Context, in *intake) (string, error) {
	cr := in.p.CheckRun
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed && in.recovered {
		return metrics.ResultRefused, nil // refused when it first came
	}
	if !acc.allowed {
		if cr.Number != 0 {
			if err := in.reply(ctx, cr.Number, refusalText(in.p.Sender, string(cr.Decision), acc.level)); err != nil {
				return "", err
			}
		}
		return metrics.ResultRefused, nil
	}
	if cr.Decision == ports.StopDecision {
		_, asked, err := h.d.Store.RequestStop(ctx, cr.RunID, in.p.Sender, false)
		if errors.Is(err, store.ErrNotFound) {
			return metrics.ResultNoop, nil
		}
		if err != nil {
			return "", err
		}
		in.log.Info("intake: Stop pressed", "run", cr.RunID, "by", in.p.Sender, "asked", asked)
		return metrics.ResultAccepted, nil
	}
	err = h.d.Enqueuer.EnqueueResume(ctx, ResumePayload{
		DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID, Owner: in.p.Owner, Repo: in.p.Repo,
		Number: cr.Number, Decision: cr.Decision, Sender: in.p.Sender, RunID: cr.RunID, TaskID: cr.TaskID,
		ByButton: true, Recovered: in.recovered, AnsweredAt: in.answeredAt,
	})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

// onReview starts a follow-up task for a review: only from someone who may command Akira, and only on a
// pull request Akira opened or runs on. Anything else is left alone without a word: reviews are
// everyday traffic, not commands.
func (h *Intake) onReview(ctx context.Context, in *intake) (string, error) {
	rv := in.p.Review
	acc, err := h.authorize(ctx, in, rv.Author)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		in.log.Info("intake: review by someone who may not command Akira", "author", rv.Author, "permission", acc.level)
		return metrics.ResultRefused, nil
	}
	rc, err := h.configOf(ctx, in, acc)
	if _, bad := asRepoConfigError(err); bad {
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	if _, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, rv.Number); errors.Is(err, store.ErrNotFound) {
		if !strings.HasPrefix(rv.HeadRef, rc.BranchPrefix) {
			return metrics.ResultNoop, nil // not a pull request Akira works on
		}
	} else if err != nil {
		return "", err
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, RunPayload{
		DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID, Owner: in.p.Owner, Repo: in.p.Repo,
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerReview, Number: rv.Number, Branch: rv.HeadRef,
		Review: &lifecycle.ReviewRequest{ID: rv.ReviewID, By: rv.Author, Body: command.CapUserText(rv.Body), Guidance: rv.Guidance, CommentID: rv.CommentID},
		Sender: rv.Author,
	})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

// inlinePlanProblem says what is wrong with a plan pasted in a comment, with the lines of the comment
// (the plan starts offset lines into it).
func inlinePlanProblem(err error, offset int) string {
	var list roadmap.Errors
	if !errors.As(err, &list) {
		var one *roadmap.Error
		if !errors.As(err, &one) {
			return err.Error()
		}
		list = roadmap.Errors{one}
	}
	var out []string
	for _, e := range list {
		c := *e
		c.File = "comment"
		if c.Line > 0 {
			c.Line += offset
		}
		out = append(out, c.Error())
	}
	return strings.Join(out, "; ")
}

// onIssueTrigger starts a run when a writer assigns the issue to Akira's bot or adds the repository's
// trigger label, exactly as `/akira run` on the issue would (the delivery makes it once); taking the
// assignment or the label back stops nothing, and the reply says how to.
func (h *Intake) onIssueTrigger(ctx context.Context, in *intake) (string, error) {
	tr := in.p.Trigger
	acc, err := h.authorize(ctx, in, tr.Actor)
	if err != nil {
		return "", err
	}
	if !acc.allowed {
		if tr.Action == TriggerUnassigned || tr.Action == TriggerUnlabeled {
			return metrics.ResultNoop, nil
		}
		if err := in.reply(ctx, tr.Number, refusalText(tr.Actor, string(command.CmdRun), acc.level)); err != nil {
			return "", err
		}
		return metrics.ResultRefused, nil
	}
	rc, err := h.configOf(ctx, in, acc)
	if ce, bad := asRepoConfigError(err); bad {
		if err := in.reply(ctx, tr.Number, configErrorText(ce, "start the run", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	label := rc.Triggers.Label
	if label == "" {
		label = config.DefaultTriggerLabel
	}
	labelled := tr.Action == TriggerLabeled || tr.Action == TriggerUnlabeled
	if !rc.Triggers.IssueComment || (labelled && !strings.EqualFold(tr.Label, label)) {
		return metrics.ResultNoop, nil
	}
	if tr.Action == TriggerUnassigned || tr.Action == TriggerUnlabeled {
		run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, tr.Number)
		if errors.Is(err, store.ErrNotFound) || (err == nil && run.Status.Terminal()) {
			return metrics.ResultNoop, nil
		}
		if err != nil {
			return "", err
		}
		what := "Unassigning Akira"
		if labelled {
			what = "Removing the `" + label + "` label"
		}
		text := render("trigger_removed", templates.TriggerRemoved{What: what, RunID: run.ID, SummaryURL: run.SummaryURL},
			what+" does not stop run "+run.ID+"; reply `/akira stop` to stop it.")
		if err := in.reply(ctx, tr.Number, text); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	err = enqueued(h.d.Enqueuer.EnqueueRun(ctx, RunPayload{DeliveryID: in.p.DeliveryID, InstallationID: in.p.InstallationID,
		Owner: in.p.Owner, Repo: in.p.Repo, DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerIssue, Number: tr.Number, Sender: tr.Actor}))
	if err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

// NewIntakeTask builds a TypeIntake task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewIntakeTask(p IntakePayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.newTask(TypeIntake, p, intakeTimeout, intakeMaxRetry)
}

// DecodeIntakePayload reads a TypeIntake payload; see decode.
func DecodeIntakePayload(t *asynq.Task) (IntakePayload, error) {
	var p IntakePayload
	return p, decode(t, TypeIntake, &p)
}

// EnqueueIntake enqueues a TypeIntake task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueIntake(ctx context.Context, p IntakePayload) error {
	t, err := e.opts.NewIntakeTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
