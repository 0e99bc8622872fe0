package workspace

import (
	"context"
	"slices"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// What setup leaves untracked never reaches a checkpoint, whatever its name; what the agent adds next
// to it does, also in a directory of the same name elsewhere.
func TestExcludeUntrackedKeepsSetupOutputOutOfCheckpoints(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hi\n"})
	w := open(t, repo.Remote, "akira/x")
	for name, content := range map[string]string{
		"node_modules/a/index.js": "x", "a*b.txt": "x", "#cache": "x", "!keep": "x", "with space.txt": "x",
	} {
		write(t, w.Dir, name, content)
	}
	paths, err := w.ExcludeUntracked(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	if want := []string{"!keep", "#cache", "a*b.txt", "node_modules/", "with space.txt"}; !slices.Equal(paths, want) {
		t.Fatalf("excluded %q, want %q", paths, want)
	}
	write(t, w.Dir, "ab.txt", "the agent's")
	write(t, w.Dir, "src/node_modules/x.js", "the agent's")
	changed, err := w.Stage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	if want := []string{"ab.txt", "src/node_modules/x.js"}; !slices.Equal(changed, want) {
		t.Errorf("staged %q, want only the agent's files %q", changed, want)
	}
}
