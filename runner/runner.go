// Package runner is Akira's engine: it clones the repository into an ephemeral workspace, runs the
// tasks of a roadmap one at a time with a coding agent, verifies each attempt, commits one checkpoint
// per verified task (ticking its checkbox, with Akira-Run and Akira-Task trailers), pushes it, retries
// with feedback (reflection), and escalates a task that keeps failing.
//
// The same Run serves `akira run` on a laptop and the GitHub App's worker: everything specific to a
// caller comes in through Options (the agent, the reporter, the escalation handler, the git
// credentials, the decisions of a resume). The branch is the durable state: a later Run on the same
// branch continues from its Akira-Task trailers and never commits a task twice.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/runner/workspace"
)

// Defaults of Options.
const (
	DefaultMaxAttempts   = config.DefaultMaxAttempts
	DefaultAgentTimeout  = 30 * time.Minute
	DefaultStallTimeout  = 10 * time.Minute
	DefaultVerifyTimeout = verify.DefaultTimeout
	DefaultRoadmap       = config.DefaultRoadmap
	DefaultBranchPrefix  = config.DefaultBranchPrefix
)

// Escalation reasons of gates (besides "max_attempts", "repeated_failure" and "awaiting_decision").
const (
	ReasonGateBefore = "gate_before"
	ReasonGateAfter  = "gate_after"
	// ReasonBudget: the run's budget is spent; the task waits for a person to raise it or end the run.
	ReasonBudget = "budget"
)

// Spent is what a run spent before this job: the agents' usage and the time jobs worked.
type Spent struct {
	Usage    agent.Usage
	WorkTime time.Duration
}

// Budget is what a run may spend; a zero field is no limit. The engine checks it before each
// attempt, so a run goes over by at most one attempt.
type Budget struct {
	CostUSD  float64
	Tokens   int64
	WallTime time.Duration
}

// Trailer keys of checkpoint commits.
const (
	TrailerRun  = "Akira-Run"
	TrailerTask = "Akira-Task"
	// TrailerRevert names a task whose checkpoint a later commit reverted (a rollback): the task is
	// pending again.
	TrailerRevert = "Akira-Revert"
)

var (
	// ErrInvalidPlan wraps a roadmap or plan that does not parse or validate (the roadmap.Errors are
	// in the chain), or that is missing.
	ErrInvalidPlan = errors.New("invalid roadmap")
	// ErrUsage wraps options that cannot work: no agent, unknown task ids, a bad branch name.
	ErrUsage = errors.New("invalid options")
	// ErrPushRejected marks a push refused because the remote branch moved under the run.
	ErrPushRejected = workspace.ErrPushRejected
)

// Identity is the author and committer of checkpoint commits.
type Identity = workspace.Identity

// DefaultAuthor is the identity of checkpoint commits when Options.Author is empty.
var DefaultAuthor = workspace.DefaultAuthor

