// Package lifecycle is the life of a run in one place: its states and a task's, the events that move
// between them, and for each transition the effects it requires on GitHub and elsewhere, returned as
// data. Every status change of a run or of a task goes through Apply; nothing else assigns one.
// The package is pure (no Redis, no GitHub): jobs stores the result of Apply and its publisher
// performs the effects, so the rules can be read, tested and drawn here on their own.
package lifecycle

import (
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
)

// Trigger is what started a run.
type Trigger string

const (
	// TriggerIssue is `/akira run` on an issue: branch akira/issue-<n>, a draft PR closing the issue.
	TriggerIssue Trigger = "issue"
	// TriggerPush is a push to the default branch that added unchecked tasks: branch akira/roadmap.
	TriggerPush Trigger = "push"
	// TriggerPullRequest is a same-repository pull request that changed the roadmap: its own branch.
	TriggerPullRequest Trigger = "pull_request"
	// TriggerContinue continues an existing run (RunPayload.RunID) after a decision.
	TriggerContinue Trigger = "continue"
	// TriggerReview addresses a review of a pull request Akira works on with one more checkpoint.
	TriggerReview Trigger = "review"
	// TriggerAPI is a run handed off through the REST API (POST /api/v1/runs, akira handoff, akira mcp).
	TriggerAPI Trigger = "api"
	// TriggerFork is a writer's `/akira run` on a pull request from a fork: Akira cannot push to the fork,
	// so the run works on a branch of the repository (akira/pr-<n>) that starts at the fork's head, and
	// opens a pull request of its own that names the fork's.
	TriggerFork Trigger = "fork"
)

// Fork is the pull request from a fork that a fork run (TriggerFork) works for.
type Fork struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"`
	// Repo is the fork ("owner/name") and Ref its branch; Head is the commit the run's branch started
	// at: the fork's head when a writer asked, never a later one.
	Repo string `json:"repo"`
	Ref  string `json:"ref,omitempty"`
	Head string `json:"head"`
}

// ReviewRequest is a review for a run to address: a review requesting changes, or `/akira fix` in a
// review comment.
type ReviewRequest struct {
	ID int64  `json:"id"`
	By string `json:"by"`
	// Body is the review's own text; Guidance what followed `/akira fix`.
	Body     string `json:"body,omitempty"`
	Guidance string `json:"guidance,omitempty"`
	// CommentID is the review comment holding `/akira fix` (0 for a review requesting changes).
	CommentID int64 `json:"comment_id,omitempty"`
}

// StopRequest asks the job working on a run to stop it.
type StopRequest struct {
	By string `json:"by"`
	// Abort ends the run for good instead of stopping it.
	Abort bool      `json:"abort,omitempty"`
	At    time.Time `json:"at"`
}

// PauseRequest asks the job working on a run to pause it: after the current task, or Now (the
// attempt is discarded, as by /akira stop).
type PauseRequest struct {
	By  string    `json:"by"`
	Now bool      `json:"now,omitempty"`
	At  time.Time `json:"at"`
}

