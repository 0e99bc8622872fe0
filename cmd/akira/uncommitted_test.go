package main

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// TestRunSaysItRunsTheCommittedPlan: akira run runs the roadmap and .github/akira.yml of the
// repository's commits; when the files on disk differ, one line a file says so and how to run them.
func TestRunSaysItRunsTheCommittedPlan(t *testing.T) {
	const committed = "# R\n\n- [ ] 1.1 One\n  - verify: `test -f 1.1.txt`\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"clean", nil, nil},
		{"a task added, not committed", map[string]string{"ROADMAP.md": committed + "- [ ] 1.2 Two\n"},
			[]string{"akira: ROADMAP.md has changes that are not committed: akira run runs the committed one; commit it to run it"}},
		{"a fresh akira.yml", map[string]string{".github/akira.yml": "verify: [\"true\"]\n"},
			[]string{"akira: .github/akira.yml is not committed: akira run runs the committed one; commit it to run it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRunFixture(t, committed)
			gittest.WriteFiles(t, f.repo.Work, tt.files)
			f.snapshot = gittest.Snapshot(t, f.repo.Work)
			t.Chdir(f.repo.Work)
			t.Setenv("AKIRA_TEST_LOG", f.logs)
			stdout, stderr, code := runCmd(t, f.args()...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if got := f.calls(t); len(got) != 1 || got[0] != "1.1:1" {
				t.Errorf("agent calls = %v, want the committed task only", got)
			}
			for _, w := range tt.want {
				if strings.Count(stderr, w) != 1 {
					t.Errorf("stderr does not say once %q:\n%s", w, stderr)
				}
			}
			if len(tt.want) == 0 && strings.Contains(stderr, "commit it to run it") {
				t.Errorf("a clean tree gets the line:\n%s", stderr)
			}
		})
	}
}

// TestInitSaysToCommit: akira init tells that the file it wrote runs once committed.
func TestInitSaysToCommit(t *testing.T) {
	_, stderr, code := runCmd(t, "init", "--dir", t.TempDir())
	if code != 0 || !strings.Contains(stderr, "commit it for akira run to use it: git add .github/akira.yml && git commit") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}
