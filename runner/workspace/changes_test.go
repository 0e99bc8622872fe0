package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// Changes reads what the work tree changes against the last checkpoint, as git would commit it:
// edits with their lines, new files, deletions, binary files, an agent's own commits folded in,
// ignored files left out; and the index stays as it was.
func TestChangesReadTheWorkTree(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "one\ntwo\nthree\n", "old.txt": "bye\n", ".gitignore": "build/\n"})
	w := open(t, repo.Work, "akira/roadmap")
	ctx := context.Background()
	write(t, w.Dir, "README.md", "one\n2\nthree\nfour\n")
	write(t, w.Dir, "src/new file.go", "package x\n")
	write(t, w.Dir, "build/out.bin", "ignored\n")
	write(t, w.Dir, "logo.png", "\x89PNG\x00\x01\x02")
	if err := os.Remove(filepath.Join(w.Dir, "old.txt")); err != nil {
		t.Fatal(err)
	}
	// A commit the agent made itself is part of the attempt's work all the same.
	gittest.Git(t, w.Dir, "--git-dir="+w.gitDir, "add", "src/new file.go")
	gittest.Git(t, w.Dir, "--git-dir="+w.gitDir, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "agent's own")
	indexBefore, err := os.ReadFile(filepath.Join(w.gitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}

	got, err := w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "README.md", Status: "modified", Added: 2, Deleted: 1},
		{Path: "logo.png", Status: "added", Binary: true},
		{Path: "old.txt", Status: "deleted", Deleted: 1},
		{Path: "src/new file.go", Status: "added", Added: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Changes = %+v\nwant      %+v", got, want)
	}
	indexAfter, err := os.ReadFile(filepath.Join(w.gitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	if string(indexAfter) != string(indexBefore) {
		t.Error("Changes changed the index")
	}
	if left, _ := filepath.Glob(filepath.Join(w.root, "changes-index*")); len(left) != 0 {
		t.Errorf("Changes left %v", left)
	}
}
