// Package llmtest holds fake LLM providers for tests: HTTP servers that speak OpenAI Chat
// Completions and Anthropic Messages as the providers document them, answer from a script turn by
// turn, and check every request against the protocol (headers, fields, and that tool results answer
// exactly the tool calls issued in the previous response) independently of the client's own structs.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is a tool call the scripted model makes; Args is marshalled to JSON.
type Call struct {
	Name string
	Args any
}

// Turn is one scripted response: a completion (Text and/or Calls), an HTTP error (Status), or a
// hang until the client gives up (Hang).
type Turn struct {
	Text                      string
	Calls                     []Call
	InputTokens, OutputTokens int64
	// Stop overrides the finish_reason (OpenAI) or stop_reason (Anthropic).
	Stop string

	// Status, when set, answers with this HTTP status and the provider's error body.
	Status                       int
	Header                       map[string]string
	ErrType, ErrMessage, ErrCode string

	Hang bool

	// Check sees the tool results the request carries, in the order of the previous turn's calls.
	Check func(t testing.TB, results []ToolResult)
}

// ToolResult is a tool result as the request carried it.
type ToolResult struct {
	ID, Content string
	IsError     bool
}

// Server is a scripted provider.
type Server struct {
	t     testing.TB
	kind  string
	model string
	key   string
	srv   *httptest.Server

	mu     sync.Mutex
	script []Turn
	// requests counts every request, errors and retries included.
	requests int
	// issued are the tool call ids of the last completion, which the next request must answer.
	issued      []string
	nextID      int
	firstSystem string
	firstUser   string
	userTexts   []string
}

// NewOpenAI starts a Chat Completions server for model that requires key ("" for none).
func NewOpenAI(t testing.TB, model, key string, script ...Turn) *Server {
	return start(t, "openai", model, key, script)
}

// NewAnthropic starts a Messages server for model that requires key.
func NewAnthropic(t testing.TB, model, key string, script ...Turn) *Server {
	return start(t, "anthropic", model, key, script)
}

// New starts a server for kind "openai" or "anthropic".
func New(t testing.TB, kind, model, key string, script ...Turn) *Server {
	return start(t, kind, model, key, script)
}

func start(t testing.TB, kind, model, key string, script []Turn) *Server {
	t.Helper()
	f := &Server{t: t, kind: kind, model: model, key: key, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// BaseURL is what an operator would configure for this server (OPENAI_BASE_URL, ANTHROPIC_BASE_URL).
func (f *Server) BaseURL() string {
	if f.kind == "openai" {
		return f.srv.URL + "/v1"
	}
	return f.srv.URL
}

// Kind is "openai" or "anthropic".
func (f *Server) Kind() string { return f.kind }

// Requests counts the requests received, retries included.
func (f *Server) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// FirstSystem is the system prompt of the first request.
func (f *Server) FirstSystem() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstSystem
}

// FirstUser is the first user message of the first request.
func (f *Server) FirstUser() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstUser
}

// UserTexts is the text of the newest user message of each request (empty when it held only tool results).
func (f *Server) UserTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.userTexts...)
}

