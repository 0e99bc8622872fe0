// Package timeline is the record of what an attempt did, in order: each model call and what it
// cost, each step the agent reported, each file the attempt changed, each verification command,
// each egress refusal, the judge's verdict and the attempt's end. A reviewer reads it to see how the
// agent got to a checkpoint, an operator to see what the attempt cost.
//
// There is one event type: a kind, the fields every event has, and one typed part per kind. It is
// written one JSON object per line. Version changes when a field changes its meaning or goes away;
// a new field or a new kind keeps it, so readers skip what they do not know.
package timeline

import (
	"time"
)

// Version is the schema's version, in every event's "v".
const Version = 1

// Kind is what an event records; it says which of the event's parts is set.
type Kind string

const (
	// KindAttemptStarted: the agent is about to run (Start).
	KindAttemptStarted Kind = "attempt_started"
	// KindModelCall: one model call (Call): through the egress proxy, the built-in agent's own, or
	// the judge's.
	KindModelCall Kind = "model_call"
	// KindAgentStep: a step the agent reported (Step): a tool it called, a message, its result.
	// Only what the agent says: the files come from the work tree, the cost from the calls.
	KindAgentStep Kind = "agent_step"
	// KindAgentFinished: the agent returned (Agent).
	KindAgentFinished Kind = "agent_finished"
	// KindFileChanged: a file the work tree holds changed against the attempt's start (File), read
	// from git once the agent returned.
	KindFileChanged Kind = "file_changed"
	// KindVerify: one verification command ran (Command).
	KindVerify Kind = "verify"
	// KindEgressRefused: the egress proxy refused a destination or a model call (Refusal); the first
	// refusal of each, the repeats are counted in the attempt's report.
	KindEgressRefused Kind = "egress_refused"
	// KindJudged: the acceptance judge's verdict (Verdict).
	KindJudged Kind = "judged"
	// KindAttemptEnded: the attempt is over (End); always the last event of an attempt.
	KindAttemptEnded Kind = "attempt_ended"
)

// Event is one entry of an attempt's timeline. Seq counts from 1 in each attempt, in the order the
// events were recorded; Time is when. CostUSD is what the attempt's model calls cost up to and
// including this event, priced by Akira: the timeline's "cost so far".
type Event struct {
	V       int       `json:"v"`
	Seq     int       `json:"seq"`
	Time    time.Time `json:"time"`
	Kind    Kind      `json:"kind"`
	RunID   string    `json:"run_id"`
	TaskID  string    `json:"task_id"`
	Attempt int       `json:"attempt"`
	CostUSD float64   `json:"cost_usd"`

	Start   *Start     `json:"start,omitempty"`
	Call    *ModelCall `json:"call,omitempty"`
	Step    *Step      `json:"step,omitempty"`
	Agent   *AgentEnd  `json:"agent,omitempty"`
	File    *File      `json:"file,omitempty"`
	Command *Command   `json:"command,omitempty"`
	Refusal *Refusal   `json:"refusal,omitempty"`
	Verdict *Verdict   `json:"verdict,omitempty"`
	End     *End       `json:"end,omitempty"`
}

