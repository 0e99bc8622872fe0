package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/templates"
)

// publisher renders a run's state onto GitHub: the summary comment and the task check runs.
type publisher struct {
	gh      GitHub
	store   *Store
	metrics *Metrics
	log     *slog.Logger
}

// summaryNumber is where the run's comments go: its pull request, else the issue it came from.
func summaryNumber(r *Run) int {
	if r.PR > 0 {
		return r.PR
	}
	return r.Issue
}

// publishSummary creates the run's one summary comment or edits it in place. The comment id is stored
// in the run state as soon as the comment exists; a job that died before storing it finds the comment
// again by its hidden marker, so a run never gets a second summary.
func (p *publisher) publishSummary(ctx context.Context, r *Run) (*Run, error) {
	number := summaryNumber(r)
	if number == 0 {
		return r, nil // nowhere to post (no PR yet); the next publish creates it
	}
	body, err := templates.Render("summary", summaryData(r))
	if err != nil {
		return r, err
	}
	if r.SummaryCommentID != 0 {
		if err := p.gh.EditComment(ctx, r.Owner, r.Repo, r.SummaryCommentID, body); err != nil {
			return r, fmt.Errorf("jobs: edit summary: %w", err)
		}
		return r, nil
	}
	id, url, err := p.gh.FindComment(ctx, r.Owner, r.Repo, number, templates.SummaryMarker(r.ID))
	found := err == nil
	switch {
	case errors.Is(err, ErrGitHubNotFound):
		id, url, err = p.gh.CreateComment(ctx, r.Owner, r.Repo, number, body)
		if err != nil {
			return r, fmt.Errorf("jobs: post summary: %w", err)
		}
	case err != nil:
		return r, fmt.Errorf("jobs: find summary: %w", err)
	}
	r, err = p.store.Update(ctx, r.ID, func(r *Run) error {
		if r.SummaryCommentID == 0 {
			r.SummaryCommentID, r.SummaryURL = id, url
		}
		return nil
	})
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

// templateState maps a run status to the summary's wording.
func templateState(s RunStatus) string {
	switch s {
	case StatusQueued:
		return templates.RunQueued
	case StatusRunning:
		return templates.RunRunning
	case StatusParked:
		return templates.RunParked
	case StatusSucceeded:
		return templates.RunDone
	case StatusFailed:
		return templates.RunFailed
	case StatusAborted:
		return templates.RunAborted
	}
	return string(s)
}

func summaryData(r *Run) templates.Summary {
	s := templates.Summary{
		RunID: r.ID, Source: r.Source, SourceURL: r.SourceURL, Branch: r.Branch, State: templateState(r.Status),
		Error: r.Error, AbortedBy: r.AbortedBy, PRURL: r.PRURL,
	}
	if r.RepoURL != "" {
		s.BranchURL = r.RepoURL + "/tree/" + r.Branch
	}
	for _, t := range r.Tasks {
		tt := templates.Task{ID: t.ID, Title: t.Title, Status: t.Status, Attempts: t.Attempts, Duration: t.Duration,
			Checkpoint: t.Checkpoint, CheckRunURL: t.CheckRunURL}
		if t.Checkpoint != "" && r.RepoURL != "" {
			tt.CheckpointURL = r.RepoURL + "/commit/" + t.Checkpoint
		}
		s.Tasks = append(s.Tasks, tt)
		s.Usage.InputTokens += t.InputTokens
		s.Usage.OutputTokens += t.OutputTokens
		s.Usage.CostUSD += t.CostUSD
	}
	if r.Status == StatusParked && len(r.Parked) > 0 {
		s.ParkedTask = r.Parked[0].TaskID
		if t := r.Task(s.ParkedTask); t != nil {
			s.EscalationURL = t.EscalationURL
		}
	}
	return s
}

// Reporter is the runner.Reporter of a job: it turns the engine's events into check runs, the summary
// comment and escalation comments, and records every task's progress in the run state as it goes.
// It is used by one job at a time (under the branch lock), from the engine's goroutine.
type Reporter struct {
	publisher
	runID string
	run   *Run
	agent string

	head        string
	maxAttempts int
	// This job's attempt history per task, for the check runs' text.
	attempts map[string][]templates.Attempt
	guidance map[string]string
	verify   map[string][]verify.Result
}

// NewReporter returns the reporter of one job of the run.
func NewReporter(gh GitHub, store *Store, metrics *Metrics, log *slog.Logger, run *Run) *Reporter {
	if log == nil {
		log = slog.Default()
	}
	return &Reporter{
		publisher: publisher{gh: gh, store: store, metrics: metrics, log: log},
		runID:     run.ID, run: run, agent: run.Agent, head: run.Head,
		attempts: map[string][]templates.Attempt{}, guidance: map[string]string{}, verify: map[string][]verify.Result{},
	}
}

// Run is the run state as the reporter last wrote or read it.
func (r *Reporter) Run() *Run { return r.run }

// Report handles one engine event. An error stops the run; the job is retried and carries on from the
// branch and the state, which is why every step here is safe to repeat.
func (r *Reporter) Report(ctx context.Context, ev runner.Event) error {
	var err error
	switch ev.Type {
	case runner.EventRunStarted:
		err = r.runStarted(ctx, ev)
	case runner.EventTaskStarted:
		err = r.taskStarted(ctx, ev)
	case runner.EventTaskDecided:
		if ev.Decision != nil && ev.Decision.Kind == runner.DecisionRetry {
			r.guidance[ev.TaskID] = ev.Decision.Guidance
		}
	case runner.EventAttemptStarted:
		err = r.attemptStarted(ctx, ev)
	case runner.EventAgentFinished:
		err = r.agentFinished(ctx, ev)
	case runner.EventVerifyFinished:
		r.verify[ev.TaskID] = ev.Verify
		if a := r.lastAttempt(ev.TaskID); a != nil {
			a.Verify = commands(ev.Verify)
		}
	case runner.EventAttemptFailed:
		err = r.attemptFailed(ctx, ev)
	case runner.EventTaskCheckpointed:
		err = r.taskCheckpointed(ctx, ev)
	case runner.EventTaskParked:
		err = r.taskParked(ctx, ev)
	case runner.EventTaskSkipped:
		err = r.taskSkipped(ctx, ev)
	case runner.EventTaskBlocked:
		err = r.update(ctx, func(run *Run) error {
			if t := run.Task(ev.TaskID); t != nil {
				t.Note = ev.Message
			}
			return nil
		})
	case runner.EventRunFinished:
		if ev.Outcome != nil && ev.Outcome.Head != "" {
			r.head = ev.Outcome.Head
		}
	}
	if err != nil {
		return fmt.Errorf("jobs: %s %s: %w", ev.Type, ev.TaskID, err)
	}
	return nil
}

func (r *Reporter) update(ctx context.Context, fn func(*Run) error) error {
	run, err := r.store.Update(ctx, r.runID, fn)
	if err != nil {
		return err
	}
	r.run = run
	return nil
}

func (r *Reporter) summary(ctx context.Context) error {
	run, err := r.publishSummary(ctx, r.run)
	if run != nil {
		r.run = run
	}
	return err
}

func (r *Reporter) runStarted(ctx context.Context, ev runner.Event) error {
	r.head = ev.Commit
	r.maxAttempts = ev.MaxAttempts
	err := r.update(ctx, func(run *Run) error {
		old := map[string]TaskState{}
		for _, t := range run.Tasks {
			old[t.ID] = t
		}
		tasks := make([]TaskState, 0, len(ev.Tasks))
		for _, tr := range ev.Tasks {
			t, ok := old[tr.ID]
			if !ok {
				t = TaskState{ID: tr.ID, Status: templates.StatusPending}
			}
			t.Title = tr.Title
			switch tr.Status {
			case runner.TaskDone:
				if t.Status != templates.StatusPassed {
					t.Status = templates.StatusPassed
					t.Note = tr.Note
				}
				if tr.Commit != "" {
					t.Checkpoint = tr.Commit
				}
			case runner.TaskSkipped:
				t.Status = templates.StatusSkipped
			case runner.TaskPending:
				if t.Status == templates.StatusRunning {
					t.Status = templates.StatusPending // a job died while it ran
				}
			}
			tasks = append(tasks, t)
		}
		run.Tasks = tasks
		run.Head = ev.Commit
		return nil
	})
	if err != nil {
		return err
	}
	return r.summary(ctx)
}

func (r *Reporter) taskStarted(ctx context.Context, ev runner.Event) error {
	delete(r.attempts, ev.TaskID)
	if ev.MaxAttempts > 0 {
		r.maxAttempts = ev.MaxAttempts
	}
	err := r.update(ctx, func(run *Run) error {
		t := run.Task(ev.TaskID)
		if t == nil {
			return fmt.Errorf("task %s is not in the run", ev.TaskID)
		}
		if t.Status != templates.StatusEscalated {
			t.Status = templates.StatusRunning
		}
		return nil
	})
	if err != nil {
		return err
	}
	if t := r.run.Task(ev.TaskID); t.CheckRunID == 0 {
		if err := r.openCheckRun(ctx, ev); err != nil {
			return err
		}
	}
	return r.summary(ctx)
}

// openCheckRun creates a new in-progress check run for the task and stores its id at once.
func (r *Reporter) openCheckRun(ctx context.Context, ev runner.Event) error {
	t := r.run.Task(ev.TaskID)
	data := r.checkRunData(t, templates.StatusRunning, ev.Attempt, "")
	sum, err := templates.Render("checkrun_summary", data)
	if err != nil {
		return err
	}
	id, url, err := r.gh.CreateCheckRun(ctx, r.run.Owner, r.run.Repo, CheckRun{
		Name: CheckRunName(t.ID, t.Title), HeadSHA: r.head, Status: CheckInProgress,
		ExternalID: r.runID + "/" + t.ID, DetailsURL: r.run.PRURL, Title: "Running", Summary: sum,
	})
	if err != nil {
		return fmt.Errorf("create check run: %w", err)
	}
	return r.update(ctx, func(run *Run) error {
		if t := run.Task(ev.TaskID); t != nil {
			t.CheckRunID, t.CheckRunURL, t.CheckRunDone = id, url, false
		}
		return nil
	})
}

// CheckRunName is the name of a task's check run: "akira: <id> <title>", at most 100 characters.
func CheckRunName(taskID, title string) string {
	name := strings.Join(strings.Fields("akira: "+taskID+" "+title), " ")
	if r := []rune(name); len(r) > 100 {
		name = string(r[:99]) + "…"
	}
	return name
}

func (r *Reporter) lastAttempt(taskID string) *templates.Attempt {
	as := r.attempts[taskID]
	if len(as) == 0 {
		return nil
	}
	return &as[len(as)-1]
}

func (r *Reporter) attemptStarted(ctx context.Context, ev runner.Event) error {
	if ev.MaxAttempts > 0 {
		r.maxAttempts = ev.MaxAttempts
	}
	r.attempts[ev.TaskID] = append(r.attempts[ev.TaskID], templates.Attempt{Number: ev.Attempt, Guidance: r.guidance[ev.TaskID]})
	delete(r.guidance, ev.TaskID)
	err := r.update(ctx, func(run *Run) error {
		if t := run.Task(ev.TaskID); t != nil {
			t.Status = templates.StatusRunning
			t.Attempts = ev.Attempt
		}
		return nil
	})
	if err != nil {
		return err
	}
	t := r.run.Task(ev.TaskID)
	if t.CheckRunID == 0 || t.CheckRunDone {
		// A new round after a retry decision gets a new check run: a completed one cannot be reopened.
		return r.openCheckRun(ctx, ev)
	}
	return r.updateCheckRun(ctx, t, templates.StatusRunning, ev.Attempt, "", CheckRun{
		Status: CheckInProgress, Title: fmt.Sprintf("Attempt %d of %d", ev.Attempt, r.maxAttempts)})
}

func (r *Reporter) agentFinished(ctx context.Context, ev runner.Event) error {
	if a := r.lastAttempt(ev.TaskID); a != nil {
		a.Duration = ev.Duration
		if ev.Message != "" {
			a.Error = ev.Message
		}
	}
	if ev.Usage == nil || (ev.Usage.InputTokens == 0 && ev.Usage.OutputTokens == 0 && ev.Usage.CostUSD == 0) {
		return nil
	}
	r.metrics.usage(ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CostUSD)
	return r.update(ctx, func(run *Run) error {
		if t := run.Task(ev.TaskID); t != nil {
			t.InputTokens += ev.Usage.InputTokens
			t.OutputTokens += ev.Usage.OutputTokens
			t.CostUSD += ev.Usage.CostUSD
		}
		return nil
	})
}

func (r *Reporter) attemptFailed(ctx context.Context, ev runner.Event) error {
	if a := r.lastAttempt(ev.TaskID); a != nil {
		a.Output = ev.Feedback
		if len(ev.Verify) == 0 && a.Error == "" {
			a.Error = ev.Message
		}
	}
	t := r.run.Task(ev.TaskID)
	if t == nil || t.CheckRunID == 0 || t.CheckRunDone {
		return nil
	}
	return r.updateCheckRun(ctx, t, templates.StatusRunning, ev.Attempt, ev.Message, CheckRun{
		Status: CheckInProgress, Title: fmt.Sprintf("Attempt %d of %d failed", ev.Attempt, r.maxAttempts),
		Annotations: annotations(ev.Verify)})
}

func (r *Reporter) taskCheckpointed(ctx context.Context, ev runner.Event) error {
	r.head = ev.Commit
	err := r.update(ctx, func(run *Run) error {
		if t := run.Task(ev.TaskID); t != nil {
			t.Status, t.Checkpoint, t.Note = templates.StatusPassed, ev.Commit, ev.Message
			if ev.Attempt > 0 {
				t.Attempts = ev.Attempt
			}
			t.Duration = ev.Duration
		}
		run.Head = ev.Commit
		return nil
	})
	if err != nil {
		return err
	}
	t := r.run.Task(ev.TaskID)
	r.metrics.task("passed", ev.Duration.Seconds(), t.Attempts)
	title := "Verified"
	if ev.Message != "" {
		title = "Approved"
	}
	if err := r.finishCheckRun(ctx, t, templates.StatusPassed, ev.Message, CheckRun{Conclusion: ConclusionSuccess, Title: title}); err != nil {
		return err
	}
	return r.summary(ctx)
}

func (r *Reporter) taskSkipped(ctx context.Context, ev runner.Event) error {
	err := r.update(ctx, func(run *Run) error {
		if t := run.Task(ev.TaskID); t != nil {
			t.Status, t.Note = templates.StatusSkipped, ev.Message
		}
		run.Parked = removeParked(run.Parked, ev.TaskID)
		return nil
	})
	if err != nil {
		return err
	}
	t := r.run.Task(ev.TaskID)
	r.metrics.task("skipped", 0, t.Attempts)
	if err := r.finishCheckRun(ctx, t, templates.StatusSkipped, ev.Message, CheckRun{Conclusion: ConclusionNeutral, Title: "Skipped"}); err != nil {
		return err
	}
	return r.summary(ctx)
}

func removeParked(ps []Parked, taskID string) []Parked {
	out := ps[:0]
	for _, p := range ps {
		if p.TaskID != taskID {
			out = append(out, p)
		}
	}
	return out
}

// taskParked records the escalation, turns the check run to action_required with the buttons and
// posts the escalation comment, once per escalation: the engine reports a task that stays parked
// across jobs again (reason awaiting_decision), which must not post anything new.
func (r *Reporter) taskParked(ctx context.Context, ev runner.Event) error {
	esc := ev.Escalation
	if esc == nil {
		esc = &runner.Escalation{TaskID: ev.TaskID, Title: ev.TaskTitle, Summary: ev.Message}
	}
	fresh := esc.Reason != "awaiting_decision"
	err := r.update(ctx, func(run *Run) error {
		t := run.Task(ev.TaskID)
		if t == nil {
			return fmt.Errorf("task %s is not in the run", ev.TaskID)
		}
		t.Status = templates.StatusEscalated
		if esc.Attempts > 0 {
			t.Attempts = esc.Attempts
		}
		if fresh || run.ParkedTask(t.ID) == nil {
			t.Escalations++
			t.EscalationCommentID, t.EscalationURL = 0, ""
			t.Note = esc.Summary
			run.Parked = append(removeParked(run.Parked, t.ID), Parked{TaskID: t.ID, Attempt: esc.Attempts,
				HeadSHA: esc.HeadSHA, Reason: esc.Reason, Summary: esc.Summary, At: time.Now().UTC()})
		}
		return nil
	})
	if err != nil {
		return err
	}
	t := r.run.Task(ev.TaskID)
	if !t.CheckRunDone || fresh {
		if fresh {
			r.metrics.escalated()
			r.metrics.task("escalated", 0, esc.Attempts)
		}
		if err := r.finishCheckRun(ctx, t, templates.StatusEscalated, reasonText(esc), CheckRun{
			Conclusion: ConclusionActionRequired, Title: "Needs a decision", Buttons: EscalationButtons(),
			Annotations: annotations(esc.Verify)}); err != nil {
			return err
		}
	}
	if t.EscalationCommentID == 0 {
		if err := r.postEscalation(ctx, t, esc); err != nil {
			return err
		}
	}
	return r.summary(ctx)
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
	default:
		why = esc.Reason
	}
	if esc.Summary != "" && why != "" {
		return why + ": " + esc.Summary
	}
	return why + esc.Summary
}

