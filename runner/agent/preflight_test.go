package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/sandbox"
)

// TestExecCheck: each agent mistake no retry can fix is found before any attempt, with its fix;
// what works, or cannot be told without a shell, passes.
func TestExecCheck(t *testing.T) {
	ws := t.TempDir()
	mustWriteMode(t, filepath.Join(ws, "agent.sh"), 0o644)      // committed without its executable bit
	mustWriteMode(t, filepath.Join(ws, "bin", "run.sh"), 0o755) // committed executable
	outside := t.TempDir()
	hiddenScript := filepath.Join(outside, "agent.sh")
	mustWriteMode(t, hiddenScript, 0o755)
	plain := filepath.Join(outside, "plain.sh")
	mustWriteMode(t, plain, 0o644)
	hiddenBin := t.TempDir()
	mustWriteMode(t, filepath.Join(hiddenBin, "claude"), 0o755)
	emptyPath := t.TempDir()
	sysPath := "/usr/bin:/bin"

	none := sandbox.Config{}.Policy(sandbox.NetNone, ws, "", "")
	bwrap := sandbox.Config{Mode: sandbox.Bubblewrap}.Policy(sandbox.NetNone, ws, "", "")
	shown := sandbox.Config{Mode: sandbox.Bubblewrap, ReadOnly: []string{outside, hiddenBin}}.Policy(sandbox.NetNone, ws, "", "")

	tests := []struct {
		name    string
		command string
		path    string
		box     *sandbox.Policy
		want    []string // empty: no error
	}{
		{"not executable", "./agent.sh --fast", sysPath, none,
			[]string{"./agent.sh is committed without its executable bit", "exit 126", "`chmod +x agent.sh && git add --chmod=+x agent.sh`", "`sh ./agent.sh`"}},
		{"a script of the repository named without ./", "agent.sh", sysPath, none, []string{"agent.sh is not installed (not found on PATH)", "run as ./agent.sh"}},
		{"executable in the repository", "bin/run.sh", sysPath, bwrap, nil},
		{"not committed", "./my-agent.sh", sysPath, none,
			[]string{"./my-agent.sh is not in the repository's committed files", "`git add my-agent.sh && git commit`"}},
		{"not committed, run by sh", "sh ./my-agent.sh", sysPath, none,
			[]string{"./my-agent.sh is not in the repository's committed files"}},
		{"run by sh needs no executable bit", "sh ./agent.sh", sysPath, bwrap, nil},
		{"hidden by the sandbox", hiddenScript, sysPath, bwrap,
			[]string{"the sandbox hides " + hiddenScript, "--sandbox-ro " + outside}},
		{"hidden by the sandbox, run by bash", "bash " + hiddenScript + " -x", sysPath, bwrap,
			[]string{"the sandbox hides " + hiddenScript}},
		{"shown by --sandbox-ro", hiddenScript, sysPath, shown, nil},
		{"absolute, not executable", plain, sysPath, none, []string{plain + " is not executable", "chmod +x " + plain, "sh " + plain}},
		{"absolute, missing", filepath.Join(outside, "gone.sh"), sysPath, none, []string{"gone.sh: not found"}},
		{"claude not installed", `claude -p --model "$AKIRA_MODEL"`, emptyPath, none,
			[]string{"claude is not installed (not found on PATH)", "install claude: npm i -g @anthropic-ai/claude-code"}},
		{"codex not installed", "codex exec -", emptyPath, none, []string{"install codex: npm i -g @openai/codex"}},
		{"other program not installed", "aider --yes", emptyPath, none, []string{"aider is not installed (not found on PATH)"}},
		{"installed where the sandbox hides it", "claude -p", hiddenBin, bwrap,
			[]string{"the sandbox hides " + filepath.Join(hiddenBin, "claude"), "--sandbox-ro " + hiddenBin}},
		{"installed, shown", "claude -p --verbose --output-format stream-json", hiddenBin, shown, nil},
		{"a profile claude rejects", "claude -p --output-format stream-json", hiddenBin, none,
			[]string{"claude refuses -p with --output-format stream-json unless --verbose", "add --verbose"}},
		{"a profile claude rejects, = form", "claude --print --output-format=stream-json", hiddenBin, none, []string{"add --verbose"}},
		{"shell syntax is not second-guessed", "cd sub && ./x.sh", emptyPath, none, nil},
		{"a variable is not second-guessed", `"$AGENT" -p`, emptyPath, none, nil},
		{"assignments and exec passed over", "FOO=1 exec ./my-agent.sh", sysPath, none, []string{"./my-agent.sh is not in the repository's committed files"}},
		{"sh -c runs no file", "sh -c 'echo hi'", sysPath, bwrap, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Exec{Command: tt.command, Env: []string{"PATH=" + tt.path}}).Check(ws, tt.box)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tt.command, err)
				}
				return
			}
			if !errors.Is(err, ErrUnusable) {
				t.Fatalf("Check(%q) = %v, want ErrUnusable", tt.command, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func mustWriteMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
}
