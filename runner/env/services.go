package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/akira-bot/akira/internal/loopback"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/verify"
)

// ServiceSpec is one service to start for a run (a repository's services: entry).
type ServiceSpec struct {
	Name, Command string
	// Init commands run once, one after the other, before Command.
	Init []string
	// Timeout bounds each init command and the wait for the service to accept connections.
	Timeout time.Duration
}

// ServiceOptions configures StartServices.
type ServiceOptions struct {
	Env []string
	// Policy is the sandbox policy of a service's commands, whose one writable directory (its work
	// tree, and its working directory) is the service's data directory dir: a service lasts the whole
	// run, beside the agent's attempts, and must not be able to change the work tree they are judged
	// on. nil runs the commands as they are.
	Policy func(dir string) *sandbox.Policy
	// DataDir makes the directory a service keeps its data in for the run.
	DataDir func(name string) (string, error)
	// HostLoopback also makes each sandboxed service reachable on the host's loopback, for commands
	// that share the host's network (network: allow).
	HostLoopback bool
	// Stream, when set, also receives the services' output live.
	Stream io.Writer
}

// Services are the services of a run, started by StartServices; Stop ends them.
type Services struct {
	// Env are the variables that tell commands where each service is: NAME_HOST and NAME_PORT.
	Env []string
	// Sandbox are the services as sandbox policies need them (sandbox.Config.Services).
	Sandbox []sandbox.Service

	socketDir string
	procs     []*exec.Cmd
	exited    []chan struct{}
	listeners []net.Listener
	stopOnce  sync.Once
}

var envName = regexp.MustCompile(`[^A-Z0-9_]`)

// ServiceVar is the prefix of a service's variables: redis → REDIS (REDIS_HOST, REDIS_PORT).
func ServiceVar(name string) string { return envName.ReplaceAllString(strings.ToUpper(name), "_") }

// StartServices starts specs in order and waits for each to accept connections. It returns the
// running services, one step per service (its outcome, as setup's steps are), and an error only when
// ctx ended or a service could not be started at all. When a step failed, what started is stopped
// and the returned Services is nil.
func StartServices(ctx context.Context, specs []ServiceSpec, opts ServiceOptions) (*Services, []Step, error) {
	s := &Services{}
	var steps []Step
	sandboxed := false
	if opts.Policy != nil {
		sandboxed = opts.Policy("").Mode == sandbox.Bubblewrap
	}
	if sandboxed {
		// Short, under the system's temporary directory: a socket's path must fit in 108 bytes.
		dir, err := os.MkdirTemp("", "akira-svc-")
		if err != nil {
			return nil, nil, fmt.Errorf("env: services: %w", err)
		}
		s.socketDir = dir
	}
	for _, spec := range specs {
		st, err := s.start(ctx, spec, opts, sandboxed)
		steps = append(steps, st)
		if err != nil || !st.Passed() {
			s.Stop()
			return nil, steps, err
		}
	}
	return s, steps, nil
}

