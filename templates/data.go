package templates

import (
	"fmt"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/akira-bot/akira/internal/cost"
)

// Task is one row of the run summary.
type Task struct {
	ID    string
	Title string
	// Status is one of the Status constants.
	Status   string
	Attempts int
	Duration time.Duration
	// Checkpoint is the full SHA of the task's checkpoint commit, empty until it verifies.
	Checkpoint    string
	CheckpointURL string
	CheckRunURL   string
	// LogURL is the task's page on the dashboard, with its attempts' full logs.
	LogURL string
	// Usage is what the task's agent reported using (shown when any task reported some).
	Usage Usage
	// Unverified: checkpointed with no verification command run and no acceptance criteria stated.
	Unverified bool
	// Judgement is the acceptance judge's latest verdict on the task, when one judged it.
	Judgement *Judgement
	// Sync: the row is the merge of the base, no task of the plan; the totals leave it out (as
	// /akira status and the API do), its attempts and cost count all the same.
	Sync bool
}

// Usage is what the agent consumed; zero fields are unknown and left out. Estimated: the figures
// hold an estimate of the egress proxy's, shown as such.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	Estimated    bool
}

// Tokens is input plus output tokens.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// Known reports whether there is anything to show.
func (u Usage) Known() bool { return u.Tokens() > 0 || u.CostUSD > 0 }

// CI is the pull request's own CI as the summary shows it.
type CI struct {
	Checks []CICheck
	// None says the head showed no check within the grace period; Round and MaxRounds count the fix
	// rounds; Reran names the checks re-run once as flaky.
	None             bool
	Round, MaxRounds int
	Reran            []string
	// More says tasks remain after this wait (ci.watch: each).
	More bool
}

// CICheck is one check of the pull request's CI.
type CICheck struct {
	Name       string
	Conclusion string // empty while it runs
	URL        string
	Required   bool
}

// Summary is the one comment per run that is edited in place as the run goes.
type Summary struct {
	RunID string
	// Source is what the tasks came from ("ROADMAP.md", "issue #12") and SourceURL links it.
	Source    string
	SourceURL string
	Branch    string
	BranchURL string
	// State is one of the Run constants.
	State string
	Tasks []Task
	Usage Usage
	// ParkedTask and EscalationURL say which task waits for a decision when State is parked.
	ParkedTask    string
	EscalationURL string
	// Error is why the run stopped when State is failed; AbortedBy who stopped it when aborted.
	Error     string
	AbortedBy string
	PRURL     string
	// PRClosed says the run closed its empty draft pull request (it failed before any task was done).
	PRClosed bool
	// Rebuilt says Akira had lost its record of the run and rebuilt it from the branch.
	Rebuilt bool
	// Progress is set while the run is running.
	Progress *Progress
	// StoppedBy stopped the run with /akira stop (State stopped).
	StoppedBy string
	// PausedBy paused the run (State paused).
	PausedBy string
	// StartedBy started the run; AnsweredBy answered its latest escalation.
	StartedBy  string
	AnsweredBy string
	// CI is the pull request's own CI, when the run watches it.
	CI *CI
	// Blocked are the destinations the egress proxy refused the run's tasks.
	Blocked BlockedSection
	// Environment is the run's setup and base-branch health check; nil when it had neither.
	Environment *EnvSummary
	// Synced is the base commit the run last merged into its branch ("main@0123456789ab"), Syncs how
	// many times it merged its base; empty when the base never moved under it.
	Synced string
	Syncs  int
}

// Count is how many tasks have the status.
func (s Summary) Count(status string) int {
	n := 0
	for _, t := range s.Tasks {
		if t.Status == status && !t.Sync {
			n++
		}
	}
	return n
}

// Tally lists the non-zero counts per status in a fixed order, e.g. "3 passed, 1 escalated, 2 pending".
// Judged says an acceptance judge gave a verdict on some task: the summary then has a Judge column.
func (s Summary) Judged() bool {
	for _, t := range s.Tasks {
		if t.Judgement != nil {
			return true
		}
	}
	return false
}

// Tally says how many tasks have each status, in words.
func (s Summary) Tally() string {
	var parts []string
	for _, st := range lifecycle.TaskStatusInfos() {
		if n := s.Count(st.Status); n > 0 {
			word := st.Plural
			if n == 1 {
				word = st.Words
			}
			parts = append(parts, strconv.Itoa(n)+" "+word)
		}
	}
	if len(parts) == 0 {
		return "none started"
	}
	return strings.Join(parts, ", ")
}

