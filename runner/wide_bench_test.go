package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/workspace"
)

// BenchmarkWide is the engine on a repository of many files (gittest.WideSize: 100,000 files of
// 10 KiB, about 1 GiB of tree, generated once and kept in the user's cache), served over git's smart
// HTTP with credentials as GitHub serves it, with the repository cache as akira serve's workers have
// it (a mirror, and the work trees of closed workspaces kept). In order:
//   - `git clone` of the URL, checkout included: the floor of a cold workspace;
//   - a cold workspace (no mirror yet) to its branch, then closed (its tree kept);
//   - a warm workspace after three new commits upstream (mirror and kept tree present);
//   - a run of a few tasks with the cheapest agent and a `true` verification, each task's CPU
//     (from its start to its checkpoint pushed: the engine and its git commands) measured in step
//     with plain `git add -A && git commit` of the same change in the clone of the first step, made
//     right after it: the engine's overhead per task on that tree.
func BenchmarkWide(b *testing.B) {
	files, size := gittest.WideSize()
	tasks := 10
	if os.Getenv("BENCH_QUICK") != "" {
		tasks = 3
	}
	ctx := context.Background()
	for range b.N {
		start := time.Now()
		remote := gittest.Wide(b, files, size, map[string]string{"ROADMAP.md": benchRoadmap(tasks)})
		b.Logf("repository of %d files of %d bytes ready in %.1f s", files, size, time.Since(start).Seconds())
		const header = "Authorization: Basic YmVuY2g6YmVuY2g="
		srv := gittest.ServeWithAuth(b, remote, header)

		floorDir := filepath.Join(b.TempDir(), "floor")
		t0 := time.Now()
		if out, err := exec.Command("git", "-c", "http.extraheader="+header, "clone", "--quiet", srv.URL, floorDir).CombinedOutput(); err != nil {
			b.Fatalf("git clone: %v %s", err, out)
		}
		clone := time.Since(t0)

		cache, err := workspace.NewCache(filepath.Join(b.TempDir(), "cache"), 0)
		if err != nil {
			b.Fatal(err)
		}
		cache.KeepWorkTrees = 2
		defer cache.DropWorkTrees()
		auth := func(context.Context) (string, error) { return header, nil }
		ws := func() time.Duration {
			t0 := time.Now()
			w, err := workspace.Clone(ctx, workspace.Options{Remote: srv.URL, Base: "main", WorkDir: b.TempDir(), Auth: auth, Cache: cache})
			if err != nil {
				b.Fatalf("Clone: %v", err)
			}
			if err := w.Checkout(ctx, "akira/bench"); err != nil {
				b.Fatalf("Checkout: %v", err)
			}
			d := time.Since(t0)
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			return d
		}
		cold := ws()
		for j := range 3 {
			gittest.AppendCommit(b, remote, fmt.Sprintf("upstream %d", j), map[string]string{fmt.Sprintf("src/new/up%d.go", j): "package new\n"})
		}
		warm := ws()

		floorGit := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = floorDir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		floorStep := func(i int) time.Duration {
			c0 := cpuTime(b)
			id := fmt.Sprintf("B%d", i)
			if err := os.WriteFile(filepath.Join(floorDir, "task-"+id+".txt"), []byte("Task\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			roadmapFile := filepath.Join(floorDir, "ROADMAP.md")
			data, err := os.ReadFile(roadmapFile)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(roadmapFile, bytes.Replace(data, []byte("- [ ] "+id+":"), []byte("- [x] "+id+":"), 1), 0o644); err != nil {
				b.Fatal(err)
			}
			floorGit("add", "-A")
			floorGit("commit", "-q", "-m", "akira: "+id)
			return cpuTime(b) - c0
		}
		startedCPU, startedAt := map[string]time.Duration{}, map[string]time.Time{}
		var engineCPU, floorCPU, engineWall []time.Duration
		rep := ReporterFunc(func(_ context.Context, ev Event) error {
			switch ev.Type {
			case EventTaskStarted:
				startedCPU[ev.TaskID], startedAt[ev.TaskID] = cpuTime(b), time.Now()
			case EventTaskCheckpointed:
				engineCPU = append(engineCPU, cpuTime(b)-startedCPU[ev.TaskID])
				engineWall = append(engineWall, time.Since(startedAt[ev.TaskID]))
				floorCPU = append(floorCPU, floorStep(len(floorCPU)+1))
			}
			return nil
		})
		out, err := Run(ctx, Options{
			Inputs: Inputs{
				Repo:   srv.URL,
				Verify: []string{"true"},
			},
			Hooks: Hooks{
				Reporter: rep,
				Logger:   slog.New(slog.DiscardHandler),
			},
			GitAuth: auth,
			Cache:   cache,
			Agent:   writeAgent{},
			WorkDir: b.TempDir(),
		})
		if err != nil || out.Status != StatusSucceeded || len(engineCPU) != tasks {
			b.Fatalf("Run: %v (%s), %d checkpoints of %d", err, out.Status, len(engineCPU), tasks)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.Logf("akira-bench: wide.files %d", files)
		b.Logf("akira-bench: wide.tree.mib %.0f", float64(files)*float64(size)/(1<<20))
		b.Logf("akira-bench: wide.clone.seconds %.3f", clone.Seconds())
		b.Logf("akira-bench: wide.cold.seconds %.3f", cold.Seconds())
		b.Logf("akira-bench: wide.warm.seconds %.3f", warm.Seconds())
		b.Logf("akira-bench: wide.task_cpu.ms %.1f", ms(median(engineCPU)))
		b.Logf("akira-bench: wide.floor_cpu.ms %.1f", ms(median(floorCPU)))
		b.Logf("akira-bench: wide.task_wall.ms %.1f", ms(median(engineWall)))
	}
}
