package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// decodeEvent reads a payload once, into the struct of its event (which holds the envelope too): a
// GitHub payload is tens of kilobytes, and a second pass over it (the envelope first, the event after)
// was most of the webhook's own time. Events Akira does not act on get the envelope only, for the log
// line. A body that is not JSON at all, and one whose fields have the wrong types, are told apart.
func decodeEvent(event string, payload []byte) (envelope, any, error) {
	return decodeEventWith(unmarshal, event, payload)
}

// decodeEventWith is decodeEvent reading with the given decoder (encoding/json's in the test that
// holds unmarshal to it).
func decodeEventWith(read func([]byte, any) error, event string, payload []byte) (envelope, any, error) {
	ev, env := newEvent(event)
	if ev == nil {
		var e envelope
		if err := read(payload, &e); err != nil {
			return envelope{}, nil, errors.New("body is not a JSON webhook payload")
		}
		return e, nil, nil
	}
	if err := read(payload, ev); err != nil {
		if _, wrongType := errors.AsType[*json.UnmarshalTypeError](err); wrongType {
			return envelope{}, nil, errors.New("malformed " + event + " payload")
		}
		return envelope{}, nil, errors.New("body is not a JSON webhook payload")
	}
	return *env, ev, nil
}

// newEvent is the struct a payload of the event is read into, and the envelope inside it; nil for
// events Akira does not act on.
func newEvent(event string) (any, *envelope) {
	switch event {
	case queue.EventIssueComment:
		e := &issueCommentEvent{}
		return e, &e.envelope
	case queue.EventPush:
		e := &pushEvent{}
		return e, &e.envelope
	case queue.EventPullRequest:
		e := &pullRequestEvent{}
		return e, &e.envelope
	case queue.EventReview:
		e := &pullRequestReviewEvent{}
		return e, &e.envelope
	case queue.EventReviewComment:
		e := &pullRequestReviewCommentEvent{}
		return e, &e.envelope
	case queue.EventCheckRun:
		e := &checkRunEvent{}
		return e, &e.envelope
	case queue.EventIssues:
		e := &issuesEvent{}
		return e, &e.envelope
	case queue.EventCheckSuite, queue.EventWorkflowRun, queue.EventStatus:
		e := &ciEvent{}
		return e, &e.envelope
	}
	return nil, nil
}

// unmarshal decodes a signed payload with segmentio/encoding/json, which reads a GitHub payload
// (tens of kilobytes, most of them URLs Akira never reads) in 60% of encoding/json's time: that
// decode was most of the webhook's own time. It is a drop-in for the standard library, with its error
// types; a payload it refuses goes through encoding/json all the same, whose answer stands, so the
// error a sender sees is the standard library's and a payload the standard library reads is never
// refused. So does a payload that is not valid UTF-8 (GitHub sends none), which encoding/json reads
// with U+FFFD in place of the bad bytes. FuzzDecodeAgrees holds the two to the same reading, refusals
// included. (goccy/go-json, faster still, panicked on malformed input under the fuzzer.)
//
// segmentio's decoder recurses without a limit, and a body of a few megabytes of "[" overflows the
// goroutine's stack, which no recover catches: the process dies. encoding/json stops at 10,000
// levels. Every level opens with a bracket, so a payload with at most that many brackets is safe
// to give to segmentio; one with more (GitHub sends a few hundred at most) is read by the standard
// library. Counting is a vectorised pass, a microsecond for a GitHub-sized payload.
func unmarshal(payload []byte, v any) error {
	if fastDecodable(payload) {
		if err := segjson.Unmarshal(payload, v); err == nil {
			return nil
		}
		// What it filled before it stopped is not the standard library's to build on.
		reflect.ValueOf(v).Elem().SetZero()
	}
	return json.Unmarshal(payload, v)
}

// maxPushCommits is how many commits GitHub lists in a push payload; a longer push is cut there.
const maxPushCommits = 20

