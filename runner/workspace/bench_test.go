package workspace

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/gittest"
)

// benchQuick is set by BENCH_QUICK=1: the same measurements on a small repository, to keep the
// harness working in CI in seconds.
func benchQuick() bool { return os.Getenv("BENCH_QUICK") != "" }

// generatedRepo writes a repository with a long history and a modest tree into the bare repository
// at remote with git fast-import: one commit adding files files, then commits commits each
// rewriting two of them with blobSize bytes of incompressible text.
func generatedRepo(tb testing.TB, remote string, files, commits, blobSize int, seed uint64) {
	tb.Helper()
	gittest.Git(tb, filepath.Dir(remote), "init", "--quiet", "--bare", "--initial-branch=main", remote)
	appendCommits(tb, remote, files, commits, blobSize, seed, true)
}

// appendCommits adds commits to main with fast-import (the first one adding every file when initial).
func appendCommits(tb testing.TB, remote string, files, commits, blobSize int, seed uint64, initial bool) {
	tb.Helper()
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir = remote
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 7))
	when := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix() + int64(seed)*1000
	raw := make([]byte, blobSize/2)
	blob := func() string {
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		return hex.EncodeToString(raw) + "\n"
	}
	data := func(s string) { fmt.Fprintf(w, "data %d\n%s\n", len(s), s) }
	for c := 0; c <= commits; c++ {
		if c == 0 && !initial {
			continue
		}
		when++
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Gen <gen@example.com> %d +0000\n", when)
		data(fmt.Sprintf("commit %d of seed %d", c, seed))
		if c == 1 && !initial {
			// Without it fast-import starts the branch afresh (a root commit of the new files alone)
			// and --force replaces the repository's main with it.
			fmt.Fprintln(w, "from refs/heads/main^0")
		}
		if c == 0 {
			for f := range files {
				fmt.Fprintf(w, "M 100644 inline src/pkg%02d/file%05d.txt\n", f%50, f)
				data(fmt.Sprintf("file %d\n", f))
			}
			continue
		}
		for range 2 {
			f := rng.IntN(files)
			fmt.Fprintf(w, "M 100644 inline src/pkg%02d/file%05d.txt\n", f%50, f)
			data(blob())
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("fast-import: %v", err)
	}
}

func packBytes(remote string) int64 { return dirSize(filepath.Join(remote, "objects")) }

// BenchmarkWorkspace measures, on a generated repository with a long history served over git's
// smart HTTP: a cold workspace (no mirror yet: the mirror is made, the workspace cloned from it and
// checked out) against the floor of a plain `git clone` of the same URL, and a warm workspace (the
// mirror and the last workspace's kept tree present, as in akira serve's workers, three new commits
// upstream) against the cold one. It reports akira-bench lines
// for `make bench`.
func BenchmarkWorkspace(b *testing.B) {
	gittest.Isolate(b)
	files, commits, blobSize := 2000, 20000, 4096
	if benchQuick() {
		files, commits, blobSize = 200, 300, 1024
	}
	remote := filepath.Join(b.TempDir(), "big.git")
	start := time.Now()
	generatedRepo(b, remote, files, commits, blobSize, 1)
	b.Logf("generated %d commits, %d files, %.0f MiB of objects in %.1f s", commits, files, float64(packBytes(remote))/(1<<20), time.Since(start).Seconds())
	const header = "Authorization: Basic YmVuY2g6YmVuY2g="
	srv := gittest.ServeWithAuth(b, remote, header)
	auth := func(context.Context) (string, error) { return header, nil }
	ctx := context.Background()

	var floors, colds, warms []time.Duration
	for i := 0; i < b.N; i++ {
		// The floor: git's own clone of the URL, checkout included.
		dir := filepath.Join(b.TempDir(), "floor")
		t0 := time.Now()
		cmd := exec.Command("git", "-c", "http.extraheader="+header, "clone", "--quiet", srv.URL, dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git clone: %v %s", err, out)
		}
		floors = append(floors, time.Since(t0))
		_ = os.RemoveAll(dir)

		cache, err := NewCache(filepath.Join(b.TempDir(), "cache"), 0)
		if err != nil {
			b.Fatal(err)
		}
		cache.KeepWorkTrees = 2 // as akira serve's workers keep them (one per run slot)
		workspace := func() time.Duration {
			t0 := time.Now()
			// The base branch is named, as the App names the repository's default branch.
			w, err := Clone(ctx, Options{Remote: srv.URL, Base: "main", WorkDir: b.TempDir(), Auth: auth, Cache: cache})
			if err != nil {
				b.Fatalf("Clone: %v", err)
			}
			if err := w.Checkout(ctx, "akira/bench"); err != nil {
				b.Fatalf("Checkout: %v", err)
			}
			d := time.Since(t0)
			_ = w.Close()
			return d
		}
		colds = append(colds, workspace())
		for j := range 3 {
			appendCommits(b, remote, files, 3, blobSize, uint64(100+10*i+j), false)
			warms = append(warms, workspace())
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	floor, cold, warm := median(floors), median(colds), median(warms)
	b.ReportMetric(float64(cold)/float64(floor), "cold-x-clone")
	b.ReportMetric(float64(warm)/float64(cold), "warm-x-cold")
	b.Logf("akira-bench: workspace.cold.seconds %.3f", cold.Seconds())
	b.Logf("akira-bench: workspace.clone.seconds %.3f", floor.Seconds())
	b.Logf("akira-bench: workspace.warm.seconds %.3f", warm.Seconds())
	b.Logf("akira-bench: workspace.objects.mib %.0f", float64(packBytes(remote))/(1<<20))
}
