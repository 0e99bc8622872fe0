package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// OpenAI Chat Completions: POST {base}/chat/completions. The same protocol is spoken by Ollama,
// vLLM, LiteLLM, OpenRouter and Azure OpenAI, so the base URL is all that changes.

type openAIProvider struct {
	http     *httpClient
	endpoint string
	header   http.Header
	model    string
	// newParam says whether to send max_completion_tokens (OpenAI and Azure, required by reasoning
	// models) or the older max_tokens that most compatible servers understand.
	newParam bool
}

func newOpenAI(cfg Config, hc *httpClient) (*openAIProvider, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("llm: base_url: %w", err)
	}
	host := strings.ToLower(u.Hostname())
	azure := strings.HasSuffix(host, ".openai.azure.com") || strings.HasSuffix(host, ".cognitiveservices.azure.com") ||
		strings.HasSuffix(host, ".services.ai.azure.com")
	h := http.Header{}
	if cfg.APIKey != "" {
		// Azure takes API keys in api-key; its Authorization header is for Entra ID tokens.
		if azure {
			h.Set("Api-Key", cfg.APIKey)
		} else {
			h.Set("Authorization", "Bearer "+cfg.APIKey)
		}
	}
	hc.parseError = parseOpenAIError
	return &openAIProvider{
		http:     hc,
		endpoint: joinURL(u, "chat/completions"),
		header:   h,
		model:    cfg.Model,
		newParam: host == "api.openai.com" || azure,
	}, nil
}

// joinURL appends elem to the base URL's path and keeps its query (Azure's ?api-version=...).
func joinURL(base *url.URL, elem string) string {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/" + elem
	u.RawPath = ""
	return u.String()
}

type oaiRequest struct {
	Model               string       `json:"model"`
	Messages            []oaiMessage `json:"messages"`
	Tools               []oaiTool    `json:"tools,omitempty"`
	ToolChoice          any          `json:"tool_choice,omitempty"`
	MaxTokens           int          `json:"max_tokens,omitempty"`
	MaxCompletionTokens int          `json:"max_completion_tokens,omitempty"`
}

type oaiMessage struct {
	Role string `json:"role"`
	// Content is null only on an assistant message that carries nothing but tool calls.
	Content    *string       `json:"content"`
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type oaiToolCall struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function oaiFunctionCall `json:"function"`
}

type oaiFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaiTool struct {
	Type     string         `json:"type"`
	Function oaiFunctionDef `json:"function"`
}

type oaiFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type oaiResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name string `json:"name"`
					// A string per the API; some compatible servers send an object.
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func strPtr(s string) *string { return &s }

func (p *openAIProvider) complete(ctx context.Context, req chatRequest) (completion, error) {
	body := oaiRequest{Model: p.model}
	if req.maxOutput > 0 {
		if p.newParam {
			body.MaxCompletionTokens = req.maxOutput
		} else {
			body.MaxTokens = req.maxOutput
		}
	}
	for _, t := range req.tools {
		body.Tools = append(body.Tools, oaiTool{Type: "function", Function: oaiFunctionDef{Name: t.name, Description: t.description, Parameters: t.schema}})
	}
	if req.toolChoice != "" {
		body.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.toolChoice}}
	}
	body.Messages = append(body.Messages, oaiMessage{Role: "system", Content: strPtr(req.system)})
	for _, m := range req.messages {
		switch m.role {
		case roleAssistant:
			om := oaiMessage{Role: "assistant"}
			if m.text != "" || len(m.toolCalls) == 0 {
				om.Content = strPtr(m.text)
			}
			for _, c := range m.toolCalls {
				om.ToolCalls = append(om.ToolCalls, oaiToolCall{ID: c.id, Type: "function", Function: oaiFunctionCall{Name: c.name, Arguments: c.args}})
			}
			body.Messages = append(body.Messages, om)
		default:
			// Tool results are one "tool" message per call, right after the assistant message.
			for _, r := range m.toolResults {
				content := r.content
				if r.isError {
					content = "ERROR: " + content
				}
				body.Messages = append(body.Messages, oaiMessage{Role: "tool", ToolCallID: r.callID, Content: strPtr(content)})
			}
			if m.text != "" {
				body.Messages = append(body.Messages, oaiMessage{Role: "user", Content: strPtr(m.text)})
			}
		}
	}

	var resp oaiResponse
	if err := p.http.postJSON(ctx, p.endpoint, p.header, body, &resp); err != nil {
		return completion{}, err
	}
	if len(resp.Choices) == 0 {
		return completion{}, fmt.Errorf("openai: %w", errEmptyResponse)
	}
	ch := resp.Choices[0]
	out := completion{
		text:    openAIContent(ch.Message.Content),
		rawStop: ch.FinishReason,
		usage:   tokens{in: resp.Usage.PromptTokens, out: resp.Usage.CompletionTokens},
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		args := jsonString(tc.Function.Arguments)
		out.toolCalls = append(out.toolCalls, toolCall{id: id, name: tc.Function.Name, args: args})
	}
	switch {
	case len(out.toolCalls) > 0:
		out.stop = stopToolUse
	case ch.FinishReason == "length":
		out.stop = stopTruncated
	case ch.FinishReason == "content_filter" || ch.Message.Refusal != "":
		out.stop = stopRefused
		if out.text == "" {
			out.text = ch.Message.Refusal
		}
	default:
		out.stop = stopEnd
	}
	return out, nil
}

// openAIContent accepts the string the API documents, null, and the array of text parts some
// compatible servers return.
func openAIContent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

// parseOpenAIError reads {"error": {"message", "type", "code"}}, and the {"error": "text"} or
// {"detail": ...} bodies some compatible servers send.
func parseOpenAIError(body []byte) *APIError {
	var env struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	e := &APIError{}
	if json.Unmarshal(body, &env) != nil {
		return e
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	switch {
	case len(env.Error) > 0 && json.Unmarshal(env.Error, &obj) == nil:
		e.Message, e.Type, e.Code = obj.Message, obj.Type, jsonString(obj.Code)
	case len(env.Error) > 0:
		e.Message = jsonString(env.Error)
	case len(env.Detail) > 0:
		e.Message = jsonString(env.Detail)
	}
	return e
}
