// Package sandbox confines the commands Akira runs on behalf of a repository — the coding agent and
// the verification commands — which must be treated as hostile: a model with a shell steered by text
// strangers can write, running code from the repository.
//
// With bubblewrap (the default where it runs) a command sees the work tree read-write, the
// repository's git directory read-only at .git, the system's toolchains read-only, a private /tmp and
// HOME, its own PID namespace (so no other process's /proc), and nothing else of the machine: not
// Akira's configuration, secrets or other workspaces. Under network allowlist (the default) the
// command has a network namespace of its own whose only way out is Akira's egress proxy
// (runner/egress), reached through a Unix socket bound into the sandbox and a forwarder that
// listens on the namespace's loopback; under none it has no way out; under allow it shares the
// host's network.
// Every command also runs under resource limits (CPU time, memory, processes, file size) set with
// prlimit, in both modes. Mode none is the operator's explicit opt-out: limits only.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/akira-bot/akira/runner/egress"
)

// Mode says how commands are confined.
type Mode string

const (
	// Bubblewrap runs each command in a bubblewrap sandbox.
	Bubblewrap Mode = "bubblewrap"
	// None runs commands as Akira's own user with only the resource limits: the explicit opt-out.
	None Mode = "none"
)

// Network says whether a sandboxed command may reach the network.
type Network string

const (
	// NetNone gives the command a network namespace of its own with only loopback.
	NetNone Network = "none"
	// NetAllowlist gives the command a network namespace of its own whose only route out is the
	// egress proxy, which lets through the destinations on the allowlist. Without a proxy (no
	// Policy.Egress) it is none.
	NetAllowlist Network = "allowlist"
	// NetAllow shares the host's network: loopback services, the host's other addresses, the cloud
	// metadata address. Only when the operator says so, with a warning.
	NetAllow Network = "allow"
)

// AllowWarning is logged when a run starts with network allow, and on every run.
const AllowWarning = "network: allow: sandboxed commands share this host's network (its loopback services, its other addresses, the cloud metadata address); use network: allowlist to fence it"

// Egress is a command's route through the egress proxy (see runner/egress).
type Egress struct {
	// Socket is the host path of the session's Unix socket; with bubblewrap it is bound into the
	// sandbox and Forwarder bridges the sandbox's loopback to it. Empty for a session that listens
	// on the host's loopback (commands that share the host's network).
	Socket string
	// Forwarder is the host path of a binary that runs egress.ForwarderArgv (akira itself).
	Forwarder string
	// Env are the variables that send clients through the proxy (HTTP_PROXY, ...) and hand the
	// agent its placeholder key and model base URL; they replace the same names in the environment.
	Env []string
	// Strip names variables that must never reach the command (the real model key's).
	Strip []string
}

// Limits bound one command. Zero means no limit of that kind.
type Limits struct {
	CPU time.Duration
	// Memory caps the data segment (heap and other private writable memory), RLIMIT_DATA: unlike
	// the address space, it does not count what runtimes merely reserve.
	Memory int64
	// Processes caps the processes of Akira's user (RLIMIT_NPROC). The kernel counts it per host
	// user and exempts root, so it holds only when workers run as a dedicated non-root user.
	Processes int
	// FileSize caps any one file the command writes (RLIMIT_FSIZE).
	FileSize int64
}

// DefaultSystemPaths are what a sandboxed command sees of the system, read-only, when present.
var DefaultSystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// systemFiles are the parts of /etc programs need; the rest of /etc (keys, other services' settings)
// stays out of sight.
var systemFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf",
	"/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki", "/etc/ld.so.cache", "/etc/ld.so.conf",
	"/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime", "/etc/mime.types", "/etc/protocols",
	"/etc/services", "/etc/gai.conf", "/etc/os-release", "/etc/debian_version", "/etc/profile", "/etc/bash.bashrc",
	"/etc/inputrc", "/etc/java-17-openjdk", "/etc/python3", "/etc/npmrc",
}

