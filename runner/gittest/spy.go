package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Hooks are the names of every hook git runs (githooks(5)), planted by a Spy.
var Hooks = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
	"post-index-change",
}

// Spy stands in for git on PATH, as an attacker with the sandbox off could between two of Akira's
// git commands: while it records, every git process started by name gets its arguments, directory and
// environment written down, with the core.hooksPath git itself resolves for that very command; then
// a hook of every name is planted in the command's git directory, each leaving a line in a log if it
// ever runs, and the real git takes over with the same arguments and environment.
type Spy struct {
	dir  string
	real string
}

// GitCall is one git process the spy saw.
type GitCall struct {
	Args []string
	Dir  string
	Env  []string
	// HooksPath is core.hooksPath as git resolved it for the call ("" when unset).
	HooksPath string
}

// Subcommand is the call's git command: its first argument that is not a global option.
func (c GitCall) Subcommand() string {
	for i := 0; i < len(c.Args); i++ {
		switch a := c.Args[i]; {
		case a == "-c" || a == "-C":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// Getenv is the value of a variable of the call's environment.
func (c GitCall) Getenv(name string) string {
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// NewSpy puts the spy first on PATH for the rest of the test; it records nothing until Record.
func NewSpy(t testing.TB) *Spy {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH")
	}
	s := &Spy{dir: t.TempDir(), real: real}
	bin := filepath.Join(s.dir, "bin")
	if err := os.MkdirAll(filepath.Join(s.dir, "calls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	hook := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> " + shellQuote(filepath.Join(s.dir, "ran")) + "\n"
	if err := os.WriteFile(filepath.Join(s.dir, "hook"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/bash
spy=` + shellQuote(s.dir) + `
real=` + shellQuote(real) + `
if [ -e "$spy/on" ]; then
	call=$(mktemp -d "$spy/calls/$(date +%s%N)-XXXXXX")
	printf '%s\0' "$@" > "$call/args"
	pwd > "$call/dir"
	env -0 > "$call/env"
	# The options before the command choose the repository and configuration: ask git with them.
	globals=()
	args=("$@")
	for ((i = 0; i < ${#args[@]}; i++)); do
		case "${args[i]}" in
		-c|-C) globals+=("${args[i]}" "${args[i+1]}"); i=$((i+1)) ;;
		-*) globals+=("${args[i]}") ;;
		*) break ;;
		esac
	done
	if ! "$real" "${globals[@]}" config --get core.hooksPath > "$call/hookspath" 2>/dev/null; then
		# Not a repository yet (a clone): what the environment and the arguments say.
		(cd / && env -u GIT_DIR -u GIT_WORK_TREE "$real" "${globals[@]}" config --get core.hooksPath > "$call/hookspath" 2>/dev/null)
	fi
	gd=$("$real" "${globals[@]}" rev-parse --absolute-git-dir 2>/dev/null)
	if [ -n "$gd" ]; then
		mkdir -p "$gd/hooks"
		for h in ` + strings.Join(Hooks, " ") + `; do
			cp "$spy/hook" "$gd/hooks/$h"
		done
	fi
fi
exec "$real" "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return s
}

// Record turns recording (and planting) on or off.
func (s *Spy) Record(t testing.TB, on bool) {
	t.Helper()
	flag := filepath.Join(s.dir, "on")
	if !on {
		if err := os.Remove(flag); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Calls are the git processes seen while recording, in the order they started.
func (s *Spy) Calls(t testing.TB) []GitCall {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var calls []GitCall // ReadDir sorts by name: the start time in nanoseconds, then a random tail
	for _, e := range entries {
		d := filepath.Join(s.dir, "calls", e.Name())
		calls = append(calls, GitCall{
			Args:      split0(readSpyFile(t, filepath.Join(d, "args"))),
			Dir:       strings.TrimSpace(readSpyFile(t, filepath.Join(d, "dir"))),
			Env:       split0(readSpyFile(t, filepath.Join(d, "env"))),
			HooksPath: strings.TrimSpace(readSpyFile(t, filepath.Join(d, "hookspath"))),
		})
	}
	return calls
}

// HooksRun are the hooks that ran, as "<name> <arguments>" lines.
func (s *Spy) HooksRun(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, "ran"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func readSpyFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func split0(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
