package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/judge"
)

// judgeTries is how many answers the judge gets: a malformed one is sent back with what is wrong
// once, then the verdict counts as a failure.
const judgeTries = 2

// Judge asks a model for an acceptance verdict through the same clients, retries and redaction as
// the built-in agent.
type Judge struct {
	a *llmAgent
}

// NewJudge validates cfg like New and returns a judge.
func NewJudge(cfg Config) (*Judge, error) {
	a, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Judge{a: a.(*llmAgent)}, nil
}

// Judge returns the validated verdict and what the calls cost. A verdict still malformed after
// the second answer is an error wrapping judge.ErrMalformed.
func (j *Judge) Judge(ctx context.Context, req judge.Request) (judge.Verdict, agent.Usage, error) {
	var usage agent.Usage
	if len(req.Criteria) == 0 {
		return judge.Verdict{}, usage, errors.New("judge: the task has no acceptance criteria")
	}
	ctx, cancel := context.WithTimeout(ctx, j.a.cfg.Timeout)
	defer cancel()
	tool := toolSpec{name: judge.ToolName, description: "Submit the verdict: every criterion with pass and reason, and the overall confidence.", schema: judge.Schema}
	msgs := []message{{role: roleUser, text: judge.Prompt(req)}}
	maxOut := j.a.cfg.MaxOutputTokens
	if maxOut == 0 {
		maxOut = 4096
	}
	var lastErr error
	for try := 1; try <= judgeTries; try++ {
		c, err := j.a.provider.complete(ctx, chatRequest{system: judge.System, messages: msgs, tools: []toolSpec{tool}, maxOutput: maxOut, toolChoice: judge.ToolName})
		if err != nil {
			return judge.Verdict{}, usage, fmt.Errorf("judge: %w", err)
		}
		usage = usage.Add(j.a.usageOf(c.usage))
		raw, callID := c.text, ""
		for _, call := range c.toolCalls {
			if call.name == judge.ToolName {
				raw, callID = call.args, call.id
				break
			}
		}
		v, perr := judge.Parse([]byte(raw), req.Criteria)
		if perr == nil {
			v.Model = j.a.cfg.Model
			return v, usage, nil
		}
		lastErr = perr
		j.a.cfg.Logger.Warn("judge: malformed verdict", "try", try, "err", perr)
		// Send the answer back with what is wrong: a tool call must be answered by its result.
		msgs = append(msgs, message{role: roleAssistant, text: c.text, toolCalls: c.toolCalls})
		fix := message{role: roleUser}
		for _, call := range c.toolCalls {
			content := "not called: answer with " + judge.ToolName
			if call.id == callID {
				content = "invalid verdict: " + perr.Error()
			}
			fix.toolResults = append(fix.toolResults, toolResult{callID: call.id, content: content, isError: true})
		}
		if callID == "" {
			fix.text = "Your answer was not a valid verdict (" + perr.Error() + "). Call " + judge.ToolName + " with every criterion."
		}
		msgs = append(msgs, fix)
	}
	return judge.Verdict{}, usage, fmt.Errorf("%w after %d answers: %v", judge.ErrMalformed, judgeTries, lastErr)
}

// usageOf prices one call's tokens.
func (a *llmAgent) usageOf(t tokens) agent.Usage {
	u := agent.Usage{InputTokens: t.in, OutputTokens: t.out}
	if a.priced {
		u.CostUSD = a.price.cost(t)
	}
	return u
}
