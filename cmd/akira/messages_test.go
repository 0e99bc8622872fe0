package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// rawLogLine is a line of log's default format (2026/11/26 17:40:01 INFO ...) or of slog's text
// handler: what a person watching akira run should never see.
var rawLogLine = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d |level=(INFO|WARN|ERROR)|^akira: (warning: )?runner: `)

// TestRunOutputReadsAsWritten: what akira run prints says each thing once, in words: a task, not
// "1 tasks"; "agent failed" once; an invalid roadmap's error once, without the engine's "runner:"
// and without the summary's timing glued to it; no branch "at <sha>" for a branch never created;
// no raw log lines.
func TestRunOutputReadsAsWritten(t *testing.T) {
	t.Run("a failing agent", func(t *testing.T) {
		f := newRunFixture(t, "# R\n\n- [ ] 1.1 One\n  - verify: `test -f 1.1.txt`\n")
		f.touch(t, "fail-1.1")
		stdout, stderr, code := f.run(t, f.args("--max-attempts", "1")...)
		if code != 3 {
			t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		out := stdout + stderr
		for _, want := range []string{"· 1 task: 1 to do", "✗ agent failed: exit status 1", "the agent failed: exit status 1",
			"branch akira/roadmap not created (nothing pushed)"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, bad := range []string{"1 tasks", "agent failed: agent failed", "agent: agent failed", "branch akira/roadmap at "} {
			if strings.Contains(out, bad) {
				t.Errorf("output says %q:\n%s", bad, out)
			}
		}
	})
	t.Run("an invalid roadmap", func(t *testing.T) {
		f := newRunFixture(t, "# R\n\n- [ ] 1 one (depends: 2)\n- [ ] 2 two (depends: 1)\n")
		stdout, stderr, code := f.run(t, f.args()...)
		if code != 2 {
			t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		out := stdout + stderr
		if n := strings.Count(out, "dependency cycle"); n != 1 {
			t.Errorf("the error is said %d times, want once:\n%s", n, out)
		}
		if !strings.Contains(stderr, "akira: invalid roadmap: ROADMAP.md:") || strings.Contains(out, "runner:") {
			t.Errorf("stderr does not say the error plainly:\n%s", out)
		}
		if !regexp.MustCompile(`(?m)^failed · branch akira/roadmap not created \(nothing pushed\) · \d+ms$`).MatchString(stdout) {
			t.Errorf("the summary line is not on its own:\n%s", stdout)
		}
	})
	t.Run("setup and its log lines", func(t *testing.T) {
		f := newRunFixture(t, "# R\n\n- [ ] 1.1 One\n  - verify: `test -f 1.1.txt`\n")
		gittest.WriteFiles(t, f.repo.Work, map[string]string{".github/akira.yml": "setup:\n  - echo setting up\n"})
		gittest.Git(t, f.repo.Work, "add", ".github/akira.yml")
		gittest.Git(t, f.repo.Work, "commit", "--quiet", "-m", "setup")
		f.snapshot = gittest.Snapshot(t, f.repo.Work)
		stdout, stderr, code := f.run(t, f.args()...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if m := rawLogLine.FindString(stdout + stderr); m != "" {
			t.Errorf("raw log line %q in the output:\nstdout:\n%s\nstderr:\n%s", m, stdout, stderr)
		}
		if !strings.Contains(stdout, "done · branch akira/roadmap at ") {
			t.Errorf("summary:\n%s", stdout)
		}
	})
}

// cli runs akira in-process and returns what main would print on stderr and its exit code.
func cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err == nil {
		return out.String(), 0
	}
	return out.String() + "akira: " + err.Error() + "\n", exitCode(err)
}

// TestUnknownFlagsAndCommands: a mistyped flag or command is a usage error (2) that names the one
// meant when one is close.
func TestUnknownFlagsAndCommands(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--agent-cmnd", "x"}, []string{"unknown flag: --agent-cmnd", "did you mean --agent-cmd?", "see 'akira run --help'"}},
		{[]string{"run", "--sandbox-r", "x"}, []string{"did you mean --sandbox-ro?"}},
		{[]string{"serve", "--web-onyl"}, []string{"did you mean --web-only?"}},
		{[]string{"run", "--zzzzzzzz"}, []string{"unknown flag: --zzzzzzzz", "see 'akira run --help'"}},
		{[]string{"rnu"}, []string{`unknown command "rnu" for "akira"`, "Did you mean this?\n\trun"}},
		{[]string{"statu"}, []string{"Did you mean this?\n\tstatus"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, code := cli(t, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(tt.args[len(tt.args)-1], "zzz") && strings.Contains(out, "did you mean") {
				t.Errorf("a suggestion for a flag nothing is close to:\n%s", out)
			}
		})
	}
}

// TestInstallPathHint: make install's hint says when the akira a shell runs is not the one just
// installed, and tells to put the directory first, not last, on PATH.
func TestInstallPathHint(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "path-hint.sh"))
	if err != nil {
		t.Fatal(err)
	}
	installed, older := t.TempDir(), t.TempDir()
	for _, d := range []string{installed, older} {
		mustWrite(t, filepath.Join(d, "akira"), "#!/bin/sh\n")
	}
	hint := func(path string) string {
		t.Helper()
		cmd := exec.Command("/bin/sh", script, installed)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	if out := hint(installed + ":/usr/bin:/bin"); out != "" {
		t.Errorf("installed first on PATH: %q, want nothing", out)
	}
	out := hint(older + ":" + installed + ":/usr/bin:/bin")
	if !strings.Contains(out, "`akira` runs "+older+"/akira, not the one just installed ("+installed+"/akira)") ||
		!strings.Contains(out, "put "+installed+" before "+older) {
		t.Errorf("an older akira first: %q", out)
	}
	out = hint(older + ":/usr/bin:/bin")
	if !strings.Contains(out, installed+" is not on your PATH: put it first, e.g. export PATH=\""+installed+":$PATH\"") ||
		!strings.Contains(out, "`akira` runs "+older+"/akira") {
		t.Errorf("not on PATH, an older one is: %q", out)
	}
}

// TestServerHintNamesTheAdminDefault: without AKIRA_SERVER, the commands that talk to the server
// name the admin address akira serve listens on by default (AKIRA_ADMIN_ADDR).
func TestServerHintNamesTheAdminDefault(t *testing.T) {
	t.Setenv("AKIRA_SERVER", "")
	t.Setenv("AKIRA_TOKEN", "x")
	env, err := loadServeEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	out, code := cli(t, "status", "--server=")
	if code != 2 || !strings.Contains(out, "set AKIRA_SERVER") || !strings.Contains(out, env.AdminAddr) || strings.Contains(out, "8081") {
		t.Fatalf("exit %d, want 2 naming %s:\n%s", code, env.AdminAddr, out)
	}
}
