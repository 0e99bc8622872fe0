package workspace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// pushed commits content as path in w and pushes it.
func pushFile(t *testing.T, w *Workspace, path, content, msg string) string {
	t.Helper()
	write(t, w.Dir, path, content)
	sha := commit(t, w, msg)
	if err := w.Push(context.Background()); err != nil {
		t.Fatalf("Push: %v", err)
	}
	return sha
}

// TestCombineOnTopOfANeighboursPush: two workspaces on one branch (parallel tasks). When the other
// pushed first, Combine puts this one's change on the new head, staged; the plan file comes from the
// remote head, for its box to be ticked again; a change that conflicts elsewhere is left out and its
// paths named; with nothing pushed meanwhile there is nothing to do.
func TestCombineOnTopOfANeighboursPush(t *testing.T) {
	ctx := context.Background()
	plan := "- [ ] 1.1 one\n- [ ] 1.2 two\n"
	repo := gittest.New(t, map[string]string{"ROADMAP.md": plan, "shared.txt": "base\n"})
	a := open(t, repo.Remote, "akira/x")
	if err := a.Push(ctx); err != nil {
		t.Fatal(err)
	}
	b := open(t, repo.Remote, "akira/x")

	if moved, conflicts, err := a.Combine(ctx, "ROADMAP.md"); err != nil || moved || conflicts != nil {
		t.Fatalf("Combine with nothing new = %v %v %v; want nothing to do", moved, conflicts, err)
	}

	// b ticks 1.2 and adds its file; a ticks 1.1 and adds its own.
	write(t, b.Dir, "ROADMAP.md", "- [ ] 1.1 one\n- [x] 1.2 two\n")
	theirs := pushFile(t, b, "b.txt", "b\n", "akira: 1.2 two\n")
	write(t, a.Dir, "ROADMAP.md", "- [x] 1.1 one\n- [ ] 1.2 two\n")
	write(t, a.Dir, "a.txt", "a\n")
	commit(t, a, "akira: 1.1 one\n")
	if err := a.Push(ctx); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push after a neighbour's push = %v, want ErrPushRejected", err)
	}
	moved, conflicts, err := a.Combine(ctx, "ROADMAP.md")
	if err != nil || !moved || len(conflicts) != 0 {
		t.Fatalf("Combine = %v %v %v; want moved without conflicts", moved, conflicts, err)
	}
	if got := gittest.Git(t, a.Dir, "--git-dir="+a.GitDir(), "rev-parse", "HEAD"); got != theirs {
		t.Fatalf("HEAD = %s, want the neighbour's %s", got, theirs)
	}
	if data, _ := a.ReadFile("ROADMAP.md"); string(data) != "- [ ] 1.1 one\n- [x] 1.2 two\n" {
		t.Errorf("the plan is not the remote head's: %q", data)
	}
	if data, err := a.ReadFile("a.txt"); err != nil || string(data) != "a\n" {
		t.Errorf("this workspace's change is not applied: %q %v", data, err)
	}
	write(t, a.Dir, "ROADMAP.md", "- [x] 1.1 one\n- [x] 1.2 two\n")
	commit(t, a, "akira: 1.1 one\n")
	if err := a.Push(ctx); err != nil {
		t.Fatalf("Push after Combine: %v", err)
	}
	if got := gittest.Git(t, repo.Remote, "show", "akira/x:ROADMAP.md"); got != "- [x] 1.1 one\n- [x] 1.2 two" {
		t.Errorf("remote plan = %q", got)
	}

	// Now both change the same line of shared.txt: b first, then a's change conflicts.
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if data, err := b.ReadFile("a.txt"); err != nil || string(data) != "a\n" {
		t.Fatalf("Sync did not bring the remote head: %q %v", data, err)
	}
	pushFile(t, b, "shared.txt", "b's line\n", "b\n")
	write(t, a.Dir, "shared.txt", "a's line\n")
	commit(t, a, "a\n")
	moved, conflicts, err = a.Combine(ctx, "ROADMAP.md")
	if err != nil || !moved || !slices.Equal(conflicts, []string{"shared.txt"}) {
		t.Fatalf("Combine of a conflicting change = %v %v %v; want moved with shared.txt in conflict", moved, conflicts, err)
	}
	if data, _ := a.ReadFile("shared.txt"); string(data) != "b's line\n" {
		t.Errorf("the workspace is not left at the remote head: shared.txt = %q", data)
	}
}