// PlanTasks is how many of the rows are tasks of the plan (the merge of the base is not).
func (s Summary) PlanTasks() int {
	n := 0
	for _, t := range s.Tasks {
		if !t.Sync {
			n++
		}
	}
	return n
}

// Attempts is the total number of attempts over all tasks.
func (s Summary) Attempts() int {
	n := 0
	for _, t := range s.Tasks {
		n += t.Attempts
	}
	return n
}

// Duration is the time spent on all tasks.
func (s Summary) Duration() time.Duration {
	var d time.Duration
	for _, t := range s.Tasks {
		d += t.Duration
	}
	return d
}

// SummaryMarker is the hidden line that lets Akira find a run's summary comment again after a crash.
func SummaryMarker(runID string) string { return "<!-- akira:summary run=" + runID + " -->" }

// EscalationMarker is the hidden line of an escalation comment.
func EscalationMarker(runID, taskID string) string {
	return "<!-- akira:escalation run=" + runID + " task=" + taskID + " -->"
}

// Cost is the run's cost as the summary shows it: the sum of its tasks' costs each rounded as shown
// (internal/cost), so that the column adds up to the total; Usage.CostUSD when no task has a cost.
func (s Summary) Cost() float64 {
	parts := make([]float64, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		parts = append(parts, t.Usage.CostUSD)
	}
	if total := cost.Sum(parts...); total > 0 {
		return total
	}
	return s.Usage.CostUSD
}

// Marker lets a template call SummaryMarker.
func (s Summary) Marker() string { return SummaryMarker(s.RunID) }

// Command is one verification command and how it ended.
type Command struct {
	Command  string
	ExitCode int
	TimedOut bool
	Duration time.Duration
}

// Passed reports whether the command succeeded.
func (c Command) Passed() bool { return c.ExitCode == 0 && !c.TimedOut }

// Escalation is the comment posted when a task is parked for a human decision.
type Escalation struct {
	RunID       string
	TaskID      string
	TaskTitle   string
	Attempts    int
	MaxAttempts int
	// Reason is why Akira stopped trying, e.g. "the same failure happened twice".
	Reason string
	// Failures are the verification commands that failed on the last attempt.
	Failures []Command
	// Error is a failure that is not a command (the agent crashed, a protected path was changed).
	Error string
	// Output is the last attempt's output; the template shows its last OutputLines lines.
	Output      string
	CheckRunURL string
	// Buttons says whether the check run offers Approve / Retry / Skip buttons.
	Buttons bool
	// Mentions are the people GitHub notifies: who started the run and who answered it last.
	Mentions []string
	// Gate is "before" or "after" when the task stopped at a gate of the plan rather than failing.
	Gate string
	// Budget says the run's budget is spent; Ceiling is the most `/akira run --budget` may give (0: none).
	Budget  bool
	Ceiling float64
	// Changed are the paths the parked work changes (the first 30 are listed).
	Changed []string
	// TaskURL is the task's page on the dashboard (its attempts' logs, the decision), when there is one.
	TaskURL string
}

// ShownReason is Reason without the "verification failed: `cmd` exited 1" that "What failed" lists
// below it.
func (e Escalation) ShownReason() string {
	if i := strings.Index(e.Reason, "verification failed: "); len(e.Failures) > 0 && i >= 0 {
		return strings.TrimRight(e.Reason[:i], " :;,")
	}
	return e.Reason
}

// Marker lets a template call EscalationMarker.
func (e Escalation) Marker() string { return EscalationMarker(e.RunID, e.TaskID) }

// Refusal answers a command from someone who may not command Akira.
type Refusal struct {
	User string
	// Command is what they asked for, without the /akira prefix.
	Command string
	// Permission is their permission on the repository (read, triage, none).
	Permission string
}

// HelpCommand is one line of the help reply.
type HelpCommand struct {
	Usage       string
	Description string
}

