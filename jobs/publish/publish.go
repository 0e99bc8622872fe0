package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/templates"
)

// The GitHub side of the reporter: what a run's state looks like on GitHub (the summary comment, the
// pull request, the task check runs, escalation comments). Every create is found again after a crash
// (by a hidden marker, or by the id stored at once), so publishing is safe to repeat.

// publisher renders a run's summary onto its pull request or issue.
type publisher struct {
	gh    ports.Comments
	store *store.Records
	log   *slog.Logger
}

// SummaryNumber is where the run's comments go: its pull request, else the issue it came from.
func SummaryNumber(r *lifecycle.Run) int {
	if r.PR > 0 {
		return r.PR
	}
	return r.Issue
}

// publishSummary creates the run's one summary comment or edits it in place. The comment id is stored
// in the run state as soon as the comment exists; a job that died before storing it finds the comment
// again by its hidden marker, so a run never gets a second summary.
func (p *publisher) publishSummary(ctx context.Context, r *lifecycle.Run) (*lifecycle.Run, error) {
	number := SummaryNumber(r)
	if number == 0 {
		return r, nil // nowhere to post (a push run before its pull request)
	}
	body, err := templates.Render("summary", SummaryData(r))
	if err != nil {
		return r, err
	}
	// The body is secondary to the summary: a failure waits for the summary's next edit.
	if err := p.publishPullRequestBody(ctx, r); err != nil {
		p.log.Warn("pull request body not updated", "pr", r.PR, "err", err)
	}
	if r.SummaryCommentID != 0 {
		err := p.gh.EditComment(ctx, r.Owner, r.Repo, r.SummaryCommentID, body)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ports.ErrGitHubNotFound) {
			return r, fmt.Errorf("jobs: edit summary: %w", err)
		}
		// Someone deleted the summary: post it again and keep the new one.
		p.log.Info("summary comment deleted; posting it again", "comment", r.SummaryCommentID)
		if r, err = p.store.Update(ctx, r.ID, forgetSummaryComment(r.SummaryCommentID)); err != nil {
			return r, err
		}
	}
	id, url, err := p.gh.FindComment(ctx, r.Owner, r.Repo, number, templates.SummaryMarker(r.ID))
	found := err == nil
	switch {
	case errors.Is(err, ports.ErrGitHubNotFound):
		id, url, err = p.gh.CreateComment(ctx, r.Owner, r.Repo, number, body)
		if err != nil {
			return r, fmt.Errorf("jobs: post summary: %w", err)
		}
	case err != nil:
		return r, fmt.Errorf("jobs: find summary: %w", err)
	}
	r, err = p.store.Update(ctx, r.ID, recordSummaryComment(id, url))
	if err != nil {
		return r, err
	}
	if found {
		if err := p.gh.EditComment(ctx, r.Owner, r.Repo, id, body); err != nil {
			return r, fmt.Errorf("jobs: edit summary: %w", err)
		}
	}
	return r, nil
}

// pullRequestBodies edits a pull request's body when its current body holds marker (gh.Client does).
type pullRequestBodies interface {
	EditPullRequestBody(ctx context.Context, owner, repo string, number int, marker, body string) error
}

// publishPullRequestBody keeps the body of the pull request the run opened as current as its summary:
// the state, the ticked tasks, what's next. A pull request the run did not open is left alone.
func (p *publisher) publishPullRequestBody(ctx context.Context, r *lifecycle.Run) error {
	e, ok := p.gh.(pullRequestBodies)
	if !ok || r.PR == 0 || !r.OpenedPR {
		return nil
	}
	data := templates.PRBodyOf(SummaryData(r), r.Issue)
	data.Fork = prFork(r)
	body, err := templates.Render("pr_body", data)
	if err != nil {
		return err
	}
	if err := e.EditPullRequestBody(ctx, r.Owner, r.Repo, r.PR, data.Marker(), body); err != nil && !errors.Is(err, ports.ErrGitHubNotFound) {
		return fmt.Errorf("jobs: pull request body: %w", err)
	}
	return nil
}

