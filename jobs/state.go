package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/templates"
)

// RunStatus is where a run is in its life.
type RunStatus string

const (
	// StatusQueued: created, or a decision arrived, and a job is on the queue to (continue) work.
	StatusQueued RunStatus = "queued"
	// StatusRunning: a worker holds the branch lock and works on the run.
	StatusRunning RunStatus = "running"
	// StatusParked: a task is escalated; the run waits for a human decision and holds no worker.
	StatusParked RunStatus = "parked"
	// StatusSucceeded: every task is done (passed, approved or skipped) and the PR is ready.
	StatusSucceeded RunStatus = "succeeded"
	// StatusFailed: the run stopped on an error it cannot recover from.
	StatusFailed RunStatus = "failed"
	// StatusAborted: someone replied /akira abort.
	StatusAborted RunStatus = "aborted"
	// StatusStopped: someone stopped the run while it worked (/akira stop); like a parked run it keeps
	// its branch and holds no worker, and /akira run continues it from the last checkpoint.
	StatusStopped RunStatus = "stopped"
)

// Terminal reports whether the run is over; a terminal run frees its branch.
func (s RunStatus) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusAborted
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
	// Title is the pull request's title (the issue's title for an issue run).
	Title string `json:"title,omitempty"`
	// Agent is the operator's agent profile the run uses; MaxAttempts the attempts per task.
	Agent       string    `json:"agent,omitempty"`
	MaxAttempts int       `json:"max_attempts,omitempty"`
	Status      RunStatus `json:"status"`
	// Tasks are in execution order.
	Tasks []TaskState `json:"tasks,omitempty"`
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
	// Budget is what the run may spend (the operator's, lowered by the repository's, raised by
	// `/akira run --budget`); WorkTime how long its jobs have worked.
	Budget config.Budget `json:"budget,omitzero"`
	// BudgetCeilingUSD is the most `/akira run --budget` may give the run (0: no ceiling).
	BudgetCeilingUSD float64       `json:"budget_ceiling_usd,omitempty"`
	WorkTime         time.Duration `json:"work_time,omitempty"`
	// MaxParallel is how many independent tasks the run does at once.
	MaxParallel int `json:"max_parallel,omitempty"`
	// TaskStartedAt is when the current task started; Activity the working job's last sign of life
	// ("the agent is working", "verifying: go test ./...") and ActivityAt when (see progress.go).
	TaskStartedAt time.Time `json:"task_started_at,omitzero"`
	// PastDurations are the repository's recent task durations when the run started (history.go),
	// for the estimate of its time left before it has finished a task of its own.
	PastDurations []time.Duration `json:"past_durations,omitempty"`
	Activity      string          `json:"activity,omitempty"`
	ActivityAt    time.Time       `json:"activity_at,omitzero"`
	// Stop is a request to stop (or abort) the run while a job works on it: the job polls for it.
	Stop *StopRequest `json:"stop,omitempty"`
	// StoppedBy is who stopped the run (status stopped).
	StoppedBy string `json:"stopped_by,omitempty"`
	// AnsweredBy is who took the latest decision on an escalation.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Error says why a failed run stopped; AbortedBy who aborted it.
	Error     string `json:"error,omitempty"`
	AbortedBy string `json:"aborted_by,omitempty"`
	// Rebuilt is set when Redis had lost the run's record and it was rebuilt from its branch: the key of
	// the delivery or decision that rebuilt it (see rebuild.go).
	Rebuilt string `json:"rebuilt,omitempty"`
	// Jobs counts the job executions that worked on the run (retries and continuations included).
	Jobs       int       `json:"jobs"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Rev is incremented by every write.
	Rev int64 `json:"rev"`
}

// TaskState is one task of a run.
type TaskState struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Status is one of the templates.Status* values (pending, running, passed, ...).
	Status   string        `json:"status"`
	Attempts int           `json:"attempts,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// CheckRunID is the task's current check run; CheckRunDone says it is completed, so the next
	// round of attempts (after a retry decision) gets a new one.
	CheckRunID   int64  `json:"check_run_id,omitempty"`
	CheckRunURL  string `json:"check_run_url,omitempty"`
	CheckRunDone bool   `json:"check_run_done,omitempty"`
	// Checkpoint is the commit that finished the task.
	Checkpoint string `json:"checkpoint,omitempty"`
	Note       string `json:"note,omitempty"`
	// Accept are the task's acceptance criteria; Unverified says its checkpoint was made with no
	// verification command run and no criteria stated.
	Accept     []string `json:"accept,omitempty"`
	Unverified bool     `json:"unverified,omitempty"`
	// Judgement is the acceptance judge's latest verdict on the task.
	Judgement *templates.Judgement `json:"judgement,omitempty"`
	// Escalations counts how often the task was escalated; EscalationCommentID is the comment of the
	// latest escalation.
	Escalations         int     `json:"escalations,omitempty"`
	EscalationCommentID int64   `json:"escalation_comment_id,omitempty"`
	EscalationURL       string  `json:"escalation_url,omitempty"`
	InputTokens         int64   `json:"input_tokens,omitempty"`
	OutputTokens        int64   `json:"output_tokens,omitempty"`
	CostUSD             float64 `json:"cost_usd,omitempty"`
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

