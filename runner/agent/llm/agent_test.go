package llm

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/timeline"
)

var providers = []string{"openai", "anthropic"}

func wantResult(content string, isError bool) func(t testing.TB, r llmtest.ToolResult) {
	return func(t testing.TB, r llmtest.ToolResult) {
		t.Helper()
		if r.IsError != isError || !strings.Contains(r.Content, content) {
			t.Errorf("tool result %q (error %v), want it to contain %q with error %v", r.Content, r.IsError, content, isError)
		}
	}
}

func expectResults(checks ...func(testing.TB, llmtest.ToolResult)) func(testing.TB, []llmtest.ToolResult) {
	return func(t testing.TB, results []llmtest.ToolResult) {
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

// checkTimeline: the attempt of TestMultiTurnEdits as its timeline records it: each turn a model
// call at its price, each tool call a step with what identifies it, the size of its result and a
// command's exit code, and the model's messages.
func checkTimeline(t *testing.T, evs []timeline.Event) {
	t.Helper()
	var got []string
	var cost float64
	for _, ev := range evs {
		switch {
		case ev.Call != nil:
			c := ev.Call
			if c.Source != timeline.SourceAgent || c.Model != testModel || c.Status != 200 || c.Duration <= 0 || c.Unpriced {
				t.Errorf("call %+v", c)
			}
			cost += c.CostUSD
			got = append(got, "call "+strconv.FormatInt(c.InputTokens, 10)+"+"+strconv.FormatInt(c.OutputTokens, 10))
		case ev.Step != nil && ev.Step.Type == timeline.StepTool:
			s := ev.Step
			line := "tool " + s.Tool + " " + s.Args
			if s.ExitCode != nil {
				line += " exit " + strconv.Itoa(*s.ExitCode)
			}
			if s.Error {
				line += " error"
			}
			if s.ResultBytes <= 0 || s.Agent != timeline.AgentBuiltin {
				t.Errorf("step %+v", s)
			}
			got = append(got, line)
		case ev.Step != nil:
			got = append(got, ev.Step.Type+" "+ev.Step.Text)
		}
	}
	want := []string{
		"call 100+10", "message Let me look around.", "tool list_files *.txt", "tool read_file notes.txt",
		"call 200+20", "tool edit_file notes.txt", "tool write_file src/new.txt", "tool write_file ../escape.txt error",
		"call 300+30", "tool run_command cat src/new.txt; echo warn >&2; exit 3 exit 3 error", "tool search Status: \\w+",
		"call 400+40", "message Marked the notes as done and added src/new.txt.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := 1000*0.001 + 100*0.002; math.Abs(cost-want) > 1e-9 {
		t.Errorf("the calls cost $%v, want $%v", cost, want)
	}
}

// A scripted model explores, edits, writes, is refused an escape, runs a command and searches, over
// several turns in a real repository; the files it leaves are what the script asked for.
func TestMultiTurnEdits(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			dir := newRepo(t, map[string]string{
				"notes.txt":   "Status: TODO\nowner: nobody\n",
				"src/app.txt": "v1\n",
				".gitignore":  "*.log\n",
			})
			if err := os.WriteFile(filepath.Join(dir, "build.log"), []byte("Status: TODO\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, kind,
				llmtest.Turn{Text: "Let me look around.", InputTokens: 100, OutputTokens: 10, Calls: []llmtest.Call{
					{Name: "list_files", Args: map[string]any{"pattern": "*.txt"}},
					{Name: "read_file", Args: map[string]any{"path": "notes.txt"}},
				}},
				llmtest.Turn{InputTokens: 200, OutputTokens: 20, Check: expectResults(
					func(t testing.TB, r llmtest.ToolResult) {
						wantResult("src/app.txt", false)(t, r)
						if !strings.Contains(r.Content, "notes.txt") || strings.Contains(r.Content, "build.log") {
							t.Errorf("list_files result %q", r.Content)
						}
					},
					wantResult("1\tStatus: TODO", false),
				), Calls: []llmtest.Call{
					{Name: "edit_file", Args: map[string]any{"path": "notes.txt", "old_string": "Status: TODO", "new_string": "Status: DONE"}},
					{Name: "write_file", Args: map[string]any{"path": "src/new.txt", "content": "hello\n"}},
					{Name: "write_file", Args: map[string]any{"path": "../escape.txt", "content": "x"}},
				}},
				llmtest.Turn{InputTokens: 300, OutputTokens: 30, Check: expectResults(
					wantResult("replaced 1 occurrence", false),
					wantResult("wrote 6 bytes to src/new.txt", false),
					wantResult("outside the workspace", true),
				), Calls: []llmtest.Call{
					{Name: "run_command", Args: map[string]any{"command": "cat src/new.txt; echo warn >&2; exit 3"}},
					{Name: "search", Args: map[string]any{"pattern": `Status: \w+`}},
				}},
				llmtest.Turn{InputTokens: 400, OutputTokens: 40, Check: expectResults(
					func(t testing.TB, r llmtest.ToolResult) {
						for _, s := range []string{"exit code: 3", "hello", "warn"} {
							wantResult(s, false)(t, r)
						}
					},
					func(t testing.TB, r llmtest.ToolResult) {
						wantResult("notes.txt:1: Status: DONE", false)(t, r)
						if strings.Contains(r.Content, "build.log") {
							t.Errorf("search returned an ignored file: %q", r.Content)
						}
					},
				), Text: "Marked the notes as done and added src/new.txt."},
			)
			a, _, logs := newTestAgent(t, f, func(c *Config) {
				c.Prices = map[string]Price{testModel: {InputPerMTok: 1000, OutputPerMTok: 2000}}
			})
			var mu sync.Mutex
			var recorded []timeline.Event
			res, err := a.Run(context.Background(), agent.Request{
				Workspace: dir, TaskID: "T1", Attempt: 1, Prompt: "# Task T1: finish the notes\nMark the notes done.",
				ProtectedPaths: []string{".github/workflows/**"},
				Record: func(ev timeline.Event) {
					mu.Lock()
					defer mu.Unlock()
					recorded = append(recorded, ev)
				},
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkTimeline(t, recorded)
			if got := readFile(t, filepath.Join(dir, "notes.txt")); got != "Status: DONE\nowner: nobody\n" {
				t.Errorf("notes.txt = %q", got)
			}
			if got := readFile(t, filepath.Join(dir, "src/new.txt")); got != "hello\n" {
				t.Errorf("src/new.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
				t.Error("escape.txt was written outside the workspace")
			}
			if f.Requests() != 4 {
				t.Errorf("%d requests, want 4", f.Requests())
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
				if !strings.Contains(f.FirstSystem(), s) {
					t.Errorf("system prompt lacks %q", s)
				}
			}
			for _, s := range []string{"Mark the notes done.", "notes.txt\n", "src/\n", ".gitignore\n"} {
				if !strings.Contains(f.FirstUser(), s) {
					t.Errorf("user prompt lacks %q:\n%s", s, f.FirstUser())
				}
			}
			if strings.Contains(f.FirstUser(), ".git/") {
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
	explore := []llmtest.Call{{Name: "list_files", Args: map[string]any{}}}
	tests := []struct {
		name      string
		script    []llmtest.Turn
		cfg       func(*Config)
		wantErr   string
		wantCalls int
		wantUsage agent.Usage
	}{
		{
			name:   "turns",
			script: []llmtest.Turn{{Calls: explore, InputTokens: 10, OutputTokens: 1}, {Calls: explore, InputTokens: 10, OutputTokens: 1}, {Calls: explore, InputTokens: 10, OutputTokens: 1}},
			cfg:    func(c *Config) { c.MaxTurns = 2 },
			// The second response's calls are not run: the model could never see their results.
			wantErr: "max turns (2) reached", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 20, OutputTokens: 2},
		},
		{
			name:    "tokens",
			script:  []llmtest.Turn{{Calls: explore, InputTokens: 1000, OutputTokens: 100}, {Calls: explore, InputTokens: 1000, OutputTokens: 100}, {Text: "never"}},
			cfg:     func(c *Config) { c.MaxTokens = 1500 },
			wantErr: "max tokens (1500) exceeded: 2200 used", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 2000, OutputTokens: 200},
		},
		{
			name:   "cost",
			script: []llmtest.Turn{{Calls: explore, InputTokens: 100, OutputTokens: 50}, {Calls: explore, InputTokens: 100, OutputTokens: 50}, {Calls: explore, InputTokens: 100, OutputTokens: 50}, {Text: "never"}},
			cfg:    func(c *Config) { priced(c); c.MaxCostUSD = 0.5 },
			// Each turn costs 100*$0.001 + 50*$0.002 = $0.20.
			wantErr: "max cost $0.50 exceeded: $0.60", wantCalls: 3, wantUsage: agent.Usage{InputTokens: 300, OutputTokens: 150, CostUSD: 0.6},
		},
		{
			name:    "time, in a command",
			script:  []llmtest.Turn{{InputTokens: 10, OutputTokens: 1, Calls: []llmtest.Call{{Name: "run_command", Args: map[string]any{"command": "sleep 30"}}}}},
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond; c.CommandTimeout = time.Minute },
			wantErr: "timeout (300ms) reached", wantCalls: 1, wantUsage: agent.Usage{InputTokens: 10, OutputTokens: 1},
		},
		{
			name:    "time, waiting for the provider",
			script:  []llmtest.Turn{{InputTokens: 10, OutputTokens: 1, Calls: explore}, {Hang: true}},
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond },
			wantErr: "timeout (300ms) reached", wantCalls: 2, wantUsage: agent.Usage{InputTokens: 10, OutputTokens: 1},
		},
	}
	for _, kind := range providers {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				dir := newRepo(t, map[string]string{"a.txt": "a\n"})
				f := newFake(t, kind, tt.script...)
				a, _, _ := newTestAgent(t, f, tt.cfg)
				res, err := a.Run(context.Background(), agent.Request{Workspace: dir, TaskID: "T", Attempt: 1, Prompt: "task"})
				if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a limit error containing %q", err, tt.wantErr)
				}
				if f.Requests() != tt.wantCalls {
					t.Errorf("%d requests, want %d", f.Requests(), tt.wantCalls)
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
			f := newFake(t, kind, llmtest.Turn{Text: "nothing to do", InputTokens: 5000, OutputTokens: 100})
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
	f := newFake(t, "openai", llmtest.Turn{Hang: true})
	a, _, _ := newTestAgent(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.Requests() == 0 {
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
	done := llmtest.Turn{Text: "done", InputTokens: 1, OutputTokens: 1}
	tests := []struct {
		name      string
		script    []llmtest.Turn
		cfg       func(*Config)
		wantErr   string // empty: success
		wantCalls int
		wantWaits []time.Duration // nil: no waits; a negative entry: any backoff within the policy
		status    int
	}{
		{
			name:      "429 with Retry-After, then success",
			script:    []llmtest.Turn{{Status: 429, Header: map[string]string{"Retry-After": "7"}, ErrType: "rate_limit_error", ErrMessage: "slow down"}, done},
			wantCalls: 2, wantWaits: []time.Duration{7 * time.Second},
		},
		{
			name:      "429 with an HTTP-date Retry-After far away is capped",
			script:    []llmtest.Turn{{Status: 429, Header: map[string]string{"Retry-After": time.Now().Add(2 * time.Hour).UTC().Format(http1123)}, ErrType: "rate_limit_error", ErrMessage: "slow down"}, done},
			wantCalls: 2, wantWaits: []time.Duration{60 * time.Second},
		},
		{
			name:      "529 overloaded with retry-after, then success",
			script:    []llmtest.Turn{{Status: 529, Header: map[string]string{"retry-after": "2"}, ErrType: "overloaded_error", ErrMessage: "Overloaded"}, done},
			wantCalls: 2, wantWaits: []time.Duration{2 * time.Second},
		},
		{
			name:      "500 then success, with backoff",
			script:    []llmtest.Turn{{Status: 500, ErrType: "api_error", ErrMessage: "Internal server error"}, done},
			wantCalls: 2, wantWaits: []time.Duration{-1},
		},
		{
			name: "503 until the retries run out",
			script: []llmtest.Turn{
				{Status: 503, ErrType: "api_error", ErrMessage: "unavailable"}, {Status: 503, ErrType: "api_error", ErrMessage: "unavailable"},
				{Status: 503, ErrType: "api_error", ErrMessage: "unavailable"}, {Status: 503, ErrType: "api_error", ErrMessage: "unavailable"},
				{Status: 503, ErrType: "api_error", ErrMessage: "unavailable"}, {Status: 503, ErrType: "api_error", ErrMessage: "unavailable"},
			},
			wantErr: "HTTP 503 api_error: unavailable (after 5 retries)", wantCalls: 6, wantWaits: []time.Duration{-1, -1, -1, -1, -1}, status: 503,
		},
		{
			name:    "401 is not retried and the key is not echoed",
			script:  []llmtest.Turn{{Status: 401, ErrType: "authentication_error", ErrMessage: "Incorrect API key provided: " + testKey + "."}},
			wantErr: "HTTP 401 authentication_error: Incorrect API key provided: [redacted].", wantCalls: 1, status: 401,
		},
		{
			name:    "400 is not retried",
			script:  []llmtest.Turn{{Status: 400, ErrType: "invalid_request_error", ErrMessage: "messages: field required"}},
			wantErr: "HTTP 400 invalid_request_error: messages: field required", wantCalls: 1, status: 400,
		},
		{
			name:    "429 for a spent quota is not retried",
			script:  []llmtest.Turn{{Status: 429, ErrType: "insufficient_quota", ErrCode: "insufficient_quota", ErrMessage: "You exceeded your current quota"}},
			wantErr: "You exceeded your current quota", wantCalls: 1, status: 429,
		},
		{
			name:    "x-should-retry false wins",
			script:  []llmtest.Turn{{Status: 500, Header: map[string]string{"x-should-retry": "false"}, ErrType: "api_error", ErrMessage: "do not retry"}},
			wantErr: "do not retry", wantCalls: 1, status: 500,
		},
		{
			name:    "a Retry-After past the deadline fails at once",
			script:  []llmtest.Turn{{Status: 429, Header: map[string]string{"Retry-After": "30"}, ErrType: "rate_limit_error", ErrMessage: "slow down"}},
			cfg:     func(c *Config) { c.Timeout = 5 * time.Second },
			wantErr: "would pass the deadline", wantCalls: 1, status: 429,
		},
	}
	for _, kind := range providers {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				dir := newRepo(t, map[string]string{"a.txt": "a\n"})
				f := newFake(t, kind, tt.script...)
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
				if f.Requests() != tt.wantCalls {
					t.Errorf("%d requests, want %d", f.Requests(), tt.wantCalls)
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
			f := newFake(t, kind, llmtest.Turn{Text: "I will now", Stop: stop, InputTokens: 1, OutputTokens: 1}, llmtest.Turn{Text: "done", InputTokens: 1, OutputTokens: 1})
			a, _, _ := newTestAgent(t, f, func(c *Config) { c.MaxOutputTokens = 64 })
			if _, err := a.Run(context.Background(), agent.Request{Workspace: dir, Prompt: "task"}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(f.UserTexts()) != 2 || !strings.Contains(f.UserTexts()[1], "cut off") {
				t.Errorf("second request's user text = %q", f.UserTexts())
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
			f := newFake(t, "anthropic", llmtest.Turn{Text: "done"})
			a, _, _ := newTestAgent(t, f, nil)
			if _, err := a.Run(context.Background(), agent.Request{Workspace: dir, Attempt: 2, Prompt: tt.prompt, Feedback: fb}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := strings.Count(f.FirstUser(), fb); n != 1 {
				t.Errorf("feedback appears %d times InputTokens:\n%s", n, f.FirstUser())
			}
		})
	}
}

// A refusal or content filter ends the attempt with the model's words, not as a success.
func TestRefusal(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			stop := "content_filter"
			if kind == "anthropic" {
				stop = "refusal"
			}
			dir := newRepo(t, map[string]string{"a.txt": "a\n"})
			f := newFake(t, kind, llmtest.Turn{Text: "I can't help with that.", Stop: stop, InputTokens: 3, OutputTokens: 4})
			a, _, _ := newTestAgent(t, f, nil)
			res, err := a.Run(context.Background(), agent.Request{Workspace: dir, Prompt: "task"})
			if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "can't help") || errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v", err)
			}
			if res.Usage.OutputTokens != 4 {
				t.Errorf("usage %+v", res.Usage)
			}
		})
	}
}
