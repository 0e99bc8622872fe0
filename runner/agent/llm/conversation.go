package llm

import (
	"context"
	"encoding/json"
)

// The loop works on a provider-neutral conversation; each provider translates it to its own wire
// format on every request. Keeping the history neutral is what lets one loop, one set of tools and
// one set of limits serve both protocols.

type role string

const (
	roleUser      role = "user"
	roleAssistant role = "assistant"
)

// message is one entry of the conversation.
type message struct {
	role role
	text string
	// toolCalls are what an assistant message asked for.
	toolCalls []toolCall
	// toolResults answer the tool calls of the assistant message right before this user message.
	toolResults []toolResult
}

// toolCall keeps the arguments as the raw JSON text the model produced: OpenAI sends them as a
// string that must be echoed back byte for byte, Anthropic as an object.
type toolCall struct {
	id   string
	name string
	args string
}

type toolResult struct {
	callID  string
	content string
	isError bool
}

type stopReason int

const (
	stopEnd       stopReason = iota // the model answered
	stopToolUse                     // the model wants tool results
	stopTruncated                   // the answer hit the output token limit
	stopRefused                     // content filter or refusal
)

type tokens struct{ in, out int64 }

// completion is one model response.
type completion struct {
	text      string
	toolCalls []toolCall
	stop      stopReason
	rawStop   string
	usage     tokens
}

type toolSpec struct {
	name        string
	description string
	schema      json.RawMessage
}

type chatRequest struct {
	system    string
	messages  []message
	tools     []toolSpec
	maxOutput int
	// toolChoice, when set, names the one tool the model must call (structured output).
	toolChoice string
}

// provider is one model API.
type provider interface {
	complete(ctx context.Context, req chatRequest) (completion, error)
}

// argsObject returns the arguments as a JSON object for protocols that need one (Anthropic's
// tool_use input): arguments that are not an object become {} so the history stays valid.
func (c toolCall) argsObject() json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(c.args), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.args)
}