func (s *Services) start(ctx context.Context, spec ServiceSpec, opts ServiceOptions, sandboxed bool) (Step, error) {
	started := time.Now()
	st := Step{Command: "service " + spec.Name + ": " + spec.Command}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	port, err := freePort()
	if err != nil {
		return st, fmt.Errorf("env: service %s: %w", spec.Name, err)
	}
	data, err := opts.DataDir(spec.Name)
	if err != nil {
		return st, fmt.Errorf("env: service %s: %w", spec.Name, err)
	}
	var pol *sandbox.Policy
	if opts.Policy != nil {
		pol = opts.Policy(data)
	}
	env := append(append([]string(nil), opts.Env...), "PORT="+strconv.Itoa(port), "AKIRA_SERVICE_DIR="+data)
	out := &capped{limit: MaxLogBytes}
	var w io.Writer = out
	if opts.Stream != nil {
		w = io.MultiWriter(out, opts.Stream)
	}
	fail := func(code int, limit string) Step {
		st.ExitCode, st.Limit, st.Duration = code, limit, time.Since(started)
		text := out.String()
		if limit != "" {
			text += "\n[akira: " + limit + "]\n"
		}
		st.Tail = verify.Tail(text, verify.DefaultTailBytes)
		return st
	}
	for _, c := range spec.Init {
		fmt.Fprintf(w, "$ %s\n", c)
		pr, err := proc.Run(ctx, proc.Cmd{Shell: c, Dir: data, Env: env, Timeout: timeout, Stream: w, OutputCap: MaxLogBytes, Sandbox: pol})
		if err != nil && !pr.TimedOut {
			return st, fmt.Errorf("env: service %s: %w", spec.Name, err)
		}
		limit := pr.Limit
		if pr.TimedOut {
			limit = fmt.Sprintf("timeout of %s", timeout)
		}
		if pr.ExitCode != 0 || limit != "" {
			st.Command = "service " + spec.Name + " init: " + c
			return fail(pr.ExitCode, limit), nil
		}
	}
	fmt.Fprintf(w, "$ %s\n", spec.Command)
	argv, cmdEnv := []string{"sh", "-c", spec.Command}, env
	socket := ""
	if pol != nil {
		if sandboxed {
			socket = filepath.Join(s.socketDir, spec.Name+".sock")
			pol.Serve = &sandbox.Service{Name: spec.Name, Port: port, Socket: socket}
		}
		if argv, cmdEnv, err = pol.Command(argv, env); err != nil {
			return st, fmt.Errorf("env: service %s: %w", spec.Name, err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = data, cmdEnv, w, w
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	// Its own process group, killed whole by Stop; and killed with Akira should Akira die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return st, fmt.Errorf("env: service %s: %w", spec.Name, err)
	}
	exited := make(chan struct{})
	s.procs, s.exited = append(s.procs, cmd), append(s.exited, exited)
	go func() { _ = cmd.Wait(); close(exited) }()
	ready := func() bool {
		if socket != "" {
			fi, err := os.Stat(socket)
			return err == nil && fi.Mode()&os.ModeSocket != 0
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("env: service %s: %w", spec.Name, ctx.Err())
		case <-exited:
			code := cmd.ProcessState.ExitCode()
			limit := ""
			if pol != nil {
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
				limit = pol.Limits.Explain(code)
			}
			return fail(code, limit), nil
		case <-deadline.C:
			return fail(-1, fmt.Sprintf("no connection accepted on its port within the timeout of %s", timeout)), nil
		case <-tick.C:
		}
	}
	if socket != "" && opts.HostLoopback {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return st, fmt.Errorf("env: service %s: the host's loopback: %w", spec.Name, err)
		}
		s.listeners = append(s.listeners, ln)
		go egress.Pass(ln, "unix", socket)
	}
	v := ServiceVar(spec.Name)
	s.Env = append(s.Env, v+"_HOST=127.0.0.1", v+"_PORT="+strconv.Itoa(port))
	if socket != "" {
		s.Sandbox = append(s.Sandbox, sandbox.Service{Name: spec.Name, Port: port, Socket: socket})
	}
	st.Duration = time.Since(started)
	return st, nil
}

// Stop kills every service (their data is the run's and goes with it) and waits for them to end.
func (s *Services) Stop() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() {
		for _, ln := range s.listeners {
			ln.Close()
		}
		for _, c := range s.procs {
			if c.Process != nil {
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			}
		}
		for _, done := range s.exited {
			<-done
		}
		if s.socketDir != "" {
			_ = os.RemoveAll(s.socketDir)
		}
	})
}

// freePort is a TCP port free on the host's loopback now. In a sandbox the port is the service's own
// namespace's; free on the host too so that it can be bridged there (network: allow).
func freePort() (int, error) {
	port, err := loopback.FreePort()
	if err != nil {
		return 0, errors.New("no free port on the loopback: " + err.Error())
	}
	return port, nil
}
