package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/testproc"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestExecEnvironmentAndPrompt(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret_exec_test")
	t.Setenv("AKIRA_GITHUB_TOKEN", "ghs_secret_exec_test2")
	t.Setenv("MY_API_KEY", "sk-passed-on-purpose")
	ws := t.TempDir()
	out := t.TempDir()
	e := &Exec{
		Command: `env > "` + out + `/env"; cat > "` + out + `/stdin"; cp "$AKIRA_PROMPT_FILE" "` + out + `/prompt";` +
			` if [ -n "$AKIRA_FEEDBACK_FILE" ]; then cp "$AKIRA_FEEDBACK_FILE" "` + out + `/feedback"; fi; pwd > "` + out + `/pwd"; echo done`,
		PassEnv: []string{"MY_API_KEY"},
		Env:     []string{"EXTRA=1", "AKIRA_ATTEMPT=99"},
	}
	res, err := e.Run(context.Background(), Request{
		Workspace: ws, TaskID: "1.2", TaskTitle: "Add the parser", Attempt: 2,
		Prompt: "do the thing\n", Feedback: "go test failed: want 1\n",
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != "done\n" {
		t.Fatalf("Output = %q", res.Output)
	}
	env := readFile(t, filepath.Join(out, "env"))
	for _, want := range []string{"AKIRA_TASK_ID=1.2\n", "AKIRA_TASK_TITLE=Add the parser\n", "AKIRA_ATTEMPT=2\n",
		"AKIRA_WORKSPACE=" + ws + "\n", "MY_API_KEY=sk-passed-on-purpose\n", "EXTRA=1\n", "AKIRA_FEEDBACK_FILE="} {
		if !strings.Contains(env, want) {
			t.Errorf("agent env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "ghs_secret") || strings.Contains(env, "GITHUB_TOKEN") {
		t.Fatalf("a secret reached the agent:\n%s", env)
	}
	if got := readFile(t, filepath.Join(out, "stdin")); got != "do the thing\n" {
		t.Fatalf("stdin = %q", got)
	}
	if got := readFile(t, filepath.Join(out, "prompt")); got != "do the thing\n" {
		t.Fatalf("prompt file = %q", got)
	}
	if got := readFile(t, filepath.Join(out, "feedback")); got != "go test failed: want 1\n" {
		t.Fatalf("feedback file = %q", got)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(out, "pwd"))); got != ws {
		t.Fatalf("working directory = %q, want the workspace %q", got, ws)
	}
}

func TestExecFirstAttemptHasNoFeedbackFile(t *testing.T) {
	e := &Exec{Command: `test -z "$AKIRA_FEEDBACK_FILE"`}
	if _, err := e.Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "a", Attempt: 1, Prompt: "p"}); err != nil {
		t.Fatalf("AKIRA_FEEDBACK_FILE set on a first attempt: %v", err)
	}
}

func TestExecFailure(t *testing.T) {
	e := &Exec{Command: "echo 'cannot do it' >&2; exit 3"}
	res, err := e.Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "a", Attempt: 1, Prompt: "p"})
	if !errors.Is(err, ErrAgentFailed) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v", err)
	}
	if res.Output != "cannot do it\n" {
		t.Fatalf("Output = %q", res.Output)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	ws := t.TempDir()
	e := &Exec{Command: `sleep 60 & echo $! > pid; wait`, Timeout: 300 * time.Millisecond}
	_, err := e.Run(context.Background(), Request{Workspace: ws, TaskID: "a", Attempt: 1, Prompt: "p"})
	if !errors.Is(err, ErrAgentFailed) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	testproc.WaitGoneFromFile(t, filepath.Join(ws, "pid"))
}

func TestExecPromptFilesRemoved(t *testing.T) {
	tmp := t.TempDir()
	e := &Exec{Command: `true`, TempDir: tmp}
	if _, err := e.Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "a", Attempt: 2, Prompt: "p", Feedback: "f"}); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("prompt files left behind: %v", left)
	}
}