// Options configures one Run: what to run (Inputs), how far it may go (Limits), where it reports and
// whom it asks (Hooks), and what it runs with (the agent, the sandbox, the workspace, the memory).
// The groups are embedded, so o.Repo and o.Reporter read as before; a literal names its groups.
type Options struct {
	Inputs
	Limits
	Hooks

	// Agent makes the changes of each attempt.
	Agent agent.Agent
	// Env names variables of this process passed to verification commands besides
	// proc.DefaultAllowEnv. The agent's environment is configured on the agent.
	Env []string
	// Author of checkpoint commits; empty means DefaultAuthor.
	Author Identity
	// WorkDir is where the workspace directory is created; empty means os.TempDir().
	WorkDir string
	// Cache, when set, makes the workspace from a local mirror of a network remote.
	Cache *workspace.Cache
	// GitAuth returns a fresh http.extraheader value ("Authorization: ...") for each clone, fetch and
	// push; nil means no credentials. The header reaches git only through its environment.
	GitAuth func(ctx context.Context) (string, error)
	// GitEnv names variables passed to git besides proc.DefaultAllowEnv (e.g. SSH_AUTH_SOCK).
	GitEnv []string
	// Sandbox confines the agent and the verification commands and bounds their resources; the
	// zero value runs them unconfined and unbounded (mode none), which callers choose explicitly.
	Sandbox sandbox.Config
	// AgentNetwork is what the agent's commands may reach inside the sandbox.
	AgentNetwork sandbox.Network
	// Lessons, when set, is the repository's memory: the relevant lessons go into each task's prompt,
	// and the guidance of a retry that then succeeded is kept as a new lesson.
	Lessons lessons.Store
	// Semantic, when set, ranks lessons by embedding similarity; nil (or an endpoint that fails)
	// ranks them by keywords.
	Semantic *lessons.Semantic
	// Judge, when set, reads the verified work of each task with acceptance criteria and accepts it
	// or fails the attempt with its reasons; MinConfidence (0: judge.DefaultMinConfidence) is the
	// confidence its verdict needs.
	Judge         Judge
	MinConfidence float64
	// only, when set, makes the engine a worker of a parallel run: it does these tasks and leaves
	// the others to their own workers.
	only map[string]bool
	// checkpoints, shared by the workers of a parallel run, lets one checkpoint at a time be made
	// and pushed: a worker whose branch moved combines once, instead of racing the others again.
	checkpoints *sync.Mutex
	// services, set for the engine of one task of a parallel wave, are the run's, already started:
	// the wave's clones use them rather than start their own.
	services *env.Services
	// BaseMemory remembers the base-branch health check per base commit; nil remembers it for this
	// run only.
	BaseMemory env.BaseMemory
	// DepCaches, when set, keeps dependency caches across runs, keyed by the lock files, under
	// CacheScope (env.ScopeName of the installation and repository; empty: of Repo).
	DepCaches  *env.Caches
	CacheScope string
	// AutoSetup runs the install command detected from the repository's files when it has no
	// `setup:` (the operator's choice; off by default).
	AutoSetup bool
	// CommitAPI, when set, publishes each checkpoint (and each merge of the base) through GitHub's API
	// instead of git push, so that GitHub signs it: the base branch's rules require signed commits, or
	// the operator chose commits made by GitHub. The local branch then builds on GitHub's commit.
	CommitAPI workspace.CommitAPI
}

// Inputs are what a run runs: the repository and its plan, the branch, the decisions a resume passes.
type Inputs struct {
	// Repo is a clone URL or a local repository path.
	Repo string
	// Roadmap is the roadmap's path inside the repository; empty means `roadmap` from
	// .github/akira.yml on the base branch, else ROADMAP.md. Ignored when Plan is set.
	Roadmap string
	// Plan is an external plan (e.g. task checkboxes of an issue body) that lives outside the
	// repository: nothing is ticked in a file, and done-ness comes only from the branch's Akira-Task
	// trailers. PlanSource names it in prompts and errors (e.g. "issue #12"); a .yml/.yaml/.json
	// suffix selects a task-list format, anything else is markdown.
	Plan       []byte
	PlanSource string
	// DryRun runs the agent and verification and commits checkpoints in the workspace only: nothing is
	// pushed, and the outcome's Diff shows what the run would have pushed.
	DryRun bool
	// TaskScope, when set, names the plan on the branch: its tasks' Akira-Task trailers and parked refs
	// read "<scope>#<id>", so that several plans (spec files of one pull request) with the same task ids
	// share a branch. Events and decisions keep the plain ids.
	TaskScope string
	// Trailers are "Key: value" lines added to every checkpoint's trailers (Akira-Review: <id>).
	Trailers []string
	// Context is added to every task's prompt under its own heading (the review a task addresses).
	Context string
	// Branch receives the checkpoints; empty means <branch_prefix><roadmap file name without
	// extension, lowercased>, e.g. akira/roadmap.
	Branch string
	// Base is the branch a new Branch starts from; empty means the remote's default branch.
	Base string
	// RunID goes into the Akira-Run trailer; empty means NewRunID().
	RunID string
	// Verify are the fallback verification commands for tasks without their own; empty means
	// verify of .github/akira.yml, else a default detected from the repository, else none.
	Verify []string
	// Skip lists task ids not to run (their dependents are blocked).
	Skip []string
	// IncludeOptional runs the tasks the plan marks optional (Kiro's "- [ ]* 1.3"); by default they
	// are skipped, and listed as such.
	IncludeOptional bool
	// Convention forces how a markdown plan is read (roadmap.Conventions); empty detects it.
	Convention string
	// Decisions for parked tasks, by task id, passed in by a resume. A task without a decision that is
	// not done simply runs (a parked task is retried); DecisionPark keeps a task parked without running it.
	Decisions map[string]Decision
	// StartCommit, when the branch has no commit ahead of Base and a task is left to run, commits and
	// pushes an empty start commit carrying the Akira-Run trailer before EventRunStarted, so that the
	// caller can open a pull request from the branch of this very workspace.
	StartCommit bool
	// Teach are lessons kept once every task of the run is done (the comments of a review the run
	// addressed), unless the repository's memory is off or the run is a dry run.
	Teach []lessons.Lesson
}

