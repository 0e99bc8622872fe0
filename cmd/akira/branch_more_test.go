package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// These tests run status, rollback and run in the test process (runCmd), with --repo naming the
// user's clone, so that what an operator reads and the exit codes are checked where the coverage
// of the command's code is measured; the binary's own tests (run_test.go) check the same commands
// as a process.

// inProcess runs the scripted agent in the test process: its switches are files in f.logs.
func (f *runFixture) inProcess(t *testing.T, extra ...string) []string {
	t.Helper()
	t.Setenv("AKIRA_TEST_LOG", f.logs)
	return append(f.args("--repo", f.repo.Work), extra...)
}

// TestStatusInProcess: status says what is done, parked and pending with the exit code a script
// branches on (0 done, 3 parked, 4 pending), and names what is wrong with the plan or the
// repository.
func TestStatusInProcess(t *testing.T) {
	f := newRunFixture(t, "")
	status := []string{"status", "--repo", f.repo.Work, "--work-dir", f.workDir}

	stdout, stderr, code := runCmd(t, status...)
	if code != 4 || !strings.Contains(stdout, "branch akira/roadmap (not pushed yet, from main) · plan ROADMAP.md") ||
		!strings.Contains(stdout, "0 done · 0 need a decision · 3 pending") {
		t.Fatalf("before a run: exit %d, want 4\n%s%s", code, stdout, stderr)
	}

	f.touch(t, "fail-1.2")
	if stdout, stderr, code := runCmd(t, f.inProcess(t)...); code != 3 || !strings.Contains(stderr, "task 1.2 (Second file) needs a decision") ||
		!strings.Contains(stderr, "--approve ID") {
		t.Fatalf("run with 1.2 failing: exit %d, want 3 and the parked task named\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = runCmd(t, status...)
	if code != 3 {
		t.Fatalf("with 1.2 parked: exit %d, want 3\n%s", code, stdout)
	}
	for _, want := range []string{"TASK", "COMMIT", "1.2 Second file  needs a decision", "2 done · 1 need a decision · 0 pending"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}

	f.remove(t, "fail-1.2")
	if stdout, stderr, code := runCmd(t, f.inProcess(t)...); code != 0 {
		t.Fatalf("run again: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = runCmd(t, status...)
	if code != 0 || !strings.Contains(stdout, "(on the remote, from main)") || !strings.Contains(stdout, "3 done · 0 need a decision · 0 pending") {
		t.Fatalf("all done: exit %d, want 0\n%s", code, stdout)
	}
	// Each done task shows its checkpoint's short commit.
	head := gittest.Git(t, f.repo.Work, "rev-parse", "--short=7", "akira/roadmap")
	if !strings.Contains(stdout, head) {
		t.Errorf("status does not show the checkpoint %s:\n%s", head, stdout)
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		// The branch follows the plan's name unless --branch names it.
		{"missing plan", []string{"--roadmap", "NOPE.md"}, 2, "NOPE.md not found on branch akira/nope"},
		{"plan missing on the branch", []string{"--roadmap", "NOPE.md", "--branch", "akira/roadmap"}, 2, "NOPE.md not found on branch akira/roadmap"},
		{"missing repository", []string{"--repo", f.repo.Work + "-gone"}, 2, "--repo " + f.repo.Work + "-gone"},
		{"not a repository", []string{"--repo", f.logs}, 1, "clone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, append(slices.Clone(status), tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d (want %d), stderr %q; want it to name %q", code, tt.code, stderr, tt.want)
			}
		})
	}
}

// TestStatusInvalidPlan: a plan that cannot be read (a dependency cycle) is a usage error that
// names the file and the cycle.
func TestStatusInvalidPlan(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1 one (depends: 2)\n- [ ] 2 two (depends: 1)\n")
	_, stderr, code := runCmd(t, "status", "--repo", f.repo.Work, "--work-dir", f.workDir)
	if code != 2 || !strings.Contains(stderr, "ROADMAP.md") || !strings.Contains(stderr, "cycle") {
		t.Fatalf("exit %d, want 2 naming ROADMAP.md and the cycle: %s", code, stderr)
	}
}

// TestRollbackInProcess: rollback reverts a checkpoint and says which, refuses what it cannot do
// with a message naming the fix, and --retry runs the task again with the flags after --.
func TestRollbackInProcess(t *testing.T) {
	f := newRunFixture(t, "")
	if stdout, stderr, code := runCmd(t, f.inProcess(t)...); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	rollback := []string{"rollback", "--repo", f.repo.Work, "--work-dir", f.workDir}

	usage := []struct {
		name string
		args []string
		want string
	}{
		{"two ids", []string{"1.1", "1.3"}, "one task id at a time; run flags go after --retry --"},
		{"run flags without --retry", []string{"1.3", "--", "--parallel", "2"}, "arguments after -- are for --retry's run"},
		{"unknown task", []string{"9.9"}, "no task 9.9"},
		{"missing repository", []string{"1.3", "--repo", f.repo.Work + "-gone"}, "--repo"},
		{"missing plan", []string{"1.3", "--roadmap", "NOPE.md", "--branch", "akira/roadmap"}, "NOPE.md not found on branch akira/roadmap"},
		{"no branch", []string{"1.3", "--branch", "akira/other"}, "branch akira/other does not exist"},
	}
	for _, tt := range usage {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, append(slices.Clone(rollback), tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", code, stderr, tt.want)
			}
		})
	}
	if _, stderr, code := runCmd(t, append(slices.Clone(rollback), "1.3", "--repo", f.logs)...); code != 1 {
		t.Errorf("a directory that is no repository: exit %d, want 1: %s", code, stderr)
	}
	before := f.branch(t)
	if got := len(before); got != 3 {
		t.Fatalf("branch after the run = %q", before)
	}

	// Rolling back 1.1 takes 1.2 with it (1.2 depends on 1.1), newest first.
	stdout, stderr, code := runCmd(t, append(slices.Clone(rollback), "1.1")...)
	if code != 0 {
		t.Fatalf("rollback 1.1: exit %d\n%s%s", code, stdout, stderr)
	}
	head := gittest.Git(t, f.repo.Work, "rev-parse", "--short=7", "akira/roadmap")
	for _, want := range []string{"Rolled back on akira/roadmap (now " + head + "):", "1.2 Second file: checkpoint", "1.1 First file: checkpoint", "pending again"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rollback output lacks %q:\n%s", want, stdout)
		}
	}
	if i, j := strings.Index(stdout, "1.2 Second file"), strings.Index(stdout, "1.1 First file"); i < 0 || j < i {
		t.Errorf("the dependent 1.2 is not reverted first:\n%s", stdout)
	}
	want := append(slices.Clone(before), "akira: revert 1.2 Second file|", "akira: revert 1.1 First file|")
	if got := f.branch(t); !slices.Equal(got, want) {
		t.Fatalf("branch = %q, want %q", got, want)
	}

	// --retry runs them again at once with the same repository, plan, base and branch.
	runFlags := f.inProcess(t)[1:]
	stdout, stderr, code = runCmd(t, append(slices.Clone(rollback), "1.3", "--roadmap", "ROADMAP.md", "--base", "main", "--retry", "--")...)
	if code != 2 || !strings.Contains(stderr, "no agent") {
		// With nothing after --, the run has no agent: the rollback is done, the run says what it lacks.
		t.Errorf("--retry without run flags: exit %d, want 2 and the run's \"no agent\"\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "1.3 Third file: checkpoint") {
		t.Errorf("the rollback before the run was not reported:\n%s", stdout)
	}
	_, stderr, code = runCmd(t, append(append(slices.Clone(rollback), "1.3", "--roadmap", "ROADMAP.md", "--base", "main", "--retry", "--"), runFlags...)...)
	if code != 2 || !strings.Contains(stderr, "task 1.3 has no checkpoint") {
		t.Errorf("rollback of a rolled-back task: exit %d, want 2 naming the missing checkpoint: %s", code, stderr)
	}
	stdout, stderr, code = runCmd(t, f.inProcess(t)...)
	if code != 0 || !strings.Contains(stdout, "done · branch akira/roadmap") {
		t.Fatalf("run after the rollbacks: exit %d\n%s%s", code, stdout, stderr)
	}
	got := f.branch(t)
	if n := len(got); n != 9 || !slices.Equal(got[6:], []string{"akira: 1.1 First file|1.1", "akira: 1.2 Second file|1.2", "akira: 1.3 Third file|1.3"}) {
		t.Errorf("branch = %q; want the three tasks done again after their reverts", got)
	}
	stdout, stderr, code = runCmd(t, append(append(slices.Clone(rollback), "1.2", "--retry", "--"), runFlags...)...)
	if code != 0 || !strings.Contains(stdout, "1.2 Second file: checkpoint") || !strings.Contains(stdout, "done · branch akira/roadmap") {
		t.Fatalf("rollback 1.2 --retry: exit %d\n%s%s", code, stdout, stderr)
	}
	got = f.branch(t)
	if n := len(got); got[n-2] != "akira: revert 1.2 Second file|" || got[n-1] != "akira: 1.2 Second file|1.2" {
		t.Errorf("branch ends %q; want the revert of 1.2 and 1.2 again", got[n-2:])
	}
}

// TestRollbackConflict: a revert that does not apply (a later, independent task changed the same
// file) pushes nothing, exits 3 and shows the files, the way out and the conflict.
func TestRollbackConflict(t *testing.T) {
	f := newRunFixture(t, "# R\n\n- [ ] 1.1 Alpha\n  - verify: `test -f shared.txt`\n- [ ] 1.2 Beta\n  - verify: `grep -q Beta shared.txt`\n")
	agent := `echo "$AKIRA_TASK_TITLE" > shared.txt`
	if stdout, stderr, code := runCmd(t, "run", "--repo", f.repo.Work, "--agent-cmd", agent, "--work-dir", f.workDir,
		"--non-interactive", "--sandbox", "none"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	before := gittest.Git(t, f.repo.Work, "rev-parse", "akira/roadmap")
	stdout, stderr, code := runCmd(t, "rollback", "1.1", "--repo", f.repo.Work, "--work-dir", f.workDir)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"The revert does not apply: shared.txt.", "Nothing was pushed.", "roll back the task that changed these files after 1.1 too"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if after := gittest.Git(t, f.repo.Work, "rev-parse", "akira/roadmap"); after != before {
		t.Errorf("the branch moved from %s to %s although the revert conflicted", before, after)
	}
}
