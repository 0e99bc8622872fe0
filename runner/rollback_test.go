package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

const dependentTasks = `# Roadmap

- [ ] T1: Base layer
- [ ] T2: On top of T1 (depends: T1)
- [ ] T3: On top of T2 (depends: T2)
- [ ] T4: Independent
`

func (f *fixture) rollback(t *testing.T, id string) (RollbackOutcome, error) {
	t.Helper()
	return Rollback(context.Background(), RollbackOptions{Repo: f.repo.Remote, TaskID: id, WorkDir: f.workDir, RunID: "rollback-1"})
}

// branchFile reads a file at the head of the remote branch ("" when it is not there).
func (f *fixture) branchFile(t *testing.T, branch, path string) string {
	t.Helper()
	out, code := gittest.TryGit(t, f.repo.Remote, "show", "refs/heads/"+branch+":"+path)
	if code != 0 {
		return ""
	}
	return out
}

// TestRollbackLeafTask: the checkpoint of a task nothing depends on is reverted by one commit with
// an Akira-Revert trailer (its file gone, its box unticked, the history kept), and the next run does
// that task again, and only that task.
func TestRollbackLeafTask(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	agent := f.agent(logCall + `echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`)
	if _, _, err := f.run(t, Options{Inputs: Inputs{RunID: "run-1"}, Agent: agent}); err != nil {
		t.Fatal(err)
	}
	before := f.log(t, "akira/roadmap")
	out, err := f.rollback(t, "T3")
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if len(out.Reverted) != 1 || out.Reverted[0].ID != "T3" {
		t.Fatalf("reverted %+v; want T3 alone", out.Reverted)
	}
	after := f.log(t, "akira/roadmap")
	if len(after) != len(before)+1 || !slices.Equal(after[:len(before)], before) {
		t.Fatalf("history %v; want %v plus one revert (never rewritten)", after, before)
	}
	msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", "akira/roadmap")
	if !strings.Contains(msg, "Akira-Revert: T3") || !strings.HasPrefix(msg, "akira: revert T3 ") {
		t.Errorf("revert commit message:\n%s", msg)
	}
	if f.branchFile(t, "akira/roadmap", "T3.txt") != "" {
		t.Error("T3.txt is still on the branch")
	}
	if rm := f.branchFile(t, "akira/roadmap", "ROADMAP.md"); !strings.Contains(rm, "- [ ] T3:") || !strings.Contains(rm, "- [x] T1:") {
		t.Errorf("roadmap after the rollback:\n%s", rm)
	}
	// Resume: T3 is pending again and is the only task the agent does.
	out2, _, err := f.run(t, Options{Inputs: Inputs{RunID: "run-2"}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out2, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T2:1", "T3:1", "T3:1")
	if f.branchFile(t, "akira/roadmap", "T3.txt") == "" {
		t.Error("T3.txt not back after the run")
	}
}

// TestRollbackTaskWithDependents: rolling back T1 reverts T3, T2 and T1, newest first, and leaves
// the independent T4; a second run redoes the three in dependency order.
func TestRollbackTaskWithDependents(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": dependentTasks})
	agent := f.agent(logCall + `echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`)
	if _, _, err := f.run(t, Options{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	out, err := f.rollback(t, "T1")
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	var ids []string
	for _, r := range out.Reverted {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"T3", "T2", "T1"}) {
		t.Fatalf("reverted %v; want T3, T2, T1 (newest first), never T4", ids)
	}
	for _, id := range []string{"T1", "T2", "T3"} {
		if f.branchFile(t, "akira/roadmap", id+".txt") != "" {
			t.Errorf("%s.txt still on the branch", id)
		}
	}
	if f.branchFile(t, "akira/roadmap", "T4.txt") == "" {
		t.Error("T4.txt was reverted too")
	}
	out2, _, err := f.run(t, Options{Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out2, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone, "T4": TaskDone})
	calls := f.calls(t)
	if got := calls[4:]; !slices.Equal(got, []string{"T1:1", "T2:1", "T3:1"}) {
		t.Errorf("second run's calls = %v; want T1, T2, T3 again", got)
	}
}

// TestRollbackConflict: a checkpoint a later task built on (without saying so) does not revert
// cleanly: the rollback pushes nothing and names the conflicting path.
func TestRollbackConflict(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1: Write the file\n- [ ] T2: Change the file\n"})
	agent := f.agent(logCall + `if [ "$AKIRA_TASK_ID" = T1 ]; then printf 'one\n' > shared.txt; else printf 'one\ntwo\n' > shared.txt; fi`)
	if _, _, err := f.run(t, Options{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	head := gittest.Git(t, f.repo.Remote, "rev-parse", "refs/heads/akira/roadmap")
	_, err := f.rollback(t, "T1")
	var conflict *RevertConflictError
	if !errors.As(err, &conflict) || !slices.Contains(conflict.Paths, "shared.txt") {
		t.Fatalf("Rollback = %v; want a conflict in shared.txt", err)
	}
	if !strings.Contains(conflict.Diff, "shared.txt") {
		t.Errorf("the conflict's diff does not show the file:\n%s", conflict.Diff)
	}
	if got := gittest.Git(t, f.repo.Remote, "rev-parse", "refs/heads/akira/roadmap"); got != head {
		t.Error("a conflicting rollback pushed something")
	}
}

// TestRollbackUsageErrors: a task that is not in the plan or has no checkpoint is refused.
func TestRollbackUsageErrors(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	if _, err := f.rollback(t, "T1"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("rollback before any run = %v; want the branch named missing", err)
	}
	agent := f.agent(logCall + `if [ "$AKIRA_TASK_ID" = T3 ]; then exit 1; fi; echo x > "$AKIRA_TASK_ID.txt"`)
	_, _, _ = f.run(t, Options{Limits: Limits{MaxAttempts: 1}, Agent: agent})
	for id, want := range map[string]string{"T9": "no task T9", "T3": "has no checkpoint"} {
		if _, err := f.rollback(t, id); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("rollback %s = %v; want %q", id, err, want)
		}
	}
}

// TestRollbackRequestIsIdempotent: a named rollback made again (its job retried after the push)
// reports the reverts it made, reverting nothing twice.
func TestRollbackRequestIsIdempotent(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": dependentTasks})
	agent := f.agent(logCall + `echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`)
	if _, _, err := f.run(t, Options{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	opts := RollbackOptions{Repo: f.repo.Remote, TaskID: "T2", WorkDir: f.workDir, RunID: "run-x", RequestID: "rollback:comment:42"}
	first, err := Rollback(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	commits := len(f.log(t, "akira/roadmap"))
	again, err := Rollback(context.Background(), opts)
	if err != nil {
		t.Fatalf("the same rollback again: %v", err)
	}
	if got := len(f.log(t, "akira/roadmap")); got != commits {
		t.Errorf("the same rollback again made %d commits", got-commits)
	}
	if len(again.Reverted) != len(first.Reverted) || again.Reverted[0] != first.Reverted[0] || again.Head != first.Head {
		t.Errorf("again = %+v; want the first outcome %+v", again, first)
	}
	// Another request for a task that has no checkpoint any more is still refused.
	opts.RequestID = "rollback:comment:43"
	if _, err := Rollback(context.Background(), opts); !errors.Is(err, ErrUsage) {
		t.Errorf("a new request for a rolled-back task = %v; want ErrUsage", err)
	}
}

// TestRollbackRequestFinishesWhatItStarted: a request whose reverts landed only in part (through
// GitHub's API each revert is a commit of its own, and GitHub can fail between two) reverts the rest
// when it is made again, and reports every revert of the request, the earlier ones included.
func TestRollbackRequestFinishesWhatItStarted(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": dependentTasks})
	agent := f.agent(logCall + `echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`)
	if _, _, err := f.run(t, Options{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	opts := RollbackOptions{Repo: f.repo.Remote, WorkDir: f.workDir, RunID: "run-x", RequestID: "rollback:comment:42"}
	// The request for T2 reverts T3 first (newest first); only that revert landed.
	part := opts
	part.TaskID = "T3"
	if _, err := Rollback(context.Background(), part); err != nil {
		t.Fatal(err)
	}
	opts.TaskID = "T2"
	out, err := Rollback(context.Background(), opts)
	if err != nil {
		t.Fatalf("the request made again: %v", err)
	}
	var ids []string
	for _, r := range out.Reverted {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"T3", "T2"}) {
		t.Fatalf("reverted %v; want T3 (before) and T2 (now)", ids)
	}
	for _, id := range []string{"T2", "T3"} {
		if f.branchFile(t, "akira/roadmap", id+".txt") != "" {
			t.Errorf("%s.txt still on the branch", id)
		}
	}
	if f.branchFile(t, "akira/roadmap", "T1.txt") == "" {
		t.Error("T1.txt was reverted too")
	}
	commits := len(f.log(t, "akira/roadmap"))
	if again, err := Rollback(context.Background(), opts); err != nil || len(again.Reverted) != 2 || len(f.log(t, "akira/roadmap")) != commits {
		t.Errorf("the finished request made again: %+v, %v, %d new commits", again.Reverted, err, len(f.log(t, "akira/roadmap"))-commits)
	}
}