// escalationRoundMarker tells escalations of the same task apart, so that after a crash the comment
// of this very escalation is found instead of posted twice.
func escalationRoundMarker(runID, taskID string, round int) string {
	return fmt.Sprintf("<!-- akira:escalation-round run=%s task=%s round=%d -->", runID, taskID, round)
}

func (r *Reporter) postEscalation(ctx context.Context, t *TaskState, esc *runner.Escalation) error {
	data := templates.Escalation{
		RunID: r.runID, TaskID: t.ID, TaskTitle: t.Title, Attempts: t.Attempts, MaxAttempts: r.maxAttempts,
		Reason: reasonText(esc), CheckRunURL: t.CheckRunURL, Buttons: t.CheckRunID != 0,
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
		return err
	}
	marker := escalationRoundMarker(r.runID, t.ID, t.Escalations)
	body += marker + "\n"
	number := summaryNumber(r.run)
	id, url, err := r.gh.FindComment(ctx, r.run.Owner, r.run.Repo, number, marker)
	if errors.Is(err, ErrGitHubNotFound) {
		id, url, err = r.gh.CreateComment(ctx, r.run.Owner, r.run.Repo, number, body)
	}
	if err != nil {
		return fmt.Errorf("escalation comment: %w", err)
	}
	return r.update(ctx, func(run *Run) error {
		if t := run.Task(t.ID); t != nil {
			t.EscalationCommentID, t.EscalationURL = id, url
		}
		return nil
	})
}

