package sandbox_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

func run(t *testing.T, p *sandbox.Policy, shell string) proc.Result {
	t.Helper()
	res, err := proc.Run(context.Background(), proc.Cmd{Shell: shell, Dir: p.WorkTree, Env: proc.Environ(nil), Sandbox: p, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", shell, err)
	}
	return res
}

// TestLimits: each limit ends a command that exceeds it, with a reason that names the limit, in both
// modes.
func TestLimits(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.Bubblewrap, sandbox.None} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == sandbox.Bubblewrap {
				sandboxtest.Require(t)
			}
			p := &sandbox.Policy{Mode: mode, WorkTree: t.TempDir(), Limits: sandbox.Limits{CPU: time.Second, FileSize: 1 << 20, Memory: 256 << 20}}
			if res := run(t, p, "while :; do :; done"); res.ExitCode == 0 || !strings.Contains(res.Limit, "CPU time limit of 1s") {
				t.Errorf("busy loop: exit %d, limit %q; want the CPU limit named", res.ExitCode, res.Limit)
			}
			if res := run(t, p, "head -c 4194304 /dev/zero > big"); res.ExitCode == 0 || !strings.Contains(res.Limit, "file size limit of 1MiB") {
				t.Errorf("4 MiB file: exit %d, limit %q; want the file size limit named", res.ExitCode, res.Limit)
			}
			if _, err := exec.LookPath("python3"); err == nil {
				if res := run(t, p, "python3 -c 'x = bytearray(600 << 20)'"); res.ExitCode == 0 || !strings.Contains(string(res.Output), "MemoryError") {
					t.Errorf("600 MiB under a 256 MiB limit: exit %d: %s", res.ExitCode, res.Output)
				}
			}
			if res := run(t, p, "head -c 1000 /dev/zero > small && echo fine"); res.ExitCode != 0 || res.Limit != "" {
				t.Errorf("a command within the limits: exit %d, limit %q: %s", res.ExitCode, res.Limit, res.Output)
			}
		})
	}
}

// TestBubblewrapConfines: what a sandboxed command can and cannot see and change.
func TestBubblewrapConfines(t *testing.T) {
	sandboxtest.Require(t)
	root := t.TempDir()
	work, gitDir, home, hidden := filepath.Join(root, "repo"), filepath.Join(root, "git"), filepath.Join(root, "home"), filepath.Join(root, "hidden")
	for _, d := range []string{work, gitDir, home, hidden} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "secret"), []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &sandbox.Policy{Mode: sandbox.Bubblewrap, Network: sandbox.NetNone, WorkTree: work, GitDir: gitDir, Home: home}
	tests := []struct {
		name, shell string
		ok          bool
	}{
		{"writes the work tree", "echo x > made && test -f made", true},
		{"reads the git directory at .git", "grep -q core .git/config", true},
		{"cannot change .git", "echo x >> .git/config", false},
		{"cannot plant a hook", "mkdir -p .git/hooks && echo x > .git/hooks/pre-push", false},
		{"cannot see beside the work tree", "cat " + filepath.Join(hidden, "secret"), false},
		{"has its own HOME", `test "$HOME" = /home/akira && echo x > "$HOME/cache"`, true},
		{"sees no other process", `test "$(ls -d /proc/[0-9]* | wc -l)" -le 8`, true},
		{"cannot read /etc/shadow", "cat /etc/shadow", false},
		{"has no network", "getent hosts example.com || exec 3<>/dev/tcp/1.1.1.1/53", false},
		{"has tools", "git --version && sh -c true", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, p, tt.shell)
			if (res.ExitCode == 0) != tt.ok {
				t.Errorf("%s: exit %d, want success %v: %s", tt.shell, res.ExitCode, tt.ok, res.Output)
			}
		})
	}
	// /tmp inside is private: a write there lands in the sandbox's own tmpfs, never on the host.
	run(t, p, "echo x > "+filepath.Join(root, "escape")+"; echo x > /tmp/escape")
	if _, err := os.Stat(filepath.Join(root, "escape")); err == nil {
		t.Error("a file appeared outside the work tree")
	}
	if _, err := os.Stat(filepath.Join(home, "cache")); err != nil {
		t.Errorf("HOME is not the directory the policy named: %v", err)
	}
}

