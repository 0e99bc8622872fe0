package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/sandbox"
)

// writeScript writes an agent script that creates done.txt in the work tree, in a directory of its
// own outside the work tree, and returns its path.
func writeScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho done > done.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExecScriptHiddenBySandbox: an agent script kept outside the repository cannot run in the
// bubblewrap sandbox; the failure says the sandbox hides it and names the fix, whether the script
// is the command (exit 127) or the shell's argument (exit 2), and the named fix works.
func TestExecScriptHiddenBySandbox(t *testing.T) {
	sandboxtest.Require(t)
	script := writeScript(t)
	for name, command := range map[string]string{"the command": script, "the shell's argument": "sh " + script, "quoted, with arguments": `"` + script + `" --fast`} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			box := sandbox.Config{Mode: sandbox.Bubblewrap}.Policy(sandbox.NetNone, ws, "", "")
			res, err := (&Exec{Command: command}).Run(context.Background(), Request{Workspace: ws, TaskID: "1", Attempt: 1, Prompt: "x", Sandbox: box})
			if !errors.Is(err, ErrAgentFailed) {
				t.Fatalf("err = %v, want ErrAgentFailed; output %q", err, res.Output)
			}
			for _, want := range []string{"the sandbox hides " + script, "show it with `akira run --sandbox-ro " + filepath.Dir(script) + "`", "sandbox.read_only", "put the script in the repository"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}

			shown := box.With(filepath.Dir(script))
			if res, err := (&Exec{Command: command}).Run(context.Background(), Request{Workspace: ws, TaskID: "1", Attempt: 1, Prompt: "x", Sandbox: &shown}); err != nil {
				t.Fatalf("with --sandbox-ro %s: %v\n%s", filepath.Dir(script), err, res.Output)
			}
			if got := readFile(t, filepath.Join(ws, "done.txt")); got != "done\n" {
				t.Errorf("done.txt = %q", got)
			}
		})
	}
}

// TestExecCommandNotFoundInSandbox: a program missing inside the sandbox (installed under a directory
// it does not show, or not at all) exits 127, and the error names the program and the fix.
func TestExecCommandNotFoundInSandbox(t *testing.T) {
	sandboxtest.Require(t)
	ws := t.TempDir()
	box := sandbox.Config{Mode: sandbox.Bubblewrap}.Policy(sandbox.NetNone, ws, "", "")
	_, err := (&Exec{Command: "no-such-agent-cli -p"}).Run(context.Background(), Request{Workspace: ws, TaskID: "1", Attempt: 1, Prompt: "x", Sandbox: box})
	for _, want := range []string{"exit status 127", "the shell did not find no-such-agent-cli", "--sandbox-ro DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestExecCommandNotFoundUnsandboxed: without a sandbox the hints name what is really wrong: a
// relative script that is not in the workspace (a fresh clone: an uncommitted script is not there),
// or a program not on PATH; a script outside the repository simply runs.
func TestExecCommandNotFoundUnsandboxed(t *testing.T) {
	tests := []struct {
		name, command, want string
	}{
		{"uncommitted script", "./my-agent.sh --go", "./my-agent.sh is not in the workspace, a fresh clone of the repository's committed files: commit the script, or give its absolute path"},
		{"missing program", "no-such-agent-cli -p", "exit status 127: the shell did not find no-such-agent-cli: check the agent's command and PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Exec{Command: tt.command}).Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "1", Attempt: 1, Prompt: "x"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sandbox") {
				t.Errorf("an unsandboxed failure blames the sandbox: %v", err)
			}
		})
	}

	ws := t.TempDir()
	if res, err := (&Exec{Command: writeScript(t)}).Run(context.Background(), Request{Workspace: ws, TaskID: "1", Attempt: 1, Prompt: "x"}); err != nil {
		t.Fatalf("a script outside the repository without a sandbox: %v\n%s", err, res.Output)
	}
}

// TestExecOtherFailuresHaveNoHint: an agent that fails for its own reasons gets no hint about paths.
func TestExecOtherFailuresHaveNoHint(t *testing.T) {
	_, err := (&Exec{Command: "echo nope >&2; exit 3"}).Run(context.Background(), Request{Workspace: t.TempDir(), TaskID: "1", Attempt: 1, Prompt: "x"})
	if err == nil || err.Error() != "agent failed: exit status 3" {
		t.Fatalf("err = %v, want exactly %q", err, "agent failed: exit status 3")
	}
}