// checkRunData is the template data of a task's check run.
func (r *Reporter) checkRunData(t *TaskState, status string, attempt int, reason string) templates.CheckRun {
	if attempt == 0 {
		attempt = t.Attempts
	}
	d := templates.CheckRun{
		RunID: r.runID, TaskID: t.ID, TaskTitle: t.Title, Status: status, Attempt: attempt, MaxAttempts: r.maxAttempts,
		Reason: reason, Verify: commands(r.verify[t.ID]), Agent: r.agent, Duration: t.Duration,
		Usage:    templates.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD},
		Attempts: r.attempts[t.ID],
	}
	if status == templates.StatusPassed {
		d.Checkpoint = t.Checkpoint
		if r.run.RepoURL != "" && t.Checkpoint != "" {
			d.CheckpointURL = r.run.RepoURL + "/commit/" + t.Checkpoint
		}
	}
	return d
}

// updateCheckRun sends cr with the output rendered from the task's state.
func (r *Reporter) updateCheckRun(ctx context.Context, t *TaskState, status string, attempt int, reason string, cr CheckRun) error {
	data := r.checkRunData(t, status, attempt, reason)
	sum, err := templates.Render("checkrun_summary", data)
	if err != nil {
		return err
	}
	text, err := templates.Render("checkrun_text", data)
	if err != nil {
		return err
	}
	cr.Summary, cr.Text = sum, text
	if err := r.gh.UpdateCheckRun(ctx, r.run.Owner, r.run.Repo, t.CheckRunID, cr); err != nil {
		return fmt.Errorf("update check run: %w", err)
	}
	return nil
}

// finishCheckRun completes the task's check run (creating one if the task never had one) and records
// that it is completed.
func (r *Reporter) finishCheckRun(ctx context.Context, t *TaskState, status, reason string, cr CheckRun) error {
	if t.CheckRunID == 0 {
		if err := r.openCheckRun(ctx, runner.Event{TaskID: t.ID, Attempt: t.Attempts}); err != nil {
			return err
		}
		t = r.run.Task(t.ID)
	}
	if err := r.updateCheckRun(ctx, t, status, t.Attempts, reason, cr); err != nil {
		return err
	}
	return r.update(ctx, func(run *Run) error {
		if t := run.Task(t.ID); t != nil {
			t.CheckRunDone = true
		}
		return nil
	})
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
func annotations(rs []verify.Result) []Annotation {
	var out []Annotation
	for _, v := range rs {
		if v.Passed() {
			continue
		}
		found := v.Annotations
		if len(found) == 0 {
			found = verify.ParseAnnotations(v.Output)
		}
		for _, a := range found {
			out = append(out, Annotation{Path: a.Path, StartLine: a.StartLine, EndLine: a.EndLine, Level: a.Level,
				Message: a.Message, Title: v.Command})
		}
	}
	return out
}