// Task returns the task with the id, or nil.
func (r *Run) Task(id string) *TaskState {
	for i := range r.Tasks {
		if r.Tasks[i].ID == id {
			return &r.Tasks[i]
		}
	}
	return nil
}

// Errors of the store.
var (
	ErrNotFound = errors.New("jobs: run not found")
	// ErrBranchBusy is wrapped by *BranchBusyError.
	ErrBranchBusy = errors.New("jobs: another run is active on the branch")
	// ErrConflict is returned when a run kept changing under an update (more writers than retries).
	ErrConflict = errors.New("jobs: run state kept changing; giving up")
)

// BranchBusyError says which run holds the branch.
type BranchBusyError struct {
	Branch string
	Active *Run
}

func (e *BranchBusyError) Error() string {
	return fmt.Sprintf("jobs: run %s is %s on branch %s", e.Active.ID, e.Active.Status, e.Branch)
}

// Unwrap makes errors.Is(err, ErrBranchBusy) true.
func (e *BranchBusyError) Unwrap() error { return ErrBranchBusy }

// Defaults of the store.
const (
	DefaultPrefix = "akira:"
	// DefaultStateRetention is how long a finished run's state is kept for /akira status and replies.
	DefaultStateRetention = 30 * 24 * time.Hour
	// DefaultStaleAfter is how long a queued or running run may go without a write before a new run
	// may take its branch: longer than any job's timeout, so only a run whose jobs all died qualifies.
	DefaultStaleAfter = DefaultTimeout + time.Hour
)

// Store keeps run state in Redis. Every change is a read-modify-write inside WATCH/MULTI, so two
// writers never lose each other's update and a conditional transition (parked → queued only when
// still parked on that task at that head) cannot race.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	// Retention is the TTL of a finished run's state (DefaultStateRetention when zero).
	Retention time.Duration
	// StaleAfter: see DefaultStaleAfter.
	StaleAfter time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewStore returns a store whose keys start with prefix (DefaultPrefix when empty).
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, prefix: prefix}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) retention() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return DefaultStateRetention
}

func (s *Store) staleAfter() time.Duration {
	if s.StaleAfter > 0 {
		return s.StaleAfter
	}
	return DefaultStaleAfter
}

// repoKey is lower-case because GitHub owner and repository names are case-insensitive.
func repoKey(owner, repo string) string { return strings.ToLower(owner + "/" + repo) }

func (s *Store) runKey(id string) string { return s.prefix + "run:" + id }

func (s *Store) indexKey(owner, repo string, number int) string {
	return s.prefix + "runidx:" + repoKey(owner, repo) + "#" + strconv.Itoa(number)
}

// replyRetention is how long a reply's key is remembered: longer than GitHub offers redelivery.
const replyRetention = 7 * 24 * time.Hour

func (s *Store) replyKey(key string) string { return s.prefix + "reply:" + key }

// replied reports whether the reply of key was posted.
func (s *Store) replied(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.replyKey(key)).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: reply %s: %w", key, err)
	}
	return n == 1, nil
}

// markReplied records that the reply of key was posted.
func (s *Store) markReplied(ctx context.Context, key string) error {
	if err := s.rdb.Set(ctx, s.replyKey(key), "1", replyRetention).Err(); err != nil {
		return fmt.Errorf("jobs: reply %s: %w", key, err)
	}
	return nil
}

// runningKey is the set of runs marked running: a job holds their branch lock, or its worker died.
func (s *Store) runningKey() string { return s.prefix + "running" }

// forgetRunning drops a run from the running set (it stopped running, or its state is gone).
func (s *Store) forgetRunning(ctx context.Context, id string) error {
	if err := s.rdb.SRem(ctx, s.runningKey(), id).Err(); err != nil {
		return fmt.Errorf("jobs: running runs: %w", err)
	}
	return nil
}

// Running returns the ids of the runs marked running.
func (s *Store) Running(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.runningKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: running runs: %w", err)
	}
	return ids, nil
}

func (s *Store) branchKey(owner, repo, branch string) string {
	return s.prefix + "branchrun:" + repoKey(owner, repo) + ":" + branch
}

