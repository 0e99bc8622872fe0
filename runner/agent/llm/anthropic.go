package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Anthropic Messages: POST {base}/v1/messages with tool use.

const anthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is sent when the profile sets no max_output_tokens: the API requires
// max_tokens on every request.
const defaultAnthropicMaxTokens = 8192

type anthropicProvider struct {
	http     *httpClient
	endpoint string
	header   http.Header
	model    string
}

func newAnthropic(cfg Config, hc *httpClient) (*anthropicProvider, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("llm: base_url: %w", err)
	}
	h := http.Header{}
	h.Set("Anthropic-Version", anthropicVersion)
	if cfg.APIKey != "" {
		h.Set("X-Api-Key", cfg.APIKey)
	}
	hc.parseError = parseAnthropicError
	// The documented base has no /v1, but gateways often document one: accept both.
	elem := "v1/messages"
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		elem = "messages"
	}
	return &anthropicProvider{http: hc, endpoint: joinURL(u, elem), header: h, model: cfg.Model}, nil
}

type antRequest struct {
	Model      string         `json:"model"`
	MaxTokens  int            `json:"max_tokens"`
	System     string         `json:"system,omitempty"`
	Tools      []antTool      `json:"tools,omitempty"`
	ToolChoice *antToolChoice `json:"tool_choice,omitempty"`
	Messages   []antMessage   `json:"messages"`
}

type antToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antMessage struct {
	Role    string     `json:"role"`
	Content []antBlock `json:"content"`
}

// antBlock is one content block; which fields are set depends on Type (text, tool_use, tool_result).
type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type antResponse struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

func (p *anthropicProvider) complete(ctx context.Context, req chatRequest) (completion, error) {
	body := antRequest{Model: p.model, MaxTokens: req.maxOutput, System: req.system}
	if body.MaxTokens <= 0 {
		body.MaxTokens = defaultAnthropicMaxTokens
	}
	for _, t := range req.tools {
		body.Tools = append(body.Tools, antTool{Name: t.name, Description: t.description, InputSchema: t.schema})
	}
	if req.toolChoice != "" {
		body.ToolChoice = &antToolChoice{Type: "tool", Name: req.toolChoice}
	}
	for _, m := range req.messages {
		am := antMessage{Role: string(m.role)}
		// tool_result blocks must come first in their user message.
		for _, r := range m.toolResults {
			am.Content = append(am.Content, antBlock{Type: "tool_result", ToolUseID: r.callID, Content: r.content, IsError: r.isError})
		}
		// The API refuses empty text blocks.
		if m.text != "" {
			am.Content = append(am.Content, antBlock{Type: "text", Text: m.text})
		}
		for _, c := range m.toolCalls {
			am.Content = append(am.Content, antBlock{Type: "tool_use", ID: c.id, Name: c.name, Input: c.argsObject()})
		}
		if len(am.Content) == 0 {
			am.Content = append(am.Content, antBlock{Type: "text", Text: "(empty)"})
		}
		body.Messages = append(body.Messages, am)
	}

	var resp antResponse
	if err := p.http.postJSON(ctx, p.endpoint, p.header, body, &resp); err != nil {
		return completion{}, err
	}
	u := resp.Usage
	out := completion{
		rawStop: resp.StopReason,
		usage:   tokens{in: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, out: u.OutputTokens},
	}
	var text []string
	for _, b := range resp.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			args := string(b.Input)
			if len(b.Input) == 0 || string(b.Input) == "null" {
				args = "{}"
			}
			out.toolCalls = append(out.toolCalls, toolCall{id: b.ID, name: b.Name, args: args})
		}
	}
	out.text = strings.Join(text, "\n")
	switch {
	case len(out.toolCalls) > 0:
		out.stop = stopToolUse
	case resp.StopReason == "max_tokens":
		out.stop = stopTruncated
	case resp.StopReason == "refusal":
		out.stop = stopRefused
	default:
		out.stop = stopEnd
	}
	return out, nil
}

// parseAnthropicError reads {"type": "error", "error": {"type", "message", "details"?}}.
func parseAnthropicError(body []byte) *APIError {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
	}
	e := &APIError{}
	if json.Unmarshal(body, &env) == nil {
		e.Type, e.Message, e.Code = env.Error.Type, env.Error.Message, env.Error.Details.ErrorCode
	}
	return e
}
