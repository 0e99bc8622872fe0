package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/timeline"
)

// ErrLimit marks an attempt ended by one of the profile's limits (turns, tokens, time, cost).
var ErrLimit = errors.New("limit reached")

type limitError struct{ msg string }

func (e *limitError) Error() string { return "llm: " + e.msg }
func (e *limitError) Unwrap() error { return ErrLimit }

func limitf(format string, a ...any) error { return &limitError{msg: fmt.Sprintf(format, a...)} }

// errTimeout is the cause of the attempt context's own deadline, to tell it from the caller's.
var errTimeout = errors.New("llm attempt timeout")

const (
	// maxOutputBytes bounds Result.Output.
	maxOutputBytes = 16 << 10
	// layoutEntries bounds the top-level listing in the prompt.
	layoutEntries = 200
	// truncatedNudge is sent when an answer without tool calls was cut by the output limit.
	truncatedNudge = "Your last response was cut off by the output token limit. Continue, more briefly; use tools to make changes."
)

type llmAgent struct {
	cfg      Config
	provider provider
	http     *httpClient
	price    Price
	priced   bool
}

// attempt is the running state of one Run.
type attempt struct {
	req        agent.Request
	log        *slog.Logger
	usage      agent.Usage
	transcript []string
	turns      int
	finalText  string
}

// Run makes the changes for one attempt: it sends the task with the tool definitions, runs the
// tool calls the model returns and sends back their results, until the model answers without
// tool calls or a limit is reached. A limit returns the usage so far and an error wrapping ErrLimit.
func (a *llmAgent) Run(ctx context.Context, req agent.Request) (agent.Result, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, a.cfg.Timeout, errTimeout)
	defer cancel()

	st := &attempt{req: req, log: a.cfg.Logger.With("task", req.TaskID, "attempt", req.Attempt, "provider", a.cfg.Provider, "model", a.cfg.Model)}
	err := a.loop(ctx, st)
	if err != nil && ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			err = limitf("timeout (%s) reached", a.cfg.Timeout)
		} else {
			err = fmt.Errorf("llm: stopped: %w", ctx.Err())
		}
	}
	res := agent.Result{Output: st.output(), Usage: st.usage, Duration: time.Since(start)}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	st.log.Log(context.WithoutCancel(ctx), level, "llm attempt finished", "turns", st.turns,
		"input_tokens", st.usage.InputTokens, "output_tokens", st.usage.OutputTokens, "cost_usd", st.usage.CostUSD,
		"duration", res.Duration, "error", err)
	return res, err
}

func (a *llmAgent) loop(ctx context.Context, st *attempt) error {
	ws, err := openWorkspace(st.req.Workspace, st.req.ProtectedPaths)
	if err != nil {
		return err
	}
	tb := &toolbox{ws: ws, cmdTimeout: a.cfg.CommandTimeout, outputCap: a.cfg.OutputCap, passthrough: a.cfg.EnvPassthrough, sandbox: st.req.Sandbox, changed: map[string]bool{}}
	defer func() { st.noteChanged(tb.changed) }()

	chat := chatRequest{
		system:    buildSystemPrompt(st.req.ProtectedPaths),
		tools:     toolSpecs,
		maxOutput: a.cfg.MaxOutputTokens,
		messages:  []message{{role: roleUser, text: buildUserPrompt(st.req, ws.topLevel(layoutEntries))}},
	}
	for {
		st.turns++
		started := time.Now()
		resp, err := a.provider.complete(ctx, chat)
		if err != nil {
			st.call(a.callFailed(err, time.Since(started)))
			return fmt.Errorf("llm: turn %d: %w", st.turns, err)
		}
		turn := a.usageOf(resp.usage)
		st.usage = st.usage.Add(turn)
		st.call(timeline.ModelCall{Source: timeline.SourceAgent, Model: a.cfg.Model, Status: http.StatusOK,
			InputTokens: resp.usage.in, OutputTokens: resp.usage.out, CostUSD: turn.CostUSD, Unpriced: !a.priced, Duration: time.Since(started)})
		if st.req.Activity != nil {
			st.req.Activity() // a model turn is a sign of life for the stall watchdog
		}
		st.log.Info("llm turn", "turn", st.turns, "input_tokens", turn.InputTokens, "output_tokens", turn.OutputTokens,
			"total_tokens", st.usage.InputTokens+st.usage.OutputTokens, "cost_usd", st.usage.CostUSD,
			"tool_calls", len(resp.toolCalls), "stop", resp.rawStop)
		if resp.text != "" {
			st.finalText = resp.text
			st.step(timeline.Step{Agent: timeline.AgentBuiltin, Type: timeline.StepMessage, Text: resp.text})
		}
		chat.messages = append(chat.messages, message{role: roleAssistant, text: resp.text, toolCalls: resp.toolCalls})

		switch resp.stop {
		case stopRefused:
			return fmt.Errorf("llm: the model refused or was filtered (%s): %s", resp.rawStop, snippet(resp.text, 500))
		case stopEnd:
			// Done: a limit crossed by this last response is not enforced, since nothing more
			// will be spent and failing would throw the finished work away.
			return nil
		}

		// The model wants to go on: check the limits before spending more.
		if st.turns >= a.cfg.MaxTurns {
			return limitf("max turns (%d) reached", a.cfg.MaxTurns)
		}
		if used := st.usage.InputTokens + st.usage.OutputTokens; a.cfg.MaxTokens > 0 && used > a.cfg.MaxTokens {
			return limitf("max tokens (%d) exceeded: %d used", a.cfg.MaxTokens, used)
		}
		if a.cfg.MaxCostUSD > 0 && st.usage.CostUSD > a.cfg.MaxCostUSD {
			return limitf("max cost $%.2f exceeded: $%.2f", a.cfg.MaxCostUSD, st.usage.CostUSD)
		}

		if resp.stop == stopTruncated {
			chat.messages = append(chat.messages, message{role: roleUser, text: truncatedNudge})
			st.transcript = append(st.transcript, fmt.Sprintf("%d. (response cut by the output token limit)", st.turns))
			continue
		}
		results := make([]toolResult, 0, len(resp.toolCalls))
		for _, c := range resp.toolCalls {
			tb.exitCode = nil
			out, err := tb.call(ctx, c.name, c.args)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := toolResult{callID: c.id, content: out}
			if err != nil {
				r.content, r.isError = err.Error(), true
			}
			r.content = capText(r.content, maxToolResultBytes)
			results = append(results, r)
			st.note(c, r)
			st.step(timeline.Step{Agent: timeline.AgentBuiltin, Type: timeline.StepTool, Tool: c.name, Args: callArgs(c),
				ResultBytes: len(r.content), ExitCode: tb.exitCode, Error: r.isError || (tb.exitCode != nil && *tb.exitCode != 0)})
			st.log.Debug("llm tool call", "turn", st.turns, "tool", c.name, "error", r.isError)
		}
		chat.messages = append(chat.messages, message{role: roleUser, toolResults: results})
	}
}

