package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/runner/config"
)

// reactionAccepted acknowledges a command Akira took.
const reactionAccepted = "eyes"

// maxPushCommits is how many commits GitHub lists in a push payload; a longer push is cut there.
const maxPushCommits = 20

func (s *server) route(ctx context.Context, d *delivery) outcome {
	switch d.event {
	case "ping":
		return outcome{status: http.StatusOK, result: resultAcknowledged, reason: "pong"}
	case "installation", "installation_repositories":
		return outcome{status: http.StatusOK, result: resultAcknowledged, reason: d.event + " " + d.env.Action}
	case "issue_comment":
		var ev issueCommentEvent
		if err := json.Unmarshal(d.payload, &ev); err != nil {
			return rejected(http.StatusBadRequest, "malformed issue_comment payload")
		}
		return s.onIssueComment(ctx, d, &ev)
	case "push":
		var ev pushEvent
		if err := json.Unmarshal(d.payload, &ev); err != nil {
			return rejected(http.StatusBadRequest, "malformed push payload")
		}
		return s.onPush(ctx, d, &ev)
	case "pull_request":
		var ev pullRequestEvent
		if err := json.Unmarshal(d.payload, &ev); err != nil {
			return rejected(http.StatusBadRequest, "malformed pull_request payload")
		}
		return s.onPullRequest(ctx, d, &ev)
	case "check_run":
		var ev checkRunEvent
		if err := json.Unmarshal(d.payload, &ev); err != nil {
			return rejected(http.StatusBadRequest, "malformed check_run payload")
		}
		return s.onCheckRun(ctx, d, &ev)
	}
	return ignored("event " + d.event + " is not handled")
}

// isBot reports whether a user is a bot: Akira itself or any other app or bot account. Bots never command
// Akira, so two bots cannot talk each other into a loop.
func (s *server) isBot(u *ghUser) bool {
	if u == nil {
		return false
	}
	return strings.EqualFold(u.Type, "Bot") || s.isBotLogin(u.Login)
}

func (s *server) isBotLogin(login string) bool {
	return strings.HasSuffix(strings.ToLower(login), "[bot]") ||
		(s.cfg.BotLogin != "" && strings.EqualFold(login, s.cfg.BotLogin))
}

// target is the repository a delivery is about, with the installation that can act on it.
type target struct {
	installationID int64
	owner, repo    string
	defaultBranch  string
	htmlURL        string
}

func targetOf(e envelope) (target, bool) {
	owner, repo := e.ownerRepo()
	if e.installationID() == 0 || owner == "" || repo == "" {
		return target{}, false
	}
	return target{installationID: e.installationID(), owner: owner, repo: repo, defaultBranch: e.Repository.DefaultBranch,
		htmlURL: e.Repository.HTMLURL}, true
}

// fileURL links the configuration file on GitHub, when the payload said where the repository is.
func (t target) fileURL(ce *gh.ConfigError) string {
	if t.htmlURL == "" || ce.Ref == "" {
		return ""
	}
	return t.htmlURL + "/blob/" + ce.Ref + "/" + ce.Path
}

const noInstallation = "no installation or repository in the payload"

// repoConfig reads the repository's configuration. A file that cannot be used comes back as a
// *gh.ConfigError: the repository's mistake, not a failure of a dependency.
func (s *server) repoConfig(ctx context.Context, t target) (config.Repo, error) {
	rc, err := s.gh.RepoConfig(ctx, t.installationID, t.owner, t.repo, t.defaultBranch)
	if err != nil {
		return config.Repo{}, fmt.Errorf("repository config: %w", err)
	}
	return rc, nil
}

func configError(err error) (*gh.ConfigError, bool) {
	return errors.AsType[*gh.ConfigError](err)
}

// authorization is the answer to "may this user command Akira here?".
type authorization struct {
	allowed bool
	// level is the user's permission on the repository.
	level string
	// cfg is the repository configuration when it had to be read (allowlist), else nil.
	cfg *config.Repo
	// cfgErr is why the configuration could not be used for the allowlist.
	cfgErr error
}

// authorize allows write, maintain and admin, then the repository's allowlist. Errors are failures to ask
// GitHub; a broken configuration only means the allowlist cannot grant anything.
func (s *server) authorize(ctx context.Context, t target, login string) (authorization, error) {
	level, err := s.gh.PermissionLevel(ctx, t.installationID, t.owner, t.repo, login)
	if err != nil {
		return authorization{}, fmt.Errorf("permission of %s: %w", login, err)
	}
	if slices.Contains([]string{"admin", "maintain", "write"}, strings.ToLower(level)) {
		return authorization{allowed: true, level: level}, nil
	}
	rc, err := s.repoConfig(ctx, t)
	if _, bad := configError(err); bad {
		return authorization{level: level, cfgErr: err}, nil
	}
	if err != nil {
		return authorization{}, err
	}
	return authorization{allowed: rc.Allowed(login), level: level, cfg: &rc}, nil
}

