package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

// DefaultExecTimeout bounds one exec agent attempt when Exec.Timeout is zero.
const DefaultExecTimeout = 30 * time.Minute

// Exec is an agent that is an external command (a coding-agent CLI or a script). The command runs
// through `sh -c` in the workspace; the prompt arrives on stdin and in the file $AKIRA_PROMPT_FILE.
// Its environment is scrubbed: proc.DefaultAllowEnv, the names in PassEnv, the KEY=VALUE entries in
// Env, and the AKIRA_* variables of the attempt: AKIRA_TASK_ID, AKIRA_TASK_TITLE, AKIRA_ATTEMPT
// (1-based), AKIRA_PROMPT_FILE, AKIRA_WORKSPACE and, when there is feedback, AKIRA_FEEDBACK_FILE.
// A non-zero exit or a timeout is a failed attempt; the whole process group is killed on timeout.
type Exec struct {
	// Command is the shell command line.
	Command string
	// PassEnv names variables of Akira's environment the agent needs (e.g. ANTHROPIC_API_KEY).
	PassEnv []string
	// Env holds KEY=VALUE entries set for the agent.
	Env []string
	// Timeout bounds one attempt; zero means DefaultExecTimeout.
	Timeout time.Duration
	// OutputCap bounds the output kept; zero means proc.DefaultOutputCap.
	OutputCap int
	// Stream, when set, receives the agent's output live.
	Stream io.Writer
	// UsageFrom reads the usage from the agent's output when it writes no usage file: "claude-json"
	// or "codex-jsonl" (see usageFromOutput).
	UsageFrom string
	// TempDir is where the prompt and feedback files are written (outside the workspace, so they are
	// never committed); empty means os.TempDir().
	TempDir string
	// Model, when set, is the agent's model endpoint, which the egress proxy holds (see ModelRoute).
	Model *egress.Model
}

// ErrAgentFailed marks an attempt where the agent command exited non-zero or timed out.
var ErrAgentFailed = errors.New("agent failed")

// Run runs the command once for req.
func (e *Exec) Run(ctx context.Context, req Request) (Result, error) {
	if strings.TrimSpace(e.Command) == "" {
		return Result{}, errors.New("agent: exec: no command configured")
	}
	dir, err := os.MkdirTemp(e.TempDir, "akira-prompt-")
	if err != nil {
		return Result{}, fmt.Errorf("agent: exec: %w", err)
	}
	defer os.RemoveAll(dir)
	promptFile := filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(promptFile, []byte(req.Prompt), 0o600); err != nil {
		return Result{}, fmt.Errorf("agent: exec: %w", err)
	}
	vars := []string{
		"AKIRA_TASK_ID=" + req.TaskID,
		"AKIRA_TASK_TITLE=" + req.TaskTitle,
		"AKIRA_ATTEMPT=" + strconv.Itoa(req.Attempt),
		"AKIRA_PROMPT_FILE=" + promptFile,
		"AKIRA_WORKSPACE=" + req.Workspace,
	}
	if req.Feedback != "" {
		feedbackFile := filepath.Join(dir, "feedback.md")
		if err := os.WriteFile(feedbackFile, []byte(req.Feedback), 0o600); err != nil {
			return Result{}, fmt.Errorf("agent: exec: %w", err)
		}
		vars = append(vars, "AKIRA_FEEDBACK_FILE="+feedbackFile)
	}
	// The agent may say what it used in a usage file (see readUsage). Inside the sandbox the file lives
	// in the attempt's HOME, the one place besides the work tree the agent can write.
	usageHost := filepath.Join(dir, "usage.json")
	usageInside := usageHost
	if req.Sandbox != nil && req.Sandbox.Mode == sandbox.Bubblewrap && req.Sandbox.Home != "" {
		usageHost = filepath.Join(req.Sandbox.Home, usageFileName)
		usageInside = sandbox.Home + "/" + usageFileName
		_ = os.Remove(usageHost) // a file an earlier attempt left is not this attempt's usage
	}
	vars = append(vars, "AKIRA_USAGE_FILE="+usageInside)
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	// The engine's variables, then the operator's (which win over them), then the attempt's own
	// AKIRA_* variables, which always win.
	extra := append(append(append([]string{}, req.Env...), e.Env...), vars...)
	var box *sandbox.Policy
	if req.Sandbox != nil {
		// The prompt and feedback files are the only thing outside the work tree the agent sees.
		p := req.Sandbox.With(dir)
		box = &p
	}
	stream := e.Stream
	var steps *stepWriter
	if req.Record != nil {
		steps = newStepWriter(req.Record)
		stream = teeWriter(e.Stream, steps)
	}
	res, err := proc.Run(ctx, proc.Cmd{
		Sandbox:   box,
		Shell:     e.Command,
		Dir:       req.Workspace,
		Env:       proc.Environ(e.PassEnv, extra...),
		Stdin:     strings.NewReader(req.Prompt),
		Timeout:   timeout,
		OutputCap: e.OutputCap,
		Stream:    activityWriter(stream, req.Activity),
	})
	if steps != nil {
		steps.flush()
	}
	out := Result{Output: string(res.Output), Duration: res.Duration, Usage: readUsage(usageHost)}
	if out.Usage == (Usage{}) && e.UsageFrom != "" {
		out.Usage = usageFromOutput(e.UsageFrom, res.Output)
	}
	switch {
	case res.Limit != "":
		return out, fmt.Errorf("%w: %s (exit status %d)", ErrAgentFailed, res.Limit, res.ExitCode)
	case res.TimedOut:
		return out, fmt.Errorf("%w: timed out after %s (the agent's process group was killed)", ErrAgentFailed, timeout)
	case err != nil:
		return out, fmt.Errorf("agent: exec: %w", err)
	case res.ExitCode != 0:
		return out, fmt.Errorf("%w: exit status %d%s", ErrAgentFailed, res.ExitCode, missingCommandHint(e.Command, req.Workspace, box, res.ExitCode))
	}
	return out, nil
}

