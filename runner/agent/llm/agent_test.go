package llm

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent"
)

var providers = []string{"openai", "anthropic"}

func wantResult(content string, isError bool) func(t *testing.T, r gotResult) {
	return func(t *testing.T, r gotResult) {
		t.Helper()
		if r.isError != isError || !strings.Contains(r.content, content) {
			t.Errorf("tool result %q (error %v), want it to contain %q with error %v", r.content, r.isError, content, isError)
		}
	}
}

func expectResults(checks ...func(*testing.T, gotResult)) func(*testing.T, []gotResult) {
	return func(t *testing.T, results []gotResult) {
		t.Helper()
		if len(results) != len(checks) {
			t.Errorf("got %d tool results, want %d: %+v", len(results), len(checks), results)
			return
		}
		for i, c := range checks {
			c(t, results[i])
		}
	}
}

// A scripted model explores, edits, writes, is refused an escape, runs a command and searches, over
// several turns in a real repository; the files it leaves are what the script asked for.
func TestMultiTurnEdits(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			dir := newRepo(t, map[string]string{
				"notes.txt":   "status: TODO\nowner: nobody\n",
				"src/app.txt": "v1\n",
				".gitignore":  "*.log\n",
			})
			if err := os.WriteFile(filepath.Join(dir, "build.log"), []byte("status: TODO\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFakeLLM(t, kind,
				turn{text: "Let me look around.", in: 100, out: 10, calls: []fakeCall{
					{"list_files", map[string]any{"pattern": "*.txt"}},
					{"read_file", map[string]any{"path": "notes.txt"}},
				}},
				turn{in: 200, out: 20, check: expectResults(
					func(t *testing.T, r gotResult) {
						wantResult("src/app.txt", false)(t, r)
						if !strings.Contains(r.content, "notes.txt") || strings.Contains(r.content, "build.log") {
							t.Errorf("list_files result %q", r.content)
						}
					},
					wantResult("1\tstatus: TODO", false),
				), calls: []fakeCall{
					{"edit_file", map[string]any{"path": "notes.txt", "old_string": "status: TODO", "new_string": "status: DONE"}},
					{"write_file", map[string]any{"path": "src/new.txt", "content": "hello\n"}},
					{"write_file", map[string]any{"path": "../escape.txt", "content": "x"}},
				}},
				turn{in: 300, out: 30, check: expectResults(
					wantResult("replaced 1 occurrence", false),
					wantResult("wrote 6 bytes to src/new.txt", false),
					wantResult("outside the workspace", true),
				), calls: []fakeCall{
					{"run_command", map[string]any{"command": "cat src/new.txt; echo warn >&2; exit 3"}},
					{"search", map[string]any{"pattern": `status: \w+`}},
				}},
				turn{in: 400, out: 40, check: expectResults(
					func(t *testing.T, r gotResult) {
						for _, s := range []string{"exit code: 3", "hello", "warn"} {
							wantResult(s, false)(t, r)
						}
					},
					func(t *testing.T, r gotResult) {
						wantResult("notes.txt:1: status: DONE", false)(t, r)
						if strings.Contains(r.content, "build.log") {
							t.Errorf("search returned an ignored file: %q", r.content)
						}
					},
				), text: "Marked the notes as done and added src/new.txt."},
			)
			a, _, logs := newTestAgent(t, f, func(c *Config) {
				c.Prices = map[string]Price{testModel: {InputPerMTok: 1000, OutputPerMTok: 2000}}
			})
			res, err := a.Run(context.Background(), agent.Request{
				Workspace: dir, TaskID: "T1", Attempt: 1, Prompt: "# Task T1: finish the notes\nMark the notes done.",
				ProtectedPaths: []string{".github/workflows/**"},
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := readFile(t, filepath.Join(dir, "notes.txt")); got != "status: DONE\nowner: nobody\n" {
				t.Errorf("notes.txt = %q", got)
			}
			if got := readFile(t, filepath.Join(dir, "src/new.txt")); got != "hello\n" {
				t.Errorf("src/new.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
				t.Error("escape.txt was written outside the workspace")
			}
			if f.count() != 4 {
				t.Errorf("%d requests, want 4", f.count())
			}
			wantUsage := agent.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 1000*0.001 + 100*0.002}
			if res.Usage.InputTokens != wantUsage.InputTokens || res.Usage.OutputTokens != wantUsage.OutputTokens ||
				math.Abs(res.Usage.CostUSD-wantUsage.CostUSD) > 1e-9 {
				t.Errorf("usage %+v, want %+v", res.Usage, wantUsage)
			}
			for _, s := range []string{"Marked the notes as done", "4 turns", "files written: notes.txt, src/new.txt", "write_file ../escape.txt → error"} {
				if !strings.Contains(res.Output, s) {
					t.Errorf("output lacks %q:\n%s", s, res.Output)
				}
			}
			if res.Duration <= 0 {
				t.Error("duration not set")
			}
			// The first request carries the system rules, the task and the repository's layout.
			for _, s := range []string{"run_command", "Do not commit", ".github/workflows/**"} {
				if !strings.Contains(f.firstSystem, s) {
					t.Errorf("system prompt lacks %q", s)
				}
			}
			for _, s := range []string{"Mark the notes done.", "notes.txt\n", "src/\n", ".gitignore\n"} {
				if !strings.Contains(f.firstUser, s) {
					t.Errorf("user prompt lacks %q:\n%s", s, f.firstUser)
				}
			}
			if strings.Contains(f.firstUser, ".git/") {
				t.Error("layout lists .git")
			}
			if !strings.Contains(logs.String(), "turn=4") || !strings.Contains(logs.String(), "task=T1") {
				t.Errorf("turns not logged:\n%s", logs)
			}
			if strings.Contains(logs.String(), testKey) {
				t.Error("the API key is in the logs")
			}
		})
	}
}