// call records a model call in the attempt's timeline.
func (st *attempt) call(c timeline.ModelCall) {
	if st.req.Record != nil {
		st.req.Record(timeline.Event{Kind: timeline.KindModelCall, Call: &c})
	}
}

// step records a step in the attempt's timeline.
func (st *attempt) step(s timeline.Step) {
	if st.req.Record != nil {
		st.req.Record(timeline.Event{Kind: timeline.KindAgentStep, Step: &s})
	}
}

// callFailed is a model call that got no answer the agent could use: the provider's error status,
// or none.
func (a *llmAgent) callFailed(err error, took time.Duration) timeline.ModelCall {
	c := timeline.ModelCall{Source: timeline.SourceAgent, Model: a.cfg.Model, Duration: took, Error: err.Error()}
	if apiErr, ok := errors.AsType[*APIError](err); ok {
		c.Status = apiErr.StatusCode
	}
	return c
}

// callArgs is the argument that identifies a tool call, whole (the timeline shortens it), else its
// arguments.
func callArgs(c toolCall) string {
	var m map[string]any
	if json.Unmarshal(c.argsObject(), &m) != nil {
		return c.args
	}
	for _, k := range []string{"path", "command", "pattern"} {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
	}
	return string(c.argsObject())
}

// note adds one line per tool call to the transcript.
func (st *attempt) note(c toolCall, r toolResult) {
	status := "ok"
	if r.isError {
		status = "error: " + snippet(firstLineOf(r.content), 160)
	} else if c.name == "run_command" {
		status = snippet(firstLineOf(r.content), 40)
	}
	st.transcript = append(st.transcript, fmt.Sprintf("%d. %s %s → %s", st.turns, c.name, argSummary(c), status))
}

func (st *attempt) noteChanged(changed map[string]bool) {
	if len(changed) == 0 {
		return
	}
	files := make([]string, 0, len(changed))
	for f := range changed {
		files = append(files, f)
	}
	sort.Strings(files)
	st.transcript = append(st.transcript, "files written: "+strings.Join(files, ", "))
}

// output is the final answer followed by a compact transcript, capped.
func (st *attempt) output() string {
	var b strings.Builder
	if st.finalText != "" {
		b.WriteString(strings.TrimSpace(st.finalText))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "--- %d turns, %d input + %d output tokens", st.turns, st.usage.InputTokens, st.usage.OutputTokens)
	if st.usage.CostUSD > 0 {
		fmt.Fprintf(&b, ", $%.4f", st.usage.CostUSD)
	}
	b.WriteString(" ---\n")
	for _, l := range st.transcript {
		b.WriteString(l + "\n")
	}
	return capText(b.String(), maxOutputBytes)
}

// argSummary shows the argument that identifies a call (a path, a pattern, a command).
func argSummary(c toolCall) string {
	var m map[string]any
	if json.Unmarshal(c.argsObject(), &m) != nil {
		return ""
	}
	for _, k := range []string{"path", "command", "pattern"} {
		if v, ok := m[k].(string); ok && v != "" {
			return snippet(firstLineOf(v), 80)
		}
	}
	return ""
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// capText keeps the head and tail of s within n bytes: the start of a failure says what ran and
// its end says what broke.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, len(s)-n/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf("\n… [%d bytes elided] …\n", tail-head) + s[tail:]
}

// Price is the built-in agent's model and whether it has a price (agent.Priced).
func (a *llmAgent) Price() (string, bool) { return a.cfg.Model, a.priced }