// TestCombineRefusesARewrittenBranch: a branch someone rewrote is not combined onto.
func TestCombineRefusesARewrittenBranch(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t, map[string]string{"README.md": "x\n"})
	a := open(t, repo.Remote, "akira/x")
	pushFile(t, a, "a.txt", "a\n", "one\n")
	// Someone force-pushes another history to the branch.
	gittest.Git(t, repo.Work, "checkout", "-q", "-b", "other")
	gittest.WriteFiles(t, repo.Work, map[string]string{"o.txt": "o\n"})
	gittest.Git(t, repo.Work, "add", "-A")
	gittest.Git(t, repo.Work, "commit", "-q", "-m", "other")
	gittest.Git(t, repo.Work, "push", "-q", "-f", repo.Remote, "other:akira/x")
	write(t, a.Dir, "b.txt", "b\n")
	commit(t, a, "two\n")
	if _, _, err := a.Combine(ctx, ""); !errors.Is(err, ErrPushRejected) || !strings.Contains(err.Error(), "was rewritten on the remote") {
		t.Fatalf("Combine onto a rewritten branch = %v, want ErrPushRejected naming the rewrite", err)
	}
	gittest.Git(t, repo.Remote, "update-ref", "-d", "refs/heads/akira/x")
	if err := a.Sync(ctx); !errors.Is(err, ErrPushRejected) || !strings.Contains(err.Error(), "is gone from the remote") {
		t.Fatalf("Sync with the branch deleted = %v, want ErrPushRejected naming it", err)
	}
}

// TestCheckpointsAndRevert: Checkpoints maps each task to its latest checkpoint, minus those a later
// commit rolled back; Revert undoes a checkpoint with a commit of its own, reverts the plan's box by
// position, and reports a conflicting revert with its paths and diff, leaving the workspace at its
// checkpoint.
func TestCheckpointsAndRevert(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 one\n- [ ] 1.2 two\n", "notes.txt": "base\n"})
	w := open(t, repo.Remote, "akira/x")
	write(t, w.Dir, "ROADMAP.md", "- [x] 1.1 one\n- [ ] 1.2 two\n")
	one := pushFile(t, w, "one.txt", "1\n", "akira: 1.1 one\n\nAkira-Task: 1.1\n")
	write(t, w.Dir, "ROADMAP.md", "- [x] 1.1 one\n- [x] 1.2 two\n")
	write(t, w.Dir, "notes.txt", "changed by 1.2\n")
	two := pushFile(t, w, "two.txt", "2\n", "akira: 1.2 two\n\nAkira-Task: 1.2\n")

	got, err := w.Checkpoints(ctx, "Akira-Task", "Akira-Undone")
	if err != nil || len(got) != 2 || got["1.1"] != one || got["1.2"] != two {
		t.Fatalf("Checkpoints = %v, %v; want 1.1 → %s, 1.2 → %s", got, err, one, two)
	}

	if _, err := w.Revert(ctx, "HEAD~1", "x", "", nil); err == nil || !strings.Contains(err.Error(), `"HEAD~1" is not a commit id`) {
		t.Errorf("Revert of a non-sha = %v", err)
	}
	checkErr := errors.New("the plan came out wrong")
	if _, err := w.Revert(ctx, one, "akira: revert 1.1\n\nAkira-Undone: 1.1\n", "ROADMAP.md", func() error { return checkErr }); err == nil {
		t.Errorf("Revert whose check fails = nil error")
	}
	if data, _ := w.ReadFile("ROADMAP.md"); string(data) != "- [x] 1.1 one\n- [x] 1.2 two\n" {
		t.Fatalf("a failed revert left the plan changed: %q", data)
	}

	rev, err := w.Revert(ctx, one, "akira: revert 1.1\n\nAkira-Undone: 1.1\n", "ROADMAP.md", nil)
	if err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if data, _ := w.ReadFile("ROADMAP.md"); string(data) != "- [ ] 1.1 one\n- [x] 1.2 two\n" {
		t.Errorf("after the revert the plan is %q; want only 1.1's box unticked", data)
	}
	if _, err := w.ReadFile("one.txt"); err == nil {
		t.Error("one.txt survived the revert of 1.1")
	}
	got, err = w.Checkpoints(ctx, "Akira-Task", "Akira-Undone")
	if err != nil || len(got) != 1 || got["1.2"] != two {
		t.Errorf("Checkpoints after the revert %s = %v, %v; want only 1.2", rev, got, err)
	}

	// A later change to notes.txt makes the revert of 1.2 conflict there.
	pushFile(t, w, "notes.txt", "changed again\n", "later\n")
	head := gittest.Git(t, w.Dir, "--git-dir="+w.GitDir(), "rev-parse", "HEAD")
	_, err = w.Revert(ctx, two, "akira: revert 1.2\n", "ROADMAP.md", nil)
	var conflict *RevertConflictError
	if !errors.As(err, &conflict) || !slices.Contains(conflict.Paths, "notes.txt") || !strings.Contains(conflict.Diff, "changed again") {
		t.Fatalf("a conflicting revert = %v; want a RevertConflictError on notes.txt with its diff", err)
	}
	if !strings.Contains(err.Error(), "reverting "+two[:12]+" conflicts in ") || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("error = %q", err)
	}
	if now := gittest.Git(t, w.Dir, "--git-dir="+w.GitDir(), "rev-parse", "HEAD"); now != head {
		t.Errorf("HEAD moved from %s to %s after a failed revert", head, now)
	}
	if data, _ := w.ReadFile("notes.txt"); string(data) != "changed again\n" {
		t.Errorf("the workspace is not at its checkpoint: notes.txt = %q", data)
	}
}