// Limits bound a run: attempts, time, money, parallelism, and what it may change or start from.
type Limits struct {
	// Budget is what the run may spend in all; Spent what earlier jobs of the same run spent already
	// (the App continues a run over several jobs).
	Budget Budget
	Spent  Spent
	// MaxAttempts per task before escalating; zero means max_attempts of .github/akira.yml, else 3.
	MaxAttempts int
	// AgentTimeout bounds one agent call (its context ends); zero means DefaultAgentTimeout.
	AgentTimeout time.Duration
	// StallTimeout ends an attempt whose agent showed no output and changed nothing in the work tree
	// for this long (a "stalled" failed attempt); zero means DefaultStallTimeout, negative never.
	StallTimeout time.Duration
	// VerifyTimeout bounds each verification command; zero means DefaultVerifyTimeout.
	VerifyTimeout time.Duration
	// OutputCap bounds the output kept of each verification command; zero means the proc default.
	OutputCap int
	// ProtectedPaths are globs (** spans directories) the agent must not change; a change there fails
	// the attempt. Nil means config.DefaultProtectedPaths; .github/akira.yml can add more.
	ProtectedPaths []string
	// MaxParallel is how many independent tasks run at once (see parallel.go); 0 or 1 runs one task
	// at a time. A dry run is always one at a time.
	MaxParallel int
	// AllowRedBase lets the run start although the base branch fails its repository-wide
	// verification (the plan's first task fixes the build).
	AllowRedBase bool
	// AllowWorkflows lets tasks change .github/workflows/** where the repository allows it
	// (`workflows: allow` in .github/akira.yml): the operator turned the option on, so the App holds
	// GitHub's workflows permission. Checkpoint events name the workflow files a task changed.
	AllowWorkflows bool
}

// Hooks are where the engine reports and whom it asks while it runs.
type Hooks struct {
	// Reporter receives the events of the run; nil means none.
	Reporter Reporter
	// Timeline, when set, keeps the timeline of each attempt (see package timeline), masked with
	// Secrets and the model keys the sandbox withholds.
	Timeline TimelineSink
	Secrets  []string
	// Escalate decides about a task that keeps failing; nil means park it.
	Escalate EscalationHandler
	// Yield, when set, is asked before each task the engine would start (before each wave when tasks
	// run in parallel): true ends the run there, with StatusYielded, leaving that task and the rest
	// pending. The App yields to wait for the pull request's CI after each checkpoint (ci.watch: each).
	Yield func(ctx context.Context) bool
	// BaseMoved, when set, is asked before each task and once after the last one whether the base
	// branch advanced; true merges it into the branch (see sync.go), unless .github/akira.yml says
	// `sync: off`.
	BaseMoved func(ctx context.Context) bool
	// Output, when set, receives the output of verification commands live.
	Output io.Writer
	// Logger receives diagnostics that do not change the outcome; nil means slog.Default().
	Logger *slog.Logger
}

