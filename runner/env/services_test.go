package env

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/internal/testnotes"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

// The test binary doubles as the service (an echo server on $PORT) and as its client (which dials
// $ECHO_HOST:$ECHO_PORT, says hello and wants it back), so that the tests need nothing installed.
func TestMain(m *testing.M) {
	switch os.Getenv("AKIRA_TEST_SERVICE_ROLE") {
	case "echo":
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(3)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(4)
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprint(c, line)
			}()
		}
	case "client":
		c, err := net.DialTimeout("tcp", net.JoinHostPort(os.Getenv("ECHO_HOST"), os.Getenv("ECHO_PORT")), 5*time.Second)
		if err != nil {
			fmt.Println("client:", err)
			os.Exit(1)
		}
		fmt.Fprintln(c, "hello")
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line != "hello\n" {
			fmt.Printf("client: got %q\n", line)
			os.Exit(2)
		}
		fmt.Println("echoed")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type serviceRig struct {
	dir, exe string
	cfg      sandbox.Config
}

func newServiceRig(t *testing.T, mode sandbox.Mode) *serviceRig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &serviceRig{dir: t.TempDir(), exe: exe}
	r.cfg = sandbox.Config{Mode: mode, ReadOnly: []string{filepath.Dir(exe)}, Bridge: exe}
	return r
}

func (r *serviceRig) opts(t *testing.T, hostLoopback bool) ServiceOptions {
	t.Helper()
	data := t.TempDir()
	return ServiceOptions{
		Env:          []string{"PATH=/usr/bin:/bin", "AKIRA_TEST_SERVICE_ROLE=echo"},
		Policy:       func(dir string) *sandbox.Policy { return r.cfg.Policy(sandbox.NetNone, dir, "", dir) },
		DataDir:      func(name string) (string, error) { d := filepath.Join(data, name); return d, os.MkdirAll(d, 0o700) },
		HostLoopback: hostLoopback,
	}
}

