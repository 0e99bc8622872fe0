package workspace

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/gittest"
)

// BenchmarkChanges measures what reading an attempt's files costs (Changes: a copy of the index,
// git add into it, two diffs) on a work tree of 2,000 files with 10 changed, against the floor of
// a plain `git status` of the same work tree.
func BenchmarkChanges(b *testing.B) {
	gittest.Isolate(b)
	remote := filepath.Join(b.TempDir(), "repo.git")
	generatedRepo(b, remote, 2000, 1, 64, 1)
	w, err := Clone(context.Background(), Options{Remote: remote, WorkDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	if err := w.Checkout(ctx, "akira/bench"); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		write(b, w.Dir, fmt.Sprintf("src/pkg%02d/file%05d.txt", i%50, i), "changed\n")
	}
	var changes, floor time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		got, err := w.Changes(ctx)
		if err != nil || len(got) != 10 {
			b.Fatalf("Changes = %d, %v", len(got), err)
		}
		changes += time.Since(t0)
		t0 = time.Now()
		cmd := exec.Command("git", "--git-dir="+w.gitDir, "--work-tree="+w.Dir, "status", "--porcelain")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git status: %v %s", err, out)
		}
		floor += time.Since(t0)
	}
	b.ReportMetric(float64(changes.Microseconds())/float64(b.N), "µs/changes")
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "µs/status")
	b.ReportMetric(float64(changes)/float64(floor), "ratio")
}