// route unpacks a delivery into an intake task, or says why Akira never acts on it. Only what the
// payload itself tells is looked at: everything that asks GitHub happens in the intake job.
func (s *server) route(ctx context.Context, d *delivery) answer {
	var (
		p   queue.IntakePayload
		why string
	)
	switch ev := d.ev.(type) {
	case nil:
		switch d.event {
		case "ping":
			return answer{status: http.StatusOK, result: resultAcknowledged, reason: "pong"}
		case "installation", "installation_repositories":
			return answer{status: http.StatusOK, result: resultAcknowledged, reason: d.event + " " + d.env.Action}
		}
		return ignored("event " + d.event + " is not handled")
	case *issueCommentEvent:
		p, why = s.onIssueComment(ev)
	case *pushEvent:
		p, why = s.onPush(ev)
	case *pullRequestEvent:
		p, why = s.onPullRequest(ev)
	case *pullRequestReviewEvent:
		p, why = s.onReview(ev)
	case *pullRequestReviewCommentEvent:
		p, why = s.onReviewComment(ev)
	case *checkRunEvent:
		if ev.Action == "requested_action" && ev.RequestedAction == nil {
			return rejected(http.StatusBadRequest, "requested_action without requested_action")
		}
		p, why = s.onCheckRun(ev)
	case *issuesEvent:
		p, why = s.onIssues(ev)
	case *ciEvent:
		p, why = s.onCI(d.event, ev)
	}
	if why != "" {
		return ignored(why)
	}
	if why := targetOf(d.env, &p); why != "" {
		return ignored(why)
	}
	p.DeliveryID, p.Event, p.Sender = d.id, d.event, d.env.senderLogin()
	err := s.enq.EnqueueIntake(ctx, p)
	switch {
	case err == nil:
		return accepted("intake enqueued")
	case errors.Is(err, queue.ErrDuplicate):
		return accepted("already enqueued")
	case errors.Is(err, queue.ErrInvalidPayload):
		// A 4xx: GitHub records the failure, and the redelivery sweep leaves it alone.
		return rejected(http.StatusBadRequest, err.Error())
	case ctx.Err() != nil:
		return unavailable("timed out enqueueing", err)
	}
	return unavailable("could not enqueue", err)
}