// Judge decides whether work meets its task's acceptance criteria (runner/agent/llm.Judge). The usage
// is counted as the task's.
type Judge interface {
	Judge(ctx context.Context, req judge.Request) (judge.Verdict, agent.Usage, error)
}

// DecisionKind is what a human decided about an escalated task.
type DecisionKind string

const (
	// DecisionPark leaves the task parked: its work is saved to a side ref and the run continues with
	// independent tasks. The zero Decision parks.
	DecisionPark DecisionKind = "park"
	// DecisionRetry starts the attempts again with Guidance added to the feedback.
	DecisionRetry DecisionKind = "retry"
	// DecisionSkip marks the task skipped; its dependents stay blocked.
	DecisionSkip DecisionKind = "skip"
	// DecisionApprove accepts the failed work as the checkpoint.
	DecisionApprove DecisionKind = "approve"
	// DecisionAbort stops the run; the branch stays at its last checkpoint.
	DecisionAbort DecisionKind = "abort"
)

// Decision is a human's answer to an escalation.
type Decision struct {
	Kind     DecisionKind `json:"kind"`
	Guidance string       `json:"guidance,omitempty"`
	// By and Link say who gave the guidance and where (a comment's URL): a lesson learnt from it
	// keeps both.
	By   string `json:"by,omitempty"`
	Link string `json:"link,omitempty"`
}

// EscalationHandler is asked what to do with a task that keeps failing. The failed work is still in
// the workspace while it runs (so DecisionApprove can take it).
type EscalationHandler func(ctx context.Context, esc Escalation) (Decision, error)

// Escalation describes a task that needs a human.
type Escalation struct {
	TaskID   string `json:"task_id"`
	Title    string `json:"title"`
	Phase    string `json:"phase,omitempty"`
	Attempts int    `json:"attempts"`
	// Reason is "max_attempts", "repeated_failure" or "awaiting_decision" (kept parked by a decision).
	Reason string `json:"reason"`
	// Summary is one line; Feedback is what failed in full (commands, exit codes, output tails).
	Summary  string          `json:"summary,omitempty"`
	Feedback string          `json:"feedback,omitempty"`
	Verify   []verify.Result `json:"verify,omitempty"`
	// HeadSHA is the branch head (the last checkpoint) when the task was parked.
	HeadSHA string `json:"head_sha"`
	// Changed are the paths the parked work changes from HeadSHA, from the work tree (not the
	// agent's word): what a person deciding reads first.
	Changed []string `json:"changed,omitempty"`
	// ParkedRef holds the failed work as a commit on top of HeadSHA (ParkedCommit) on the remote, for
	// a later DecisionApprove. A dry run pushes nothing, so a task it parks has a ParkedCommit that
	// lives only in the workspace and no ParkedRef.
	ParkedRef    string `json:"parked_ref,omitempty"`
	ParkedCommit string `json:"parked_commit,omitempty"`
}

// RunStatus is how a run ended.
type RunStatus string

const (
	StatusSucceeded RunStatus = "succeeded" // every task is done or deliberately skipped
	StatusParked    RunStatus = "parked"    // at least one task waits for a decision
	StatusFailed    RunStatus = "failed"    // an error stopped the run (Run returned it)
	StatusAborted   RunStatus = "aborted"   // an abort decision or cancellation stopped the run
	// StatusYielded: Options.Yield asked the engine to start no further task; the tasks not done stay
	// pending (not blocked) for a later run of the same plan on the same branch.
	StatusYielded RunStatus = "yielded"
)

// TaskStatus is where a task stands.
type TaskStatus string

const (
	TaskDone    TaskStatus = "done"
	TaskSkipped TaskStatus = "skipped"
	TaskBlocked TaskStatus = "blocked"
	TaskParked  TaskStatus = "parked"
	TaskPending TaskStatus = "pending"
)