// Remaining is how many scripted turns were not used.
func (f *Server) Remaining() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.script)
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	f.mu.Lock()
	f.requests++
	f.mu.Unlock()

	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Errorf("request body is not JSON: %v", err)
		f.protocolError(w, "body is not JSON")
		return
	}
	var (
		results  []ToolResult
		problems []string
		system   string
		first    string
		lastUser string
	)
	if f.kind == "openai" {
		results, system, first, lastUser, problems = checkOpenAIRequest(r, body, f.model, f.key)
	} else {
		results, system, first, lastUser, problems = checkAnthropicRequest(r, body, f.model, f.key)
	}
	for _, p := range problems {
		t.Errorf("%s request violates the protocol: %s", f.kind, p)
	}
	if len(problems) > 0 {
		f.protocolError(w, strings.Join(problems, "; "))
		return
	}

	f.mu.Lock()
	if f.firstUser == "" {
		f.firstSystem, f.firstUser = system, first
	}
	f.userTexts = append(f.userTexts, lastUser)
	// A request without any assistant message starts a new conversation (a judge asks each
	// verdict afresh): nothing issued before is owed an answer.
	if !hasAssistant(body) {
		f.issued = nil
	}
	// Tool results must answer exactly the calls issued in the previous completion, in order.
	var ids []string
	for _, res := range results {
		ids = append(ids, res.ID)
	}
	if strings.Join(ids, ",") != strings.Join(f.issued, ",") {
		t.Errorf("tool results answer %v, want the calls of the previous response %v", ids, f.issued)
	}
	if len(f.script) == 0 {
		f.mu.Unlock()
		t.Errorf("unexpected request %d: the script is over", f.requests)
		f.protocolError(w, "script is over")
		return
	}
	step := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()

	if step.Check != nil {
		step.Check(t, results)
	}
	switch {
	case step.Hang:
		<-r.Context().Done()
		return
	case step.Status != 0:
		for k, v := range step.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		w.Write(f.errorBody(step))
		return
	}
	f.mu.Lock()
	f.issued = nil
	var calls []map[string]any
	for _, c := range step.Calls {
		f.nextID++
		id := fmt.Sprintf("call_%d", f.nextID)
		if f.kind == "anthropic" {
			id = fmt.Sprintf("toolu_%02d", f.nextID)
		}
		f.issued = append(f.issued, id)
		argJSON, err := json.Marshal(c.Args)
		if err != nil {
			t.Errorf("script args: %v", err)
		}
		calls = append(calls, map[string]any{"id": id, "name": c.Name, "args": argJSON})
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.kind == "openai" {
		w.Write(openAICompletion(step, calls, f.model))
	} else {
		w.Write(anthropicMessage(step, calls, f.model))
	}
}

func (f *Server) protocolError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(f.errorBody(Turn{ErrType: "invalid_request_error", ErrMessage: msg}))
}

func (f *Server) errorBody(step Turn) []byte {
	var v any
	if f.kind == "openai" {
		var code any
		if step.ErrCode != "" {
			code = step.ErrCode
		}
		v = map[string]any{"error": map[string]any{"message": step.ErrMessage, "type": step.ErrType, "param": nil, "code": code}}
	} else {
		e := map[string]any{"type": step.ErrType, "message": step.ErrMessage}
		if step.ErrCode != "" {
			e["details"] = map[string]any{"error_code": step.ErrCode}
		}
		v = map[string]any{"type": "error", "error": e, "request_id": "req_011CTest"}
	}
	out, _ := json.Marshal(v)
	return out
}

func openAICompletion(step Turn, calls []map[string]any, model string) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if step.Text != "" {
		msg["content"] = step.Text
	}
	finish := "stop"
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c["id"], "type": "function",
				"function": map[string]any{"name": c["name"], "arguments": string(c["args"].([]byte))}})
		}
		msg["tool_calls"] = tcs
		finish = "tool_calls"
	}
	if step.Stop != "" {
		finish = step.Stop
	}
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": step.InputTokens, "completion_tokens": step.OutputTokens, "total_tokens": step.InputTokens + step.OutputTokens},
	})
	return out
}

func anthropicMessage(step Turn, calls []map[string]any, model string) []byte {
	content := []any{}
	if step.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": step.Text})
	}
	stop := "end_turn"
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.RawMessage(c["args"].([]byte))})
		stop = "tool_use"
	}
	if step.Stop != "" {
		stop = step.Stop
	}
	out, _ := json.Marshal(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": step.InputTokens, "output_tokens": step.OutputTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	})
	return out
}

