// Package modeltest holds scripted model servers for tests of real coding-agent CLIs: Anthropic
// Messages (streamed as server-sent events or not, with tool_use) as Claude Code calls it, and
// OpenAI Responses (streamed) and Chat Completions as Codex and other clients call them. The script
// is one task: on the first request that offers a tool able to write a file, the model asks for that
// tool to create File with Content; once the request carries the tool's result, it answers with a
// final text. Every response states the same usage, Usage, so that metering can be checked. With
// Subagent set, the Anthropic script first asks Claude Code's Agent tool for a subagent of that type
// (as a model steered by a repository's text may), then writes the file. With WebSearch set, it
// first asks Claude Code's WebSearch tool to search for it, and goes on whatever the tool answers.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Usage is what every response says it used.
type Usage struct {
	Input, Output, CacheRead int64
}

// Request is what the server saw of one request.
type Request struct {
	Method string
	Path   string
	Key    string // x-api-key, or the bearer token
	Model  string
	Stream bool
	// Tools are the names of the tools the request offered.
	Tools []string
	// Header is every header the request carried, to check which credentials reached the server;
	// Body is the request's body as it arrived.
	Header http.Header
	Body   []byte
}

// Server is a scripted model.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	kind    string
	key     string
	File    string
	Content string
	Usage   Usage
	// Subagent, when set, is the subagent type the Anthropic script asks for before writing.
	Subagent string
	// WebSearch, when set, is a query the Anthropic script asks Claude Code's WebSearch tool for
	// before writing.
	WebSearch string

	mu           sync.Mutex
	requests     []Request
	wrote        bool
	searchResult string
}

// NewAnthropic starts a Messages server that requires key.
func NewAnthropic(t testing.TB, key string) *Server { return start(t, "anthropic", key) }

// NewOpenAI starts a Responses and Chat Completions server that requires key.
func NewOpenAI(t testing.TB, key string) *Server { return start(t, "openai", key) }