// TaskResult is one task's line in the outcome.
type TaskResult struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Phase    string        `json:"phase,omitempty"`
	Status   TaskStatus    `json:"status"`
	Attempts int           `json:"attempts,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Commit is the task's checkpoint (also when it was done by an earlier run).
	Commit string      `json:"commit,omitempty"`
	Usage  agent.Usage `json:"usage"`
	// Note says why a task has its status when that is not obvious ("ticked in the roadmap",
	// "blocked by 1.2 (parked)", "approved without passing verification").
	Note string `json:"note,omitempty"`
	// Unverified: checkpointed with no verification command run and no acceptance criteria stated.
	Unverified bool `json:"unverified,omitempty"`
	// Verdict is the acceptance judge's answer that let the checkpoint be made.
	Verdict *judge.Verdict `json:"verdict,omitempty"`
}

// Outcome is the result of a run.
type Outcome struct {
	RunID   string       `json:"run_id"`
	Repo    string       `json:"repo"`
	Roadmap string       `json:"roadmap"`
	Branch  string       `json:"branch"`
	Base    string       `json:"base"`
	Status  RunStatus    `json:"status"`
	Tasks   []TaskResult `json:"tasks"`
	Parked  []Escalation `json:"parked,omitempty"`
	// Head is the branch head when the run ended (the last checkpoint).
	Head string `json:"head"`
	// NoBranch: Branch does not exist on the remote; the run would have created it and pushed
	// nothing to it (it failed first, parked its only tasks, or was a dry run).
	NoBranch bool          `json:"no_branch,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Error    string        `json:"error,omitempty"`
	// Diff is what a dry run would have pushed (DryRun only).
	Diff string `json:"diff,omitempty"`
	// Synced are the base commits this run merged into the branch, as "<base>@<sha>", oldest first.
	Synced []string `json:"synced,omitempty"`
}

// NewRunID returns a run id that sorts by start time and does not collide.
func NewRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// DefaultBranch is the branch of a roadmap when none is given: prefix + the file name without its
// extension, lowercased, reduced to characters that are safe in a ref name.
func DefaultBranch(prefix, roadmapPath string) string {
	if prefix == "" {
		prefix = DefaultBranchPrefix
	}
	name := strings.ToLower(strings.TrimSuffix(path.Base(roadmapPath), path.Ext(roadmapPath)))
	name = strings.Trim(branchUnsafeRE.ReplaceAllString(name, "-"), "-.")
	if name == "" {
		name = "roadmap"
	}
	return prefix + name
}

var branchUnsafeRE = regexp.MustCompile(`[^a-z0-9._-]+`)

// Run executes the plan. It returns the outcome also when it returns an error (Status failed, or
// aborted when ctx was cancelled): the tasks checkpointed so far are on the branch.
func Run(ctx context.Context, opts Options) (Outcome, error) {
	if opts.Agent == nil {
		return Outcome{Status: StatusFailed}, fmt.Errorf("runner: %w: no agent", ErrUsage)
	}
	if opts.Repo == "" {
		return Outcome{Status: StatusFailed}, fmt.Errorf("runner: %w: no repository", ErrUsage)
	}
	if err := budgetCanBind(opts.Agent, opts.Budget); err != nil {
		return Outcome{Status: StatusFailed}, fmt.Errorf("runner: %w: %w", ErrUsage, err)
	}
	if opts.RunID == "" {
		opts.RunID = NewRunID()
	}
	if opts.AgentTimeout <= 0 {
		opts.AgentTimeout = DefaultAgentTimeout
	}
	if opts.VerifyTimeout <= 0 {
		opts.VerifyTimeout = DefaultVerifyTimeout
	}
	if opts.StallTimeout == 0 {
		opts.StallTimeout = DefaultStallTimeout
	}
	if opts.Author.Name == "" || opts.Author.Email == "" {
		opts.Author = DefaultAuthor
	}
	if opts.ProtectedPaths == nil {
		opts.ProtectedPaths = append([]string(nil), config.DefaultProtectedPaths...)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Sandbox = withModelKeys(opts.Sandbox)
	withTimeline(&opts)
	e := &engine{o: opts, results: map[string]*TaskResult{}}
	return e.run(ctx)
}

// ParseIdentity reads "Name <email>".
func ParseIdentity(s string) (Identity, error) { return workspace.ParseIdentity(s) }