// checkOpenAIRequest checks a Chat Completions request as the API documents it.
func checkOpenAIRequest(r *http.Request, body map[string]any, model, key string) (results []ToolResult, system, first, lastUser string, problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		bad("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if want := "Bearer " + key; key != "" && r.Header.Get("Authorization") != want {
		bad("Authorization header is %q", redact(r.Header.Get("Authorization"), key))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		bad("Content-Type is %q", ct)
	}
	for k := range body {
		switch k {
		case "model", "messages", "tools", "max_tokens", "max_completion_tokens", "tool_choice":
		default:
			bad("unexpected field %q", k)
		}
	}
	if body["model"] != model {
		bad("model is %v", body["model"])
	}
	if v, ok := body["max_tokens"]; ok {
		if n, err := v.(json.Number).Int64(); err != nil || n <= 0 {
			bad("max_tokens is %v", v)
		}
	}
	tools, _ := body["tools"].([]any)
	if len(tools) == 0 {
		bad("no tools")
	}
	if tc, ok := body["tool_choice"]; ok {
		// {"type": "function", "function": {"name": ...}} naming a declared tool, or a mode string.
		tcm, _ := tc.(map[string]any)
		fn, _ := tcm["function"].(map[string]any)
		name, _ := fn["name"].(string)
		if s, isMode := tc.(string); isMode {
			if s != "none" && s != "auto" && s != "required" {
				bad("tool_choice %q is not none, auto or required", s)
			}
		} else if tcm["type"] != "function" || !declaresTool(tools, name, "openai") {
			bad("tool_choice %v does not name a declared function", tc)
		}
	}
	for _, tl := range tools {
		tm, _ := tl.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		params, _ := fn["parameters"].(map[string]any)
		if tm["type"] != "function" || fn["name"] == nil || fn["description"] == nil || params["type"] != "object" {
			bad("malformed tool %v", tl)
		}
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) < 2 {
		bad("want a system and a user message, got %d messages", len(msgs))
		return
	}
	var pending map[string]bool // tool calls of the last assistant message not yet answered
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		if role != "tool" && len(pending) > 0 {
			bad("message %d (%s) comes before every tool call is answered", i, role)
			pending = nil
		}
		switch role {
		case "system":
			if i != 0 {
				bad("system message at %d", i)
			}
			system, _ = mm["content"].(string)
		case "user":
			s, ok := mm["content"].(string)
			if !ok {
				bad("user message %d content is not a string", i)
			}
			if first == "" {
				first = s
			}
			lastUser = s
			results = nil
		case "assistant":
			results = nil
			pending = map[string]bool{}
			tcs, hasCalls := mm["tool_calls"].([]any)
			if c, ok := mm["content"]; !ok || (c == nil && !hasCalls) {
				bad("assistant message %d has no content", i)
			}
			for _, tc := range tcs {
				tcm, _ := tc.(map[string]any)
				fn, _ := tcm["function"].(map[string]any)
				id, _ := tcm["id"].(string)
				args, isStr := fn["arguments"].(string)
				if id == "" || tcm["type"] != "function" || fn["name"] == nil || !isStr || !json.Valid([]byte(args)) {
					bad("malformed tool call %v", tc)
				}
				pending[id] = true
			}
		case "tool":
			id, _ := mm["tool_call_id"].(string)
			content, ok := mm["content"].(string)
			if !ok {
				bad("tool message %d content is not a string", i)
			}
			if !pending[id] {
				bad("tool message %d answers %q, which the previous assistant message did not call", i, id)
			}
			delete(pending, id)
			results = append(results, ToolResult{ID: id, Content: strings.TrimPrefix(content, "ERROR: "), IsError: strings.HasPrefix(content, "ERROR: ")})
		default:
			bad("message %d has role %q", i, role)
		}
	}
	if len(pending) > 0 {
		bad("tool calls %v are not answered", pending)
	}
	if last, _ := msgs[len(msgs)-1].(map[string]any); last["role"] == "assistant" {
		bad("the conversation ends with an assistant message")
	}
	return
}