// Home is the HOME of a sandboxed command: private, empty, gone when the command ends.
const Home = "/home/akira"

// pathVars name host directories that mean nothing inside the sandbox unless they are visible there;
// left set, they would send toolchains looking for caches they cannot read.
var pathVars = []string{"TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "PYENV_ROOT", "VIRTUAL_ENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"}

// Policy is how one command runs.
type Policy struct {
	Mode    Mode
	Network Network
	// WorkTree is the one directory the command may change, at the same path inside.
	WorkTree string
	// GitDir, when set, is shown read-only at WorkTree/.git so that the agent can read history.
	GitDir string
	// Home, when set, is a directory of the host shown read-write as HOME, so that build caches
	// last from one command to the next; empty means an empty HOME per command. The agent's and the
	// verification's are different directories: what the agent leaves in a HOME (a ~/.config/go/env
	// that makes go test run nothing) must never reach the commands that check its work.
	Home string
	// ReadOnly are more paths visible read-only at the same place: toolchains outside the system
	// directories, an attempt's prompt file.
	ReadOnly []string
	// ReadWrite are paths visible read-write at the same place (the dependency cache of a setup); a
	// path in both lists is read-write.
	ReadWrite []string
	Limits    Limits
	// Bwrap is the bubblewrap binary; empty means "bwrap" on PATH.
	Bwrap string
	// Egress is the route out under NetAllowlist (and the model route under NetAllow and mode none);
	// nil leaves an allowlist command without network.
	Egress *Egress
	// Services are the run's services the command reaches on its own loopback, each at
	// 127.0.0.1:Port as it is in the service's sandbox. A command that shares the host's network
	// reaches them on the host's loopback instead (see Service).
	Services []Service
	// Serve, set for a service's own command, is the service it runs: the bridge that makes its port
	// reachable through its socket.
	Serve *Service
	// Bridge is the host path of the binary that runs the bridges of Services and Serve (akira
	// itself, see egress.BridgeArgv).
	Bridge string
	// UID, when not zero, is the user (and group) id the command has inside its user namespace, mapped
	// to the worker's own outside: what the worker's user owns looks owned by UID. A service runs so,
	// since some (PostgreSQL) refuse to run as root, and a worker may well be root in a container.
	UID int
	// Withhold are the secrets (the model keys) the command never gets, whichever list of names
	// its environment was built from; the egress variables (an agent's placeholder key) are set
	// after it.
	Withhold Withheld
}

// Service is one of a run's services as its sandboxes see it: it listens on 127.0.0.1:Port in a
// network namespace of its own, and a bridge in that namespace passes the connections of the Unix
// socket Socket (a host path) to it; the commands that use it get a bridge of their own from the
// same port on their loopback to that socket. Without bubblewrap the service listens on the host's
// loopback and there is no socket.
type Service struct {
	Name   string
	Port   int
	Socket string
}

// serviceDir is where services' sockets are seen inside a sandbox.
const serviceDir = "/run/akira/svc"

// ParseMode reads a mode from configuration.
func ParseMode(s string) (Mode, error) {
	switch Mode(strings.TrimSpace(s)) {
	case Bubblewrap:
		return Bubblewrap, nil
	case None:
		return None, nil
	}
	return "", fmt.Errorf("sandbox: %q is not a sandbox mode (want bubblewrap or none)", s)
}

// ParseNetwork reads a network setting from configuration; empty means def.
func ParseNetwork(s string, def Network) (Network, error) {
	switch Network(strings.TrimSpace(s)) {
	case "":
		return def, nil
	case NetNone:
		return NetNone, nil
	case NetAllowlist:
		return NetAllowlist, nil
	case NetAllow:
		return NetAllow, nil
	}
	return "", fmt.Errorf("sandbox: network %q: want allowlist, none or allow", s)
}

// With returns a copy of p that also shows paths read-only.
func (p Policy) With(readOnly ...string) Policy {
	p.ReadOnly = append(append([]string(nil), p.ReadOnly...), readOnly...)
	return p
}

// Command returns the command line that runs argv under the policy, and the environment with the
// variables that name host paths removed when the command cannot see them.
func (p Policy) Command(argv []string, env []string) ([]string, []string, error) {
	if len(argv) == 0 {
		return nil, nil, errors.New("sandbox: empty command")
	}
	limited := append(p.Limits.prlimit(), argv...)
	env = p.egressEnv(p.Withhold.filter(env))
	switch p.Mode {
	case None, "":
		return limited, env, nil
	case Bubblewrap:
	default:
		return nil, nil, fmt.Errorf("sandbox: unknown mode %q", p.Mode)
	}
	if p.WorkTree == "" || !filepath.IsAbs(p.WorkTree) {
		return nil, nil, fmt.Errorf("sandbox: the work tree must be an absolute path, got %q", p.WorkTree)
	}
	bwrap := p.Bwrap
	if bwrap == "" {
		bwrap = "bwrap"
	}
	args := []string{bwrap,
		"--unshare-all", "--die-with-parent", "--new-session",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/home", "--dir", Home,
		"--tmpfs", "/run", "--tmpfs", "/var",
	}
	if p.UID > 0 {
		args = append(args, "--unshare-user", "--uid", strconv.Itoa(p.UID), "--gid", strconv.Itoa(p.UID))
	}
	if p.Network == NetAllow {
		args = append(args, "--share-net")
	}
	var links []egress.Link
	bridge := ""
	if p.Network == NetAllowlist && p.Egress != nil && p.Egress.Socket != "" {
		if !filepath.IsAbs(p.Egress.Forwarder) || !filepath.IsAbs(p.Egress.Socket) {
			return nil, nil, fmt.Errorf("sandbox: the egress forwarder %q and socket %q must be absolute paths", p.Egress.Forwarder, p.Egress.Socket)
		}
		bridge = p.Egress.Forwarder
		args = append(args, "--bind", p.Egress.Socket, egress.SandboxSocket)
		links = append(links, egress.Link{Socket: egress.SandboxSocket, Addr: egress.SandboxAddr})
	}
	if p.Network != NetAllow {
		// A command with the host's network reaches the services on the host's loopback.
		for _, svc := range p.Services {
			if !filepath.IsAbs(svc.Socket) {
				return nil, nil, fmt.Errorf("sandbox: service %s: socket %q is not an absolute path", svc.Name, svc.Socket)
			}
			inside := filepath.Join(serviceDir, svc.Name+".sock")
			args = append(args, "--bind", svc.Socket, inside)
			links = append(links, egress.Link{Socket: inside, Addr: serviceAddr(svc.Port)})
		}
	}
	if p.Serve != nil {
		if !filepath.IsAbs(p.Serve.Socket) {
			return nil, nil, fmt.Errorf("sandbox: service %s: socket %q is not an absolute path", p.Serve.Name, p.Serve.Socket)
		}
		// The directory, not the socket: the bridge creates the socket once the service answers.
		args = append(args, "--bind", filepath.Dir(p.Serve.Socket), serviceDir)
	}
	if (len(links) > 0 || p.Serve != nil) && bridge == "" {
		bridge = p.Bridge
	}
	if bridge != "" {
		args = append(args, "--dir", "/run/akira")
		if !filepath.IsAbs(bridge) {
			return nil, nil, fmt.Errorf("sandbox: the bridge binary %q must be an absolute path", bridge)
		}
		args = append(args, "--ro-bind", bridge, forwarderPath)
	}
	for _, d := range DefaultSystemPaths {
		args = append(args, "--ro-bind-try", d, d)
	}
	for _, f := range systemFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	visible := []string{p.WorkTree, "/tmp", Home}
	visible = append(visible, DefaultSystemPaths...)
	for _, d := range p.ReadOnly {
		if !filepath.IsAbs(d) {
			return nil, nil, fmt.Errorf("sandbox: read-only path %q is not absolute", d)
		}
		args = append(args, "--ro-bind-try", d, d)
		visible = append(visible, d)
	}
	for _, d := range p.ReadWrite {
		if !filepath.IsAbs(d) {
			return nil, nil, fmt.Errorf("sandbox: read-write path %q is not absolute", d)
		}
		args = append(args, "--bind", d, d)
		visible = append(visible, d)
	}
	if p.Home != "" {
		args = append(args, "--bind", p.Home, Home)
	}
	// The work tree last, so that a read-only path above it cannot cover it.
	args = append(args, "--bind", p.WorkTree, p.WorkTree)
	if p.GitDir != "" {
		args = append(args, "--ro-bind", p.GitDir, filepath.Join(p.WorkTree, ".git"))
	}
	args = append(args, "--chdir", p.WorkTree, "--setenv", "HOME", Home, "--setenv", "TMPDIR", "/tmp",
		"--setenv", "AKIRA_SANDBOX", string(Bubblewrap))
	var kept []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "TMPDIR" {
			continue
		}
		if isPathVar(name) && !under(value, visible) {
			continue
		}
		kept = append(kept, kv)
	}
	args = append(args, "--")
	if (len(links) > 0 || p.Serve != nil) && bridge == "" {
		return nil, nil, errors.New("sandbox: services need the bridge binary (Policy.Bridge)")
	}
	if len(links) > 0 {
		limited = egress.BridgeArgv(forwarderPath, links, limited)
	}
	if p.Serve != nil {
		limited = egress.ServeArgv(forwarderPath, filepath.Join(serviceDir, filepath.Base(p.Serve.Socket)), serviceAddr(p.Serve.Port), limited)
	}
	return append(args, limited...), kept, nil
}