// Start is an attempt's beginning.
type Start struct {
	// Commit is the attempt's start: the last checkpoint, which the work tree is diffed against.
	Commit      string `json:"commit"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	// Retry says the agent is told what failed before (or a person's guidance).
	Retry bool `json:"retry,omitempty"`
	// RunCostUSD is what the run had spent before this attempt.
	RunCostUSD float64 `json:"run_cost_usd"`
}

// Where a model call was made and metered.
const (
	SourceProxy = "proxy" // by a CLI agent through the egress proxy, which metered it
	SourceAgent = "agent" // by the built-in agent from Akira's process
	SourceJudge = "judge" // by the acceptance judge
)

// ModelCall is one call to a model API.
type ModelCall struct {
	Source string `json:"source"`
	Model  string `json:"model,omitempty"`
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Status is the HTTP status the model endpoint answered (0: it did not answer, or the proxy
	// refused the call before it went out).
	Status       int   `json:"status,omitempty"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_tokens,omitempty"`
	CacheWrite   int64 `json:"cache_write_tokens,omitempty"`
	// CostUSD is the tokens at Akira's price for the model; Unpriced says it has none (cost 0).
	CostUSD  float64 `json:"cost_usd"`
	Unpriced bool    `json:"unpriced,omitempty"`
	// Estimated: the answer did not state the whole call's usage; the tokens are estimated from its bytes.
	Estimated bool          `json:"estimated,omitempty"`
	Streamed  bool          `json:"streamed,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	// Refused says why the proxy did not forward the call; nothing reached the model.
	Refused string `json:"refused,omitempty"`
	// Error says why the call got no answer from the model endpoint.
	Error string `json:"error,omitempty"`
}

// Agents whose steps a timeline reads.
const (
	AgentClaudeCode = "claude-code" // `claude -p --output-format stream-json --verbose` (or json: the result only)
	AgentCodex      = "codex"       // `codex exec --json`
	AgentBuiltin    = "builtin"     // Akira's own tool-calling agent
)

// Step types.
const (
	StepTool    = "tool"    // a tool call and its result
	StepMessage = "message" // text the agent wrote
	StepResult  = "result"  // the agent's own summary of its run
	StepError   = "error"   // an error the agent reported
)

// Step is one step an agent reported.
type Step struct {
	Agent string `json:"agent"`
	Type  string `json:"type"`
	Tool  string `json:"tool,omitempty"`
	// Args is the argument that says what the call did (a path, a command), shortened.
	Args string `json:"args,omitempty"`
	// Text is a message, shortened.
	Text        string `json:"text,omitempty"`
	ResultBytes int    `json:"result_bytes,omitempty"`
	// ExitCode is a command's, when the agent said it.
	ExitCode *int `json:"exit_code,omitempty"`
	Error    bool `json:"error,omitempty"`
}

// AgentEnd is how the agent's run ended.
type AgentEnd struct {
	Duration time.Duration `json:"duration_ns"`
	// Error is why the attempt failed there (an exit status, a timeout, a stall); "" when it did not.
	Error string `json:"error,omitempty"`
}

// File statuses.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileDeleted  = "deleted"
)

// File is a path the attempt changed, as git sees the work tree against the attempt's start.
type File struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	// Added and Deleted are lines; a binary file has none (Binary).
	Added   int  `json:"added"`
	Deleted int  `json:"deleted"`
	Binary  bool `json:"binary,omitempty"`
}

// Command is one verification command's result.
type Command struct {
	Command  string        `json:"command"`
	ExitCode int           `json:"exit_code"`
	Passed   bool          `json:"passed"`
	Duration time.Duration `json:"duration_ns"`
	TimedOut bool          `json:"timed_out,omitempty"`
	// Tail is the end of its output (at most TailBytes).
	Tail string `json:"tail,omitempty"`
}

// Who the egress proxy refused.
const (
	ByAgent  = "agent"
	ByVerify = "verify"
)

// Refusal is what the egress proxy would not let through.
type Refusal struct {
	By   string `json:"by"`
	Host string `json:"host"`
	Port int    `json:"port"`
	// Method and Path are a model call's, when the proxy refused a call rather than a destination.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// Verdict is the acceptance judge's answer.
type Verdict struct {
	Passed        bool    `json:"passed"`
	Confidence    float64 `json:"confidence"`
	MinConfidence float64 `json:"min_confidence"`
	Model         string  `json:"model,omitempty"`
	// Failed are the criteria the judge found unmet, shortened.
	Failed []string `json:"failed,omitempty"`
	// Error is why the judge gave no valid verdict.
	Error string `json:"error,omitempty"`
}

// Results of an attempt.
const (
	ResultCheckpointed = "checkpointed" // its work is the task's checkpoint
	ResultFailed       = "failed"       // the next attempt, or an escalation, follows
	ResultParked       = "parked"       // verified, waiting at the task's gate for a person
	ResultSkipped      = "skipped"      // a person skipped the task at its gate
	ResultStopped      = "stopped"      // the run ended during the attempt (cancelled, an error)
)

// End is an attempt's end.
type End struct {
	Result string `json:"result"`
	// Summary is why it failed or stopped, one line.
	Summary string `json:"summary,omitempty"`
	// Commit is the checkpoint it made.
	Commit   string        `json:"commit,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// CostUSD is the attempt's; RunCostUSD the run's so far, this attempt included. Estimated: some
	// call's usage was estimated.
	CostUSD    float64 `json:"cost_usd"`
	RunCostUSD float64 `json:"run_cost_usd"`
	Estimated  bool    `json:"estimated,omitempty"`
	// Dropped counts, by kind, the events not kept past MaxEvents.
	Dropped map[Kind]int `json:"dropped,omitempty"`
}

// Bounds on what one attempt's timeline holds: an agent chooses how many steps it takes, calls it
// makes and files it writes, and a hostile one could otherwise make the record as large as it likes.
const (
	// MaxEvents bounds the events of the kinds an agent drives (model calls, steps, refusals,
	// files); the others (start, agent end, verification, verdict, end) are always kept.
	MaxEvents = 2000
	// MaxText bounds a step's arguments and text, a verdict's criteria, a summary, a reason.
	MaxText = 300
	// MaxPath bounds a file's path and a verification command.
	MaxPath = 1 << 10
	// TailBytes bounds a verification command's output tail.
	TailBytes = 2 << 10
)

// Bounded says whether events of kind count against MaxEvents.
func Bounded(k Kind) bool {
	switch k {
	case KindModelCall, KindAgentStep, KindEgressRefused, KindFileChanged:
		return true
	}
	return false
}