// Commands is the list the help reply shows by default.
var Commands = []HelpCommand{
	{"/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]", "Run the tasks of this issue's checklist, or of Akira's plan for an issue written in prose (the first /akira run asks for one), or of the roadmap (or the file at path). --trust-plan: run the verify commands of a plan written by someone without write access. --confirm: run the plan Akira proposed for a checklist it could not read. --allow-red-base: start although the base branch fails its verification. --budget: the run's cost limit (up to the operator's ceiling); on a run waiting because its budget is spent, raise it and go on."},
	{"/akira plan [guidance]", "Ask for a (new) plan of this issue: a checklist of small tasks, posted for you to read before /akira run."},
	{"/akira fix [guidance]", "In a review comment on a pull request Akira works on: address the review's comments with one more commit (a review that requests changes does the same)."},
	{"/akira status", "Show how far the current run is."},
	{"/akira stop", "Stop the run while it works: the agent is stopped within seconds, the branch stays at its last checkpoint; /akira run continues."},
	{"/akira pause [--now]", "Pause the run once its current task is done (--now: at once, discarding the attempt); it holds no worker until /akira resume."},
	{"/akira resume", "Continue a paused run at its next task, on any worker."},
	{"/akira remember <text>", "Teach Akira something about this repository: the relevant lessons go into the prompts of later tasks."},
	{"/akira forget <lesson id>", "Remove a lesson (its id is in the reply to /akira remember and in the check runs of tasks that used it)."},
	{"/akira rollback <task> [--retry [guidance]]", "Undo a task's checkpoint and those of the later tasks that depend on it, with revert commits (no force push); they are pending again. --retry runs them again at once, with your guidance."},
	{"/akira approve", "Accept the task that needs a decision as it is and continue."},
	{"/akira retry <guidance>", "Try the task that needs a decision again; your guidance is given to the agent."},
	{"/akira skip", "Leave the task that needs a decision undone and continue with the next one."},
	{"/akira abort", "End the run, working or waiting for a decision; pushed checkpoints stay on the branch."},
	{"/akira help", "Show this list."},
}

// Plan is the comment holding Akira's plan for an issue written in prose, edited in place when a new
// plan is asked for.
type Plan struct {
	Issue int
	// Plan is the checklist, shown in a fenced block (which is where /akira run reads it back from).
	Plan  string
	Tasks int
	// Auto says the plan runs right away (plan: auto in .github/akira.yml).
	Auto bool
	// AutoRefused says plan: auto was not followed because the issue's author has no write access.
	AutoRefused bool
	By          string
}

// Marker lets a template call PlanMarker.
func (p Plan) Marker() string { return PlanMarker(p.Issue) }

// PlanMarker is the hidden marker of the plan comment of an issue.
func PlanMarker(issue int) string { return fmt.Sprintf("<!-- akira:plan issue=%d -->", issue) }

// NormalizedMarker marks a plan comment that rewrites an issue's checklist: it runs only with
// /akira run --confirm.
const NormalizedMarker = "<!-- akira:plan-normalized -->"

// PlanNormalized is the rewrite the planner agent proposed for an issue's checklist that no format
// reads with confidence, each task beside the lines it came from.
type PlanNormalized struct {
	Issue int
	// Plan is the proposed checklist (read back from the fenced block by /akira run --confirm).
	Plan string
	// Problem is why the checklist was not read.
	Problem string
	Tasks   []NormalizedRow
	// Dropped are verify commands the agent wrote that the issue does not hold; they were removed.
	Dropped []string
	By      string
}

// NormalizedRow is one proposed task and the issue's lines it came from (1-based; Guessed when the
// agent named none and Akira matched the title).
type NormalizedRow struct {
	ID, Title string
	Depends   []string
	Lines     []int
	Source    []string
	Guessed   bool
}

// Marker lets a template call PlanMarker.
func (p PlanNormalized) Marker() string { return PlanMarker(p.Issue) }

// NormalizedMarker lets a template write the marker.
func (PlanNormalized) NormalizedMarker() string { return NormalizedMarker }

// PlanConfirm answers a plain /akira run while a proposed rewrite waits for --confirm.
type PlanConfirm struct{ URL string }

// PlanFailed says Akira could not write a plan.
type PlanFailed struct {
	Reason string
}

