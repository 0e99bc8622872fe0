package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// A checkpoint's changes as the API needs them: every file's bytes (binary too), deletions, a rename as
// a deletion and an addition, modes (an executable, a symlink), and many files at once.
func TestAPIChangesOfACheckpoint(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t, map[string]string{"README.md": "hello\n", "old/name.txt": "moved\n", "tool": "echo\n", "gone.txt": "x\n"})
	w := open(t, repo.Remote, "akira/x")
	binary := []byte{0, 0xff, 1, '\n', 0xfe}
	if err := os.WriteFile(filepath.Join(w.Dir, "data.bin"), binary, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		write(t, w.Dir, fmt.Sprintf("many/f%03d.txt", i), fmt.Sprintf("%d\n", i))
	}
	write(t, w.Dir, "new/name.txt", "moved\n")
	if err := os.Remove(filepath.Join(w.Dir, "old/name.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(w.Dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README.md", filepath.Join(w.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(w.Dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	sha := commit(t, w, "akira: 1 big\n\nAkira-Task: 1\n")
	parents, baseTree, tree, changes, err := w.APIChanges(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := w.Git(ctx, "rev-parse", sha+"^{tree}"); len(parents) != 1 || baseTree == "" || tree != want {
		t.Fatalf("parents %v base tree %q tree %q", parents, baseTree, tree)
	}
	by := map[string]FileChange{}
	for _, c := range changes {
		by[c.Path] = c
	}
	if len(changes) != 300+6 {
		t.Errorf("%d changes, want 306", len(changes))
	}
	if c := by["data.bin"]; !bytes.Equal(c.Content, binary) || c.Mode != "100644" || c.OldMode != "" {
		t.Errorf("data.bin = %+v", c)
	}
	if c := by["old/name.txt"]; !c.Delete {
		t.Errorf("renamed from = %+v, want a deletion", c)
	}
	if c := by["new/name.txt"]; string(c.Content) != "moved\n" || c.Delete {
		t.Errorf("renamed to = %+v, want an addition", c)
	}
	if c := by["tool"]; c.Mode != "100755" || c.OldMode != "100644" || string(c.Content) != "echo\n" {
		t.Errorf("tool = %+v", c)
	}
	if c := by["link"]; c.Mode != "120000" || string(c.Content) != "README.md" {
		t.Errorf("link = %+v", c)
	}
	if c := by["gone.txt"]; !c.Delete {
		t.Errorf("gone.txt = %+v", c)
	}
	if c := by["many/f299.txt"]; string(c.Content) != "299\n" {
		t.Errorf("many/f299.txt = %+v", c)
	}
}