// SummaryData is what the summary comment shows of a run.
func SummaryData(r *lifecycle.Run) templates.Summary {
	s := templates.Summary{
		RunID: r.ID, Source: r.Source, SourceURL: r.SourceURL, Branch: r.Branch, State: r.Status.Label(),
		Error: r.Error, AbortedBy: r.AbortedBy, PRURL: r.PRURL,
	}
	if r.RepoURL != "" {
		s.BranchURL = r.RepoURL + "/tree/" + r.Branch
	}
	s.PRClosed, s.Rebuilt = r.PRClosed, r.Rebuilt != ""
	s.Synced, s.Syncs = SyncedText(r), len(r.Synced)
	s.StartedBy, s.AnsweredBy, s.StoppedBy, s.PausedBy = Person(r.Sender), Person(r.AnsweredBy), r.StoppedBy, r.PausedBy
	if r.Status == lifecycle.StatusRunning {
		p := progressData(r, time.Now())
		s.Progress = &p
	}
	for _, t := range r.Tasks {
		tt := templates.Task{ID: t.ID, Title: t.Title, Status: t.Status, Attempts: t.Attempts, Duration: t.Duration,
			Checkpoint: t.Checkpoint, CheckRunURL: t.CheckRunURL, Unverified: t.Unverified && t.Status == lifecycle.TaskStatusPassed,
			Usage:     templates.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD, Estimated: t.UsageEstimated},
			Judgement: t.Judgement, Sync: lifecycle.IsSyncTask(t.ID)}
		tt.LogURL = TaskPageURL(r.Dashboard, r.ID, t.ID)
		if t.Checkpoint != "" && r.RepoURL != "" {
			tt.CheckpointURL = r.RepoURL + "/commit/" + t.Checkpoint
		}
		s.Tasks = append(s.Tasks, tt)
		s.Blocked.Blocked = append(s.Blocked.Blocked, t.Blocked...)
		s.Usage.InputTokens += t.InputTokens
		s.Usage.OutputTokens += t.OutputTokens
		s.Usage.CostUSD += t.CostUSD
		s.Usage.Estimated = s.Usage.Estimated || t.UsageEstimated
	}
	if w := r.CI; w != nil {
		s.CI = &templates.CI{None: w.None, Round: w.Round, MaxRounds: w.MaxRounds, Reran: w.Reran, More: w.More}
		for _, c := range w.Checks {
			s.CI.Checks = append(s.CI.Checks, templates.CICheck{Name: c.Name, Conclusion: c.Conclusion, URL: c.URL, Required: c.Required})
		}
	}
	s.Environment = envSummary(r)
	if r.Status == lifecycle.StatusParked && len(r.Parked) > 0 {
		s.ParkedTask = r.Parked[0].TaskID
		if t := r.Task(s.ParkedTask); t != nil {
			s.EscalationURL = t.EscalationURL
		}
	}
	return s
}

// pullRequestBody is the body of a run's draft pull request: where the tasks come from, and the tasks.
func pullRequestBody(run *lifecycle.Run, tasks []runner.TaskResult) (string, error) {
	body := templates.PRBody{RunID: run.ID, Source: run.Source, SourceURL: run.SourceURL, Issue: run.Issue, Fork: prFork(run)}
	for _, t := range tasks {
		body.Tasks = append(body.Tasks, templates.PRTask{ID: t.ID, Title: t.Title, Done: t.Status == runner.TaskDone})
	}
	return templates.Render("pr_body", body)
}

// prFork is the fork's pull request a run's pull request names; nil for a run that is not a fork's.
func prFork(run *lifecycle.Run) *templates.PRFork {
	if run.Fork == nil {
		return nil
	}
	return &templates.PRFork{Number: run.Fork.Number, Repo: run.Fork.Repo, Ref: run.Fork.Ref, Head: run.Fork.Head}
}

// announceFork tells a fork's pull request where Akira runs it, once its own pull request is open.
// Keyed by the run: a later job, or a retried one, finds it said (in Redis, else by its marker).
func announceFork(ctx context.Context, replies *store.Dedupe, c ports.Comments, run *lifecycle.Run) error {
	if run.Fork == nil || run.PR == 0 {
		return nil
	}
	data := templates.ForkRun{Branch: run.Branch, Head: run.Fork.Head, PR: run.PR}
	if run.RepoURL != "" {
		data.BranchURL = run.RepoURL + "/tree/" + run.Branch
	}
	text := Render("fork_run", data, fmt.Sprintf("Akira runs this pull request on `%s`: follow it in #%d.", run.Branch, run.PR))
	if err := ReplyOnce(ctx, replies, c, run.Owner, run.Repo, run.Fork.Number, "fork-run-"+run.ID, text, true); err != nil {
		return fmt.Errorf("jobs: tell #%d where it runs: %w", run.Fork.Number, err)
	}
	return nil
}