// targetOf fills in the repository and installation a delivery is about, or says why there is none.
func targetOf(e envelope, p *queue.IntakePayload) string {
	owner, repo := e.ownerRepo()
	if e.installationID() == 0 || owner == "" || repo == "" {
		return "no installation or repository in the payload"
	}
	p.InstallationID, p.Owner, p.Repo = e.installationID(), owner, repo
	p.DefaultBranch, p.RepoURL = e.Repository.DefaultBranch, e.Repository.HTMLURL
	return ""
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

func (s *server) onIssueComment(ev *issueCommentEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	switch {
	case ev.Action != "created":
		return p, "comment " + ev.Action
	case s.isBot(&ev.Comment.User) || s.isBot(ev.Sender):
		return p, "comment by a bot"
	}
	if _, none := command.ParseComment(ev.Comment.Body).(command.Ignore); none {
		return p, "no command in comment"
	}
	p.Body = &queue.CommentIntake{ID: ev.Comment.ID, Number: ev.Issue.Number, OnPullRequest: ev.Issue.PullRequest != nil,
		Author: ev.Comment.User.Login, Body: ev.Comment.Body, CreatedAt: ev.Comment.CreatedAt}
	return p, ""
}

func (s *server) onPush(ev *pushEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	branch, isBranch := strings.CutPrefix(ev.Ref, "refs/heads/")
	switch {
	case s.isBot(ev.Sender) || s.isBotLogin(ev.Pusher.Name):
		return p, "push by a bot"
	case ev.Deleted:
		return p, "branch deleted"
	case !isBranch:
		return p, "push to " + ev.Ref + " is not to a branch"
	}
	// A push to any branch goes on: the branch may be the base of Akira's runs, which then merge it
	// (the intake knows; the webhook asks nothing). Only the default branch's roadmap starts runs.
	push := &queue.PushIntake{Branch: branch, After: ev.After, Truncated: len(ev.Commits) >= maxPushCommits}
	commits := ev.Commits
	if ev.HeadCommit != nil {
		commits = append(commits[:len(commits):len(commits)], *ev.HeadCommit)
	}
	seen := map[string]bool{}
	for _, c := range commits {
		for _, f := range append(c.Added[:len(c.Added):len(c.Added)], c.Modified...) {
			if !seen[f] {
				seen[f] = true
				push.Changed = append(push.Changed, f)
			}
		}
	}
	p.Body = push
	return p, ""
}

func (s *server) onPullRequest(ev *pullRequestEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	pr := ev.PullRequest
	switch ev.Action {
	case "opened", "synchronize", "reopened":
	case "closed":
		// A person closing (or merging) the pull request of a run that still works stops it; the
		// intake finds whether there is one.
	default:
		return p, "pull request " + ev.Action
	}
	// A bot's pull request is not run; but a person closing one (Akira's own) stops its run.
	if s.isBot(ev.Sender) || (ev.Action != "closed" && s.isBot(&pr.User)) {
		return p, "pull request by a bot"
	}
	var fork string
	switch {
	case pr.Head.Repo == nil || pr.Base.Repo == nil:
		// A deleted head repository proves nothing about where the head lives: a fork's, never run.
		return p, "fork pull requests are never run"
	case !strings.EqualFold(pr.Head.Repo.FullName, pr.Base.Repo.FullName):
		// Never run by itself. Opened or reopened: the intake says once how a writer can run it;
		// every push: the intake remembers when the head was seen, so that a writer's command runs
		// only a head pushed before it.
		fork = pr.Head.Repo.FullName
	}
	number := pr.Number
	if number == 0 {
		number = ev.Number
	}
	p.Body = &queue.PullRequestIntake{Number: number, Action: ev.Action, HeadRef: pr.Head.Ref, HeadSHA: pr.Head.SHA, Fork: fork,
		UpdatedAt: pr.UpdatedAt}
	return p, ""
}

// onReview takes a review that requests changes. Whether the reviewer may command Akira, and whether
// the pull request is one Akira works on, the intake job asks.
func (s *server) onReview(ev *pullRequestReviewEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	switch {
	case ev.Action != "submitted":
		return p, "review " + ev.Action
	case !strings.EqualFold(ev.Review.State, "changes_requested"):
		return p, "review " + strings.ToLower(ev.Review.State) + ", not changes requested"
	case s.isBot(ev.Sender) || s.isBot(&ev.Review.User):
		return p, "review by a bot"
	}
	if why := sameRepository(&ev.PullRequest); why != "" {
		return p, why
	}
	p.Body = &queue.ReviewIntake{Number: ev.PullRequest.Number, ReviewID: ev.Review.ID, Author: ev.Review.User.Login,
		Body: ev.Review.Body, HeadRef: ev.PullRequest.Head.Ref}
	return p, ""
}

// onReviewComment takes a review comment holding `/akira fix [guidance]`.
func (s *server) onReviewComment(ev *pullRequestReviewCommentEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	switch {
	case ev.Action != "created":
		return p, "review comment " + ev.Action
	case s.isBot(ev.Sender) || s.isBot(&ev.Comment.User):
		return p, "review comment by a bot"
	}
	cmd, ok := command.ParseComment(ev.Comment.Body).(command.Command)
	if !ok || cmd.Name != command.CmdFix {
		return p, "review comment without /akira fix"
	}
	if why := sameRepository(&ev.PullRequest); why != "" {
		return p, why
	}
	p.Body = &queue.ReviewIntake{Number: ev.PullRequest.Number, ReviewID: ev.Comment.ReviewID, CommentID: ev.Comment.ID,
		Author: ev.Comment.User.Login, Guidance: cmd.Guidance, HeadRef: ev.PullRequest.Head.Ref}
	return p, ""
}

func sameRepository(pr *reviewPullRequest) string {
	if pr.Head.Repo == nil || pr.Base.Repo == nil || !strings.EqualFold(pr.Head.Repo.FullName, pr.Base.Repo.FullName) {
		return "fork pull requests are never run"
	}
	return ""
}

func (s *server) onCheckRun(ev *checkRunEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	cr := &queue.CheckRunIntake{ID: ev.CheckRun.ID}
	switch ev.Action {
	case "requested_action":
		d, ok := ports.ButtonDecision(ev.RequestedAction.Identifier)
		if !ok {
			return p, "unknown check run action " + ev.RequestedAction.Identifier
		}
		cr.Decision = d
	case "rerequested":
		cr.Decision, cr.Rerequested = ports.RerunDecision, true
	default:
		return p, "check run " + ev.Action
	}
	if ev.CheckRun.App == nil || ev.CheckRun.App.ID != s.cfg.AppID {
		return p, "check run of another app"
	}
	if s.isBot(ev.Sender) {
		return p, "check run action by a bot"
	}
	runID, taskID, ok := strings.Cut(ev.CheckRun.ExternalID, "/")
	if !ok || runID == "" || taskID == "" {
		return p, "check run is not an Akira task"
	}
	cr.RunID, cr.TaskID = runID, taskID
	if len(ev.CheckRun.PullRequests) > 0 {
		cr.Number = ev.CheckRun.PullRequests[0].Number
	}
	p.Body = cr
	return p, ""
}

// onCI passes on what another app's CI concluded about a commit: a check suite or an Actions workflow
// run completed, a commit status that is no longer pending. Whether a run waits for that commit is for
// the intake to find out; Akira's own suites say nothing it does not know. Check runs are not passed
// on one by one: their suite's completion follows them.
func (s *server) onCI(event string, ev *ciEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	ci := &queue.CIIntake{}
	switch event {
	case queue.EventCheckSuite, queue.EventWorkflowRun:
		body := ev.CheckSuite
		if event == queue.EventWorkflowRun {
			body = ev.WorkflowRun
		}
		switch {
		case ev.Action != "completed":
			return p, event + " " + ev.Action
		case body == nil:
			return p, event + " without its body"
		case body.App != nil && body.App.ID == s.cfg.AppID && s.cfg.AppID != 0:
			return p, "Akira's own check suite"
		}
		ci.HeadSHA, ci.Name, ci.Conclusion = body.HeadSHA, body.Name, body.Conclusion
		if body.App != nil && ci.Name == "" {
			ci.Name = body.App.Slug
		}
		if body.HeadBranch != "" {
			ci.Branches = []string{body.HeadBranch}
		}
	case queue.EventStatus:
		if ev.State == "pending" {
			return p, "status pending"
		}
		ci.HeadSHA, ci.Name, ci.Conclusion = ev.SHA, ev.Context, ev.State
		for _, b := range ev.Branches {
			ci.Branches = append(ci.Branches, b.Name)
		}
	}
	if len(ci.HeadSHA) != 40 || len(ci.Branches) == 0 {
		return p, event + " names no commit on a branch"
	}
	p.Body = ci
	return p, ""
}

// onIssues passes on an issue assigned to (or unassigned from) Akira's bot, and any label added to or
// removed from an issue: which label starts a run is the repository's choice, read by the intake.
func (s *server) onIssues(ev *issuesEvent) (queue.IntakePayload, string) {
	var p queue.IntakePayload
	tr := &queue.TriggerIntake{Number: ev.Issue.Number, Action: ev.Action}
	switch {
	case s.isBot(ev.Sender):
		return p, "issue changed by a bot"
	case ev.Sender == nil || ev.Issue.Number <= 0:
		return p, "issues event without a sender and an issue"
	}
	tr.Actor = ev.Sender.Login
	switch ev.Action {
	case queue.TriggerAssigned, queue.TriggerUnassigned:
		if ev.Assignee == nil || s.cfg.BotLogin == "" || !strings.EqualFold(ev.Assignee.Login, s.cfg.BotLogin) {
			return p, "issue " + ev.Action + ", not to Akira"
		}
	case queue.TriggerLabeled, queue.TriggerUnlabeled:
		if ev.Label == nil || ev.Label.Name == "" {
			return p, "issue " + ev.Action + " without a label"
		}
		tr.Label = ev.Label.Name
	default:
		return p, "issue " + ev.Action
	}
	p.Body = tr
	return p, ""
}

// maxNesting is encoding/json's own limit on how deep a value may nest.
const maxNesting = 10000

// fastDecodable says whether segmentio's decoder may read the payload: valid UTF-8 and no deeper
// than encoding/json allows.
func fastDecodable(payload []byte) bool {
	return bytes.Count(payload, []byte{'{'})+bytes.Count(payload, []byte{'['}) <= maxNesting && utf8.Valid(payload)
}
