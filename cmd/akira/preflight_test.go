package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/gittest"
)

// TestRunAgentPreflight: agent mistakes no retry can fix end `akira run` before the first attempt,
// with exit 2 and the fix, never two failed attempts and a parked task.
func TestRunAgentPreflight(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "agent.sh")
	mustWrite(t, outside, "#!/bin/sh\ntouch 1.1.txt\n")
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sandbox bool
		args    []string
		want    []string
	}{
		{"committed without its executable bit", false, []string{"--agent-cmd", "./agent.sh"},
			[]string{"./agent.sh is committed without its executable bit", "chmod +x agent.sh && git add --chmod=+x agent.sh", "sh ./agent.sh"}},
		{"not committed", false, []string{"--agent-cmd", "./my-agent.sh"},
			[]string{"./my-agent.sh is not in the repository's committed files", "git add my-agent.sh && git commit"}},
		{"claude not installed", false, []string{"--agent-cmd", "claude -p --permission-mode acceptEdits"},
			[]string{"claude is not installed", "install claude: npm i -g @anthropic-ai/claude-code"}},
		{"hidden by the sandbox", true, []string{"--agent-cmd", outside},
			[]string{"the sandbox hides " + outside, "--sandbox-ro " + filepath.Dir(outside)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sandbox {
				sandboxtest.Require(t)
			}
			repo := gittest.New(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 One\n  - verify: `test -f 1.1.txt`\n", "agent.sh": "#!/bin/sh\ntouch 1.1.txt\n"})
			// The newcomer's mistake: the script is committed as a plain file.
			gittest.Git(t, repo.Work, "update-index", "--chmod=-x", "agent.sh")
			gittest.Git(t, repo.Work, "commit", "--quiet", "-m", "agent")
			gittest.Git(t, repo.Work, "push", "--quiet", "origin", "main")
			t.Chdir(repo.Work)
			t.Setenv("PATH", "/usr/bin:/bin")
			if p, err := exec.LookPath("claude"); err == nil {
				t.Skipf("claude is installed here (%s)", p)
			}
			args := append([]string{"run", "--work-dir", t.TempDir(), "--non-interactive", "--max-attempts", "2"}, tt.args...)
			if !tt.sandbox {
				args = append(args, "--sandbox", "none")
			}
			stdout, stderr, code := runCmd(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, bad := range []string{"parked", "run the same command again", "attempt 1"} {
				if strings.Contains(stdout+stderr, bad) {
					t.Errorf("output says %q:\nstdout:\n%s\nstderr:\n%s", bad, stdout, stderr)
				}
			}
			if _, code := gittest.TryGit(t, repo.Remote, "rev-parse", "--verify", "-q", "refs/heads/akira/roadmap"); code == 0 {
				t.Error("the branch was pushed")
			}
		})
	}
}
