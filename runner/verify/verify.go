// Package verify runs a task's verification commands in the workspace, detects a sensible default
// when none are configured, and turns failure output into file/line annotations.
package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

// DefaultTimeout bounds one verification command when Options.Timeout is zero.
const DefaultTimeout = 15 * time.Minute

// DefaultTailBytes is how much of a command's output Result.Output keeps when Options.TailBytes is zero.
const DefaultTailBytes = 8 << 10

// Source says where a task's verification commands came from.
type Source string

const (
	SourceTask       Source = "task"       // the task's own verify lines
	SourceConfigured Source = "configured" // the run's fallback commands (--verify, configuration)
	SourceDetected   Source = "detected"   // guessed from the repository's files
	SourceNone       Source = "none"       // nothing to run: the task is accepted on the agent's word
)

// Plan is the verification chosen for a task.
type Plan struct {
	Commands []string `json:"commands,omitempty"`
	Source   Source   `json:"source"`
	// Reason explains a detected or missing plan, e.g. "go.mod".
	Reason string `json:"reason,omitempty"`
}

// Describe is a one-line human description of the plan.
func (p Plan) Describe() string {
	switch p.Source {
	case SourceNone:
		return "no verification: the task has no verify commands, none were configured and none could be detected"
	case SourceDetected:
		return fmt.Sprintf("verify (detected from %s): %s", p.Reason, joinCmds(p.Commands))
	case SourceConfigured:
		return "verify (configured): " + joinCmds(p.Commands)
	}
	return "verify: " + joinCmds(p.Commands)
}

func joinCmds(cmds []string) string {
	return strings.Join(cmds, " && ")
}

// Choose picks the verification of a task: its own commands, else the configured fallback, else a
// default detected in dir, else none.
func Choose(dir string, task, fallback []string) Plan {
	switch {
	case len(task) > 0:
		return Plan{Commands: task, Source: SourceTask}
	case len(fallback) > 0:
		return Plan{Commands: fallback, Source: SourceConfigured}
	}
	if cmd, reason := Detect(dir); cmd != "" {
		return Plan{Commands: []string{cmd}, Source: SourceDetected, Reason: reason}
	}
	return Plan{Source: SourceNone}
}

// Detect guesses the test command of the project in dir from its build files, and names the file it
// went by. The first match wins, in a fixed order, so the choice is predictable.
func Detect(dir string) (cmd, reason string) {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case exists("go.mod"):
		return "go test ./...", "go.mod"
	case npmHasTest(filepath.Join(dir, "package.json")):
		return "npm test", "package.json"
	case exists("pyproject.toml"):
		return "pytest", "pyproject.toml"
	case exists("pytest.ini"):
		return "pytest", "pytest.ini"
	case exists("Cargo.toml"):
		return "cargo test", "Cargo.toml"
	}
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if makeHasTest(filepath.Join(dir, name)) {
			return "make test", name
		}
	}
	return "", ""
}

// npmHasTest reports a real test script: npm init's placeholder fails on purpose and is not one.
func npmHasTest(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	test := pkg.Scripts["test"]
	return test != "" && !strings.Contains(test, "no test specified")
}

var makeTestRE = regexp.MustCompile(`^test\s*:([^=]|$)`)

func makeHasTest(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if makeTestRE.Match(sc.Bytes()) {
			return true
		}
	}
	return false
}

// Options configures Run.
type Options struct {
	// Env is the complete environment of the commands (build it with proc.Environ: scrubbed).
	Env []string
	// Timeout bounds each command; zero means DefaultTimeout.
	Timeout time.Duration
	// OutputCap bounds the output kept while a command runs; zero means proc.DefaultOutputCap.
	OutputCap int
	// TailBytes is how much of the end of the output Result.Output keeps; zero means DefaultTailBytes.
	TailBytes int
	// Stream, when set, receives the output live.
	Stream io.Writer
	// Sandbox confines the commands; nil runs them unconfined.
	Sandbox *sandbox.Policy
}

// Result is one verification command's outcome.
type Result struct {
	Command  string        `json:"command"`
	ExitCode int           `json:"exit_code"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Output is the tail of the combined output.
	Output string `json:"output,omitempty"`
	// Annotations are the file/line problems found in the whole (capped) output.
	Annotations []Annotation `json:"annotations,omitempty"`
}

// Passed reports a zero exit within the time limit.
func (r Result) Passed() bool { return r.ExitCode == 0 && !r.TimedOut }

// Passed reports whether every result passed.
func Passed(results []Result) bool {
	for _, r := range results {
		if !r.Passed() {
			return false
		}
	}
	return true
}

// Run runs every command through sh -c in dir, one after the other, and returns their results. All
// commands run even after a failure, so the next attempt learns about every broken check at once.
// The error is non-nil only when ctx ended (the running command's process group is killed) or a
// command could not be started at all.
func Run(ctx context.Context, dir string, cmds []string, opts Options) ([]Result, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tail := opts.TailBytes
	if tail <= 0 {
		tail = DefaultTailBytes
	}
	results := make([]Result, 0, len(cmds))
	for _, c := range cmds {
		if opts.Stream != nil {
			fmt.Fprintf(opts.Stream, "$ %s\n", c)
		}
		res, err := proc.Run(ctx, proc.Cmd{
			Shell: c, Dir: dir, Env: opts.Env, Timeout: timeout, OutputCap: opts.OutputCap, Stream: opts.Stream,
			Sandbox: opts.Sandbox,
		})
		if err != nil && !res.TimedOut {
			return results, fmt.Errorf("verify: %w", err)
		}
		r := Result{Command: c, ExitCode: res.ExitCode, TimedOut: res.TimedOut, Duration: res.Duration}
		out := string(res.Output)
		if res.TimedOut {
			out += fmt.Sprintf("\n[akira: killed after %s: verification timeout]\n", timeout)
		}
		if res.Limit != "" {
			out += "\n[akira: " + res.Limit + "]\n"
		}
		if !r.Passed() {
			r.Annotations = ParseAnnotationsIn(dir, out)
		}
		r.Output = Tail(withoutWorkDir(out, dir), tail)
		results = append(results, r)
	}
	return results, nil
}

// withoutWorkDir writes the work tree's paths in out relative to it. The output reaches the next
// attempt's prompt, the check run and the escalation comment: the worker's directory names mean
// nothing there and say where on the worker runs live.
func withoutWorkDir(out, dir string) string {
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	for _, d := range dirs {
		d = strings.TrimRight(d, "/")
		if d == "" {
			continue
		}
		out = strings.ReplaceAll(out, d+"/", "")
		out = strings.ReplaceAll(out, d, ".")
	}
	return out
}

// Tail returns about the last n bytes of s, starting at a line boundary when one is near.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < n/4 {
		cut += i + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…\n" + s[cut:]
}