// ensurePullRequest finds the draft pull request of the run's branch, or opens it; the branch already
// has a commit ahead of the base (the engine's start commit), as GitHub requires.
func ensurePullRequest(ctx context.Context, pulls ports.Pulls, run *lifecycle.Run, tasks []runner.TaskResult) (*ports.PullRequest, error) {
	pr, err := pulls.FindPullRequest(ctx, run.Owner, run.Repo, run.Branch, run.Base)
	if err == nil {
		return pr, nil
	}
	if !errors.Is(err, ports.ErrGitHubNotFound) {
		return nil, fmt.Errorf("find pull request: %w", err)
	}
	body, err := pullRequestBody(run, tasks)
	if err != nil {
		return nil, err
	}
	pr, err = pulls.CreatePullRequest(ctx, run.Owner, run.Repo, ports.NewPullRequest{Title: run.Title, Body: body,
		Head: run.Branch, Base: run.Base, Draft: true})
	if err != nil {
		return nil, fmt.Errorf("open pull request: %w", err)
	}
	return pr, nil
}

// CheckRunName is the name of a task's check run: "akira: <id> <title>", at most 100 characters.
func CheckRunName(taskID, title string) string {
	name := strings.Join(strings.Fields("akira: "+taskID+" "+title), " ")
	if r := []rune(name); len(r) > 100 {
		name = string(r[:99]) + "…"
	}
	return name
}

// reasonText says in words why a task was escalated.
func reasonText(esc *runner.Escalation) string {
	var why string
	switch esc.Reason {
	case "repeated_failure":
		why = "the same failure happened twice in a row"
	case "max_attempts":
		why = "every attempt failed"
	case "awaiting_decision":
		why = "waiting for a decision"
	case runner.ReasonGateBefore:
		why = "gate before the task"
	case runner.ReasonGateAfter:
		why = "gate after the task"
	case runner.ReasonBudget:
		return strings.TrimPrefix(esc.Summary, "the run's budget is reached: ")
	case lifecycle.ReasonCIFailed:
		why = "the pull request's CI stays red"
	case lifecycle.ReasonCITimeout:
		why = "the pull request's CI did not finish"
	default:
		why = esc.Reason
	}
	if esc.Summary != "" && why != "" {
		return why + ": " + esc.Summary
	}
	return why + esc.Summary
}

// EscalationRoundMarker tells escalations of the same task apart, so that after a crash the comment
// of this very escalation is found instead of posted twice.
func EscalationRoundMarker(runID, taskID string, round int) string {
	return fmt.Sprintf("<!-- akira:escalation-round run=%s task=%s round=%d -->", runID, taskID, round)
}

// Person is a login to @-mention, or "" for none and for bots (a mention of an App notifies nobody).
func Person(login string) string {
	// Only a GitHub login is a person to mention: an operator acting through the API ("ops (API)")
	// must never ping a GitHub user who happens to share the token's name.
	if login == "" || strings.HasSuffix(strings.ToLower(login), "[bot]") || !templates.IsLogin(login) {
		return ""
	}
	return login
}