func (s *server) onIssueComment(ctx context.Context, d *delivery, ev *issueCommentEvent) outcome {
	if ev.Action != "created" {
		return ignored("comment " + ev.Action)
	}
	if s.isBot(&ev.Comment.User) || s.isBot(ev.Sender) {
		return ignored("comment by a bot")
	}
	res := Parse(ev.Comment.Body)
	if _, ok := res.(Ignore); ok {
		return ignored("no command in comment")
	}
	t, ok := targetOf(ev.envelope)
	if !ok {
		return ignored(noInstallation)
	}
	author := ev.Comment.User.Login
	number := ev.Issue.Number
	auth, err := s.authorize(ctx, t, author)
	if err != nil {
		return unavailable("could not check the author's permission", err)
	}
	if !auth.allowed {
		if auth.cfgErr != nil {
			d.log.WarnContext(ctx, "allowlist unavailable", "err", auth.cfgErr.Error())
		}
		if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, refusalText(author, commandText(res), auth.level)); err != nil {
			return unavailable("could not post the refusal", err)
		}
		return refused(author + " may not command Akira")
	}

	switch r := res.(type) {
	case Reply:
		if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, r.Text); err != nil {
			return unavailable("could not post the reply", err)
		}
		return replied("reply posted")
	case Command:
		return s.runCommand(ctx, d, ev, t, auth, r)
	}
	return ignored("no command in comment")
}

func (s *server) runCommand(ctx context.Context, d *delivery, ev *issueCommentEvent, t target, auth authorization, cmd Command) outcome {
	number, author := ev.Issue.Number, ev.Comment.User.Login
	switch cmd.Name {
	case CmdStatus:
		text, err := s.enq.Status(ctx, t.owner, t.repo, number)
		if err != nil {
			return unavailable("could not read the run status", err)
		}
		if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, text); err != nil {
			return unavailable("could not post the status", err)
		}
		s.react(ctx, d, t, ev.Comment.ID)
		return replied("status posted")

	case CmdRun:
		rc, out, ok := s.configForCommand(ctx, t, number, auth)
		if !ok {
			return out
		}
		if !rc.Triggers.IssueComment {
			return ignored("issue_comment trigger disabled in the repository configuration")
		}
		req := RunRequest{
			DeliveryID: d.id, InstallationID: t.installationID, Owner: t.owner, Repo: t.repo,
			DefaultBranch: t.defaultBranch, Trigger: TriggerIssueComment, IssueNumber: number,
			CommentID: ev.Comment.ID, Path: cmd.Path, Sender: author,
		}
		if ev.Issue.PullRequest != nil {
			pr, err := s.gh.PullRequest(ctx, t.installationID, t.owner, t.repo, number)
			if err != nil {
				return unavailable("could not read the pull request", err)
			}
			if isFork(pr.HeadRepo, pr.BaseRepo, t) {
				if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, forkRefusalText); err != nil {
					return unavailable("could not post the refusal", err)
				}
				return refused("fork pull requests are never run")
			}
			req.PRNumber, req.Branch, req.HeadSHA = number, pr.HeadRef, pr.HeadSHA
		}
		if out, ok := s.enqueue(ctx, func() error { return s.enq.EnqueueRun(ctx, req) }); !ok {
			return out
		}
		s.react(ctx, d, t, ev.Comment.ID)
		return accepted("run enqueued")

	case CmdApprove, CmdRetry, CmdSkip, CmdAbort:
		req := ResumeRequest{
			DeliveryID: d.id, Source: SourceComment, CommentID: ev.Comment.ID, InstallationID: t.installationID,
			Owner: t.owner, Repo: t.repo, Number: number, Decision: Decision(cmd.Name), Guidance: cmd.Guidance,
			Sender: author,
		}
		if out, ok := s.enqueue(ctx, func() error { return s.enq.EnqueueResume(ctx, req) }); !ok {
			return out
		}
		s.react(ctx, d, t, ev.Comment.ID)
		return accepted(string(cmd.Name) + " enqueued")
	}
	return ignored("command " + string(cmd.Name) + " is not handled")
}

// configForCommand returns the repository configuration for a command, reusing what authorize read. A
// broken file is answered on the issue, because the person who typed the command can fix it.
func (s *server) configForCommand(ctx context.Context, t target, number int, auth authorization) (config.Repo, outcome, bool) {
	if auth.cfg != nil {
		return *auth.cfg, outcome{}, true
	}
	rc, err := s.repoConfig(ctx, t)
	if ce, bad := configError(err); bad {
		if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, configErrorText(ce, "start the run", t.fileURL(ce))); err != nil {
			return config.Repo{}, unavailable("could not post the configuration error", err), false
		}
		return config.Repo{}, replied("invalid repository configuration"), false
	}
	if err != nil {
		return config.Repo{}, unavailable("could not read the repository configuration", err), false
	}
	return rc, outcome{}, true
}