func TestLimits(t *testing.T) {
	priced := func(c *Config) { c.Prices = map[string]Price{testModel: {InputPerMTok: 1000, OutputPerMTok: 2000}} }
	explore := []fakeCall{{"list_files", map[string]any{}}}
	tests := []struct {
		name      string
		script    []turn
		cfg       func(*Config)
		wantErr   string
		wantCalls int
		wantUsage agent.Usage
	}{
		{
			name:   "turns",
			script: []turn{{calls: explore, in: 10, out: 1}, {calls: explore, in: 10, out: 1}, {calls: explore, in: 10, out: 1}},
			cfg:    func(c *Config) { c.MaxTurns = 2 },
			// The second response's calls are not run: the model could never see their results.
			wantErr: "max turns (2) reached", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 20, OutputTokens: 2},
		},
		{
			name:    "tokens",
			script:  []turn{{calls: explore, in: 1000, out: 100}, {calls: explore, in: 1000, out: 100}, {text: "never"}},
			cfg:     func(c *Config) { c.MaxTokens = 1500 },
			wantErr: "max tokens (1500) exceeded: 2200 used", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 2000, OutputTokens: 200},
		},
		{
			name:   "cost",
			script: []turn{{calls: explore, in: 100, out: 50}, {calls: explore, in: 100, out: 50}, {calls: explore, in: 100, out: 50}, {text: "never"}},
			cfg:    func(c *Config) { priced(c); c.MaxCostUSD = 0.5 },
			// Each turn costs 100*$0.001 + 50*$0.002 = $0.20.
			wantErr: "max cost $0.50 exceeded: $0.60", wantCalls: 3, wantUsage: agent.Usage{InputTokens: 300, OutputTokens: 150, CostUSD: 0.6},
		},
		{
			name:    "time, in a command",
			script:  []turn{{in: 10, out: 1, calls: []fakeCall{{"run_command", map[string]any{"command": "sleep 30"}}}}},
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond; c.CommandTimeout = time.Minute },
			wantErr: "timeout (300ms) reached", wantCalls: 1, wantUsage: agent.Usage{InputTokens: 10, OutputTokens: 1},
		},
		{
			name:    "time, waiting for the provider",
			script:  []turn{{in: 10, out: 1, calls: explore}, {hang: true}},
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond },
			wantErr: "timeout (300ms) reached", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 10, OutputTokens: 1},
		},
	}
	for _, kind := range providers {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				dir := newRepo(t, map[string]string{"a.txt": "a\n"})
				f := newFakeLLM(t, kind, tt.script...)
				a, _, _ := newTestAgent(t, f, tt.cfg)
				res, err := a.Run(context.Background(), agent.Request{Workspace: dir, TaskID: "T", Attempt: 1, Prompt: "task"})
				if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a limit error containing %q", err, tt.wantErr)
				}
				if f.count() != tt.wantCalls {
					t.Errorf("%d requests, want %d", f.count(), tt.wantCalls)
				}
				if res.Usage.InputTokens != tt.wantUsage.InputTokens || res.Usage.OutputTokens != tt.wantUsage.OutputTokens ||
					math.Abs(res.Usage.CostUSD-tt.wantUsage.CostUSD) > 1e-9 {
					t.Errorf("usage %+v, want %+v", res.Usage, tt.wantUsage)
				}
			})
		}
	}
}