// exitNotFound is the shell's exit status for a command it could not find.
const exitNotFound = 127

// missingCommandHint explains a failure caused by where the agent's command lives, empty when
// nothing points there. A script outside the repository is the usual case: the shell's own "not
// found" does not say that the sandbox hides it, nor what to do. The fix is named, not retried:
// running the agent unconfined is the operator's choice, never Akira's.
func missingCommandHint(command, workspace string, box *sandbox.Policy, exitCode int) string {
	words := strings.Fields(command)
	for i, w := range words {
		words[i] = strings.Trim(w, `"'`)
	}
	if len(words) == 0 {
		return ""
	}
	sandboxed := box != nil && box.Mode == sandbox.Bubblewrap
	if sandboxed {
		// Any path of the command line counts: "sh /home/me/agent.sh" fails with exit 2, not 127.
		for _, w := range words {
			if filepath.IsAbs(w) && !box.Shows(w) {
				return fmt.Sprintf(": the sandbox hides %s: show it with `akira run --sandbox-ro %s` "+
					"(sandbox.read_only in the operator's file), or put the script in the repository",
					w, filepath.Dir(w))
			}
		}
	}
	if exitCode != exitNotFound {
		return ""
	}
	first := words[0]
	if strings.Contains(first, "/") && !filepath.IsAbs(first) {
		if _, err := os.Stat(filepath.Join(workspace, first)); err != nil {
			return fmt.Sprintf(": %s is not in the workspace, a fresh clone of the repository's committed files: commit the script, or give its absolute path", first)
		}
	}
	if sandboxed {
		return fmt.Sprintf(": the shell did not find %s; the sandbox shows only the work tree, the system's directories and the read-only paths: "+
			"if it is installed elsewhere, show its directory with `akira run --sandbox-ro DIR` (sandbox.read_only in the operator's file), or put the script in the repository", first)
	}
	return fmt.Sprintf(": the shell did not find %s: check the agent's command and PATH", first)
}

const usageFileName = ".akira-usage.json"

// maxUsageFile bounds what is read of a usage file: it is the agent's, and the agent may be hostile.
const maxUsageFile = 64 << 10

// readUsage reads the usage an exec agent reported in $AKIRA_USAGE_FILE: a JSON object with
// input_tokens, output_tokens and cost_usd (each optional). A missing, oversized or malformed file, or
// negative numbers, count as nothing reported. What an agent reports is what it says, not a measurement.
func readUsage(path string) Usage {
	// The file is the agent's: only a regular file is read (a FIFO would block this job, a symlink
	// would point at a file of the host).
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return Usage{}
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxUsageFile+1))
	if err != nil || len(data) > maxUsageFile {
		return Usage{}
	}
	var u struct {
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	}
	if json.Unmarshal(data, &u) != nil || u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 || u.CostUSD != u.CostUSD {
		return Usage{}
	}
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
}

// activityWriter reports each write of the agent's output as activity, besides streaming it.
func activityWriter(stream io.Writer, activity func()) io.Writer {
	if activity == nil {
		return stream
	}
	return writerFunc(func(p []byte) (int, error) {
		activity()
		if stream != nil {
			return stream.Write(p)
		}
		return len(p), nil
	})
}

// teeWriter writes to both, the first one optional.
func teeWriter(first io.Writer, second io.Writer) io.Writer {
	if first == nil {
		return second
	}
	return io.MultiWriter(first, second)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// usageFromOutput reads the usage a coding-agent CLI prints in its JSON output modes:
//   - "claude-json": Claude Code's `-p --output-format json` prints one result object with
//     total_cost_usd and usage.{input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
//     output_tokens};
//   - "codex-jsonl": `codex exec --json` prints one event per line; each turn.completed event carries
//     usage.{input_tokens, cached_input_tokens, output_tokens} (no cost).
//
// Lines that are not such JSON are skipped: the output also holds the agent's own log.
func usageFromOutput(format string, output []byte) Usage {
	var u Usage
	for _, line := range bytes.Split(output, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Type         string  `json:"type"`
			TotalCostUSD float64 `json:"total_cost_usd"`
			Usage        struct {
				InputTokens              int64 `json:"input_tokens"`
				CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
				CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
				CachedInputTokens        int64 `json:"cached_input_tokens"`
				OutputTokens             int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case format == "claude-json" && ev.Type == "result":
			u = Usage{InputTokens: ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens,
				OutputTokens: ev.Usage.OutputTokens, CostUSD: ev.TotalCostUSD}
		case format == "codex-jsonl" && ev.Type == "turn.completed":
			// input_tokens already counts the cached ones.
			u = u.Add(Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens})
		}
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 {
		return Usage{}
	}
	return u
}
