package config

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

// shellWords are words a command line may start with that are the shell's own, not a program to
// find on PATH.
var shellWords = []string{".", ":", "[", "cd", "eval", "export", "for", "if", "set", "source", "test", "true", "false", "case", "while", "until", "{", "(", "!"}

// ProgramOf is the program an exec agent's shell command line starts, or "" when it cannot be told
// without running a shell (it starts with shell syntax or a builtin). Leading variable assignments
// and `exec` are passed over.
func ProgramOf(command string) string {
	words := strings.Fields(command)
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") || words[0] == "exec") {
		words = words[1:]
	}
	if len(words) == 0 || slices.Contains(shellWords, words[0]) || strings.ContainsAny(words[0], "$`\"'(){}|;&<>*?[]~\\") {
		return ""
	}
	return words[0]
}

// MissingPrograms names the exec agent profiles whose program is not on this machine, with the
// program: a worker that would fail every task of those profiles says so when it starts.
func (o *Operator) MissingPrograms(lookPath func(string) (string, error)) []string {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var missing []string
	for name, p := range o.Agents {
		if p.Kind != "exec" {
			continue
		}
		if prog := ProgramOf(p.Command); prog != "" {
			if _, err := lookPath(prog); err != nil {
				line := fmt.Sprintf("agent %q: %s is not installed (not found on PATH)", name, prog)
				if hint := InstallHint(prog); hint != "" {
					line += ": install " + prog + ": " + hint
				}
				missing = append(missing, line)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// installHints say how to install the coding-agent CLIs the shipped profiles run (examples/akira.yaml;
// deploy/Dockerfile installs the same packages).
var installHints = map[string]string{
	"claude": "npm i -g @anthropic-ai/claude-code",
	"codex":  "npm i -g @openai/codex",
}

// InstallHint is the command that installs a coding-agent CLI Akira ships a profile for, "" for
// another program.
func InstallHint(program string) string { return installHints[program] }