// enqueue runs one enqueue call; a duplicate is a success, because the work is queued already.
func (s *server) enqueue(ctx context.Context, call func() error) (outcome, bool) {
	err := call()
	switch {
	case err == nil:
		return outcome{}, true
	case errors.Is(err, ErrDuplicate):
		return accepted("already enqueued"), false
	case ctx.Err() != nil:
		return unavailable("timed out enqueueing", err), false
	}
	return unavailable("could not enqueue", err), false
}

// react acknowledges a comment. A failure is logged only: the work is queued, and GitHub must not redeliver.
func (s *server) react(ctx context.Context, d *delivery, t target, commentID int64) {
	if err := s.gh.AddReaction(ctx, t.installationID, t.owner, t.repo, commentID, reactionAccepted); err != nil {
		d.log.WarnContext(ctx, "could not react to the command", "comment", commentID, "err", err.Error())
	}
}

// isFork reports whether a pull request's head lives outside the repository. A deleted head repository
// counts as a fork: nothing proves it was this repository.
func isFork(headRepo, baseRepo string, t target) bool {
	if baseRepo == "" {
		baseRepo = t.owner + "/" + t.repo
	}
	return headRepo == "" || !strings.EqualFold(headRepo, baseRepo)
}

func (s *server) onPush(ctx context.Context, d *delivery, ev *pushEvent) outcome {
	t, ok := targetOf(ev.envelope)
	if !ok {
		return ignored(noInstallation)
	}
	if s.isBot(ev.Sender) || s.isBotLogin(ev.Pusher.Name) {
		return ignored("push by a bot")
	}
	if ev.Deleted {
		return ignored("branch deleted")
	}
	branch, isBranch := strings.CutPrefix(ev.Ref, "refs/heads/")
	if !isBranch {
		return ignored("push to " + ev.Ref + " is not to a branch")
	}
	if branch != t.defaultBranch {
		return ignored("push to " + branch + " is not to the default branch")
	}
	rc, err := s.repoConfig(ctx, t)
	if _, bad := configError(err); bad {
		// Nobody to answer on a push; the next command or pull request reports it.
		d.log.WarnContext(ctx, "invalid repository configuration", "err", err.Error())
		return ignored("invalid repository configuration")
	}
	if err != nil {
		return unavailable("could not read the repository configuration", err)
	}
	if strings.HasPrefix(branch, rc.BranchPrefix) {
		return ignored("push to Akira's own branch " + branch)
	}
	if !rc.Triggers.Push {
		return ignored("push trigger disabled in the repository configuration")
	}
	if !roadmapChanged(ev, rc.Roadmap) {
		return ignored(rc.Roadmap + " not changed")
	}
	req := RunRequest{
		DeliveryID: d.id, InstallationID: t.installationID, Owner: t.owner, Repo: t.repo,
		DefaultBranch: t.defaultBranch, Trigger: TriggerPush, Branch: branch, HeadSHA: ev.After,
		Sender: ev.senderLogin(),
	}
	if out, ok := s.enqueue(ctx, func() error { return s.enq.EnqueueRun(ctx, req) }); !ok {
		return out
	}
	return accepted("run enqueued")
}

// roadmapChanged reports whether a push added or modified the roadmap. GitHub lists at most 20 commits in
// a push payload; a push cut there may have changed it unseen, and the run job finds out cheaply.
func roadmapChanged(ev *pushEvent, roadmap string) bool {
	commits := ev.Commits
	if ev.HeadCommit != nil {
		commits = append(slices.Clip(commits), *ev.HeadCommit)
	}
	for _, c := range commits {
		if slices.Contains(c.Added, roadmap) || slices.Contains(c.Modified, roadmap) {
			return true
		}
	}
	return len(ev.Commits) >= maxPushCommits
}