func TestCommand(t *testing.T) {
	p := sandbox.Policy{Mode: sandbox.None, Limits: sandbox.Limits{CPU: 90 * time.Second, Memory: 1 << 30, Processes: 100, FileSize: 1 << 20}}
	argv, env, err := p.Command([]string{"go", "test"}, []string{"A=1"})
	want := []string{"prlimit", "--cpu=90:95", "--data=1073741824", "--nproc=100", "--fsize=1048576", "--", "go", "test"}
	if err != nil || !slices.Equal(argv, want) || !slices.Equal(env, []string{"A=1"}) {
		t.Errorf("none: %q %q %v; want %q", argv, env, err, want)
	}
	if argv, _, _ := (sandbox.Policy{Mode: sandbox.None}).Command([]string{"true"}, nil); !slices.Equal(argv, []string{"true"}) {
		t.Errorf("no limits: %q", argv)
	}

	b := sandbox.Policy{Mode: sandbox.Bubblewrap, WorkTree: "/w/repo", Network: sandbox.NetAllow, ReadOnly: []string{"/opt/tool"}}
	argv, env, err = b.Command([]string{"sh", "-c", "x"}, []string{"HOME=/root", "GOCACHE=/root/.cache/go", "GOPATH=/opt/tool/go", "PATH=/usr/bin"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	for _, s := range []string{"--unshare-all", "--share-net", "--die-with-parent", "--ro-bind-try /opt/tool /opt/tool", "--bind /w/repo /w/repo", "--chdir /w/repo", "-- sh -c x"} {
		if !strings.Contains(line, s) {
			t.Errorf("bwrap command lacks %q: %s", s, line)
		}
	}
	if want := []string{"GOPATH=/opt/tool/go", "PATH=/usr/bin"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q (HOME replaced, host-only paths dropped)", env, want)
	}
	if _, _, err := (sandbox.Policy{Mode: sandbox.Bubblewrap, WorkTree: "relative"}).Command([]string{"x"}, nil); err == nil {
		t.Error("a relative work tree was accepted")
	}
	if _, _, err := (sandbox.Policy{Mode: "jail"}).Command([]string{"x"}, nil); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// TestUID: a policy with a UID runs its command as that user inside, and what the worker's user
// owns (the work tree) is that user's there, writable.
func TestUID(t *testing.T) {
	sandboxtest.Require(t)
	dir := t.TempDir()
	p := &sandbox.Policy{Mode: sandbox.Bubblewrap, Network: sandbox.NetNone, WorkTree: dir, UID: 1000}
	res := run(t, p, `test "$(id -u):$(id -g)" = 1000:1000 && test "$(stat -c %u .)" = 1000 && echo ok > made`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Output)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Error(err)
	}
	p.UID = 0
	if res := run(t, p, `test "$(id -u)" = 1000`); res.ExitCode == 0 && os.Getuid() != 1000 {
		t.Error("without a UID the command still ran as 1000")
	}
}

func TestParse(t *testing.T) {
	if m, err := sandbox.ParseMode("bubblewrap"); err != nil || m != sandbox.Bubblewrap {
		t.Errorf("ParseMode(bubblewrap) = %q, %v", m, err)
	}
	if _, err := sandbox.ParseMode("docker"); err == nil || !strings.Contains(err.Error(), "bubblewrap or none") {
		t.Errorf("ParseMode(docker) = %v", err)
	}
	if n, err := sandbox.ParseNetwork("", sandbox.NetNone); err != nil || n != sandbox.NetNone {
		t.Errorf("ParseNetwork default = %q, %v", n, err)
	}
	if _, err := sandbox.ParseNetwork("some", sandbox.NetNone); err == nil {
		t.Error("ParseNetwork(some) accepted")
	}
}

func TestCommandBridgesServices(t *testing.T) {
	svc := []sandbox.Service{{Name: "redis", Port: 40001, Socket: "/s/redis.sock"}, {Name: "pg", Port: 40002, Socket: "/s/pg.sock"}}
	egressRoute := &sandbox.Egress{Socket: "/e/egress.sock", Forwarder: "/bin/akira"}
	tests := []struct {
		name     string
		policy   sandbox.Policy
		want     []string
		wantNot  []string
		wantErrs string
	}{
		{"own network: one bridge for the egress route and each service",
			sandbox.Policy{Network: sandbox.NetAllowlist, Egress: egressRoute, Services: svc, Bridge: "/bin/akira"},
			[]string{"--ro-bind /bin/akira /run/akira/egress-forward", "--bind /s/redis.sock /run/akira/svc/redis.sock",
				"-- /run/akira/egress-forward __akira-egress-forward /run/akira/egress.sock 127.0.0.1:3128 /run/akira/svc/redis.sock 127.0.0.1:40001 /run/akira/svc/pg.sock 127.0.0.1:40002 -- sh -c x"},
			nil, ""},
		{"network none: the services only",
			sandbox.Policy{Network: sandbox.NetNone, Services: svc[:1], Bridge: "/bin/akira"},
			[]string{"-- /run/akira/egress-forward __akira-egress-forward /run/akira/svc/redis.sock 127.0.0.1:40001 -- sh -c x"},
			[]string{"egress.sock"}, ""},
		{"host network: reached on the host's loopback, no bridge",
			sandbox.Policy{Network: sandbox.NetAllow, Services: svc, Bridge: "/bin/akira"},
			[]string{"--share-net", "-- sh -c x"}, []string{"__akira-egress-forward", "redis.sock"}, ""},
		{"the service's own command",
			sandbox.Policy{Network: sandbox.NetNone, Serve: &svc[0], Bridge: "/bin/akira"},
			[]string{"--bind /s /run/akira/svc", "-- /run/akira/egress-forward __akira-service-serve /run/akira/svc/redis.sock 127.0.0.1:40001 -- sh -c x"},
			nil, ""},
		{"no bridge binary", sandbox.Policy{Network: sandbox.NetNone, Services: svc}, nil, nil, "bridge binary"},
		{"relative socket", sandbox.Policy{Network: sandbox.NetNone, Services: []sandbox.Service{{Name: "x", Port: 1, Socket: "x.sock"}}, Bridge: "/bin/akira"},
			nil, nil, "not an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			p.Mode, p.WorkTree = sandbox.Bubblewrap, "/w/repo"
			argv, _, err := p.Command([]string{"sh", "-c", "x"}, nil)
			if tt.wantErrs != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrs) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErrs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Join(argv, " ")
			for _, s := range tt.want {
				if !strings.Contains(line, s) {
					t.Errorf("command lacks %q:\n%s", s, line)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(line, s) {
					t.Errorf("command has %q:\n%s", s, line)
				}
			}
		})
	}
}

// TestNetworkNamespace: under allowlist (with or without the egress route) and none, bubblewrap
// gives the command a network namespace of its own, so the host's loopback services (Redis, the
// admin port) are out of reach and the only way out is the proxy's forwarder; only allow shares the
// host's network, which is what proves the probe would notice.
func TestNetworkNamespace(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reached := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached <- struct{}{}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := egress.New(egress.Config{Dir: t.TempDir()}).Open(egress.SessionConfig{Allow: egress.MustAllowlist("example.com")})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	route := &sandbox.Egress{Socket: sess.Socket(), Forwarder: exe, Env: sess.Env()}

	probe := `readlink /proc/self/ns/net
if bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `' 2>/dev/null; then echo HOST-REACHED; else echo HOST-UNREACHABLE; fi
if bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(egress.SandboxPort) + `' 2>/dev/null; then echo PROXY-REACHED; else echo PROXY-UNREACHABLE; fi`
	tests := []struct {
		name    string
		network sandbox.Network
		egress  *sandbox.Egress
		ownNS   bool
		proxy   bool
	}{
		{"allowlist with the egress route", sandbox.NetAllowlist, route, true, true},
		{"allowlist without a proxy", sandbox.NetAllowlist, nil, true, false},
		{"none", sandbox.NetNone, route, true, false},
		{"allow shares the host's", sandbox.NetAllow, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for len(reached) > 0 {
				<-reached
			}
			p := &sandbox.Policy{Mode: sandbox.Bubblewrap, Network: tt.network, WorkTree: t.TempDir(), Egress: tt.egress}
			res := run(t, p, probe)
			out := string(res.Output)
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, out)
			}
			ns, _, _ := strings.Cut(out, "\n")
			if !strings.HasPrefix(ns, "net:[") {
				t.Fatalf("no network namespace read: %q", out)
			}
			if own := ns != hostNS; own != tt.ownNS {
				t.Errorf("namespace %s, the host's %s: own namespace %v, want %v", ns, hostNS, own, tt.ownNS)
			}
			wantHost := "HOST-UNREACHABLE"
			if !tt.ownNS {
				wantHost = "HOST-REACHED"
			}
			if !strings.Contains(out, wantHost+"\n") {
				t.Errorf("a service on the host's loopback: want %s, got:\n%s", wantHost, out)
			}
			if tt.ownNS && len(reached) > 0 {
				t.Errorf("the host's loopback service was reached from network %s", tt.network)
			}
			if tt.proxy && !strings.Contains(out, "PROXY-REACHED\n") {
				t.Errorf("the egress forwarder is not on 127.0.0.1:%d:\n%s", egress.SandboxPort, out)
			}
			if tt.ownNS && !tt.proxy && strings.Contains(out, "PROXY-REACHED\n") {
				t.Errorf("network %s without a route out has something on 127.0.0.1:%d:\n%s", tt.network, egress.SandboxPort, out)
			}
		})
	}
}