// compareAndDelete deletes KEYS[1] only when it holds ARGV[1].
const compareAndDeleteLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// compareAndExpire sets a TTL on KEYS[1] only when it holds ARGV[1].
// Both are sent with EVAL rather than EVALSHA because they run inside MULTI, where a missing script
// could not be retried.
const compareAndExpireLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

// active reports whether r still owns its branch.
func (s *Store) active(r *Run) bool {
	if r.Status.Terminal() {
		return false
	}
	if r.Status == StatusParked || r.Status == StatusStopped {
		return true // waiting for people is not stale
	}
	return s.now().Sub(r.UpdatedAt) < s.staleAfter()
}

// Create stores a new run and makes it the branch's active run. When a run with the same id exists
// (a retried or redelivered job), it is returned with created false and nothing is written. When
// another run is active on the branch the error is a *BranchBusyError.
func (s *Store) Create(ctx context.Context, r *Run) (run *Run, created bool, err error) {
	if r.ID == "" || r.Owner == "" || r.Repo == "" || r.Branch == "" {
		return nil, false, errors.New("jobs: create run: id, repository and branch are required")
	}
	key := s.runKey(r.ID)
	bkey := s.branchKey(r.Owner, r.Repo, r.Branch)
	txf := func(tx *redis.Tx) error {
		if existing, err := s.get(ctx, tx, r.ID); err == nil {
			run, created = existing, false
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		other, err := tx.Get(ctx, bkey).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("jobs: create run: %w", err)
		}
		if other != "" && other != r.ID {
			o, err := s.get(ctx, tx, other)
			switch {
			case err == nil && s.active(o):
				return &BranchBusyError{Branch: r.Branch, Active: o}
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
		}
		nr := *r
		now := s.now()
		nr.CreatedAt, nr.UpdatedAt, nr.Rev = now, now, 1
		if nr.Status == "" {
			nr.Status = StatusQueued
		}
		data, err := json.Marshal(&nr)
		if err != nil {
			return fmt.Errorf("jobs: create run: %w", err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, data, 0)
			p.Set(ctx, bkey, nr.ID, 0)
			for _, n := range nr.numbers() {
				p.Set(ctx, s.indexKey(nr.Owner, nr.Repo, n), nr.ID, 0)
			}
			return nil
		})
		run, created = &nr, true
		return err
	}
	if err := s.watch(ctx, txf, key, bkey); err != nil {
		return nil, false, err
	}
	return run, created, nil
}

// numbers are the issue and pull request numbers a reply can find the run by.
func (r *Run) numbers() []int {
	var out []int
	if r.Issue > 0 {
		out = append(out, r.Issue)
	}
	if r.PR > 0 && r.PR != r.Issue {
		out = append(out, r.PR)
	}
	return out
}

// Get returns the run with the id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*Run, error) {
	return s.get(ctx, s.rdb, id)
}

func (s *Store) get(ctx context.Context, c redis.Cmdable, id string) (*Run, error) {
	data, err := c.Get(ctx, s.runKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: get run %s: %w", id, err)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("jobs: run %s: %w", id, err)
	}
	return &r, nil
}

// ByNumber returns the latest run started from, or pushing to, the issue or pull request.
func (s *Store) ByNumber(ctx context.Context, owner, repo string, number int) (*Run, error) {
	id, err := s.rdb.Get(ctx, s.indexKey(owner, repo, number)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s#%d", ErrNotFound, repoKey(owner, repo), number)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: run of %s#%d: %w", repoKey(owner, repo), number, err)
	}
	return s.Get(ctx, id)
}

// activeOnBranch returns the run that owns the branch, or ErrNotFound when none does.
func (s *Store) activeOnBranch(ctx context.Context, owner, repo, branch string) (*Run, error) {
	id, err := s.rdb.Get(ctx, s.branchKey(owner, repo, branch)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: branch %s", ErrNotFound, branch)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: run on %s: %w", branch, err)
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.active(r) {
		return nil, fmt.Errorf("%w: branch %s", ErrNotFound, branch)
	}
	return r, nil
}

