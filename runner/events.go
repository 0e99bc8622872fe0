package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/runner/verify"
)

// EventType names what happened.
type EventType string

const (
	// EventRunStarted: the workspace is ready; Tasks holds the plan with the status of each task
	// (tasks already done on the branch are "done").
	EventRunStarted EventType = "run_started"
	// EventTaskStarted: a task begins (before its first attempt, or resumes after a decision).
	EventTaskStarted EventType = "task_started"
	// EventAttemptStarted: the agent is about to run; Feedback holds what the agent is told went wrong.
	EventAttemptStarted EventType = "attempt_started"
	// EventAgentFinished: the agent returned; Usage and Duration are the attempt's, Message its error.
	EventAgentFinished EventType = "agent_finished"
	// EventVerifyStarted: VerifyPlan says what runs and where it came from (also "no verification").
	EventVerifyStarted EventType = "verify_started"
	// EventVerifyFinished: Verify holds every command's result.
	EventVerifyFinished EventType = "verify_finished"
	// EventJudged: the acceptance judge answered (Verdict) or could not (Message); only for tasks
	// with acceptance criteria when a judge is configured, after verification passed.
	EventJudged EventType = "judged"
	// EventAttemptFailed: Feedback is what the next attempt (or the escalation) is told.
	EventAttemptFailed EventType = "attempt_failed"
	// EventTaskCheckpointed: the checkpoint Commit is pushed.
	EventTaskCheckpointed EventType = "task_checkpointed"
	// EventTaskEscalated: attempts are exhausted (or the same failure repeated); Escalation is set and
	// the escalation handler is asked next.
	EventTaskEscalated EventType = "task_escalated"
	// EventTaskDecided: a human decision (Decision) was taken for the task.
	EventTaskDecided EventType = "task_decided"
	// EventTaskParked: the task waits for a decision; its work is saved on Escalation.ParkedRef (none
	// in a dry run).
	EventTaskParked EventType = "task_parked"
	// EventTaskSkipped: the task will not run (--skip or a skip decision); dependents stay blocked.
	EventTaskSkipped EventType = "task_skipped"
	// EventTaskBlocked: a dependency is not done (parked, skipped or blocked itself); Message says which.
	EventTaskBlocked EventType = "task_blocked"
	// EventSetupFinished: the repository's setup ran before the first task; Setup holds its steps
	// and log. A failed setup ends the run next (run_finished, status failed).
	EventSetupFinished EventType = "setup_finished"
	// EventBaseChecked: the base-branch health check's result (BaseCheck) for the base Commit; a red base
	// ends the run next unless AllowRedBase.
	EventBaseChecked EventType = "base_checked"
	// EventAgentUnusable: the agent cannot run at all (agent.ErrUnusable), found before the first
	// attempt; Message names the problem and its fix, Commit the base it was checked on. The run
	// ends next (run_finished, status failed), no task attempted.
	EventAgentUnusable EventType = "agent_unusable"
	// EventRunFinished: Outcome is the result of the run.
	EventRunFinished EventType = "run_finished"
)

// Event is one step of a run, for the live view, the JSON stream and the GitHub edge.
type Event struct {
	Type  EventType `json:"type"`
	Time  time.Time `json:"time"`
	RunID string    `json:"run_id"`

	// Set on run_started.
	Repo    string       `json:"repo,omitempty"`
	Roadmap string       `json:"roadmap,omitempty"`
	Branch  string       `json:"branch,omitempty"`
	Base    string       `json:"base,omitempty"`
	Tasks   []TaskResult `json:"tasks,omitempty"`

	TaskID      string `json:"task_id,omitempty"`
	TaskTitle   string `json:"task_title,omitempty"`
	Phase       string `json:"phase,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	MaxAttempts int    `json:"max_attempts,omitempty"`

	VerifyPlan *verify.Plan    `json:"verify_plan,omitempty"`
	Verify     []verify.Result `json:"verify,omitempty"`
	// Lessons are the lessons given to the attempt (attempt_started), as "<id>: <text>".
	Lessons []string `json:"lessons,omitempty"`
	// Accept are the task's acceptance criteria (task_started): with no judge, a reviewer's checklist.
	Accept []string `json:"accept,omitempty"`
	// Unverified says a checkpoint was made with no verification command run and no acceptance
	// criteria stated (task_checkpointed): nothing but the agent vouches for it.
	Unverified bool `json:"unverified,omitempty"`
	// Verdict is the acceptance judge's answer (judged, and task_checkpointed when one accepted the
	// work); MinConfidence is the confidence it needed.
	Verdict       *judge.Verdict `json:"verdict,omitempty"`
	MinConfidence float64        `json:"min_confidence,omitempty"`
	// Output is the agent's whole output (agent_finished), as its agent kept it: the App stores it
	// as the attempt's log. Too large for the event stream, it is not in the JSON.
	Output string `json:"-"`
	// Stalled says the attempt failed because its agent stalled (attempt_failed).
	Stalled bool `json:"stalled,omitempty"`
	// Changed are the paths the attempt changed (task_checkpointed).
	Changed []string `json:"changed,omitempty"`
	// Workflows are the workflow files (.github/workflows/**) among Changed (task_checkpointed), which
	// only a repository that allows them gets this far with.
	Workflows []string `json:"workflows,omitempty"`
	// BaseCommit is the base commit a merge brought the branch up to date with (task_checkpointed of
	// the sync task).
	BaseCommit string        `json:"base_commit,omitempty"`
	Feedback   string        `json:"feedback,omitempty"`
	Commit     string        `json:"commit,omitempty"`
	Duration   time.Duration `json:"duration_ns,omitempty"`
	Usage      *agent.Usage  `json:"usage,omitempty"`
	Message    string        `json:"message,omitempty"`
	// Blocked are the destinations the egress proxy refused the agent (agent_finished) or the
	// verification commands (verify_finished) of the attempt.
	Blocked []egress.Blocked `json:"blocked,omitempty"`

	// Setup is the setup's outcome (setup_finished); Base the health check's (base_checked), with
	// AllowRedBase saying a red base does not stop the run.
	Setup        *env.Result     `json:"setup,omitempty"`
	BaseCheck    *env.BaseResult `json:"base_check,omitempty"`
	AllowRedBase bool            `json:"allow_red_base,omitempty"`

	Decision   *Decision   `json:"decision,omitempty"`
	Escalation *Escalation `json:"escalation,omitempty"`
	Outcome    *Outcome    `json:"outcome,omitempty"`
}

// Reporter receives the events of a run, in order, from one goroutine. An error stops the run with
// that error (a GitHub reporter that cannot post makes the job fail and be retried).
type Reporter interface {
	Report(ctx context.Context, ev Event) error
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(ctx context.Context, ev Event) error

// Report calls f.
func (f ReporterFunc) Report(ctx context.Context, ev Event) error { return f(ctx, ev) }

// JSONReporter writes each event as one JSON object per line.
type JSONReporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewJSONReporter writes JSON lines to w.
func NewJSONReporter(w io.Writer) *JSONReporter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONReporter{enc: enc}
}

// Report writes ev as one line.
func (j *JSONReporter) Report(_ context.Context, ev Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.enc.Encode(ev); err != nil {
		return fmt.Errorf("json reporter: %w", err)
	}
	return nil
}