func serviceAddr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// forwarderPath is where the forwarder binary is seen inside the sandbox.
const forwarderPath = "/run/akira/egress-forward"

// egressEnv puts the egress variables in place of the same names, and drops the stripped ones.
func (p Policy) egressEnv(env []string) []string {
	if p.Egress == nil || p.Network == NetNone {
		return env
	}
	drop := append([]string(nil), p.Egress.Strip...)
	for _, kv := range p.Egress.Env {
		name, _, _ := strings.Cut(kv, "=")
		drop = append(drop, name)
	}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			out = append(out, kv)
		}
	}
	return append(out, p.Egress.Env...)
}

func isPathVar(name string) bool {
	for _, v := range pathVars {
		if v == name {
			return true
		}
	}
	return false
}

func under(p string, dirs []string) bool {
	p = filepath.Clean(p)
	for _, d := range dirs {
		d = filepath.Clean(d)
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// prlimit is the command prefix that applies the limits; nothing when there are none.
func (l Limits) prlimit() []string {
	var args []string
	if l.CPU > 0 {
		secs := int64((l.CPU + time.Second - 1) / time.Second)
		// SIGXCPU at the soft limit says why; the hard limit a little later kills what ignores it.
		args = append(args, fmt.Sprintf("--cpu=%d:%d", secs, secs+5))
	}
	if l.Memory > 0 {
		args = append(args, "--data="+strconv.FormatInt(l.Memory, 10))
	}
	if l.Processes > 0 {
		args = append(args, "--nproc="+strconv.Itoa(l.Processes))
	}
	if l.FileSize > 0 {
		args = append(args, "--fsize="+strconv.FormatInt(l.FileSize, 10))
	}
	if len(args) == 0 {
		return nil
	}
	return append(append([]string{"prlimit"}, args...), "--")
}

// Explain says, for a command that ended with exitCode, which limit ended it, or "" when none did.
// A shell reports a signalled child as 128+signal.
func (l Limits) Explain(exitCode int) string {
	switch syscall.Signal(exitCode - 128) {
	case syscall.SIGXCPU:
		if l.CPU > 0 {
			return fmt.Sprintf("CPU time limit of %s exceeded", l.CPU)
		}
	case syscall.SIGXFSZ:
		if l.FileSize > 0 {
			return fmt.Sprintf("file size limit of %s exceeded", Bytes(l.FileSize))
		}
	}
	return ""
}

// Bytes formats a size the way the configuration writes it.
func Bytes(n int64) string {
	switch {
	case n <= 0:
		return "none"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Available reports why bubblewrap cannot run here, or nil when it can: the binary is on PATH and the
// kernel lets it create the namespaces it needs.
func Available(bwrap string) error {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return fmt.Errorf("sandbox: bubblewrap is not installed (%s not on PATH): install it (Debian/Ubuntu: apt-get install bubblewrap) or set sandbox: none in the operator config", bwrap)
	}
	if _, err := exec.LookPath("prlimit"); err != nil {
		return errors.New("sandbox: prlimit (util-linux) is not installed")
	}
	out, err := exec.Command(path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("sandbox: bubblewrap cannot create its namespaces here (%v: %s); allow unprivileged user namespaces or set sandbox: none", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// DirSize is the disk space the files under dir take (symlinks are not followed), for the
// workspace size limit, checked after each attempt.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total, err
}

// Config is the operator's choice for every command of a run; Policy turns it into the policy of one
// kind of command in one workspace.
type Config struct {
	Mode Mode
	// VerifyNetwork is what verification commands may reach.
	VerifyNetwork Network
	ReadOnly      []string
	// ReadWrite are paths every command of the run may change (a dependency cache the repository
	// asked to keep writable).
	ReadWrite []string
	Limits    Limits
	// Disk caps the work tree's size after an attempt; 0 means no cap.
	Disk int64
	// Egress is the worker's egress proxy, the route out of commands under network allowlist (and
	// the holder of the agent's model key); nil leaves such commands without network.
	Egress *egress.Proxy
	// Allow is what the proxy lets through for every run (the operator's allowlist); Ceiling is the
	// most a repository's network.allow may add to it.
	Allow, Ceiling egress.Allowlist
	// Services and Bridge are what Policy gives every command of the run (see Policy.Services).
	Services []Service
	Bridge   string
	// Withhold are the secrets no command of the run gets: the model keys (see Policy.Withhold).
	Withhold Withheld
}

// Shows reports whether a sandboxed command could read path: it lies under the system directories,
// the operator's read-only paths or one of extra (the workspaces).
func (c Config) Shows(path string, extra ...string) bool {
	if c.Mode != Bubblewrap {
		return true
	}
	dirs := append(append(append([]string{}, DefaultSystemPaths...), c.ReadOnly...), extra...)
	return under(path, dirs)
}

// Policy is the policy of commands that may reach net, in workTree, with home as HOME ("" for an
// empty one each time).
func (c Config) Policy(net Network, workTree, gitDir, home string) *Policy {
	return &Policy{Mode: c.Mode, Network: net, WorkTree: workTree, GitDir: gitDir, Home: home,
		ReadOnly: append([]string(nil), c.ReadOnly...), ReadWrite: append([]string(nil), c.ReadWrite...), Limits: c.Limits,
		Services: c.Services, Bridge: c.Bridge, Withhold: c.Withhold}
}

// Shows reports whether a path of the host is visible at the same place to a command run under p:
// without a sandbox everything is; with bubblewrap only the work tree, the system directories and
// files, and the read-only paths are (/tmp and HOME inside are private, not the host's).
func (p Policy) Shows(path string) bool {
	if p.Mode != Bubblewrap {
		return true
	}
	dirs := append(append(append(append([]string{p.WorkTree}, DefaultSystemPaths...), systemFiles...), p.ReadOnly...), p.ReadWrite...)
	return under(path, dirs)
}