// RollbackReply answers /akira rollback: what was reverted, a conflict, or why nothing was done.
type RollbackReply struct {
	TaskID, Branch, RunID string
	By                    string
	Reverted              []RolledBack
	Retry                 bool
	Guidance              string
	Conflict              *RollbackConflict
	// Refusal is why nothing was done (one of the Rollback* kinds); Problem the engine's words for
	// RollbackRefused.
	Refusal string
	Problem string
}

// Why a rollback was refused.
const (
	RollbackNoRun        = "no_run"
	RollbackWorking      = "working"
	RollbackParked       = "parked"
	RollbackAborted      = "aborted"
	RollbackSeveralPlans = "several_plans"
	RollbackNoTask       = "no_task"
	RollbackRefused      = "refused"
)

// MemoryReply answers /akira remember (Remembered) and /akira forget (Forgot, Found).
type MemoryReply struct {
	ID         string
	Remembered bool
	Found      bool
}

// RolledBack is one reverted checkpoint.
type RolledBack struct{ ID, Title, Checkpoint, Revert string }

// RollbackConflict is a revert that did not apply.
type RollbackConflict struct {
	Commit string
	Paths  []string
	Diff   string
}

// StopReply answers /akira stop.
type StopReply struct {
	RunID string
	// State is the run's state; Asked says the job working on it was asked to stop.
	State string
	Asked bool
}

// PauseReply answers /akira pause and /akira resume.
type PauseReply struct {
	RunID string
	// State is the run's state; Asked says the pause was asked (or, Resume, that the run goes on).
	State  string
	Asked  bool
	Now    bool
	Resume bool
}

// CommandElsewhere answers a command given where it does not apply.
type CommandElsewhere struct {
	// Command is the command without /akira, e.g. "plan".
	Command string
}

// ReviewAddressed is the reply in a review thread naming the checkpoint that addresses it.
type ReviewAddressed struct {
	Commit, CommitURL string
}

// Help is the reply to /akira help.
type Help struct {
	// Commands defaults to the package's Commands when nil.
	Commands []HelpCommand
}

// List is what the template iterates over.
func (h Help) List() []HelpCommand {
	if h.Commands == nil {
		return Commands
	}
	return h.Commands
}

// DidYouMean answers a command Akira does not know.
type DidYouMean struct {
	// Input is what the user wrote after /akira.
	Input string
	// Suggestion is the closest known command (without /akira), empty when nothing is close.
	Suggestion string
}

// CommandUsage answers a known command written the wrong way.
type CommandUsage struct {
	// Command is the command's name, without /akira; Usage its usage line, as the help shows it.
	Command string
	Usage   string
}

// BadPath answers /akira run with a path outside the repository.
// TriggerRemoved answers a person who took back the assignment or the label that started a run.
type TriggerRemoved struct {
	What       string // "Unassigning Akira", "Removing the `akira` label"
	RunID      string
	SummaryURL string
}

// InlinePlanError answers `/akira run` with a plan under it that does not parse.
type InlinePlanError struct {
	// Problem is the parser's error, with the line in the comment.
	Problem string
}

// BadPath answers `/akira run <path>` with a path outside the repository.
type BadPath struct {
	// Path is what the user wrote (the caller shortens it); the template quotes it safely.
	Path  string
	Usage string
}

// UntrustedPlan answers /akira run on an issue whose plan, written by someone without write access,
// has verify commands: they are shown, not run, until a writer confirms.
type UntrustedPlan struct {
	Author     string
	Permission string
	Commands   []string
	// Fork is the fork ("owner/name") whose plan files carry the commands, in place of an author.
	Fork string
}

// ForkRefusal answers /akira run on a pull request whose head repository was deleted.
type ForkRefusal struct{}

// ForkNotice answers a pull request from the fork Fork that changes the plan files Files: nothing runs
// until a writer asks, and then on Branch.
type ForkNotice struct {
	Fork   string
	Files  []string
	Branch string
}

// ForkRefused answers a writer's /akira run on a fork's pull request that changes the workflow files
// Workflows, whose head moved from Asked to Now after the command, or whose head Late was pushed
// after the command was written (Unseen: no webhook had shown it by then).
type ForkRefused struct {
	Workflows  []string
	Asked, Now string
	Late       string
	Unseen     bool
}

// ForkRun tells a fork's pull request where Akira runs it: Branch (at Head), with pull request PR.
type ForkRun struct {
	Branch, BranchURL string
	Head              string
	PR                int
}

