// Package env prepares a repository's environment for a run: its setup commands (`setup:` of
// .github/akira.yml) and the base-branch health check (the repository-wide `verify:` on the untouched
// base tree), both run in the sandbox under verification's network rules before any agent call.
package env

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/verify"
)

// MaxLogBytes caps the setup log kept in memory while it runs; the middle goes.
const MaxLogBytes = 1 << 20

// Step is one setup command's outcome.
type Step struct {
	Command  string        `json:"command"`
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration_ns"`
	// Limit names the limit that ended the command ("timeout of 10m0s", "CPU time limit of 1m0s
	// exceeded"), or "" when none did.
	Limit string `json:"limit,omitempty"`
	// Tail is the end of the command's output.
	Tail string `json:"tail,omitempty"`
}

// Passed reports a zero exit within every limit.
func (s Step) Passed() bool { return s.ExitCode == 0 && s.Limit == "" }

// Result is the outcome of a setup.
type Result struct {
	Steps    []Step        `json:"steps,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Log is the whole output of every command, each after a "$ command" line (capped).
	Log string `json:"-"`
	// Detected says the commands were proposed by Detect (auto-setup), not configured: the file they
	// were chosen from.
	Detected string `json:"detected,omitempty"`
	// Proposed is the install command Detect proposed but nothing ran (no auto-setup): Steps is empty.
	Proposed string `json:"proposed,omitempty"`
	// Snapshot is the setup snapshot restored in place of the commands (Steps then holds the services
	// only), or saved after they passed; nil for neither.
	Snapshot *SnapshotInfo `json:"snapshot,omitempty"`
}

// Failed is the step that stopped the setup, or nil when it passed.
func (r Result) Failed() *Step {
	for i := range r.Steps {
		if !r.Steps[i].Passed() {
			return &r.Steps[i]
		}
	}
	return nil
}

// Options configures Setup.
type Options struct {
	Env     []string
	Timeout time.Duration
	Sandbox *sandbox.Policy
	// Stream, when set, also receives the output live.
	Stream io.Writer
	// TailBytes is how much of a failing command's output Step.Tail keeps; zero means verify's default.
	TailBytes int
}

// Setup runs cmds in dir one after the other and stops at the first that fails: what follows an
// install that failed would only fail in turn. The error is non-nil only when ctx ended or a command
// could not be started.
func Setup(ctx context.Context, dir string, cmds []string, opts Options) (Result, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = verify.DefaultTimeout
	}
	tail := opts.TailBytes
	if tail <= 0 {
		tail = verify.DefaultTailBytes
	}
	log := &capped{limit: MaxLogBytes}
	var w io.Writer = log
	if opts.Stream != nil {
		w = io.MultiWriter(log, opts.Stream)
	}
	start := time.Now()
	var res Result
	for _, c := range cmds {
		fmt.Fprintf(w, "$ %s\n", c)
		pr, err := proc.Run(ctx, proc.Cmd{Shell: c, Dir: dir, Env: opts.Env, Timeout: opts.Timeout, Stream: w,
			OutputCap: MaxLogBytes, Sandbox: opts.Sandbox})
		if err != nil && !pr.TimedOut {
			res.Duration, res.Log = time.Since(start), log.String()
			return res, fmt.Errorf("env: setup: %w", err)
		}
		st := Step{Command: c, ExitCode: pr.ExitCode, Duration: pr.Duration, Limit: pr.Limit}
		if pr.TimedOut {
			st.Limit = fmt.Sprintf("timeout of %s", opts.Timeout)
		}
		if !st.Passed() {
			out := string(pr.Output)
			if st.Limit != "" {
				fmt.Fprintf(w, "[akira: %s]\n", st.Limit)
				out += "\n[akira: " + st.Limit + "]\n"
			}
			st.Tail = verify.Tail(out, tail)
		}
		res.Steps = append(res.Steps, st)
		if !st.Passed() {
			break
		}
	}
	res.Duration, res.Log = time.Since(start), log.String()
	return res, nil
}

// capped keeps the first and last halves of what is written past its limit.
type capped struct {
	mu      sync.Mutex
	limit   int
	head    strings.Builder
	tail    []byte
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := len(p)
	half := c.limit / 2
	if room := half - c.head.Len(); room > 0 {
		n := min(room, len(p))
		c.head.Write(p[:n])
		p = p[n:]
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - half; over > 0 {
		c.dropped += over
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return written, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return c.head.String() + string(c.tail)
	}
	return c.head.String() + fmt.Sprintf("\n[… %d bytes not kept …]\n", c.dropped) + string(c.tail)
}