// checkAnthropicRequest checks a Messages request as the API documents it.
func checkAnthropicRequest(r *http.Request, body map[string]any, model, key string) (results []ToolResult, system, first, lastUser string, problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		bad("%s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("x-api-key"); key != "" && got != key {
		bad("x-api-key header is %q", redact(got, key))
	}
	if got := r.Header.Get("anthropic-version"); got != "2023-06-01" {
		bad("anthropic-version header is %q", got)
	}
	if ct := r.Header.Get("content-type"); ct != "application/json" {
		bad("content-type is %q", ct)
	}
	if r.Header.Get("Authorization") != "" {
		bad("Authorization header sent to Anthropic")
	}
	for k := range body {
		switch k {
		case "model", "messages", "tools", "max_tokens", "system", "tool_choice":
		default:
			bad("unexpected field %q", k)
		}
	}
	if body["model"] != model {
		bad("model is %v", body["model"])
	}
	if n, err := body["max_tokens"].(json.Number).Int64(); err != nil || n <= 0 {
		bad("max_tokens is %v", body["max_tokens"])
	}
	system, _ = body["system"].(string)
	tools, _ := body["tools"].([]any)
	if len(tools) == 0 {
		bad("no tools")
	}
	if tc, ok := body["tool_choice"]; ok {
		// {"type": "auto" | "any" | "none"} or {"type": "tool", "name": <a declared tool>}.
		tcm, _ := tc.(map[string]any)
		switch tcm["type"] {
		case "auto", "any", "none":
		case "tool":
			if name, _ := tcm["name"].(string); !declaresTool(tools, name, "anthropic") {
				bad("tool_choice names %q, which is not a declared tool", name)
			}
		default:
			bad("tool_choice %v has no valid type", tc)
		}
	}
	for _, tl := range tools {
		tm, _ := tl.(map[string]any)
		schema, _ := tm["input_schema"].(map[string]any)
		if tm["name"] == nil || tm["description"] == nil || schema["type"] != "object" {
			bad("malformed tool %v", tl)
		}
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		bad("no messages")
		return
	}
	var pending []string
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if role != want {
			bad("message %d has role %q, want %q (roles alternate, starting with user)", i, role, want)
		}
		var blocks []any
		switch c := mm["content"].(type) {
		case string:
			blocks = []any{map[string]any{"type": "text", "text": c}}
		case []any:
			blocks = c
		default:
			bad("message %d content is %T", i, c)
		}
		if len(blocks) == 0 {
			bad("message %d has no content", i)
		}
		if role == "user" {
			results = nil
			seenOther := false
			answered := map[string]bool{}
			text := ""
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				switch bm["type"] {
				case "tool_result":
					if seenOther {
						bad("message %d: tool_result after other content", i)
					}
					id, _ := bm["tool_use_id"].(string)
					content, ok := bm["content"].(string)
					if _, has := bm["content"]; has && !ok {
						bad("message %d: tool_result content is not a string", i)
					}
					isErr := false
					if v, has := bm["is_error"]; has {
						b, ok := v.(bool)
						if !ok {
							bad("is_error is not a bool")
						}
						isErr = b
					}
					answered[id] = true
					results = append(results, ToolResult{ID: id, Content: content, IsError: isErr})
				case "text":
					seenOther = true
					s, _ := bm["text"].(string)
					if s == "" {
						bad("message %d: empty text block", i)
					}
					text += s
				default:
					bad("message %d: user block type %v", i, bm["type"])
				}
			}
			for _, id := range pending {
				if !answered[id] {
					bad("message %d does not answer tool_use %q", i, id)
				}
			}
			for id := range answered {
				if !contains(pending, id) {
					bad("message %d answers %q, which the previous assistant message did not call", i, id)
				}
			}
			pending = nil
			if first == "" {
				first = text
			}
			lastUser = text
			continue
		}
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			switch bm["type"] {
			case "text":
				if s, _ := bm["text"].(string); s == "" {
					bad("message %d: empty text block", i)
				}
			case "tool_use":
				id, _ := bm["id"].(string)
				_, isObj := bm["input"].(map[string]any)
				if id == "" || bm["name"] == nil || !isObj {
					bad("message %d: malformed tool_use %v", i, bm)
				}
				pending = append(pending, id)
			default:
				bad("message %d: assistant block type %v", i, bm["type"])
			}
		}
	}
	if len(msgs)%2 == 0 {
		bad("the conversation ends with an assistant message")
	}
	return
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// redact keeps a wrong credential's neighbour, the right key, out of test failure messages.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[key]")
}

func declaresTool(tools []any, name, kind string) bool {
	for _, tl := range tools {
		tm, _ := tl.(map[string]any)
		if kind == "openai" {
			tm, _ = tm["function"].(map[string]any)
		}
		if name != "" && tm["name"] == name {
			return true
		}
	}
	return false
}

func hasAssistant(body map[string]any) bool {
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			return true
		}
	}
	return false
}
