package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// recorder collects the fake's complaints instead of failing the test, to prove it complains.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

func post(t *testing.T, url string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	return resp.StatusCode, out
}

const tools = `"tools":[{"type":"function","function":{"name":"read_file","description":"d","parameters":{"type":"object","properties":{}}}}]`

func TestOpenAIFakeAnswersAndChecks(t *testing.T) {
	rec := &recorder{TB: t}
	f := NewOpenAI(rec, "m", "key",
		Turn{Calls: []Call{{Name: "read_file", Args: map[string]any{"path": "a"}}}, InputTokens: 3, OutputTokens: 2},
		Turn{Text: "done"},
	)
	auth := map[string]string{"Authorization": "Bearer key"}
	status, out := post(t, f.BaseURL()+"/chat/completions", auth,
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],`+tools+`}`)
	if status != 200 || rec.all() != "" {
		t.Fatalf("status %d, complaints %s", status, rec.all())
	}
	choice := out["choices"].([]any)[0].(map[string]any)
	tc := choice["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if _, isString := tc["function"].(map[string]any)["arguments"].(string); !isString || choice["finish_reason"] != "tool_calls" || tc["id"] != "call_1" {
		t.Errorf("completion %v", out)
	}
	if u := out["usage"].(map[string]any); u["prompt_tokens"] != 3.0 || u["completion_tokens"] != 2.0 {
		t.Errorf("usage %v", u)
	}

	// A tool result for a call that was never made is a protocol violation.
	status, _ = post(t, f.BaseURL()+"/chat/completions", auth,
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},`+
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{}"}}]},`+
			`{"role":"tool","tool_call_id":"call_9","content":"x"}],`+tools+`}`)
	if status != 400 || !strings.Contains(rec.all(), `answers "call_9"`) || !strings.Contains(rec.all(), "not answered") {
		t.Errorf("status %d, complaints %s", status, rec.all())
	}
}

func TestAnthropicFakeChecksHeadersAndPairs(t *testing.T) {
	rec := &recorder{TB: t}
	f := NewAnthropic(rec, "m", "key", Turn{Text: "never"})
	anthTools := `"tools":[{"name":"read_file","description":"d","input_schema":{"type":"object"}}]`
	status, out := post(t, f.BaseURL()+"/v1/messages", map[string]string{"x-api-key": "key"},
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"u"},`+
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}]},`+
			`{"role":"user","content":[{"type":"text","text":"no result"}]}],`+anthTools+`}`)
	got := rec.all()
	if status != 400 || out["type"] != "error" || !strings.Contains(got, "anthropic-version") || !strings.Contains(got, `does not answer tool_use "toolu_1"`) {
		t.Errorf("status %d, body %v, complaints %s", status, out, got)
	}
	if f.Remaining() != 1 {
		t.Error("a malformed request consumed a scripted turn")
	}
}