func start(t testing.TB, kind, key string) *Server {
	s := &Server{t: t, kind: kind, key: key, File: "hello.txt", Content: "hello from the model\n",
		Usage: Usage{Input: 1200, Output: 80, CacheRead: 200}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// BaseURL is the server's endpoint as an operator configures it.
func (s *Server) BaseURL() string {
	if s.kind == "openai" {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Requests are the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SearchResult is what the CLI told the model its WebSearch call gave (the tool result's content,
// as JSON), "" before it did.
func (s *Server) SearchResult() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searchResult
}

// Wrote reports whether the model asked for the file to be written.
func (s *Server) Wrote() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wrote
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil && r.Method == http.MethodPost {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	model, _ := req["model"].(string)
	stream, _ := req["stream"].(bool)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Key: key, Model: model, Stream: stream, Tools: toolNames(req), Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	if key != s.key {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		if s.kind == "anthropic" {
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		} else {
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided"}}`)
		}
		return
	}
	if r.Method != http.MethodPost && !strings.HasSuffix(r.URL.Path, "/models") {
		// Codex tries the Responses API over a WebSocket first; this server speaks HTTP only, as a
		// provider without WebSockets would, and the CLI falls back.
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if model == "" {
		model = "test-model"
	}
	switch {
	case s.kind == "anthropic" && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		fmt.Fprint(w, `{"input_tokens":10}`)
	case s.kind == "anthropic" && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		s.anthropic(w, req, model, stream, string(body))
	case s.kind == "openai" && strings.HasSuffix(r.URL.Path, "/responses"):
		s.responses(w, req, model, stream, string(body))
	case s.kind == "openai" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, req, model, stream)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}],"models":[]}`, model)
	default:
		http.NotFound(w, r)
	}
}

var workDir = regexp.MustCompile(`(?:Working directory|Primary working directory|cwd)[^/\n]*?(/[^\s"<\\]+)`)

// dirOf finds the agent's working directory in what the CLI tells its model.
func dirOf(body string) string {
	if m := workDir.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

func toolNames(req map[string]any) []string {
	var names []string
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			names = append(names, n)
		} else if f, ok := m["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// subagentPrompt marks the requests of the subagent the script asks for, which it answers at once.
const subagentPrompt = "List the files of the working directory (a subagent's task)."

func (s *Server) anthropic(w http.ResponseWriter, req map[string]any, model string, stream bool, body string) {
	answered := strings.Contains(body, `"tool_use_id":"toolu_01"`)
	var block map[string]any
	stop := "end_turn"
	// The main loop's later requests quote the prompt too, in the Agent call it made.
	subagent := strings.Contains(body, subagentPrompt) && !strings.Contains(body, `"toolu_agent"`)
	searched := s.recordSearch(req)
	if s.Subagent != "" && !subagent && has(toolNames(req), "Agent") && !strings.Contains(body, `"tool_use_id":"toolu_agent"`) {
		block = map[string]any{"type": "tool_use", "id": "toolu_agent", "name": "Agent",
			"input": map[string]any{"description": "List the files", "prompt": subagentPrompt, "subagent_type": s.Subagent, "run_in_background": false}}
		stop = "tool_use"
	} else if s.WebSearch != "" && !subagent && !searched && !has(toolNames(req), "WebSearch") && has(toolNames(req), "ToolSearch") &&
		!strings.Contains(body, `"tool_use_id":"toolu_toolsearch"`) {
		// Claude Code defers its WebSearch tool: the model loads it with ToolSearch first.
		block = map[string]any{"type": "tool_use", "id": "toolu_toolsearch", "name": "ToolSearch", "input": map[string]any{"query": "select:WebSearch", "max_results": 1}}
		stop = "tool_use"
	} else if s.WebSearch != "" && !subagent && !searched && (has(toolNames(req), "WebSearch") || strings.Contains(body, `"tool_use_id":"toolu_toolsearch"`)) {
		block = map[string]any{"type": "tool_use", "id": "toolu_search", "name": "WebSearch", "input": map[string]any{"query": s.WebSearch}}
		stop = "tool_use"
	} else if dir := dirOf(body); !answered && !subagent && has(toolNames(req), "Write") && dir != "" {
		s.mu.Lock()
		s.wrote = true
		s.mu.Unlock()
		block = map[string]any{"type": "tool_use", "id": "toolu_01", "name": "Write",
			"input": map[string]any{"file_path": dir + "/" + s.File, "content": s.Content}}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": "Done: the file is written."}
	}
	usage := map[string]any{"input_tokens": s.Usage.Input - s.Usage.CacheRead, "output_tokens": s.Usage.Output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": s.Usage.CacheRead}
	msg := map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	start := map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": s.Usage.Input - s.Usage.CacheRead, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": s.Usage.CacheRead}}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": start})
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
		half := len(input) / 2
		for _, part := range []string{string(input[:half]), string(input[half:])} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": s.Usage.Output}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// recordSearch keeps what the CLI answered the script's WebSearch call, and says whether it has.
func (s *Server) recordSearch(req map[string]any) bool {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		content, _ := m.(map[string]any)["content"].([]any)
		for _, c := range content {
			if b, _ := c.(map[string]any); b["type"] == "tool_result" && b["tool_use_id"] == "toolu_search" {
				out, _ := json.Marshal(b["content"])
				s.mu.Lock()
				s.searchResult = string(out)
				s.mu.Unlock()
				return true
			}
		}
	}
	return false
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// shellCall is the call a Responses model makes to create the file with the CLI's shell tool.
func (s *Server) shellCall(tools []string, dir string) (name, args string, ok bool) {
	script := fmt.Sprintf("printf %%s %s > %s", shellQuote(s.Content), shellQuote(s.File))
	var a any
	switch {
	case has(tools, "shell"):
		a = map[string]any{"command": []string{"bash", "-lc", script}, "workdir": dir}
	case has(tools, "shell_command"):
		a = map[string]any{"command": script}
	case has(tools, "exec_command"):
		a = map[string]any{"cmd": script}
	default:
		return "", "", false
	}
	b, _ := json.Marshal(a)
	for _, n := range []string{"shell", "shell_command", "exec_command"} {
		if has(tools, n) {
			return n, string(b), true
		}
	}
	return "", "", false
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *Server) responses(w http.ResponseWriter, req map[string]any, model string, stream bool, body string) {
	answered := strings.Contains(body, `"function_call_output"`)
	var item map[string]any
	name, args, ok := s.shellCall(toolNames(req), dirOf(body))
	if !answered && ok {
		s.mu.Lock()
		s.wrote = true
		s.mu.Unlock()
		item = map[string]any{"type": "function_call", "id": "fc_01", "call_id": "call_01", "name": name, "arguments": args, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Done: the file is written.", "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": s.Usage.Input, "input_tokens_details": map[string]any{"cached_tokens": s.Usage.CacheRead},
		"output_tokens": s.Usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": s.Usage.Input + s.Usage.Output}
	resp := map[string]any{"id": "resp_01", "object": "response", "status": "completed", "model": model,
		"output": []any{item}, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	created := map[string]any{"id": "resp_01", "object": "response", "status": "in_progress", "model": model, "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": created})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "sequence_number": 3, "response": resp})
}

// chat answers as Chat Completions does: streamed, the usage comes only when the request asks for
// it with stream_options.include_usage, in a last chunk whose choices are empty, and every other
// chunk then carries "usage": null.
func (s *Server) chat(w http.ResponseWriter, req map[string]any, model string, stream bool) {
	usage := map[string]any{"prompt_tokens": s.Usage.Input, "completion_tokens": s.Usage.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": s.Usage.CacheRead}, "total_tokens": s.Usage.Input + s.Usage.Output}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	opts, _ := req["stream_options"].(map[string]any)
	withUsage, _ := opts["include_usage"].(bool)
	chunk := func(choices []any) map[string]any {
		c := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model, "choices": choices}
		if withUsage {
			c["usage"] = nil
		}
		return c
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": nil}}))
	sse(w, "", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}))
	if withUsage {
		last := chunk([]any{})
		last["usage"] = usage
		sse(w, "", last)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