func TestExecUsageFile(t *testing.T) {
	tests := []struct {
		name, write string
		want        Usage
	}{
		{"reported", `{"input_tokens": 1200, "output_tokens": 340, "cost_usd": 0.0125}`, Usage{InputTokens: 1200, OutputTokens: 340, CostUSD: 0.0125}},
		{"cost only", `{"cost_usd": 2}`, Usage{CostUSD: 2}},
		{"nothing written", "", Usage{}},
		{"not json", "lots", Usage{}},
		{"negative", `{"input_tokens": -5}`, Usage{}},
		{"a fifo, which must not block", "FIFO", Usage{}},
		{"a symlink out of the attempt", "SYMLINK", Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := "true"
			switch tt.write {
			case "":
			case "FIFO":
				cmd = `mkfifo "$AKIRA_USAGE_FILE"`
			case "SYMLINK":
				outside := filepath.Join(t.TempDir(), "elsewhere.json")
				if err := os.WriteFile(outside, []byte(`{"cost_usd": 99}`), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd = `ln -s "` + outside + `" "$AKIRA_USAGE_FILE"`
			default:
				cmd = `printf '%s' '` + tt.write + `' > "$AKIRA_USAGE_FILE"`
			}
			res, err := (&Exec{Command: cmd}).Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "1", Attempt: 1, Prompt: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != tt.want {
				t.Errorf("usage = %+v, want %+v", res.Usage, tt.want)
			}
		})
	}
}

// TestExecUsageFileInTheSandbox: inside bubblewrap the usage file is in the attempt's HOME, the one
// writable place besides the work tree, and Akira reads it from the host side.
func TestExecUsageFileInTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	ws, home := t.TempDir(), t.TempDir()
	p := sandbox.Config{Mode: sandbox.Bubblewrap}.Policy(sandbox.NetNone, ws, "", home)
	res, err := (&Exec{Command: `printf '{"output_tokens": 7}' > "$AKIRA_USAGE_FILE"`}).Run(context.Background(),
		Request{Workspace: ws, TaskID: "1", Attempt: 1, Prompt: "x", Sandbox: p})
	if err != nil {
		t.Fatalf("%v: %s", err, res.Output)
	}
	if res.Usage.OutputTokens != 7 {
		t.Errorf("usage = %+v, want 7 output tokens", res.Usage)
	}
}

// TestUsageFromOutput reads the usage of the two coding-agent CLIs from their JSON output modes, as
// they document them (Claude Code's `-p --output-format json` result object; `codex exec --json`
// events), among lines of the agents' own log.
func TestUsageFromOutput(t *testing.T) {
	claude := `{"type":"result","subtype":"success","is_error":false,"duration_ms":2873,"duration_api_ms":2521,"num_turns":3,` +
		`"result":"Done.","session_id":"f3c1","total_cost_usd":0.0348,"usage":{"input_tokens":12,"cache_creation_input_tokens":4321,` +
		`"cache_read_input_tokens":13000,"output_tokens":511,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}}`
	codex := `{"type":"thread.started","thread_id":"0199a213-81c0"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Editing main.go"}}
{"type":"turn.completed","usage":{"input_tokens":26549,"cached_input_tokens":22272,"output_tokens":1590}}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":6245,"cached_input_tokens":5376,"output_tokens":407}}`
	tests := []struct {
		name, format, output string
		want                 Usage
	}{
		{"claude", "claude-json", "some log line\n" + claude + "\n", Usage{InputTokens: 17333, OutputTokens: 511, CostUSD: 0.0348}},
		{"codex", "codex-jsonl", codex, Usage{InputTokens: 32794, OutputTokens: 1997}},
		{"claude format on codex output", "claude-json", codex, Usage{}},
		{"not json", "codex-jsonl", "{not json\nplain text", Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := usageFromOutput(tt.format, []byte(tt.output)); got != tt.want {
				t.Errorf("usage = %+v, want %+v", got, tt.want)
			}
		})
	}
}
