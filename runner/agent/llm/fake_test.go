package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fakes below are LLM providers speaking each provider's documented wire protocol: they check
// the shape of every request (headers, fields, that tool results answer the tool calls the fake
// issued in its previous response) against the protocol, not against this package's structs, and
// answer the next scripted turn.

const (
	testModel = "test-model"
	testKey   = "sk-test-SECRET-0123456789"
)

// fakeCall is a tool call the scripted model makes.
type fakeCall struct {
	name string
	args any
}

// turn is one scripted response: a completion, an HTTP error, or a hang until the client leaves.
type turn struct {
	text    string
	calls   []fakeCall
	in, out int64
	// stop overrides the finish_reason / stop_reason.
	stop string

	status                 int
	header                 map[string]string
	errType, errMsg, errCd string

	hang bool

	// check sees the tool results the request carries, in the order of the previous turn's calls.
	check func(t *testing.T, results []gotResult)
}

type gotResult struct {
	id, content string
	isError     bool
}

type fakeLLM struct {
	t      *testing.T
	kind   string
	srv    *httptest.Server
	mu     sync.Mutex
	script []turn
	// requests counts every request, errors and retries included.
	requests int
	// issued are the tool call ids of the last completion, which the next request must answer.
	issued []string
	nextID int
	// firstSystem and firstUser are the system prompt and the first user message of the first request.
	firstSystem, firstUser string
	// lastUserText is the text of the newest user message of each request.
	lastUserText []string
}

func newFakeLLM(t *testing.T, kind string, script ...turn) *fakeLLM {
	t.Helper()
	f := &fakeLLM{t: t, kind: kind, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// baseURL is what an operator would configure for this server.
func (f *fakeLLM) baseURL() string {
	if f.kind == "openai" {
		return f.srv.URL + "/v1"
	}
	return f.srv.URL
}

func (f *fakeLLM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
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
		results  []gotResult
		problems []string
		system   string
		first    string
		lastUser string
	)
	if f.kind == "openai" {
		results, system, first, lastUser, problems = checkOpenAIRequest(r, body)
	} else {
		results, system, first, lastUser, problems = checkAnthropicRequest(r, body)
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
	f.lastUserText = append(f.lastUserText, lastUser)
	// Tool results must answer exactly the calls issued in the previous completion, in order.
	var ids []string
	for _, res := range results {
		ids = append(ids, res.id)
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

	if step.check != nil {
		step.check(t, results)
	}
	switch {
	case step.hang:
		<-r.Context().Done()
		return
	case step.status != 0:
		for k, v := range step.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.status)
		w.Write(f.errorBody(step))
		return
	}
	f.mu.Lock()
	f.issued = nil
	var calls []map[string]any
	for _, c := range step.calls {
		f.nextID++
		id := fmt.Sprintf("call_%d", f.nextID)
		if f.kind == "anthropic" {
			id = fmt.Sprintf("toolu_%02d", f.nextID)
		}
		f.issued = append(f.issued, id)
		argJSON, err := json.Marshal(c.args)
		if err != nil {
			t.Fatalf("script args: %v", err)
		}
		calls = append(calls, map[string]any{"id": id, "name": c.name, "args": argJSON})
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.kind == "openai" {
		w.Write(openAICompletion(step, calls))
	} else {
		w.Write(anthropicMessage(step, calls))
	}
}

func (f *fakeLLM) protocolError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(f.errorBody(turn{errType: "invalid_request_error", errMsg: msg}))
}

func (f *fakeLLM) errorBody(step turn) []byte {
	var v any
	if f.kind == "openai" {
		var code any
		if step.errCd != "" {
			code = step.errCd
		}
		v = map[string]any{"error": map[string]any{"message": step.errMsg, "type": step.errType, "param": nil, "code": code}}
	} else {
		e := map[string]any{"type": step.errType, "message": step.errMsg}
		if step.errCd != "" {
			e["details"] = map[string]any{"error_code": step.errCd}
		}
		v = map[string]any{"type": "error", "error": e, "request_id": "req_011CTest"}
	}
	out, _ := json.Marshal(v)
	return out
}

func openAICompletion(step turn, calls []map[string]any) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if step.text != "" {
		msg["content"] = step.text
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
	if step.stop != "" {
		finish = step.stop
	}
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": testModel,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": step.in, "completion_tokens": step.out, "total_tokens": step.in + step.out},
	})
	return out
}

func anthropicMessage(step turn, calls []map[string]any) []byte {
	content := []any{}
	if step.text != "" {
		content = append(content, map[string]any{"type": "text", "text": step.text})
	}
	stop := "end_turn"
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.RawMessage(c["args"].([]byte))})
		stop = "tool_use"
	}
	if step.stop != "" {
		stop = step.stop
	}
	out, _ := json.Marshal(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": testModel, "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": step.in, "output_tokens": step.out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	})
	return out
}

// checkOpenAIRequest checks a Chat Completions request as the API documents it.
func checkOpenAIRequest(r *http.Request, body map[string]any) (results []gotResult, system, first, lastUser string, problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		bad("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		bad("Authorization header is %q", got)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		bad("Content-Type is %q", ct)
	}
	for k := range body {
		switch k {
		case "model", "messages", "tools", "max_tokens", "max_completion_tokens":
		default:
			bad("unexpected field %q", k)
		}
	}
	if body["model"] != testModel {
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
			results = append(results, gotResult{id: id, content: strings.TrimPrefix(content, "ERROR: "), isError: strings.HasPrefix(content, "ERROR: ")})
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
func checkAnthropicRequest(r *http.Request, body map[string]any) (results []gotResult, system, first, lastUser string, problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		bad("%s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("x-api-key"); got != testKey {
		bad("x-api-key header is %q", got)
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
		case "model", "messages", "tools", "max_tokens", "system":
		default:
			bad("unexpected field %q", k)
		}
	}
	if body["model"] != testModel {
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
					results = append(results, gotResult{id: id, content: content, isError: isErr})
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

// newTestAgent builds an agent against f whose retry waits are recorded instead of taken.
func newTestAgent(t *testing.T, f *fakeLLM, mutate func(*Config)) (*llmAgent, *waits, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		Provider: f.kind, Model: testModel, BaseURL: f.baseURL(), APIKey: testKey,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ag, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a := ag.(*llmAgent)
	w := &waits{}
	a.http.retry.baseDelay = 100 * time.Millisecond
	a.http.retry.sleep = func(ctx context.Context, d time.Duration) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.d = append(w.d, d)
		return ctx.Err()
	}
	return a, w, logs
}

type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newRepo makes a git repository with files (path → content) committed, and returns its directory.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}