// Run is the state of one run, stored as JSON under <prefix>run:<id>.
type Run struct {
	ID             string  `json:"id"`
	Owner          string  `json:"owner"`
	Repo           string  `json:"repo"`
	InstallationID int64   `json:"installation_id"`
	Trigger        Trigger `json:"trigger"`
	Sender         string  `json:"sender,omitempty"`
	// CloneURL is the repository's clone URL (no credentials in it, ever); RepoURL its web page.
	CloneURL string `json:"clone_url,omitempty"`
	RepoURL  string `json:"repo_url,omitempty"`
	// Issue is the issue the run came from (trigger issue); PR is the pull request the run pushes to.
	Issue    int    `json:"issue,omitempty"`
	PR       int    `json:"pr,omitempty"`
	PRURL    string `json:"pr_url,omitempty"`
	PRNodeID string `json:"pr_node_id,omitempty"`
	// OpenedPR says the run opened its pull request itself (a run may push to one it did not open);
	// PRClosed that it closed it again because the run failed before any task was done.
	OpenedPR bool   `json:"opened_pr,omitempty"`
	PRClosed bool   `json:"pr_closed,omitempty"`
	Branch   string `json:"branch"`
	// Base is the branch the run's branch started from and its pull request goes into.
	Base string `json:"base,omitempty"`
	// Roadmap is the plan file in the repository; empty when Plan holds the plan.
	Roadmap string `json:"roadmap,omitempty"`
	// Plans are the plan files a spec pull request changed, run one after another in this (path)
	// order; empty means Roadmap alone. The tasks of a plan other than Roadmap are named
	// "<path>#<id>" (see runner.Options.TaskScope).
	Plans []string `json:"plans,omitempty"`
	// Plan is an external plan (an issue's task checkboxes), pinned when the run was created so that
	// editing the issue cannot change a run under way. PlanSource names it ("issue #12").
	Plan       string `json:"plan,omitempty"`
	PlanSource string `json:"plan_source,omitempty"`
	// PlanFromComment says Plan is the plan Akira wrote for an issue in prose: a writer saw it before
	// `/akira run` (or plan: auto ran it for an author with write access).
	PlanFromComment bool `json:"plan_from_comment,omitempty"`
	// Source and SourceURL say where the tasks came from, for people ("issue #12", "ROADMAP.md").
	Source    string `json:"source,omitempty"`
	SourceURL string `json:"source_url,omitempty"`
	// Reference is the caller's conversation or ticket id of a run handed off through the API.
	Reference string `json:"reference,omitempty"`
	// Title is the pull request's title (the issue's title for an issue run).
	Title string `json:"title,omitempty"`
	// Agent is the operator's agent profile the run uses; MaxAttempts the attempts per task.
	Agent       string    `json:"agent,omitempty"`
	MaxAttempts int       `json:"max_attempts,omitempty"`
	Status      RunStatus `json:"status"`
	// Tasks are in execution order. A task in the list is never changed in place: the run returned by
	// a store shares its tasks with the store's own copy and with every other run read since, so a
	// write through Task or Tasks[i] would show in all of them and, since the store writes only the
	// tasks whose pointer was replaced, never reach Redis. A change goes through EditTask, which puts
	// a copy in the list; a new task is appended, a removed one dropped from the list. The list itself
	// is shared too, by the runs a store returns (and by a shallow copy of a Run): a run is changed in
	// the fn of the store's Update, which gets a list of its own; elsewhere clone the list first.
	Tasks []*TaskState `json:"tasks,omitempty"`
	// SummaryCommentID is the run's one summary comment, stored as soon as it exists.
	SummaryCommentID int64  `json:"summary_comment_id,omitempty"`
	SummaryURL       string `json:"summary_url,omitempty"`
	// Parked are the escalated tasks waiting for a decision, in the order they were parked.
	Parked []Parked `json:"parked,omitempty"`
	// Head is the branch head when the last job ended: a decision only acts while the branch is
	// still there, so nobody decides about work that has changed under them.
	Head string `json:"head,omitempty"`
	// Decisions are the human decisions the next job hands to the engine, by task id.
	Decisions map[string]Decision `json:"decisions,omitempty"`
	// DecisionKeys are the keys of the latest decisions taken, so that a retried resume job sees its
	// own decision as done instead of refusing it.
	DecisionKeys []string `json:"decision_keys,omitempty"`
	// Dashboard is the dashboard's address when the run's jobs had one (AKIRA_PUBLIC_URL).
	Dashboard string `json:"dashboard,omitempty"`
	// Notify is the repository's choice of sinks per event (.github/akira.yml notify:).
	Notify map[string][]string `json:"notify,omitempty"`
	// Review is the review a review run addresses.
	Review *ReviewRequest `json:"review,omitempty"`
	// Fork is the fork's pull request a fork run works for (trigger fork); its number finds the run too.
	Fork *Fork `json:"fork,omitempty"`
	// CI is the run's watch of its pull request's own CI; nil when it does not watch.
	CI *CIWatch `json:"ci,omitempty"`
	// Budget is what the run may spend (the operator's, lowered by the repository's, raised by
	// `/akira run --budget`); WorkTime how long its jobs have worked.
	Budget config.Budget `json:"budget,omitzero"`
	// BudgetCeilingUSD is the most `/akira run --budget` may give the run (0: no ceiling).
	BudgetCeilingUSD float64       `json:"budget_ceiling_usd,omitempty"`
	WorkTime         time.Duration `json:"work_time,omitempty"`
	// MaxParallel is how many independent tasks the run does at once.
	MaxParallel int `json:"max_parallel,omitempty"`
	// TaskStartedAt is when the current task started; Activity the working job's last sign of life
	// ("the agent is working", "verifying: go test ./...") and ActivityAt when (see jobs/publish/progress.go).
	TaskStartedAt time.Time `json:"task_started_at,omitzero"`
	// PastDurations are the repository's recent task durations when the run started (jobs/run_history.go),
	// for the estimate of its time left before it has finished a task of its own.
	PastDurations []time.Duration `json:"past_durations,omitempty"`
	Activity      string          `json:"activity,omitempty"`
	ActivityAt    time.Time       `json:"activity_at,omitzero"`
	// Stop is a request to stop (or abort) the run while a job works on it: the job polls for it.
	Stop *StopRequest `json:"stop,omitempty"`
	// StoppedBy is who stopped the run (status stopped).
	StoppedBy string `json:"stopped_by,omitempty"`
	// Pause asks the working job to pause the run; PausedBy is who paused it (status paused).
	Pause    *PauseRequest `json:"pause,omitempty"`
	PausedBy string        `json:"paused_by,omitempty"`
	// AnsweredBy is who took the latest decision on an escalation.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Error says why a failed run stopped; AbortedBy who aborted it.
	Error     string `json:"error,omitempty"`
	AbortedBy string `json:"aborted_by,omitempty"`
	// Rebuilt is set when Redis had lost the run's record and it was rebuilt from its branch: the key of
	// the delivery or decision that rebuilt it (see jobs/run_rebuild.go).
	Rebuilt string `json:"rebuilt,omitempty"`
	// Jobs counts the job executions that worked on the run (retries and continuations included).
	Jobs       int       `json:"jobs"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Rev is incremented by every write.
	Rev int64 `json:"rev"`
	// Outbox holds the effects of transitions not yet performed, in order: written in the same update
	// as the transition, and removed one by one as the publisher performs them, so that a worker that
	// dies in between leaves them for the next one (see Effect).
	Outbox []Effect `json:"outbox,omitempty"`
	// AllowRedBase is `/akira run --allow-red-base`: the run starts although its base branch fails
	// its repository-wide verification. Setup and BaseCheck are what the run's last job found of its
	// environment, for the summary and the check runs.
	AllowRedBase bool      `json:"allow_red_base,omitempty"`
	Setup        *EnvCheck `json:"setup,omitempty"`
	BaseCheck    *EnvCheck `json:"base_check,omitempty"`
	// SyncOff is the repository's `sync: off`: the run never merges its base when the base moves.
	SyncOff bool `json:"sync_off,omitempty"`
	// Synced are the base commits the run merged into its branch as "<base>@<sha>", oldest first
	// (the sync task's checkpoints).
	Synced []string `json:"synced,omitempty"`

	// edits, while Apply applies an event, are the tasks EditTask replaced, so that a refused event
	// puts them back without Apply copying the whole list first.
	edits *[]taskEdit
}

// taskEdit is a task EditTask replaced: old was at tasks[i].
type taskEdit struct {
	tasks []*TaskState
	i     int
	old   *TaskState
}

// IsSyncTask says a task of the run is the engine's merge of the base (runner.SyncTaskID, within a
// plan's scope on a run of several plans), not a task of the plan.
func IsSyncTask(id string) bool {
	return id == runner.SyncTaskID || strings.HasSuffix(id, "#"+runner.SyncTaskID)
}

// LastSynced is the base commit the run last merged into its branch ("<base>@<sha>"), "" when none.
func (r *Run) LastSynced() string {
	if len(r.Synced) == 0 {
		return ""
	}
	return r.Synced[len(r.Synced)-1]
}

// EnvCheck is one step of a run's environment (its setup, or the base-branch health check) as the
// summary shows it: not a status of the run's lifecycle, a note with its check run.
type EnvCheck struct {
	Passed   bool          `json:"passed"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Commit   string        `json:"commit,omitempty"`
	// CheckRunID is the step's check run, on the branch's Head when it was posted.
	CheckRunID  int64  `json:"check_run_id,omitempty"`
	CheckRunURL string `json:"check_run_url,omitempty"`
	Head        string `json:"head,omitempty"`
	LogURL      string `json:"log_url,omitempty"`
	Allowed     bool   `json:"allowed,omitempty"`
	// Proposed says nothing ran: Detail names the install command that would have.
	Proposed bool `json:"proposed,omitempty"`
}