// BranchBusy answers a run asked for on a branch another run owns.
type BranchBusy struct {
	Branch string
	RunID  string
	// State is a Run constant.
	State string
	// ParkedTask is the task the other run waits on, when it is parked.
	ParkedTask string
	// FromCommand says a person asked (/akira run) rather than a push or a pull request update.
	FromCommand bool
	SummaryURL  string
}

// RunStopped is the note on the issue when a person closed a run's pull request or deleted its branch.
type RunStopped struct {
	RunID string
	// Reason is what happened, a sentence without its final full stop.
	Reason string
}

// DecisionIgnored answers a decision that changed nothing.
type DecisionIgnored struct {
	// Decision is approve, retry, skip or abort.
	Decision string
	// ByButton says it came from a check run's button rather than a comment.
	ByButton bool
	// Reason is why, a sentence without its final full stop.
	Reason string
}

// ConfigError is posted when .github/akira.yml cannot be used.
type ConfigError struct {
	Path string
	Ref  string
	// FileURL links the file on the default branch.
	FileURL string
	// Problems are the individual errors, one per line, each naming the key.
	Problems []string
	// Keys are the keys the file may contain, listed to help with a misspelt one.
	Keys []string
	// Action is what Akira did not do because of it, e.g. "start the run".
	Action string
}

// Status answers /akira status.
type Status struct {
	RunID  string
	State  string // a Run constant; empty when there is no run
	Branch string
	Done   int
	Total  int
	// Current is the task being worked on (running) or waiting (parked).
	CurrentID    string
	CurrentTitle string
	Attempt      int
	MaxAttempts  int
	SummaryURL   string
	PRURL        string
	// Progress is set while the run is running.
	Progress *Progress
	// Synced is the base commit the run last merged into its branch ("main@0123456789ab").
	Synced string
}

// Progress is what a working run is doing now.
type Progress struct {
	TaskID, TaskTitle    string
	Attempt, MaxAttempts int
	// TaskFor is how long the current task has run; Activity its last sign of life, ActivityAgo when.
	TaskFor     time.Duration
	Activity    string
	ActivityAgo time.Duration
	CostUSD     float64
	// Left is the estimate of the time the remaining tasks take; Estimated says there is one.
	Left      time.Duration
	Estimated bool
	// Also are the other tasks in progress (a parallel run), by id and title.
	Also []Task
}

// CheckRun is a task's check-run output (both checkrun_summary and checkrun_text).
type CheckRun struct {
	RunID     string
	TaskID    string
	TaskTitle string
	// Status is one of the Status constants.
	Status      string
	Attempt     int
	MaxAttempts int
	// Reason explains a failure, an escalation or a skip.
	Reason string
	// Verify are the last attempt's verification results.
	Verify        []Command
	Agent         string
	Usage         Usage
	Duration      time.Duration
	Checkpoint    string
	CheckpointURL string
	// Workflows are the workflow files the checkpoint changes (a repository that allows it).
	Workflows []string
	// Attempts are shown in the text, newest last.
	Attempts []Attempt
	// Accept are the task's acceptance criteria: with no judge, a checklist for the reviewer.
	Accept []string
	// Judging says an acceptance judge checks the criteria; Verdict is its latest answer.
	Judging bool
	Verdict *Verdict
	// Unverified: checkpointed with no verification command run and no acceptance criteria stated.
	Unverified bool
}

// ShownReason is Reason as the check run's summary shows it above its verification table: without
// the "verification failed: `cmd` exited 1" the table states again, row by row.
func (c CheckRun) ShownReason() string {
	failed := false
	for _, v := range c.Verify {
		failed = failed || !v.Passed()
	}
	r := c.Reason
	if i := strings.Index(r, "verification failed: "); failed && i >= 0 {
		r = strings.TrimRight(r[:i], " :;,")
	}
	return sentence(r)
}

// sentence starts s with a capital letter and ends it with a full stop, for a reason shown on its own.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	rs := []rune(s)
	rs[0] = unicode.ToUpper(rs[0])
	if !strings.ContainsRune(".!?:", rs[len(rs)-1]) {
		rs = append(rs, '.')
	}
	return string(rs)
}