// mentions are the people an escalation notifies: who started the run and who answered it last.
func mentions(run *lifecycle.Run) []string {
	var out []string
	for _, l := range []string{Person(run.Sender), Person(run.AnsweredBy)} {
		if l != "" && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

// escalationBody is the escalation comment of a task: why it stopped, what failed, what to reply.
func escalationBody(run *lifecycle.Run, t *lifecycle.TaskState, esc *runner.Escalation, maxAttempts int) (string, error) {
	data := templates.Escalation{
		RunID: run.ID, TaskID: t.ID, TaskTitle: t.Title, Attempts: t.Attempts, MaxAttempts: maxAttempts,
		Reason: reasonText(esc), CheckRunURL: t.CheckRunURL, Buttons: t.CheckRunID != 0,
		Mentions: mentions(run), Changed: esc.Changed, TaskURL: TaskPageURL(run.Dashboard, run.ID, t.ID),
	}
	switch esc.Reason {
	case runner.ReasonGateBefore:
		data.Gate = "before"
	case runner.ReasonGateAfter:
		data.Gate = "after"
	case runner.ReasonBudget:
		data.Budget, data.Ceiling = true, run.BudgetCeilingUSD
	}
	var outputs []string
	for _, v := range esc.Verify {
		if !v.Passed() {
			data.Failures = append(data.Failures, templates.Command{Command: v.Command, ExitCode: v.ExitCode, TimedOut: v.TimedOut, Duration: v.Duration})
			if strings.TrimSpace(v.Output) != "" {
				outputs = append(outputs, v.Output)
			}
		}
	}
	if len(data.Failures) == 0 {
		data.Error = esc.Summary
		if data.Error == "" {
			data.Error = t.Note
		}
	}
	data.Output = strings.Join(outputs, "\n")
	if data.Output == "" {
		data.Output = esc.Feedback
	}
	body, err := templates.Render("escalation", data)
	if err != nil {
		return "", err
	}
	return body + EscalationRoundMarker(run.ID, t.ID, t.Escalations) + "\n", nil
}

// postEscalation posts the escalation comment of the task's current round once: a comment a crashed
// job posted is found by its round marker.
func postEscalation(ctx context.Context, c ports.Comments, run *lifecycle.Run, t *lifecycle.TaskState, body string) (int64, string, error) {
	number := SummaryNumber(run)
	marker := EscalationRoundMarker(run.ID, t.ID, t.Escalations)
	id, url, err := c.FindComment(ctx, run.Owner, run.Repo, number, marker)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		id, url, err = c.CreateComment(ctx, run.Owner, run.Repo, number, body)
	}
	if err != nil {
		return 0, "", fmt.Errorf("escalation comment: %w", err)
	}
	return id, url, nil
}

func commands(rs []verify.Result) []templates.Command {
	out := make([]templates.Command, 0, len(rs))
	for _, v := range rs {
		out = append(out, templates.Command{Command: v.Command, ExitCode: v.ExitCode, TimedOut: v.TimedOut, Duration: v.Duration})
	}
	return out
}

// annotations are the file/line problems of the failed verification commands: those the engine found
// in each command's whole output, else what ParseAnnotations finds in the tail it kept.
func annotations(rs []verify.Result) []ports.Annotation {
	var out []ports.Annotation
	for _, v := range rs {
		if v.Passed() {
			continue
		}
		found := v.Annotations
		if len(found) == 0 {
			found = verify.ParseAnnotations(v.Output)
		}
		for _, a := range found {
			out = append(out, ports.Annotation{Path: a.Path, StartLine: a.StartLine, EndLine: a.EndLine, Level: a.Level,
				Message: a.Message, Title: v.Command})
		}
	}
	return out
}

// Publish performs the effects waiting in the run's outbox, in order, and removes each from the
// outbox once it is done: those a transition just wrote, or those a worker that died left behind
// (the relay in the reaper finds them). Every effect is safe to perform twice, so a worker that dies
// between performing one and removing it only makes the next one repeat it. An effect whose target
// is gone (a deleted pull request, a check run GitHub no longer has) is dropped with a log line. It
// stops at the first effect that fails and returns the error: the rest wait for the next try.
func (h *Effects) Publish(ctx context.Context, gh ReporterGitHub, run *lifecycle.Run, log *slog.Logger) (*lifecycle.Run, error) {
	for _, e := range slices.Clone(run.Outbox) {
		if !slices.ContainsFunc(run.Outbox, func(o lifecycle.Effect) bool { return o.ID == e.ID }) {
			continue // another worker performed it meanwhile
		}
		err := h.Perform(ctx, gh, run, e)
		if errors.Is(err, ports.ErrGitHubNotFound) {
			log.Warn("publish: the effect's target is gone; dropped", "effect", e.Kind, "tasks", e.TaskIDs, "err", err)
			err = nil
		}
		if err != nil {
			return run, fmt.Errorf("jobs: %s of run %s: %w", e.Kind, run.ID, err)
		}
		if run, err = h.records.Update(ctx, run.ID, func(r *lifecycle.Run) error {
			lifecycle.Done(r, e.ID)
			return nil
		}); err != nil {
			return run, err
		}
	}
	return run, nil
}

// Perform carries out one effect of a durable transition.
func (h *Effects) Perform(ctx context.Context, gh ReporterGitHub, run *lifecycle.Run, e lifecycle.Effect) error {
	switch e.Kind {
	case lifecycle.EffectSummary:
		p := publisher{gh: gh, store: h.records, log: h.log}
		_, err := p.publishSummary(ctx, run)
		return err
	case lifecycle.EffectConcludeCheckRuns:
		for _, id := range e.TaskIDs {
			t := run.Task(id)
			if t == nil || t.CheckRunID == 0 {
				continue
			}
			err := gh.UpdateCheckRun(ctx, run.Owner, run.Repo, t.CheckRunID, ports.CheckRun{Conclusion: e.Conclusion, Title: e.Title, Summary: e.Text})
			if err != nil && !errors.Is(err, ports.ErrGitHubNotFound) {
				return fmt.Errorf("conclude check run of %s: %w", id, err)
			}
			if _, err := h.records.Update(ctx, run.ID, recordCheckRunDone(id)); err != nil {
				return err
			}
		}
		return nil
	case lifecycle.EffectNotify:
		data := templates.Notification{Reason: e.Reason}
		if e.Event == "run_finished" {
			data = templates.Notification{Tally: SummaryData(run).Tally()}
		}
		h.NotifyRun(ctx, run, e.Event, e.Occasion, data)
		return nil
	case lifecycle.EffectContinue:
		return queue.Enqueued(h.d.Enqueuer.EnqueueRun(ctx, queue.Continuation(run, queue.ContinueKey(run.ID, e.Key), e.By)))
	case lifecycle.EffectReply:
		note := Render("run_stopped", templates.RunStopped{RunID: run.ID, Reason: e.Reason},
			"Akira stopped run `"+run.ID+"`: "+e.Reason+". Reply `/akira run` here to start again.")
		// Always look for the reply first: the effect may be replayed after a worker died mid-post.
		return ReplyOnce(ctx, h.replies, gh, run.Owner, run.Repo, run.Issue, e.Key, note, true)
	case lifecycle.EffectClosePullRequest:
		h.CloseEmptyPullRequest(ctx, gh, run, h.log)
		return nil
	case lifecycle.EffectReady:
		// No node id: gh reads the pull request afresh, so a replay finds it ready.
		return gh.MarkReady(ctx, run.Owner, run.Repo, &ports.PullRequest{Number: run.PR, Draft: true})
	case lifecycle.EffectEscalation:
		return h.escalate(ctx, gh, run, e)
	}
	return fmt.Errorf("publish: unknown effect %q", e.Kind)
}

// Short is a commit's SHA as people read it.
func Short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// escalate posts the escalation comment of a task parked by a transition of the run itself (its CI),
// once per round: a comment a crashed job posted is found by its round marker.
func (h *Effects) escalate(ctx context.Context, gh ReporterGitHub, run *lifecycle.Run, e lifecycle.Effect) error {
	if len(e.TaskIDs) == 0 {
		return errors.New("an escalation names no task")
	}
	t, pk := run.Task(e.TaskIDs[0]), run.ParkedTask(e.TaskIDs[0])
	if t == nil || pk == nil {
		return nil // decided meanwhile
	}
	esc := &runner.Escalation{TaskID: t.ID, Title: t.Title, Reason: pk.Reason, Summary: pk.Summary, Attempts: pk.Attempt}
	rounds := run.MaxAttempts
	if run.CI != nil {
		rounds = run.CI.MaxRounds
		if run.CI.Fix != nil {
			esc.Feedback = run.CI.Fix.Evidence
		}
	}
	body, err := escalationBody(run, t, esc, rounds)
	if err != nil {
		return err
	}
	id, url, err := postEscalation(ctx, gh, run, t, body)
	if err != nil {
		return err
	}
	_, err = h.records.Update(ctx, run.ID, recordEscalationComment(t.ID, id, url))
	return err
}

// CloseEmptyPullRequest closes the draft pull request of a run that failed before any task was done:
// it holds nothing to review. The summary on it says why; a later /akira run opens a new one.
func (h *Effects) CloseEmptyPullRequest(ctx context.Context, pulls ports.Pulls, run *lifecycle.Run, log *slog.Logger) *lifecycle.Run {
	if err := pulls.ClosePullRequest(ctx, run.Owner, run.Repo, run.PR); err != nil {
		log.Warn("run job: empty draft pull request not closed", "pr", run.PR, "err", err)
		return run
	}
	closed, err := h.records.Update(ctx, run.ID, func(r *lifecycle.Run) error { r.PRClosed = true; return nil })
	if err != nil {
		log.Warn("run job: record closed pull request", "err", err)
		return run
	}
	log.Info("run job: closed the empty draft pull request", "pr", run.PR)
	return closed
}
