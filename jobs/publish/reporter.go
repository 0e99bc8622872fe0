package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/templates"
)

// ReporterGitHub is what the reporter does on GitHub: check runs, comments and the run's pull request.
type ReporterGitHub interface {
	ports.Checks
	ports.Comments
	ports.Pulls
}

// Reporter is the runner.Reporter of a job: for each engine event it applies the lifecycle's transition
// to the stored run (jobs/lifecycle), then performs the effects the transition returns on GitHub
// (perform, with what this job knows of the attempts). It is used by one job at a time (under the
// branch lock), from the engine's goroutine.
type Reporter struct {
	gh  ReporterGitHub
	pub publisher
	// store keeps the attempts' logs and the tasks' durations (publisher keeps the run's record).
	store   *store.Store
	metrics *metrics.Metrics
	runID   string
	run     *lifecycle.Run

	head        string
	maxAttempts int
	// This job's attempt history per task, for the check runs' text.
	attempts map[string][]templates.Attempt
	guidance map[string]string
	verify   map[string][]verify.Result
	verdicts map[string]*templates.Verdict
	// judging says the run has an acceptance judge (the check runs say who reads the criteria).
	judging bool
	// logs is each task's current attempt's log, kept (masked) as it grows and when the attempt ends,
	// so that a worker that dies mid-attempt leaves the log as far as it went.
	logs map[string]*strings.Builder
	// attemptBase is, per task, the attempts made by jobs that died on it: the engine counts this
	// job's attempts from 1, and they are numbered after those (the dead attempts' logs are kept).
	attemptBase map[string]int
	// timelines keeps the attempts' timelines (Timeline), numbered as attemptBase numbers them.
	timelines    *attemptTimelines
	masker       *store.Masker
	logRetention time.Duration
	// publicURL is the dashboard's address: a check run's details link to the task's page there.
	publicURL string
	// notify, when set, tells the operator's sinks about an event of the run.
	notify func(ctx context.Context, event, occasion string, data templates.Notification)
	now    func() time.Time
	// lastSummary is when this job last edited the summary (progress edits are rate-limited).
	lastSummary time.Time
	// summaryEvery is the least time between two edits of the summary for progress or a task's end
	// (MinSummaryInterval).
	summaryEvery time.Duration

	// mu serialises the engine's events with the held-back summary edit (flushSummary).
	mu sync.Mutex
	// summaryDue says a task's end is not on the summary yet: the edit was held back because the
	// summary was edited less than MinSummaryInterval ago, and flushTimer makes it when the interval
	// is over, unless an edit of the job's comes first. A job that ends before (a crash included)
	// leaves it to the run's next summary: the end of the job's transition, or the next job's plan.
	summaryDue bool
	flushTimer *time.Timer
	closed     bool
	// announced is, per task, the attempt its check run was opened for: the start of that attempt
	// changes nothing on it.
	announced map[string]int

	// The reporter's concerns, each a small type over the state above.
	logBook *attemptLogs // attempt logs, kept as they grow
	checks  *checkRuns   // a check run per task
	sums    *summaries   // the summary comment, rate-limited
}

// attemptLogs keeps each attempt's log in the store, masked, as it grows and when the attempt ends.
type attemptLogs struct{ *Reporter }

// checkRuns opens, updates and concludes a task's check run, and the environment's.
type checkRuns struct{ *Reporter }

// summaries edits the run's summary comment for progress and a task's end, at most every
// summaryEvery, with a held-back edit flushed later.
type summaries struct{ *Reporter }

// NewReporter returns the reporter of one job of the run.
func NewReporter(gh ReporterGitHub, st *store.Store, metrics *metrics.Metrics, log *slog.Logger, run *lifecycle.Run) *Reporter {
	if log == nil {
		log = slog.Default()
	}
	r := &Reporter{
		gh: gh, pub: publisher{gh: gh, store: st.Records, log: log}, store: st, metrics: metrics,
		runID: run.ID, run: run, head: run.Head, maxAttempts: run.MaxAttempts,
		attempts: map[string][]templates.Attempt{}, guidance: map[string]string{}, verify: map[string][]verify.Result{},
		verdicts: map[string]*templates.Verdict{}, logs: map[string]*strings.Builder{}, attemptBase: map[string]int{}, now: time.Now,
		announced: map[string]int{}, summaryEvery: MinSummaryInterval,
	}
	r.logBook, r.checks, r.sums = &attemptLogs{r}, &checkRuns{r}, &summaries{r}
	r.timelines = &attemptTimelines{r: r, base: map[string]int{}}
	return r
}