func (s *server) onPullRequest(ctx context.Context, d *delivery, ev *pullRequestEvent) outcome {
	switch ev.Action {
	case "opened", "synchronize", "reopened":
	default:
		return ignored("pull request " + ev.Action)
	}
	t, ok := targetOf(ev.envelope)
	if !ok {
		return ignored(noInstallation)
	}
	pr := ev.PullRequest
	if s.isBot(ev.Sender) || s.isBot(&pr.User) {
		return ignored("pull request by a bot")
	}
	var headRepo, baseRepo string
	if pr.Head.Repo != nil {
		headRepo = pr.Head.Repo.FullName
	}
	if pr.Base.Repo != nil {
		baseRepo = pr.Base.Repo.FullName
	}
	if isFork(headRepo, baseRepo, t) {
		return ignored("fork pull requests are never run")
	}
	number := pr.Number
	if number == 0 {
		number = ev.Number
	}
	rc, err := s.repoConfig(ctx, t)
	if ce, bad := configError(err); bad {
		// Said once when the pull request opens, not on every push to it.
		if ev.Action == "synchronize" {
			return ignored("invalid repository configuration")
		}
		if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, configErrorText(ce, "start a run for this pull request", t.fileURL(ce))); err != nil {
			return unavailable("could not post the configuration error", err)
		}
		return replied("invalid repository configuration")
	}
	if err != nil {
		return unavailable("could not read the repository configuration", err)
	}
	if strings.HasPrefix(pr.Head.Ref, rc.BranchPrefix) {
		return ignored("pull request from Akira's own branch " + pr.Head.Ref)
	}
	if !rc.Triggers.PullRequest {
		return ignored("pull_request trigger disabled in the repository configuration")
	}
	files, err := s.gh.PullRequestFiles(ctx, t.installationID, t.owner, t.repo, number)
	if err != nil {
		return unavailable("could not list the pull request's files", err)
	}
	if !slices.ContainsFunc(files, func(f string) bool { return f == rc.Roadmap || config.MatchAny(rc.Specs, f) }) {
		return ignored("pull request does not change the roadmap or spec files")
	}
	// Pushing to a branch of the repository needs write access, but reopening a pull request needs only
	// triage: the person who set it going must be allowed to start runs.
	sender := ev.senderLogin()
	auth, err := s.authorize(ctx, t, sender)
	if err != nil {
		return unavailable("could not check the sender's permission", err)
	}
	if !auth.allowed {
		return refused(sender + " may not start runs")
	}
	req := RunRequest{
		DeliveryID: d.id, InstallationID: t.installationID, Owner: t.owner, Repo: t.repo,
		DefaultBranch: t.defaultBranch, Trigger: TriggerPullRequest, PRNumber: number,
		Branch: pr.Head.Ref, HeadSHA: pr.Head.SHA, Sender: sender,
	}
	if out, ok := s.enqueue(ctx, func() error { return s.enq.EnqueueRun(ctx, req) }); !ok {
		return out
	}
	return accepted("run enqueued")
}

// checkRunDecisions maps the identifiers of the reporter's check-run buttons to decisions.
var checkRunDecisions = map[string]Decision{
	"approve": DecisionApprove,
	"retry":   DecisionRetry,
	"skip":    DecisionSkip,
}

func (s *server) onCheckRun(ctx context.Context, d *delivery, ev *checkRunEvent) outcome {
	var (
		decision Decision
		source   ResumeSource
	)
	switch ev.Action {
	case "requested_action":
		if ev.RequestedAction == nil {
			return rejected(http.StatusBadRequest, "requested_action without requested_action")
		}
		dec, ok := checkRunDecisions[ev.RequestedAction.Identifier]
		if !ok {
			return ignored("unknown check run action " + ev.RequestedAction.Identifier)
		}
		decision, source = dec, SourceCheckRunAction
	case "rerequested":
		decision, source = DecisionRetry, SourceCheckRunRerequested
	default:
		return ignored("check run " + ev.Action)
	}
	cr := ev.CheckRun
	if cr.App == nil || cr.App.ID != s.cfg.AppID {
		return ignored("check run of another app")
	}
	t, ok := targetOf(ev.envelope)
	if !ok {
		return ignored(noInstallation)
	}
	if s.isBot(ev.Sender) {
		return ignored("check run action by a bot")
	}
	runID, taskID, ok := strings.Cut(cr.ExternalID, "/")
	if !ok || runID == "" || taskID == "" {
		return ignored("check run is not an Akira task")
	}
	var number int
	if len(cr.PullRequests) > 0 {
		number = cr.PullRequests[0].Number
	}
	sender := ev.senderLogin()
	auth, err := s.authorize(ctx, t, sender)
	if err != nil {
		return unavailable("could not check the sender's permission", err)
	}
	if !auth.allowed {
		if number != 0 {
			if err := s.gh.CreateComment(ctx, t.installationID, t.owner, t.repo, number, refusalText(sender, string(decision), auth.level)); err != nil {
				return unavailable("could not post the refusal", err)
			}
		}
		return refused(sender + " may not command Akira")
	}
	req := ResumeRequest{
		DeliveryID: d.id, Source: source, CheckRunID: cr.ID, InstallationID: t.installationID,
		Owner: t.owner, Repo: t.repo, Number: number, Decision: decision, Sender: sender,
		RunID: runID, TaskID: taskID,
	}
	if out, ok := s.enqueue(ctx, func() error { return s.enq.EnqueueResume(ctx, req) }); !ok {
		return out
	}
	return accepted(string(decision) + " enqueued")
}
