// Package agent holds the coding backends that make the changes for a task: an external command
// (exec) or a built-in tool-calling loop against a model API (openai, anthropic).
package agent

import (
	"context"
	"time"

	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/timeline"
)

// Request is one attempt at one task.
type Request struct {
	// Workspace is the directory of the ephemeral clone; the agent works only inside it.
	Workspace string
	TaskID    string
	TaskTitle string
	// Attempt is 1-based.
	Attempt int
	// Prompt is the full task prompt the engine composed (task, roadmap, phase, feedback).
	Prompt string
	// Feedback is what went wrong on the previous attempt (failing commands, exit codes, output tail),
	// plus any human guidance; empty on the first attempt.
	Feedback string
	// ProtectedPaths are globs the agent must not change (default .github/workflows/**).
	ProtectedPaths []string
	// Sandbox confines every command the agent runs; nil runs them unconfined (tests of the
	// backends themselves).
	Sandbox *sandbox.Policy
	// Activity, when set, is called whenever the agent shows a sign of life (output, a model turn):
	// the engine's stall watchdog listens to it. It must be cheap and safe from any goroutine.
	Activity func()
	// Env are KEY=VALUE variables the engine sets for the attempt's commands (the dependency cache's
	// toolchain variables); the operator's own Env of an exec agent wins over them.
	Env []string
	// Record, when set, is told the steps the agent reports (and the built-in agent's model calls)
	// for the attempt's timeline, whole: the recorder masks and bounds them. It must be safe from
	// any goroutine.
	Record func(timeline.Event)
}

// Usage is what an attempt consumed, when the backend knows.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// CostUSD is zero when the model has no price in the table.
	CostUSD float64
	// Estimated says the tokens (and so the cost) hold an estimate: the egress proxy metered a call
	// whose answer did not state its whole usage (see egress.Report).
	Estimated bool `json:",omitempty"`
}

// Add returns the sum of two usages; the sum is an estimate when either is.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens, CostUSD: u.CostUSD + o.CostUSD,
		Estimated: u.Estimated || o.Estimated}
}

// Result is what an attempt left, besides the files it changed in the workspace.
type Result struct {
	// Output is the agent's own log or final message, capped.
	Output   string
	Usage    Usage
	Duration time.Duration
}

// Agent makes the changes for one attempt. A returned error is a failed attempt (its message is
// feedback for the next one); the caller's context ending must stop the agent promptly.
type Agent interface {
	Run(ctx context.Context, req Request) (Result, error)
}