// Reporter is the reporter of a run job: the worker's judge, masker, log retention, dashboard
// address and notification sinks are the run's.
func (h *Effects) Reporter(gh ReporterGitHub, log *slog.Logger, run *lifecycle.Run) *Reporter {
	rep := NewReporter(gh, h.d.Store, h.d.Metrics, log, run)
	rep.judging = h.d.Judge != nil
	rep.masker, rep.logRetention, rep.publicURL = h.d.Masker, h.d.LogRetention, h.d.PublicURL
	rep.notify = func(ctx context.Context, event, occasion string, data templates.Notification) {
		h.NotifyRun(ctx, rep.Run(), event, occasion, data)
	}
	return rep
}

// Run is the run state as the reporter last wrote or read it.
func (r *Reporter) Run() *lifecycle.Run { return r.run }

// Report handles one engine event. An error stops the run; the job is retried and carries on from the
// branch and the state, which is why every step here is safe to repeat.
func (r *Reporter) Report(ctx context.Context, ev runner.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if base := r.attemptBase[ev.TaskID]; base > 0 {
		ev = shiftAttempts(ev, base)
	}
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
		if err = r.recordRefused(ctx, ev, "agent"); err == nil {
			err = r.agentFinished(ctx, ev)
		}
	case runner.EventVerifyStarted:
		what := "verifying"
		if ev.VerifyPlan != nil && len(ev.VerifyPlan.Commands) > 0 {
			what = "verifying: " + ClipText(strings.Join(ev.VerifyPlan.Commands, " && "), 120)
		}
		err = r.sums.progress(ctx, what)
	case runner.EventVerifyFinished:
		if err = r.recordRefused(ctx, ev, "verification"); err != nil {
			break
		}
		r.logBook.logVerify(ev)
		r.logBook.keepPartialLog(ctx, ev.TaskID, ev.Attempt)
		r.verify[ev.TaskID] = ev.Verify
		if a := r.checks.lastAttempt(ev.TaskID); a != nil {
			a.Verify = commands(ev.Verify)
		}
	case runner.EventJudged:
		err = r.judged(ctx, ev)
	case runner.EventAttemptFailed:
		err = r.attemptFailed(ctx, ev)
	case runner.EventTaskCheckpointed:
		err = r.taskCheckpointed(ctx, ev)
	case runner.EventTaskParked:
		err = r.taskParked(ctx, ev)
	case runner.EventTaskSkipped:
		err = r.taskSkipped(ctx, ev)
	case runner.EventTaskBlocked:
		err = r.record(ctx, func(run *lifecycle.Run) error { return RecordBlocked(run, ev) })
	case runner.EventSetupFinished:
		err = r.setupFinished(ctx, ev)
	case runner.EventBaseChecked:
		err = r.baseChecked(ctx, ev)
	case runner.EventAgentUnusable:
		err = r.agentUnusable(ctx, ev)
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

// transition applies an event of the run's lifecycle to the stored run, keeps the result, and returns
// the effects the transition requires; the reporter performs them at once (see perform).
func (r *Reporter) transition(ctx context.Context, ev lifecycle.Event) ([]lifecycle.Effect, error) {
	run, effects, err := r.store.Apply(ctx, r.runID, ev)
	if err != nil {
		return nil, err
	}
	r.run = run
	return effects, nil
}

// record applies a change to the stored run and keeps the result.
func (r *Reporter) record(ctx context.Context, fn func(*lifecycle.Run) error) error {
	run, err := r.store.Update(ctx, r.runID, fn)
	if err != nil {
		return err
	}
	r.run = run
	return nil
}

// progress records the working job's sign of life and shows it, at most every MinSummaryInterval.
func (r *summaries) progress(ctx context.Context, activity string) error {
	now := r.now()
	if err := r.record(ctx, func(run *lifecycle.Run) error {
		run.Activity, run.ActivityAt = activity, now
		return nil
	}); err != nil {
		return err
	}
	return r.progressSummary(ctx)
}

// progressSummary edits the summary for progress alone, unless it was edited less than
// MinSummaryInterval ago.
func (r *summaries) progressSummary(ctx context.Context) error {
	if !r.lastSummary.IsZero() && r.now().Sub(r.lastSummary) < r.summaryEvery {
		return nil
	}
	return r.summary(ctx)
}

// taskSummary shows a task's end on the summary: at once when the summary was last edited
// MinSummaryInterval ago or more, else when that interval is over (a run of fast tasks edits its
// summary once per interval, not once per task).
func (r *summaries) taskSummary(ctx context.Context) error {
	wait := r.summaryEvery - r.now().Sub(r.lastSummary)
	if r.lastSummary.IsZero() || wait <= 0 {
		return r.summary(ctx)
	}
	r.summaryDue = true
	if r.flushTimer == nil {
		// The engine's context ends with the job, and Close stops the timer first.
		fctx := context.WithoutCancel(ctx)
		r.flushTimer = time.AfterFunc(wait, func() { r.flushSummary(fctx) })
	}
	return nil
}

// flushSummary makes the summary edit taskSummary held back, from the job's latest state, unless an
// edit since made it or the job is over.
func (r *summaries) flushSummary(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushTimer = nil
	if r.closed || !r.summaryDue {
		return
	}
	if wait := r.summaryEvery - r.now().Sub(r.lastSummary); wait > 0 {
		// Edited meanwhile by progress, and a task ended since: wait for the interval again.
		r.flushTimer = time.AfterFunc(wait, func() { r.flushSummary(ctx) })
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.summary(ctx); err != nil {
		// The next edit, the job's end or the next job's shows the state: a summary is never final
		// before then.
		r.pub.log.Warn("held-back summary edit failed; the next one shows the state", "err", err)
	}
}

// Close ends the job's use of the reporter: an edit held back is not made after it (the job's end
// publishes the run's state itself).
func (r *Reporter) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.flushTimer != nil {
		r.flushTimer.Stop()
		r.flushTimer = nil
	}
}

func (r *summaries) summary(ctx context.Context) error {
	r.summaryDue = false
	r.lastSummary = r.now()
	run, err := r.pub.publishSummary(ctx, r.run)
	if run != nil {
		r.run = run
	}
	return err
}

// runStarted records the plan and, for a new branch with work to do, opens the run's draft pull
// request from the engine's own workspace branch before the first task.
func (r *Reporter) runStarted(ctx context.Context, ev runner.Event) error {
	r.head = ev.Commit
	if ev.MaxAttempts > 0 {
		r.maxAttempts = ev.MaxAttempts
	}
	running := map[string]bool{}
	for _, t := range r.run.Tasks {
		if t.Status == lifecycle.TaskStatusRunning && t.Attempts > 0 {
			running[t.ID] = true
		}
	}
	effects, err := r.transition(ctx, lifecycle.PlanRead{Engine: ev, Past: r.sums.pastDurations(ctx)})
	if err != nil {
		return err
	}
	// A task a dead job left running is pending again: its attempt ended with that job's worker.
	for _, t := range r.run.Tasks {
		if running[t.ID] && t.Status == lifecycle.TaskStatusPending {
			r.attemptBase[t.ID] = t.Attempts
			r.timelines.shift(t.ID, t.Attempts)
			r.logBook.endInterruptedLog(ctx, t.ID, t.Attempts)
		}
	}
	// A job that died after a task's checkpoint was pushed left its check run in progress; the task
	// is found done from its trailers now, and its check run gets the conclusion it missed.
	for _, t := range r.run.Tasks {
		if t.Status == lifecycle.TaskStatusPassed && t.CheckRunID != 0 && !t.CheckRunDone {
			if err := r.checks.finishCheckRun(ctx, t, lifecycle.TaskStatusPassed, "", ports.CheckRun{Conclusion: ports.ConclusionSuccess, Title: "Verified"}); err != nil {
				return err
			}
		}
	}
	if r.run.PR == 0 && hasWork(ev.Tasks) {
		pr, err := ensurePullRequest(ctx, r.gh, r.run, ev.Tasks)
		if err != nil {
			return err
		}
		if err := r.record(ctx, recordPullRequest(pr)); err != nil {
			return err
		}
	}
	if err := announceFork(ctx, r.store.Dedupe, r.gh, r.run); err != nil {
		return err
	}
	return r.perform(ctx, effects, ev)
}

// pastDurations is the repository's task history for the run's estimate, or nil to keep what the
// run has: the history is read until the run finishes a task of its own, which then joins it (a
// later read would count the run's own tasks twice). The estimate is a courtesy: a failed read
// leaves it unknown and the run goes on.
func (r *summaries) pastDurations(ctx context.Context) []time.Duration {
	for _, t := range r.run.Tasks {
		if t.Attempts > 0 && t.Duration > 0 {
			return nil
		}
	}
	past, err := r.store.TaskDurations(ctx, r.run.Owner, r.run.Repo)
	if err != nil {
		r.pub.log.Warn("task history unavailable; the estimate waits for a finished task", "err", err)
		return nil
	}
	return past
}

// hasWork reports whether any task is left to run.
func hasWork(tasks []runner.TaskResult) bool {
	for _, t := range tasks {
		if t.Status == runner.TaskPending {
			return true
		}
	}
	return false
}

func (r *Reporter) taskStarted(ctx context.Context, ev runner.Event) error {
	delete(r.attempts, ev.TaskID)
	if ev.MaxAttempts > 0 {
		r.maxAttempts = ev.MaxAttempts
	}
	effects, err := r.transition(ctx, lifecycle.TaskStarted{Engine: ev})
	if err != nil {
		return err
	}
	return r.perform(ctx, effects, ev)
}

// openCheckRun creates a new in-progress check run for the task and stores its id at once. It says
// which attempt runs (the next one when attempt is 0, as at the task's start), so that the start of
// that attempt need not update it.
func (r *checkRuns) openCheckRun(ctx context.Context, taskID string, attempt int) error {
	t := r.run.Task(taskID)
	if attempt == 0 {
		attempt = t.Attempts + 1
	}
	sum, err := templates.Render("checkrun_summary", r.checkRunData(t, lifecycle.TaskStatusRunning, attempt, ""))
	if err != nil {
		return err
	}
	title := fmt.Sprintf("Attempt %d", attempt)
	if r.maxAttempts > 0 {
		title += fmt.Sprintf(" of %d", r.maxAttempts)
	}
	cr := ports.CheckRun{
		Name: CheckRunName(t.ID, t.Title), HeadSHA: r.head, Status: ports.CheckInProgress,
		ExternalID: ports.CheckRunExternalID(r.runID, t.ID), DetailsURL: cmp.Or(TaskPageURL(r.publicURL, r.runID, t.ID), r.run.PRURL), Title: title, Summary: sum,
		Buttons: ports.RunningButtons(),
	}
	if t.CheckRunID != 0 && !t.CheckRunDone && t.CheckRunHead == r.head {
		// A job that died left the task's check run open on this very commit: the task goes on there.
		if err := r.gh.UpdateCheckRun(ctx, r.run.Owner, r.run.Repo, t.CheckRunID, cr); err != nil {
			return fmt.Errorf("update check run: %w", err)
		}
		r.announced[taskID] = attempt
		return nil
	}
	// Asked first, stored with the id after: only a create that may have reached GitHub before (the
	// mark left by a job that died, an open check run whose commit is unknown, or a run rebuilt from
	// its branch after Redis lost its record, marks and all) costs a lookup.
	cr.MayExist = t.CheckRunAsked || (t.CheckRunID != 0 && !t.CheckRunDone && t.CheckRunHead == "") || r.run.Rebuilt != ""
	if !t.CheckRunAsked {
		if err := r.record(ctx, recordCheckRunAsked(taskID)); err != nil {
			return err
		}
	}
	id, url, err := r.gh.CreateCheckRun(ctx, r.run.Owner, r.run.Repo, cr)
	if err != nil {
		return fmt.Errorf("create check run: %w", err)
	}
	if err := r.record(ctx, recordCheckRunOpened(taskID, id, url, r.head)); err != nil {
		return err
	}
	r.announced[taskID] = attempt
	return nil
}

func (r *checkRuns) lastAttempt(taskID string) *templates.Attempt {
	as := r.attempts[taskID]
	if len(as) == 0 {
		return nil
	}
	return &as[len(as)-1]
}

// logf adds to the task's current attempt's log.
func (r *attemptLogs) logf(taskID, format string, a ...any) {
	b := r.logs[taskID]
	if b == nil {
		b = &strings.Builder{}
		r.logs[taskID] = b
	}
	fmt.Fprintf(b, format, a...)
}

// shiftAttempts numbers an event's attempt after the base attempts dead jobs made on its task.
func shiftAttempts(ev runner.Event, base int) runner.Event {
	if ev.Attempt > 0 {
		ev.Attempt += base
	}
	if ev.Escalation != nil && ev.Escalation.Attempts > 0 {
		esc := *ev.Escalation
		esc.Attempts += base
		ev.Escalation = &esc
	}
	return ev
}

// interruptedText is what an attempt's log and check run say of an attempt whose worker stopped.
func interruptedText(taskID string, attempt int) string {
	return fmt.Sprintf("attempt %d of task %s ended when its worker stopped", attempt, taskID)
}

// keepPartialLog stores the attempt's log as far as it went, the attempt still running: a worker
// killed now leaves it to be read. A few writes per attempt, at its steps.
func (r *attemptLogs) keepPartialLog(ctx context.Context, taskID string, attempt int) {
	b := r.logs[taskID]
	if b == nil || attempt == 0 {
		return
	}
	text := r.masker.Mask(b.String() + "\n==> (the attempt is still running)\n")
	if err := r.store.SaveLog(ctx, r.runID, taskID, attempt, text, r.logRetention); err != nil {
		r.pub.log.Warn("partial attempt log not kept", "task", taskID, "attempt", attempt, "err", err)
	}
}

// endInterruptedLog ends the log a dead job left of its attempt with why it ended, or writes one that
// says so when nothing was left (Redis lost it, or the job died before writing).
func (r *attemptLogs) endInterruptedLog(ctx context.Context, taskID string, attempt int) {
	end := "\n==> " + strings.ToUpper(interruptedText(taskID, attempt)[:1]) + interruptedText(taskID, attempt)[1:] +
		"; the run went on from its last pushed checkpoint (" + Short(r.head) + ").\n"
	text, err := r.store.Log(ctx, r.runID, taskID, attempt)
	switch {
	case errors.Is(err, store.ErrNoLog):
		text = fmt.Sprintf("==> Run %s, task %s, attempt %d: nothing of its log was kept\n", r.runID, taskID, attempt)
	case err != nil:
		r.pub.log.Warn("interrupted attempt log not read", "task", taskID, "attempt", attempt, "err", err)
		return
	case strings.Contains(text, end):
		return // ended by an earlier try of this job
	}
	text = strings.TrimSuffix(text, "\n==> (the attempt is still running)\n") + end
	if err := r.store.SaveLog(ctx, r.runID, taskID, attempt, text, r.logRetention); err != nil {
		r.pub.log.Warn("interrupted attempt log not kept", "task", taskID, "attempt", attempt, "err", err)
	}
}

func (r *attemptLogs) logVerify(ev runner.Event) {
	r.logf(ev.TaskID, "\n==> Verification\n")
	for _, v := range ev.Verify {
		status := fmt.Sprintf("exit %d", v.ExitCode)
		if v.TimedOut {
			status = "timed out"
		}
		r.logf(ev.TaskID, "\n$ %s\n(%s, %s)\n%s\n", v.Command, status, v.Duration.Round(time.Millisecond), strings.TrimRight(v.Output, "\n"))
	}
}

// keepLog stores the attempt's log, masked, and starts afresh; a log that cannot be kept is a loss
// for later reading, not a reason to stop the run.
func (r *attemptLogs) keepLog(ctx context.Context, taskID string, attempt int, end string) {
	b := r.logs[taskID]
	if b == nil || attempt == 0 {
		return
	}
	delete(r.logs, taskID)
	text := r.masker.Mask(b.String() + "\n==> " + end + "\n")
	if err := r.store.SaveLog(ctx, r.runID, taskID, attempt, text, r.logRetention); err != nil {
		r.pub.log.Warn("attempt log not kept", "task", taskID, "attempt", attempt, "err", err)
	}
}

func (r *Reporter) attemptStarted(ctx context.Context, ev runner.Event) error {
	delete(r.logs, ev.TaskID)
	r.logBook.logf(ev.TaskID, "==> Run %s, task %s (%s), attempt %d, started %s\n", r.runID, ev.TaskID, ev.TaskTitle, ev.Attempt, ev.Time.UTC().Format(time.RFC3339))
	if ev.Feedback != "" {
		r.logBook.logf(ev.TaskID, "\n==> What the agent was told went wrong before\n%s\n", strings.TrimRight(ev.Feedback, "\n"))
	}
	if ev.MaxAttempts > 0 {
		r.maxAttempts = ev.MaxAttempts
	}
	r.attempts[ev.TaskID] = append(r.attempts[ev.TaskID], templates.Attempt{Number: ev.Attempt, Guidance: r.guidance[ev.TaskID], Lessons: ev.Lessons})
	delete(r.guidance, ev.TaskID)
	r.logBook.keepPartialLog(ctx, ev.TaskID, ev.Attempt)
	effects, err := r.transition(ctx, lifecycle.AttemptStarted{Engine: ev})
	if err != nil {
		return err
	}
	return r.perform(ctx, effects, ev)
}

func (r *Reporter) agentFinished(ctx context.Context, ev runner.Event) error {
	failed := ""
	if ev.Message != "" {
		failed = ": " + ev.Message
	}
	r.logBook.logf(ev.TaskID, "\n==> Agent (%s)%s\n%s\n", ev.Duration.Round(time.Millisecond), failed, strings.TrimRight(ev.Output, "\n"))
	r.logBook.keepPartialLog(ctx, ev.TaskID, ev.Attempt)
	if a := r.checks.lastAttempt(ev.TaskID); a != nil {
		a.Duration = ev.Duration
		if ev.Message != "" {
			a.Error = ev.Message
		}
	}
	if ev.Usage == nil || (ev.Usage.InputTokens == 0 && ev.Usage.OutputTokens == 0 && ev.Usage.CostUSD == 0) {
		return nil
	}
	r.metrics.Usage(ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CostUSD)
	return r.record(ctx, func(run *lifecycle.Run) error { return RecordUsage(run, ev) })
}

// judged keeps the judge's verdict for the check run (the attempt's failure or checkpoint that
// follows at once updates it) and its usage and outcome in the run's state.
func (r *Reporter) judged(ctx context.Context, ev runner.Event) error {
	v := &templates.Verdict{MinConfidence: ev.MinConfidence, Error: ev.Message}
	if jv := ev.Verdict; jv != nil {
		v.Model, v.Confidence, v.Accepted, v.Error = jv.Model, jv.Confidence, jv.Passed(ev.MinConfidence), ""
		for _, c := range jv.Criteria {
			v.Criteria = append(v.Criteria, templates.VerdictCriterion{Criterion: c.Criterion, Met: c.Pass, Reason: c.Reason})
		}
	}
	r.verdicts[ev.TaskID] = v
	if a := r.checks.lastAttempt(ev.TaskID); a != nil {
		a.Verdict = v
	}
	r.logBook.logf(ev.TaskID, "\n==> Acceptance judge\n")
	if v.Error != "" {
		r.logBook.logf(ev.TaskID, "%s\n", v.Error)
	}
	for _, c := range v.Criteria {
		r.logBook.logf(ev.TaskID, "- %s: met=%v: %s\n", c.Criterion, c.Met, c.Reason)
	}
	if v.Error == "" {
		r.logBook.logf(ev.TaskID, "confidence %.2f (at least %.2f), accepted=%v\n", v.Confidence, v.MinConfidence, v.Accepted)
	}
	return r.record(ctx, func(run *lifecycle.Run) error {
		if err := RecordUsage(run, ev); err != nil {
			return err
		}
		if ev.Verdict == nil {
			return nil
		}
		if t := run.EditTask(ev.TaskID); t != nil {
			t.Judgement = &templates.Judgement{Confidence: v.Confidence, Accepted: v.Accepted}
		}
		return nil
	})
}

// tell notifies the operator's sinks, when the job has any.
func (r *Reporter) tell(ctx context.Context, event, occasion string, data templates.Notification) {
	if r.notify != nil {
		r.notify(ctx, event, occasion, data)
	}
}

func (r *Reporter) attemptFailed(ctx context.Context, ev runner.Event) error {
	r.logBook.keepLog(ctx, ev.TaskID, ev.Attempt, "Attempt failed: "+ev.Message)
	if ev.Stalled {
		r.tell(ctx, "stalled", fmt.Sprintf("%s-%d", ev.TaskID, ev.Attempt), templates.Notification{TaskID: ev.TaskID,
			TaskTitle: ev.TaskTitle, Reason: ev.Message})
	}
	if a := r.checks.lastAttempt(ev.TaskID); a != nil {
		a.Output = ev.Feedback
		if len(ev.Verify) == 0 && a.Error == "" {
			a.Error = ev.Message
		}
	}
	t := r.run.Task(ev.TaskID)
	if t == nil || t.CheckRunID == 0 || t.CheckRunDone {
		return nil
	}
	return r.checks.updateCheckRun(ctx, t, lifecycle.TaskStatusRunning, ev.Attempt, ev.Message, ports.CheckRun{
		Status: ports.CheckInProgress, Title: fmt.Sprintf("Attempt %d of %d failed", ev.Attempt, r.maxAttempts),
		Annotations: annotations(ev.Verify)})
}

func (r *Reporter) taskCheckpointed(ctx context.Context, ev runner.Event) error {
	r.logBook.keepLog(ctx, ev.TaskID, ev.Attempt, "Checkpoint "+ev.Commit)
	r.head = ev.Commit
	effects, err := r.transition(ctx, lifecycle.TaskCheckpointed{Engine: ev})
	if err != nil {
		return err
	}
	// A task approved by a person was not finished by its agent alone: its time is no measure.
	if ev.Attempt > 0 && ev.Message == "" {
		if err := r.store.RecordTaskDuration(ctx, r.run.Owner, r.run.Repo, ev.Duration); err != nil {
			r.pub.log.Warn("task duration not kept for later estimates", "err", err)
		}
	}
	return r.perform(ctx, effects, ev)
}

func (r *Reporter) taskSkipped(ctx context.Context, ev runner.Event) error {
	effects, err := r.transition(ctx, lifecycle.TaskSkipped{Engine: ev})
	if err != nil {
		return err
	}
	return r.perform(ctx, effects, ev)
}

// taskParked records the escalation, turns the check run to action_required with the buttons and
// posts the escalation comment, once per escalation: the engine reports a task that stays parked
// across jobs again (reason awaiting_decision), which must not post anything new.
func (r *Reporter) taskParked(ctx context.Context, ev runner.Event) error {
	esc := ev.Escalation
	if esc == nil {
		esc = &runner.Escalation{TaskID: ev.TaskID, Title: ev.TaskTitle, Summary: ev.Message}
		ev.Escalation = esc
	}
	r.logBook.keepLog(ctx, ev.TaskID, esc.Attempts, "Parked: "+esc.Summary)
	effects, err := r.transition(ctx, lifecycle.TaskParked{Escalation: esc, Fresh: esc.Reason != "awaiting_decision"})
	if err != nil {
		return err
	}
	return r.perform(ctx, effects, ev)
}

// Perform carries out the effects of an engine event's transition, in order, with what this job
// knows of the task's attempts for the check run's text.
func (r *Reporter) perform(ctx context.Context, effects []lifecycle.Effect, ev runner.Event) error {
	for _, e := range effects {
		var t *lifecycle.TaskState
		if len(e.TaskIDs) > 0 {
			if t = r.run.Task(e.TaskIDs[0]); t == nil {
				return fmt.Errorf("task %s is not in the run", e.TaskIDs[0])
			}
		}
		var err error
		switch e.Kind {
		case lifecycle.EffectMetric:
			switch e.Event {
			case lifecycle.TaskStatusPassed:
				r.metrics.Task(e.Event, ev.Duration.Seconds(), t.Attempts)
			case lifecycle.TaskStatusEscalated:
				r.metrics.Escalated()
				r.metrics.Task(e.Event, 0, ev.Escalation.Attempts)
			default:
				r.metrics.Task(e.Event, 0, t.Attempts)
			}
		case lifecycle.EffectNotify:
			r.tell(ctx, e.Event, e.Occasion, templates.Notification{TaskID: t.ID, TaskTitle: t.Title,
				Attempts: ev.Escalation.Attempts, Reason: e.Reason})
		case lifecycle.EffectCheckRun:
			err = r.checks.checkRunPhase(ctx, t, e.Phase, ev)
		case lifecycle.EffectEscalation:
			err = r.escalationComment(ctx, t, ev.Escalation)
		case lifecycle.EffectSummary:
			switch ev.Type {
			case runner.EventTaskStarted:
				err = r.sums.progressSummary(ctx)
			case runner.EventAttemptStarted:
				err = r.sums.progress(ctx, fmt.Sprintf("the agent is working on attempt %d", ev.Attempt))
			case runner.EventTaskCheckpointed, runner.EventTaskSkipped:
				err = r.sums.taskSummary(ctx)
			default:
				err = r.sums.summary(ctx)
			}
		default:
			err = fmt.Errorf("the reporter does not perform %s effects", e.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRunPhase shows the task's new state on its check run.
func (r *checkRuns) checkRunPhase(ctx context.Context, t *lifecycle.TaskState, phase string, ev runner.Event) error {
	switch phase {
	case lifecycle.PhaseOpen:
		return r.openCheckRun(ctx, t.ID, ev.Attempt)
	case lifecycle.PhaseAttempt:
		if t.CheckRunID == 0 || t.CheckRunDone {
			// A new round after a retry decision gets a new check run: a completed one cannot be reopened.
			return r.openCheckRun(ctx, t.ID, ev.Attempt)
		}
		announced, ok := r.announced[t.ID]
		delete(r.announced, t.ID)
		if ok && announced == ev.Attempt {
			return nil // opened for this very attempt a moment ago: one update per change of state
		}
		return r.updateCheckRun(ctx, t, lifecycle.TaskStatusRunning, ev.Attempt, "", ports.CheckRun{
			Status: ports.CheckInProgress, Title: fmt.Sprintf("Attempt %d of %d", ev.Attempt, r.maxAttemptsOf(t.ID))})
	case lifecycle.PhasePassed:
		title := "Verified"
		switch {
		case ev.Message != "":
			title = "Approved"
		case ev.Unverified:
			title = "Checkpointed, unverified"
		}
		return r.finishCheckRun(ctx, t, lifecycle.TaskStatusPassed, ev.Message, ports.CheckRun{Conclusion: ports.ConclusionSuccess, Title: title})
	case lifecycle.PhaseSkipped:
		return r.finishCheckRun(ctx, t, lifecycle.TaskStatusSkipped, ev.Message, ports.CheckRun{Conclusion: ports.ConclusionNeutral, Title: "Skipped"})
	case lifecycle.PhaseEscalated:
		esc := ev.Escalation
		return r.finishCheckRun(ctx, t, lifecycle.TaskStatusEscalated, reasonText(esc), ports.CheckRun{
			Conclusion: ports.ConclusionActionRequired, Title: "Needs a decision", Buttons: ports.EscalationButtons(),
			Annotations: annotations(esc.Verify)})
	}
	return fmt.Errorf("unknown check-run phase %q", phase)
}

// escalationComment posts the escalation comment of the task's current round, once per escalation:
// the engine reports a task that stays parked across jobs again (reason awaiting_decision), which
// posts nothing new unless its comment was deleted since.
func (r *Reporter) escalationComment(ctx context.Context, t *lifecycle.TaskState, esc *runner.Escalation) error {
	fresh := esc.Reason != "awaiting_decision"
	if t.EscalationCommentID != 0 && !fresh {
		_, _, err := r.gh.FindComment(ctx, r.run.Owner, r.run.Repo, SummaryNumber(r.run), EscalationRoundMarker(r.run.ID, t.ID, t.Escalations))
		if errors.Is(err, ports.ErrGitHubNotFound) {
			if err := r.record(ctx, recordEscalationComment(t.ID, 0, "")); err != nil {
				return err
			}
			t = r.run.Task(t.ID)
		} else if err != nil {
			return fmt.Errorf("find escalation comment: %w", err)
		}
	}
	if t.EscalationCommentID != 0 {
		return nil
	}
	body, err := escalationBody(r.run, t, esc, r.maxAttempts)
	if err != nil {
		return err
	}
	id, url, err := postEscalation(ctx, r.gh, r.run, t, body)
	if err != nil {
		return err
	}
	return r.record(ctx, recordEscalationComment(t.ID, id, url))
}

// checkRunData is the template data of a task's check run.
func (r *checkRuns) checkRunData(t *lifecycle.TaskState, status string, attempt int, reason string) templates.CheckRun {
	if attempt == 0 {
		attempt = t.Attempts
	}
	d := templates.CheckRun{
		RunID: r.runID, TaskID: t.ID, TaskTitle: t.Title, Status: status, Attempt: attempt, MaxAttempts: r.maxAttemptsOf(t.ID),
		Reason: reason, Verify: commands(r.verify[t.ID]), Agent: r.run.Agent, Duration: t.Duration,
		Usage:    templates.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD, Estimated: t.UsageEstimated},
		Attempts: r.interruptedAttempts(t), Accept: t.Accept, Unverified: t.Unverified,
		Judging: r.judging, Verdict: r.verdicts[t.ID],
	}
	if status == lifecycle.TaskStatusPassed {
		d.Checkpoint, d.Workflows = t.Checkpoint, t.Workflows
		if r.run.RepoURL != "" && t.Checkpoint != "" {
			d.CheckpointURL = r.run.RepoURL + "/commit/" + t.Checkpoint
		}
	}
	return d
}

// maxAttemptsOf is the task's last allowed attempt in this job: the engine's limit after those of
// dead jobs.
func (r *checkRuns) maxAttemptsOf(taskID string) int {
	if r.maxAttempts == 0 {
		return 0
	}
	return r.maxAttempts + r.attemptBase[taskID]
}

// interruptedAttempts is this job's attempts of the task for its check run, after the attempts dead
// jobs left of it, each with a link to its kept log.
func (r *checkRuns) interruptedAttempts(t *lifecycle.TaskState) []templates.Attempt {
	mine := r.attempts[t.ID]
	var out []templates.Attempt
	for _, n := range t.Interrupted {
		if slices.ContainsFunc(mine, func(a templates.Attempt) bool { return a.Number == n }) {
			continue
		}
		out = append(out, templates.Attempt{Number: n, Error: interruptedText(t.ID, n), LogURL: LogURL(r.publicURL, r.runID, t.ID, n)})
	}
	return append(out, mine...)
}

// updateCheckRun sends cr with the output rendered from the task's state.
func (r *checkRuns) updateCheckRun(ctx context.Context, t *lifecycle.TaskState, status string, attempt int, reason string, cr ports.CheckRun) error {
	data := r.checkRunData(t, status, attempt, reason)
	sum, err := templates.Render("checkrun_summary", data)
	if err != nil {
		return err
	}
	text, err := templates.Render("checkrun_text", data)
	if err != nil {
		return err
	}
	if len(t.Blocked) > 0 {
		section, err := templates.Render("blocked_checkrun", templates.BlockedSection{Blocked: t.Blocked})
		if err != nil {
			return err
		}
		text += "\n" + section
	}
	cr.Summary, cr.Text = sum, text
	if err := r.gh.UpdateCheckRun(ctx, r.run.Owner, r.run.Repo, t.CheckRunID, cr); err != nil {
		return fmt.Errorf("update check run: %w", err)
	}
	return nil
}

// finishCheckRun completes the task's check run (creating one if the task never had one) and records
// that it is completed.
func (r *checkRuns) finishCheckRun(ctx context.Context, t *lifecycle.TaskState, status, reason string, cr ports.CheckRun) error {
	if t.CheckRunID == 0 {
		if err := r.openCheckRun(ctx, t.ID, t.Attempts); err != nil {
			return err
		}
		t = r.run.Task(t.ID)
	}
	if err := r.updateCheckRun(ctx, t, status, t.Attempts, reason, cr); err != nil {
		return err
	}
	return r.record(ctx, recordCheckRunDone(t.ID))
}

// ClipText cuts s to n characters for a one-line status.
func ClipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// TaskPageURL is a task's page on the dashboard at publicURL, with its attempts and their logs; ""
// without a dashboard.
func TaskPageURL(publicURL, runID, taskID string) string {
	if publicURL == "" {
		return ""
	}
	return strings.TrimRight(publicURL, "/") + "/ui/runs/" + url.PathEscape(runID) + "/tasks/" + url.PathEscape(taskID)
}

// recordRefused keeps what the egress proxy refused the attempt, for the check run, the summary and
// the API.
func (r *Reporter) recordRefused(ctx context.Context, ev runner.Event, who string) error {
	if len(ev.Blocked) == 0 {
		return nil
	}
	return r.record(ctx, recordRefused(ev.TaskID, ev.Attempt, who, ev.Blocked))
}
