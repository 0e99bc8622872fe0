// Package proc runs subprocesses the way every command Akira starts must run (DESIGN.md safety rules):
// with a context, a timeout, an output cap, a scrubbed environment, and killed with its whole process group.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/akira-bot/akira/runner/sandbox"
)

// DefaultOutputCap is how much combined output a command keeps when Cmd.OutputCap is zero.
const DefaultOutputCap = 1 << 20

// DefaultAllowEnv is the environment a scrubbed subprocess inherits from Akira. Secrets are never on it:
// anything else must be passed explicitly by the operator's configuration.
var DefaultAllowEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
	"TMPDIR", "TZ", "TERM", "GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "CARGO_HOME",
	"RUSTUP_HOME", "NVM_DIR", "PYENV_ROOT", "VIRTUAL_ENV",
}

// Cmd describes one subprocess.
type Cmd struct {
	// Shell, when set, runs through `sh -c Shell`; otherwise Args[0] is executed with Args[1:].
	Shell string
	Args  []string
	Dir   string
	// Env is the complete environment of the process. Build it with ScrubEnv; a nil Env means an
	// empty environment, never Akira's own.
	Env   []string
	Stdin io.Reader
	// Timeout bounds the run; zero means only ctx bounds it.
	Timeout time.Duration
	// OutputCap bounds the combined stdout+stderr kept in Result.Output (head and tail are kept,
	// the middle is elided). Zero means DefaultOutputCap.
	OutputCap int
	// Stream, when set, also receives the output as it is produced (uncapped), e.g. for a live view.
	Stream io.Writer
	// WaitDelay is how long to wait for the process group to exit after the kill; zero means 2s.
	WaitDelay time.Duration
	// Sandbox, when set, confines the command (see runner/sandbox): commands that come from a
	// repository or an agent run under it, Akira's own git does not.
	Sandbox *sandbox.Policy
}

// Result is what a finished subprocess left behind.
type Result struct {
	ExitCode  int
	Output    []byte
	Truncated bool
	TimedOut  bool
	Duration  time.Duration
	// Limit names the sandbox limit that ended the command, "" when none did.
	Limit string
}

// ErrTimeout marks a run that hit Cmd.Timeout.
var ErrTimeout = errors.New("timed out")

// Run starts c and waits for it. A non-zero exit is not an error: it is reported in Result.ExitCode.
// The error is non-nil when the process could not start, timed out (wrapping ErrTimeout), or ctx ended
// (wrapping ctx.Err()); in those cases the whole process group has been killed.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if c.Shell == "" && len(c.Args) == 0 {
		return Result{}, errors.New("proc: empty command")
	}
	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	argv, env := c.Args, c.Env
	if c.Shell != "" {
		argv = []string{"sh", "-c", c.Shell}
	}
	if c.Sandbox != nil {
		var err error
		if argv, env, err = c.Sandbox.Command(argv, env); err != nil {
			return Result{}, fmt.Errorf("proc: %w", err)
		}
	}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin = c.Stdin
	limit := c.OutputCap
	if limit <= 0 {
		limit = DefaultOutputCap
	}
	out := newCappedBuffer(limit)
	var w io.Writer = out
	if c.Stream != nil {
		w = io.MultiWriter(out, c.Stream)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	// A new process group, so that the kill reaches grandchildren (a shell's children, test binaries).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}

	start := time.Now()
	err := cmd.Run()
	res := Result{Duration: time.Since(start), Output: out.Bytes(), Truncated: out.Truncated()}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		if c.Sandbox != nil {
			code := res.ExitCode
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			res.Limit = c.Sandbox.Limits.Explain(code)
		}
		// Kill the group even after a normal exit: a background child must not outlive its command.
		_ = syscall.Kill(-cmd.ProcessState.Pid(), syscall.SIGKILL)
	}
	name := c.Shell
	if name == "" {
		name = strings.Join(c.Args, " ")
	}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("proc: %s: %w", firstLine(name), ctx.Err())
	case runCtx.Err() != nil:
		res.TimedOut = true
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
		return res, fmt.Errorf("proc: %s: %w after %s", firstLine(name), ErrTimeout, c.Timeout)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, fmt.Errorf("proc: start %s: %w", firstLine(name), err)
	}
	return res, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// ScrubEnv returns the entries of environ whose names are in allow (exact names), followed by extra
// (KEY=VALUE entries, which win over inherited ones of the same name).
func ScrubEnv(environ []string, allow []string, extra ...string) []string {
	allowed := make(map[string]bool, len(allow))
	for _, k := range allow {
		allowed[k] = true
	}
	overridden := make(map[string]bool, len(extra))
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		overridden[k] = true
	}
	env := make([]string, 0, len(allow)+len(extra))
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && allowed[k] && !overridden[k] {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Environ is ScrubEnv over this process's environment with DefaultAllowEnv plus passthrough names
// (the operator's explicit list), followed by extra.
func Environ(passthrough []string, extra ...string) []string {
	allow := append(append([]string{}, DefaultAllowEnv...), passthrough...)
	return ScrubEnv(os.Environ(), allow, extra...)
}

// cappedBuffer keeps the first and last halves of what is written once the cap is exceeded,
// because the start of a failure (what ran) and its end (what broke) both matter.
type cappedBuffer struct {
	mu        sync.Mutex
	limit     int
	head      []byte
	tail      []byte // ring of the most recent bytes once head is full
	tailStart int
	dropped   int64
}

func newCappedBuffer(limit int) *cappedBuffer { return &cappedBuffer{limit: limit} }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	headCap := b.limit / 2
	if len(b.head) < headCap {
		k := min(headCap-len(b.head), len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailCap := b.limit - headCap
	for len(p) > 0 {
		if len(b.tail) < tailCap {
			k := min(tailCap-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		// Ring full: overwrite the oldest bytes.
		k := min(tailCap-b.tailStart, len(p))
		copy(b.tail[b.tailStart:], p[:k])
		b.tailStart = (b.tailStart + k) % tailCap
		b.dropped += int64(k)
		p = p[k:]
	}
	return n, nil
}

func (b *cappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped > 0
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out bytes.Buffer
	out.Write(b.head)
	if b.dropped > 0 {
		fmt.Fprintf(&out, "\n… [%d bytes of output elided] …\n", b.dropped)
	}
	out.Write(b.tail[b.tailStart:])
	out.Write(b.tail[:b.tailStart])
	return out.Bytes()
}