// TaskState is one task of a run.
type TaskState struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Status is one of the TaskStatus* values (pending, running, passed, ...); only the
	// transitions of this package change it.
	Status   string        `json:"status"`
	Attempts int           `json:"attempts,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// CheckRunID is the task's current check run; CheckRunDone says it is completed, so the next
	// round of attempts (after a retry decision) gets a new one.
	CheckRunID   int64  `json:"check_run_id,omitempty"`
	CheckRunURL  string `json:"check_run_url,omitempty"`
	CheckRunDone bool   `json:"check_run_done,omitempty"`
	// CheckRunAsked says a check run was asked of GitHub and its id not stored yet: a job that died in
	// between may have left one, so the next create looks for it first (and only then). CheckRunHead
	// is the commit the open check run is on.
	CheckRunAsked bool   `json:"check_run_asked,omitempty"`
	CheckRunHead  string `json:"check_run_head,omitempty"`
	// Interrupted are the task's attempts that ended when their worker stopped (killed, lost its
	// lease): the next job found the task still running. Their logs are kept as far as they went.
	Interrupted []int `json:"interrupted,omitempty"`
	// Checkpoint is the commit that finished the task.
	Checkpoint string `json:"checkpoint,omitempty"`
	Note       string `json:"note,omitempty"`
	// Workflows are the workflow files (.github/workflows/**) the checkpoint changes, where the
	// repository and the operator allow it.
	Workflows []string `json:"workflows,omitempty"`
	// Accept are the task's acceptance criteria; Unverified says its checkpoint was made with no
	// verification command run and no criteria stated.
	Accept     []string `json:"accept,omitempty"`
	Unverified bool     `json:"unverified,omitempty"`
	// Judgement is the acceptance judge's latest verdict on the task.
	Judgement *Judgement `json:"judgement,omitempty"`
	// Blocked are the destinations the egress proxy refused the task's agent and verification, with
	// the configuration line that would allow each.
	Blocked []Blocked `json:"blocked,omitempty"`
	// Escalations counts how often the task was escalated; EscalationCommentID is the comment of the
	// latest escalation.
	Escalations         int     `json:"escalations,omitempty"`
	EscalationCommentID int64   `json:"escalation_comment_id,omitempty"`
	EscalationURL       string  `json:"escalation_url,omitempty"`
	InputTokens         int64   `json:"input_tokens,omitempty"`
	OutputTokens        int64   `json:"output_tokens,omitempty"`
	CostUSD             float64 `json:"cost_usd,omitempty"`
	// UsageEstimated says the tokens and cost hold an estimate of the egress proxy's (a model answer
	// that did not state its whole usage).
	UsageEstimated bool `json:"usage_estimated,omitempty"`
}

// Parked is an escalated task waiting for a decision.
type Parked struct {
	TaskID  string `json:"task_id"`
	Attempt int    `json:"attempt"`
	// HeadSHA is the last checkpoint when the task was parked.
	HeadSHA string    `json:"head_sha"`
	Reason  string    `json:"reason,omitempty"`
	Summary string    `json:"summary,omitempty"`
	At      time.Time `json:"at"`
	// Changed are the paths the parked work changes, for the person deciding.
	Changed []string `json:"changed,omitempty"`
}

// Decision is a human decision on a parked task: the engine's decision, who took it, and the key of the
// request that carried it.
type Decision struct {
	// Key identifies the request that carried the decision (the resume job); see Run.DecisionKeys.
	Key    string `json:"key,omitempty"`
	TaskID string `json:"task_id"`
	// Decision holds who decided (By) besides the kind and the guidance.
	runner.Decision
}

// ParkedTask returns the parked entry of the task, or nil.
func (r *Run) ParkedTask(id string) *Parked {
	for i := range r.Parked {
		if r.Parked[i].TaskID == id {
			return &r.Parked[i]
		}
	}
	return nil
}

// Task returns the task with the id, or nil, to read only: it may be shared with other runs read from
// the same store (see Tasks). To change it, use EditTask.
func (r *Run) Task(id string) *TaskState {
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// EditTask returns the task with the id to change, or nil: a copy of it, put in its place in
// r.Tasks, so that runs sharing the task as it was keep it as it was, and the store sees the task
// changed by its pointer alone (without comparing every task of the run). The copy shares the
// task's slices and judgement: replace them, never change their elements in place (append is
// safe: the copy's slices are clipped, so an append makes a new array).
func (r *Run) EditTask(id string) *TaskState {
	for i, t := range r.Tasks {
		if t.ID == id {
			return r.editTaskAt(i)
		}
	}
	return nil
}

// editTaskAt is EditTask of the i-th task.
func (r *Run) editTaskAt(i int) *TaskState {
	c := *r.Tasks[i]
	c.Interrupted, c.Accept, c.Blocked = slices.Clip(c.Interrupted), slices.Clip(c.Accept), slices.Clip(c.Blocked)
	if r.edits != nil {
		*r.edits = append(*r.edits, taskEdit{tasks: r.Tasks, i: i, old: r.Tasks[i]})
	}
	r.Tasks[i] = &c
	return &c
}

// PlanFiles are the plan files of the run, in the order they run.
func (r *Run) PlanFiles() []string {
	if len(r.Plans) > 0 {
		return r.Plans
	}
	return []string{r.Roadmap}
}

// ScopeFor is the task scope of a plan file: none for the configured roadmap, whose trailers keep the
// plain ids they always had.
func (r *Run) ScopeFor(plan string) string {
	if plan == r.Roadmap {
		return ""
	}
	return plan
}

// PlanIndex is the position of the plan a task scope belongs to; a scope of no plan file (a CI fix
// round) comes after them all.
func (r *Run) PlanIndex(scope string) int {
	if scope == "" {
		scope = r.Roadmap
	}
	if i := slices.Index(r.PlanFiles(), scope); i >= 0 || !strings.HasPrefix(scope, "ci-") {
		return i
	}
	return len(r.PlanFiles())
}

// ScopeOf is the scope of a task name in the run state ("" for a plain id).
func ScopeOf(id string) string {
	if i := strings.LastIndex(id, "#"); i > 0 {
		return id[:i]
	}
	return ""
}

// Numbers are the issue and pull request numbers a reply can find the run by.
func (r *Run) Numbers() []int {
	var out []int
	if r.Issue > 0 {
		out = append(out, r.Issue)
	}
	if r.PR > 0 && r.PR != r.Issue {
		out = append(out, r.PR)
	}
	if r.Fork != nil && r.Fork.Number > 0 && r.Fork.Number != r.PR {
		out = append(out, r.Fork.Number)
	}
	return out
}

// Checkpointed reports whether any task of the run has a checkpoint commit.
func (r *Run) Checkpointed() bool {
	for _, t := range r.Tasks {
		if t.Checkpoint != "" {
			return true
		}
	}
	return false
}