// A limit crossed by the final answer does not fail the attempt: nothing more will be spent.
func TestFinalAnswerOverBudgetSucceeds(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"a.txt": "a\n"})
			f := newFakeLLM(t, kind, turn{text: "nothing to do", in: 5000, out: 100})
			a, _, _ := newTestAgent(t, f, func(c *Config) { c.MaxTokens = 10; c.MaxTurns = 1 })
			res, err := a.Run(context.Background(), agent.Request{Workspace: dir, Prompt: "task"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Usage.InputTokens != 5000 || !strings.Contains(res.Output, "nothing to do") {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// The caller's own cancellation is reported as such, not as the profile's timeout.
func TestCallerCancel(t *testing.T) {
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	f := newFakeLLM(t, "openai", turn{hang: true})
	a, _, _ := newTestAgent(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.count() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := a.Run(ctx, agent.Request{Workspace: dir, Prompt: "task"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want context.Canceled and no limit", err)
	}
}

func TestProviderErrors(t *testing.T) {
	done := turn{text: "done", in: 1, out: 1}
	tests := []struct {
		name      string
		script    []turn
		cfg       func(*Config)
		wantErr   string // empty: success
		wantCalls int
		wantWaits []time.Duration // nil: no waits; a negative entry: any backoff within the policy
		status    int
	}{
		{
			name:      "429 with Retry-After, then success",
			script:    []turn{{status: 429, header: map[string]string{"Retry-After": "7"}, errType: "rate_limit_error", errMsg: "slow down"}, done},
			wantCalls: 2, wantWaits: []time.Duration{7 * time.Second},
		},
		{
			name:      "429 with an HTTP-date Retry-After far away is capped",
			script:    []turn{{status: 429, header: map[string]string{"Retry-After": time.Now().Add(2 * time.Hour).UTC().Format(http1123)}, errType: "rate_limit_error", errMsg: "slow down"}, done},
			wantCalls: 2, wantWaits: []time.Duration{60 * time.Second},
		},
		{
			name:      "529 overloaded with retry-after, then success",
			script:    []turn{{status: 529, header: map[string]string{"retry-after": "2"}, errType: "overloaded_error", errMsg: "Overloaded"}, done},
			wantCalls: 2, wantWaits: []time.Duration{2 * time.Second},
		},
		{
			name:      "500 then success, with backoff",
			script:    []turn{{status: 500, errType: "api_error", errMsg: "Internal server error"}, done},
			wantCalls: 2, wantWaits: []time.Duration{-1},
		},
		{
			name: "503 until the retries run out",
			script: []turn{
				{status: 503, errType: "api_error", errMsg: "unavailable"}, {status: 503, errType: "api_error", errMsg: "unavailable"},
				{status: 503, errType: "api_error", errMsg: "unavailable"}, {status: 503, errType: "api_error", errMsg: "unavailable"},
				{status: 503, errType: "api_error", errMsg: "unavailable"}, {status: 503, errType: "api_error", errMsg: "unavailable"},
			},
			wantErr: "HTTP 503 api_error: unavailable (after 5 retries)", wantCalls: 6, wantWaits: []time.Duration{-1, -1, -1, -1, -1}, status: 503,
		},
		{
			name:    "401 is not retried and the key is not echoed",
			script:  []turn{{status: 401, errType: "authentication_error", errMsg: "Incorrect API key provided: " + testKey + "."}},
			wantErr: "HTTP 401 authentication_error: Incorrect API key provided: [redacted].", wantCalls: 1, status: 401,
		},
		{
			name:    "400 is not retried",
			script:  []turn{{status: 400, errType: "invalid_request_error", errMsg: "messages: field required"}},
			wantErr: "HTTP 400 invalid_request_error: messages: field required", wantCalls: 1, status: 400,
		},
		{
			name:    "429 for a spent quota is not retried",
			script:  []turn{{status: 429, errType: "insufficient_quota", errCd: "insufficient_quota", errMsg: "You exceeded your current quota"}},
			wantErr: "You exceeded your current quota", wantCalls: 1, status: 429,
		},
		{
			name:    "x-should-retry false wins",
			script:  []turn{{status: 500, header: map[string]string{"x-should-retry": "false"}, errType: "api_error", errMsg: "do not retry"}},
			wantErr: "do not retry", wantCalls: 1, status: 500,
		},
		{
			name:    "a Retry-After past the deadline fails at once",
			script:  []turn{{status: 429, header: map[string]string{"Retry-After": "30"}, errType: "rate_limit_error", errMsg: "slow down"}},
			cfg:     func(c *Config) { c.Timeout = 5 * time.Second },
			wantErr: "would pass the deadline", wantCalls: 1, status: 429,
		},
	}
	for _, kind := range providers {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				dir := newRepo(t, map[string]string{"a.txt": "a\n"})
				f := newFakeLLM(t, kind, tt.script...)
				a, w, logs := newTestAgent(t, f, tt.cfg)
				res, err := a.Run(context.Background(), agent.Request{Workspace: dir, TaskID: "T", Attempt: 1, Prompt: "task"})
				if tt.wantErr == "" {
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.Usage.InputTokens != 1 || !strings.Contains(res.Output, "done") {
						t.Errorf("result %+v", res)
					}
				} else {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
					}
					var apiErr *APIError
					if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Provider != kind {
						t.Errorf("err = %#v, want an APIError from %s with status %d", apiErr, kind, tt.status)
					}
					if strings.Contains(err.Error(), testKey) {
						t.Error("the error contains the API key")
					}
				}
				if f.count() != tt.wantCalls {
					t.Errorf("%d requests, want %d", f.count(), tt.wantCalls)
				}
				got := w.all()
				if len(got) != len(tt.wantWaits) {
					t.Fatalf("waits %v, want %v", got, tt.wantWaits)
				}
				p := a.http.retry
				for i, want := range tt.wantWaits {
					if want < 0 {
						if got[i] < p.baseDelay/2 || got[i] > p.maxDelay {
							t.Errorf("backoff %d = %s, outside [%s, %s]", i, got[i], p.baseDelay/2, p.maxDelay)
						}
					} else if got[i] != want {
						t.Errorf("wait %d = %s, want %s", i, got[i], want)
					}
				}
				if strings.Contains(logs.String(), testKey) {
					t.Error("the API key is in the logs")
				}
			})
		}
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// An answer cut by the output limit is continued rather than taken as final.
func TestTruncatedAnswerIsContinued(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			stop := "length"
			if kind == "anthropic" {
				stop = "max_tokens"
			}
			dir := newRepo(t, map[string]string{"a.txt": "a\n"})
			f := newFakeLLM(t, kind, turn{text: "I will now", stop: stop, in: 1, out: 1}, turn{text: "done", in: 1, out: 1})
			a, _, _ := newTestAgent(t, f, func(c *Config) { c.MaxOutputTokens = 64 })
			if _, err := a.Run(context.Background(), agent.Request{Workspace: dir, Prompt: "task"}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(f.lastUserText) != 2 || !strings.Contains(f.lastUserText[1], "cut off") {
				t.Errorf("second request's user text = %q", f.lastUserText)
			}
		})
	}
}

// Feedback from a failed attempt reaches the model once, whether or not the engine put it in the prompt.
func TestFeedbackInPrompt(t *testing.T) {
	const fb = "go test ./... failed: TestAdd: got 3, want 4"
	for _, tt := range []struct {
		name, prompt string
	}{
		{"not in the prompt", "# Task T2\nFix Add."},
		{"already in the prompt", "# Task T2\nFix Add.\n\nPrevious attempt:\n" + fb},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"a.txt": "a\n"})
			f := newFakeLLM(t, "anthropic", turn{text: "done"})
			a, _, _ := newTestAgent(t, f, nil)
			if _, err := a.Run(context.Background(), agent.Request{Workspace: dir, Attempt: 2, Prompt: tt.prompt, Feedback: fb}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := strings.Count(f.firstUser, fb); n != 1 {
				t.Errorf("feedback appears %d times in:\n%s", n, f.firstUser)
			}
		})
	}
}