// Update applies fn to the run atomically and returns the stored result. fn may be called more than
// once (when another writer got in between) and must only change the run it is given; an error from
// fn aborts the update and is returned as is. The indexes follow the run: a number it gains is
// indexed, and when it turns terminal it frees its branch and its state starts to expire.
func (s *Store) Update(ctx context.Context, id string, fn func(*Run) error) (*Run, error) {
	key := s.runKey(id)
	var out *Run
	txf := func(tx *redis.Tx) error {
		r, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
		r.ID = id
		r.Rev++
		r.UpdatedAt = s.now()
		if r.Status.Terminal() && r.FinishedAt.IsZero() {
			r.FinishedAt = r.UpdatedAt
		}
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("jobs: update run %s: %w", id, err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			ttl := time.Duration(0)
			if r.Status.Terminal() {
				ttl = s.retention()
			}
			p.Set(ctx, key, data, ttl)
			for _, n := range r.numbers() {
				ik := s.indexKey(r.Owner, r.Repo, n)
				if r.Status.Terminal() {
					// Only this run's own index entries expire with it; a newer run keeps its entry.
					p.Eval(ctx, compareAndExpireLua, []string{ik}, id, ttl.Milliseconds())
				} else {
					p.Set(ctx, ik, id, 0)
				}
			}
			if r.Status.Terminal() {
				p.Eval(ctx, compareAndDeleteLua, []string{s.branchKey(r.Owner, r.Repo, r.Branch)}, id)
			}
			if r.Status == StatusRunning {
				p.SAdd(ctx, s.runningKey(), id)
			} else {
				p.SRem(ctx, s.runningKey(), id)
			}
			return nil
		})
		out = r
		return err
	}
	if err := s.watch(ctx, txf, key); err != nil {
		return nil, err
	}
	return out, nil
}

// watch runs an optimistic transaction, retrying while other writers get in between.
func (s *Store) watch(ctx context.Context, txf func(*redis.Tx) error, keys ...string) error {
	for range 100 {
		err := s.rdb.Watch(ctx, txf, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return ErrConflict
}

// NotParkedError says why a decision does not apply to the run as it is now.
type NotParkedError struct {
	Reason string
}

func (e *NotParkedError) Error() string { return "jobs: " + e.Reason }

// errAlreadyDecided aborts an update that would take the same decision twice.
var errAlreadyDecided = errors.New("jobs: decision already taken")

// maxDecisionKeys bounds Run.DecisionKeys.
const maxDecisionKeys = 20

// Decide records a decision on a parked task. The run moves from parked to queued (approve, retry,
// skip: a job continues it) or to aborted. It acts only while the task is parked (a run already queued
// by a decision on another parked task still takes decisions on the rest) and, when headSHA is given,
// while the branch is still at the head the run left it at; otherwise it returns a *NotParkedError and
// changes nothing. An empty d.TaskID means the first parked task. A decision whose Key was taken
// before is not taken again: the run is returned as it is, with already true.
func (s *Store) Decide(ctx context.Context, id string, d Decision, headSHA string) (run *Run, already bool, err error) {
	run, err = s.Update(ctx, id, func(r *Run) error {
		if d.Key != "" && slices.Contains(r.DecisionKeys, d.Key) {
			return errAlreadyDecided
		}
		// A task is parked (in r.Parked) before its escalation comment and buttons appear, while the
		// job may still work on other tasks: a running run takes decisions on its parked tasks too, and
		// the job hands them on when it ends (see recordFinished).
		running := r.Status == StatusRunning
		if (r.Status != StatusParked && r.Status != StatusQueued && !running) || len(r.Parked) == 0 {
			return &NotParkedError{Reason: fmt.Sprintf("run %s is %s, not waiting for a decision", r.ID, r.Status)}
		}
		if d.TaskID == "" {
			d.TaskID = r.Parked[0].TaskID
		}
		if r.ParkedTask(d.TaskID) == nil {
			waiting := make([]string, len(r.Parked))
			for i, p := range r.Parked {
				waiting[i] = p.TaskID
			}
			return &NotParkedError{Reason: fmt.Sprintf("run %s waits on task %s, not %s", r.ID, strings.Join(waiting, ", "), d.TaskID)}
		}
		// While the run is running, its own checkpoints move the branch; the head is checked once it stops.
		if !running && headSHA != "" && r.Head != "" && headSHA != r.Head {
			return &NotParkedError{Reason: fmt.Sprintf("branch %s moved from %s to %s since the run parked",
				r.Branch, short(r.Head), short(headSHA))}
		}
		if d.Key != "" {
			r.DecisionKeys = append(r.DecisionKeys, d.Key)
			if n := len(r.DecisionKeys); n > maxDecisionKeys {
				r.DecisionKeys = r.DecisionKeys[n-maxDecisionKeys:]
			}
		}
		if d.By != "" {
			r.AnsweredBy = d.By
		}
		if d.Kind == runner.DecisionAbort {
			recordAborted(r, d.By, "")
			return nil
		}
		kept := r.Parked[:0]
		for _, p := range r.Parked {
			if p.TaskID != d.TaskID {
				kept = append(kept, p)
			}
		}
		r.Parked = kept
		if r.Decisions == nil {
			r.Decisions = map[string]Decision{}
		}
		r.Decisions[d.TaskID] = d
		if !running {
			r.Status = StatusQueued
		}
		return nil
	})
	if errors.Is(err, errAlreadyDecided) {
		run, err = s.Get(ctx, id)
		return run, true, err
	}
	return run, false, err
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
