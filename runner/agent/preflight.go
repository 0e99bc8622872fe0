package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/sandbox"
)

// ErrUnusable marks an agent that cannot run at all: every attempt would fail the same way, so
// retrying, reflecting or escalating would only spend attempts before anyone learns the fix.
var ErrUnusable = errors.New("the agent cannot run")

// Checker is an agent that can tell, before its first attempt, a problem no retry fixes. The
// engine asks it once the workspace exists, with the policy the agent's commands will run under.
type Checker interface {
	Check(workspace string, box *sandbox.Policy) error
}

// interpreters run a script named by their first argument that is not an option: the script, not
// the interpreter, is what a newcomer forgets to commit or to show to the sandbox.
var interpreters = []string{"sh", "bash", "dash", "zsh", "python", "python3", "node", "ruby", "perl"}

// Check finds what would make every attempt of e fail before any is made: a program not on PATH,
// a script not committed or committed without its executable bit (the shell's exit 126), a path the
// sandbox hides, and a command line the CLI rejects. A command line that starts with shell syntax
// is not second-guessed. The error wraps ErrUnusable and names the fix.
func (e *Exec) Check(workspace string, box *sandbox.Policy) error {
	words := commandWords(e.Command)
	if len(words) == 0 {
		return nil
	}
	sandboxed := box != nil && box.Mode == sandbox.Bubblewrap
	prog := words[0]
	if strings.ContainsAny(prog, "$`\"'(){}|;&<>*?[]~\\") || slices.Contains(shellBuiltins, prog) {
		return nil
	}
	if err := checkProgram(prog, workspace, box, sandboxed, e.lookPath); err != nil {
		return err
	}
	if slices.Contains(interpreters, filepath.Base(prog)) {
		if script := scriptArg(words[1:]); script != "" {
			if err := checkScript(script, workspace, box, sandboxed); err != nil {
				return err
			}
		}
	}
	return checkFlags(filepath.Base(prog), words[1:])
}

// lookPath finds a program the way the agent's shell will: on the PATH the operator's Env sets,
// else this process's.
func (e *Exec) lookPath(name string) (string, error) {
	path := os.Getenv("PATH")
	for _, kv := range e.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// shellBuiltins start command lines that are the shell's own, not a program to find.
var shellBuiltins = []string{".", ":", "[", "cd", "eval", "export", "for", "if", "set", "source", "test", "true", "false",
	"case", "while", "until", "{", "(", "!", "command", "env", "nice", "timeout", "nohup", "exit", "echo", "printf", "read",
	"return", "shift", "trap", "ulimit", "umask", "unset", "wait", "kill", "type", "alias", "local", "readonly", "let", "times"}

// commandWords are the words of a shell command line, quotes trimmed, leading assignments and
// `exec` passed over.
func commandWords(command string) []string {
	words := strings.Fields(command)
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") || words[0] == "exec") {
		words = words[1:]
	}
	for i, w := range words {
		words[i] = strings.Trim(w, `"'`)
	}
	return words
}

// scriptArg is the first argument of an interpreter that names a file: not an option, and a path
// or a name with an extension (sh -c '...' runs no file).
func scriptArg(args []string) string {
	for _, a := range args {
		if a == "-c" || a == "-e" || a == "-m" {
			return ""
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.ContainsAny(a, "$`(){}|;&<>*?") {
			return ""
		}
		if strings.Contains(a, "/") || filepath.Ext(a) != "" {
			return a
		}
		return ""
	}
	return ""
}

func checkProgram(prog, workspace string, box *sandbox.Policy, sandboxed bool, lookPath func(string) (string, error)) error {
	if !strings.Contains(prog, "/") {
		found, err := lookPath(prog)
		if err != nil {
			fix := "install it, or fix the agent's command"
			if fi, serr := os.Stat(filepath.Join(workspace, prog)); serr == nil && fi.Mode().IsRegular() {
				// The shell looks a bare name up on PATH only, never in the work tree.
				fix = "the repository's " + prog + " is run as ./" + prog
			}
			if hint := config.InstallHint(prog); hint != "" {
				fix = "install " + prog + ": " + hint
			}
			return fmt.Errorf("%w: %s is not installed (not found on PATH): %s", ErrUnusable, prog, fix)
		}
		if sandboxed && !shows(box, found) {
			return hiddenError(found)
		}
		return nil
	}
	if !filepath.IsAbs(prog) {
		return checkCommitted(prog, workspace, true)
	}
	fi, err := os.Stat(prog)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: not found on this machine: fix the agent's command", ErrUnusable, prog)
	case sandboxed && !shows(box, prog):
		return hiddenError(prog)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a file", ErrUnusable, prog)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%w: %s is not executable (the shell would exit 126): run `chmod +x %s`, or start it with `sh %s`",
			ErrUnusable, prog, prog, prog)
	}
	return nil
}

// checkScript checks the script an interpreter runs: it needs no executable bit.
func checkScript(script, workspace string, box *sandbox.Policy, sandboxed bool) error {
	if !filepath.IsAbs(script) {
		return checkCommitted(script, workspace, false)
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("%w: %s: not found on this machine: fix the agent's command", ErrUnusable, script)
	}
	if sandboxed && !shows(box, script) {
		return hiddenError(script)
	}
	return nil
}

// checkCommitted checks a path relative to the work tree, a fresh clone of the repository's
// committed files: what is only on the user's disk, or only executable there, is not in it.
func checkCommitted(rel, workspace string, executable bool) error {
	name := strings.TrimPrefix(filepath.Clean(rel), "./")
	fi, err := os.Stat(filepath.Join(workspace, rel))
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s is not in the repository's committed files (each run works in a fresh clone): "+
			"commit it with `git add %s && git commit`, or give its absolute path", ErrUnusable, rel, name)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a file", ErrUnusable, rel)
	case executable && fi.Mode()&0o111 == 0:
		return fmt.Errorf("%w: %s is committed without its executable bit (the shell would exit 126): "+
			"run `chmod +x %s && git add --chmod=+x %s` and commit, or start it with `sh ./%s`",
			ErrUnusable, rel, name, name, name)
	}
	return nil
}

func hiddenError(path string) error {
	return fmt.Errorf("%w: the sandbox hides %s: show it with `akira run --sandbox-ro %s` "+
		"(sandbox.read_only in the operator's file), or put the script in the repository", ErrUnusable, path, filepath.Dir(path))
}

// shows reports whether the sandbox shows path, and the file a symbolic link there leads to (a CLI
// installed by npm is a link into a lib directory).
func shows(box *sandbox.Policy, path string) bool {
	if !box.Shows(path) {
		return false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		return box.Shows(real)
	}
	return true
}

// checkFlags refuses command lines the CLI itself refuses, which would fail every attempt at once.
func checkFlags(prog string, args []string) error {
	if prog == "claude" {
		print := slices.Contains(args, "-p") || slices.Contains(args, "--print")
		streamJSON := slices.Contains(args, "--output-format=stream-json")
		if i := slices.Index(args, "--output-format"); i >= 0 && i+1 < len(args) && args[i+1] == "stream-json" {
			streamJSON = true
		}
		if print && streamJSON && !slices.Contains(args, "--verbose") {
			return fmt.Errorf("%w: claude refuses -p with --output-format stream-json unless --verbose is given: add --verbose to the agent's command", ErrUnusable)
		}
	}
	return nil
}