// Verdict is the acceptance judge's answer about one attempt.
type Verdict struct {
	Model         string
	Confidence    float64
	MinConfidence float64
	Accepted      bool
	Criteria      []VerdictCriterion
	// Error says why the judge gave no valid verdict (the other fields are then empty).
	Error string
}

// VerdictCriterion is the judge's answer for one criterion.
type VerdictCriterion struct {
	Criterion string
	Met       bool
	Reason    string
}

// Judgement is the acceptance judge's latest verdict on a task (lifecycle keeps it in the run's state).
type Judgement = lifecycle.Judgement

// Attempt is one attempt's record in the check run's text.
type Attempt struct {
	Number int
	// Lessons are the lessons of the repository's memory given to the attempt, as "<id>: <text>".
	Lessons  []string
	Verify   []Command
	Verdict  *Verdict
	Error    string
	Guidance string
	Output   string
	Duration time.Duration
	// LogURL is the attempt's kept log (an attempt whose worker stopped: its log as far as it went).
	LogURL string
}

// PRTask is one line of the pull request's task list.
type PRTask struct {
	ID    string
	Title string
	Done  bool
	// Status is one of the Status constants ("" before the run reports one).
	Status string
}

// PRBody is the body of the pull request a run opens, rendered again as the run's state changes.
type PRBody struct {
	RunID     string
	Source    string
	SourceURL string
	// Issue is the issue the run came from; the body then says "Closes #<n>".
	Issue int
	// Fork is the fork's pull request a fork run works for; the body names it.
	Fork  *PRFork
	Tasks []PRTask
	// State is one of the Run constants; "" while the pull request opens (working).
	State string
	// ParkedTask, ParkedTitle and EscalationURL name the task that needs a decision (State parked).
	ParkedTask, ParkedTitle, EscalationURL string
	// StoppedBy, PausedBy and AbortedBy say who; Error why the run failed.
	StoppedBy, PausedBy, AbortedBy, Error string
}

// PRFork is the pull request from a fork (Repo, branch Ref) that a run's pull request works for, from
// its head Head.
type PRFork struct {
	Number          int
	Repo, Ref, Head string
}

// PRBodyOf is the pull request's body for a run as its summary shows it; issue is the issue it came
// from (0: none).
func PRBodyOf(s Summary, issue int) PRBody {
	b := PRBody{RunID: s.RunID, Source: s.Source, SourceURL: s.SourceURL, Issue: issue, State: s.State,
		ParkedTask: s.ParkedTask, EscalationURL: s.EscalationURL, StoppedBy: s.StoppedBy, PausedBy: s.PausedBy,
		AbortedBy: s.AbortedBy, Error: s.Error}
	for _, t := range s.Tasks {
		b.Tasks = append(b.Tasks, PRTask{ID: t.ID, Title: t.Title, Done: t.Status == lifecycle.TaskStatusPassed, Status: t.Status})
		if t.ID == s.ParkedTask {
			b.ParkedTitle = t.Title
		}
	}
	return b
}

// Done is how many tasks are ticked.
func (p PRBody) Done() int {
	n := 0
	for _, t := range p.Tasks {
		if t.Done {
			n++
		}
	}
	return n
}

// Skipped says some task was skipped.
func (p PRBody) Skipped() bool {
	for _, t := range p.Tasks {
		if t.Status == lifecycle.TaskStatusSkipped {
			return true
		}
	}
	return false
}

// Marker is the hidden line that ties the pull request to the run.
func (p PRBody) Marker() string { return "<!-- akira:pr run=" + p.RunID + " -->" }

// Notification is a notification of a run's event (notify_title, notify_text).
type Notification struct {
	// Event is one of escalation, run_finished, run_failed, budget_reached, stalled.
	Event     string
	Repo      string
	RunID     string
	TaskID    string
	TaskTitle string
	Attempts  int
	// Reason says what failed or why the run stopped; Tally how the tasks ended.
	Reason string
	Tally  string
	// URL is the pull request; Reply what a person may answer there (rendered from notify_reply).
	URL   string
	Reply string
}

// ControlAudit mirrors on the pull request an operator's action through the API or the dashboard.
type ControlAudit struct {
	Action   string
	TaskID   string
	RunID    string
	Token    string
	Via      string
	Guidance string
	Result   string
	// Answer says the action answers an escalation (POST /api/v1/runs/{id}/escalations/{n}).
	Answer bool
}