// client runs the echo client as a command of the run would: under net, with the services' variables.
func (r *serviceRig) client(t *testing.T, s *Services, net sandbox.Network) proc.Result {
	t.Helper()
	cfg := r.cfg
	cfg.Services = s.Sandbox
	res, err := proc.Run(context.Background(), proc.Cmd{Args: []string{r.exe}, Dir: r.dir, Timeout: 30 * time.Second,
		Env: append([]string{"AKIRA_TEST_SERVICE_ROLE=client"}, s.Env...), Sandbox: cfg.Policy(net, r.dir, "", "")})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func echoSpec(exe string) ServiceSpec {
	return ServiceSpec{Name: "echo", Command: "exec " + exe, Timeout: 30 * time.Second}
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err != nil
}

func TestServicesWithoutSandbox(t *testing.T) {
	r := newServiceRig(t, sandbox.None)
	s, steps, err := StartServices(context.Background(), []ServiceSpec{echoSpec(r.exe)}, r.opts(t, false))
	if err != nil || s == nil {
		t.Fatalf("start: %v, steps %+v", err, steps)
	}
	if len(steps) != 1 || !steps[0].Passed() || !strings.HasPrefix(steps[0].Command, "service echo: ") {
		t.Fatalf("steps = %+v", steps)
	}
	if res := r.client(t, s, sandbox.NetNone); res.ExitCode != 0 {
		t.Fatalf("client: exit %d: %s", res.ExitCode, res.Output)
	}
	addr := "127.0.0.1:" + strings.TrimPrefix(s.Env[1], "ECHO_PORT=")
	s.Stop()
	if !refused(addr) {
		t.Errorf("the service still answers on %s after Stop", addr)
	}
}

func TestServicesInSandbox(t *testing.T) {
	sandboxtest.Require(t)
	for _, hostLoopback := range []bool{false, true} {
		t.Run(fmt.Sprintf("host loopback %v", hostLoopback), func(t *testing.T) {
			r := newServiceRig(t, sandbox.Bubblewrap)
			s, steps, err := StartServices(context.Background(), []ServiceSpec{echoSpec(r.exe)}, r.opts(t, hostLoopback))
			if err != nil || s == nil {
				t.Fatalf("start: %v, steps %+v", err, steps)
			}
			defer s.Stop()
			// A command with a network namespace of its own reaches it through its bridge.
			if res := r.client(t, s, sandbox.NetNone); res.ExitCode != 0 || !strings.Contains(string(res.Output), "echoed") {
				t.Fatalf("client in a sandbox of its own: exit %d: %s", res.ExitCode, res.Output)
			}
			// On the host's loopback only when asked (for commands that share the host's network).
			addr := "127.0.0.1:" + strings.TrimPrefix(s.Env[1], "ECHO_PORT=")
			if got := !refused(addr); got != hostLoopback {
				t.Errorf("reachable on the host's loopback = %v, want %v", got, hostLoopback)
			}
			if hostLoopback {
				if res := r.client(t, s, sandbox.NetAllow); res.ExitCode != 0 {
					t.Fatalf("client sharing the host's network: exit %d: %s", res.ExitCode, res.Output)
				}
			}
		})
	}
}

func TestServicesFail(t *testing.T) {
	tests := []struct {
		name      string
		spec      ServiceSpec
		wantCmd   string
		wantCode  int
		wantLimit string
		wantTail  string
	}{
		{"exits", ServiceSpec{Name: "db", Command: "echo no data directory; exit 3", Timeout: 10 * time.Second},
			"service db: echo no data directory; exit 3", 3, "", "no data directory"},
		{"never listens", ServiceSpec{Name: "db", Command: "echo starting; sleep 30", Timeout: 300 * time.Millisecond},
			"service db: echo starting; sleep 30", -1, "no connection accepted on its port within the timeout of 300ms", "starting"},
		{"init fails", ServiceSpec{Name: "db", Init: []string{"true", "echo cannot init >&2; exit 5"}, Command: "sleep 30", Timeout: 10 * time.Second},
			"service db init: echo cannot init >&2; exit 5", 5, "", "cannot init"},
	}
	modes := []sandbox.Mode{sandbox.None}
	if sandbox.Available("") == nil {
		modes = append(modes, sandbox.Bubblewrap)
	} else {
		testnotes.Skip(t, "sandbox tests (bubblewrap)", "services failing in a sandbox")
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				r := newServiceRig(t, mode)
				ok := echoSpec(r.exe)
				s, steps, err := StartServices(context.Background(), []ServiceSpec{ok, tt.spec}, r.opts(t, false))
				if err != nil {
					t.Fatal(err)
				}
				if s != nil {
					t.Fatal("services returned although one failed")
				}
				if len(steps) != 2 || !steps[0].Passed() {
					t.Fatalf("steps = %+v", steps)
				}
				f := steps[1]
				if f.Command != tt.wantCmd || f.ExitCode != tt.wantCode || f.Limit != tt.wantLimit || !strings.Contains(f.Tail, tt.wantTail) {
					t.Errorf("failed step = %+v\nwant command %q, exit %d, limit %q, tail with %q", f, tt.wantCmd, tt.wantCode, tt.wantLimit, tt.wantTail)
				}
			})
		}
	}
}

// The shipped Redis example (examples/services), with the real server, from a sandbox of its own.
func TestServicesRedisExample(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testnotes.Skip(t, "service examples (redis-server)", "apt install redis-server")
	}
	r := newServiceRig(t, sandbox.Bubblewrap)
	spec := ServiceSpec{Name: "redis", Command: `redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$AKIRA_SERVICE_DIR"`, Timeout: 30 * time.Second}
	s, steps, err := StartServices(context.Background(), []ServiceSpec{spec}, r.opts(t, false))
	if err != nil || s == nil {
		t.Fatalf("start: %v, steps %+v", err, steps)
	}
	defer s.Stop()
	cfg := r.cfg
	cfg.Services = s.Sandbox
	res, err := proc.Run(context.Background(), proc.Cmd{Shell: `redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" set k v && redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" get k`,
		Dir: r.dir, Timeout: 30 * time.Second, Env: append([]string{"PATH=/usr/bin:/bin"}, s.Env...), Sandbox: cfg.Policy(sandbox.NetNone, r.dir, "", "")})
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Output), "v") {
		t.Fatalf("redis-cli: %v, exit %d: %s", err, res.ExitCode, res.Output)
	}
}
