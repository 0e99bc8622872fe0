package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/proc"
)

// writeAgent is the cheapest possible agent: it writes one file, in process.
type writeAgent struct{}

func (writeAgent) Run(_ context.Context, req agent.Request) (agent.Result, error) {
	start := time.Now()
	err := os.WriteFile(filepath.Join(req.Workspace, "task-"+req.TaskID+".txt"), []byte(req.TaskTitle+"\n"), 0o644)
	return agent.Result{Duration: time.Since(start)}, err
}

func benchRoadmap(n int) string {
	var b strings.Builder
	b.WriteString("# Benchmark\n\n## Phase 1\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] B%d: Task number %d\n", i, i)
	}
	return b.String()
}

// gitFloor does by hand what a checkpoint amounts to, for n tasks: a clone, then per task the same
// change (one new file and the ticked box) with plain git add, git commit and git push.
func gitFloor(tb testing.TB, remote string, n int) time.Duration {
	tb.Helper()
	total, _ := gitFloorTasks(tb, remote, n)
	return total
}

// gitFloorTasks is gitFloor that also returns each task's CPU time (the git commands'), for the
// growth of plain git's own cost as the repository gains a file per task.
func gitFloorTasks(tb testing.TB, remote string, n int) (time.Duration, []time.Duration) {
	tb.Helper()
	var cpu []time.Duration
	ctx := context.Background()
	env := proc.Environ(nil, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Akira", "GIT_AUTHOR_EMAIL=akira@users.noreply.github.com",
		"GIT_COMMITTER_NAME=Akira", "GIT_COMMITTER_EMAIL=akira@users.noreply.github.com")
	root := tb.TempDir()
	dir := filepath.Join(root, "clone")
	git := func(dir string, args ...string) {
		res, err := proc.Run(ctx, proc.Cmd{Args: append([]string{"git"}, args...), Dir: dir, Env: env})
		if err != nil || res.ExitCode != 0 {
			tb.Fatalf("git %v: %v %s", args, err, res.Output)
		}
	}
	start := time.Now()
	git(root, "clone", "-q", remote, dir)
	git(dir, "checkout", "-q", "-b", "floor")
	roadmapFile := filepath.Join(dir, "ROADMAP.md")
	for i := 1; i <= n; i++ {
		taskStart := cpuTime(tb)
		id := fmt.Sprintf("B%d", i)
		if err := os.WriteFile(filepath.Join(dir, "task-"+id+".txt"), []byte("Task\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		data, err := os.ReadFile(roadmapFile)
		if err != nil {
			tb.Fatal(err)
		}
		data = bytes.Replace(data, []byte("- [ ] "+id+":"), []byte("- [x] "+id+":"), 1)
		if err := os.WriteFile(roadmapFile, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		git(dir, "add", "--all")
		git(dir, "commit", "-q", "-m", "akira: "+id+"\n\nAkira-Task: "+id)
		git(dir, "push", "-q", "origin", "refs/heads/floor:refs/heads/floor")
		cpu = append(cpu, cpuTime(tb)-taskStart)
	}
	return time.Since(start), cpu
}

// BenchmarkTaskOverhead measures the engine's own cost per task — clone, prompt, verify plan, one
// `true` verification, tick, checkpoint commit, push, events — with an agent that only writes a
// file, next to the floor of plain git doing the same change (git add, git commit, git push, plus one
// clone) in the same run. ns/op is per task; x-floor is engine time over floor time.
func BenchmarkTaskOverhead(b *testing.B) {
	n := b.N
	b.StopTimer()
	floorRepo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
	floor := gitFloor(b, floorRepo.Remote, n)
	repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
	opts := Options{
		Repo: repo.Remote, Agent: writeAgent{}, Verify: []string{"true"}, WorkDir: b.TempDir(),
		Reporter: NewJSONReporter(io.Discard), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	b.StartTimer()
	out, err := Run(context.Background(), opts)
	b.StopTimer()
	if err != nil || out.Status != StatusSucceeded {
		b.Fatalf("Run: %v (%s)", err, out.Status)
	}
	if len(out.Tasks) != n || out.Tasks[n-1].Status != TaskDone {
		b.Fatalf("not every task is done: %+v", out.Tasks[n-1])
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns/task")
	b.ReportMetric(float64(b.Elapsed())/float64(floor), "x-floor")
	b.Logf("akira-bench: task.overhead.ms %.2f", float64(b.Elapsed().Microseconds())/1000/float64(n))
	b.Logf("akira-bench: task.floor.ms %.2f", float64(floor.Microseconds())/1000/float64(n))
}

// BenchmarkGitFloor is the floor alone: per op, one change committed and pushed with plain git
// (plus the clone, amortised).
func BenchmarkGitFloor(b *testing.B) {
	b.StopTimer()
	repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(b.N)})
	b.StartTimer()
	gitFloor(b, repo.Remote, b.N)
}

// BenchmarkTaskGrowth runs one roadmap of 200 and one of 1,000 tasks (one of 40 with BENCH_QUICK=1)
// with the cheapest agent and a `true` verification, and compares the engine's cost per task at the
// end of each run with its cost at the start (the median of the first and of the last twenty tasks,
// from task start to checkpoint pushed; medians, so that one pause of the machine does not decide):
// the history, the branch and the events grow with every task, and none of that may make a task
// cost more. Each task is measured twice: wall time, and CPU time (this process and the git
// commands it ran, from getrusage), which is what the task costs whatever else the machine runs
// (a shared machine's load drifts between the first and the last tasks of a long run, and wall
// time compares two different loads). Next to it, the floor: plain git's CPU per task (add, commit,
// push of the same change) at the start and the end of the same number of tasks, for what the
// repository's growth (a file and a commit per task) costs git itself. growth and cpu-growth are
// last over first; the goal is 1.05 or less.
func BenchmarkTaskGrowth(b *testing.B) {
	sizes := []int{200, 1000}
	if os.Getenv("BENCH_QUICK") != "" {
		sizes = []int{40}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) { taskGrowth(b, n) })
	}
}

// cpuTime is the CPU time this process and its waited-for children have used.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var self, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

func taskGrowth(b *testing.B, n int) {
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for range b.N {
		repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
		started := map[string]time.Time{}
		startedCPU := map[string]time.Duration{}
		var wall, cpu []time.Duration
		rep := ReporterFunc(func(_ context.Context, ev Event) error {
			switch ev.Type {
			case EventTaskStarted:
				started[ev.TaskID], startedCPU[ev.TaskID] = time.Now(), cpuTime(b)
			case EventTaskCheckpointed:
				wall = append(wall, time.Since(started[ev.TaskID]))
				cpu = append(cpu, cpuTime(b)-startedCPU[ev.TaskID])
			}
			return nil
		})
		out, err := Run(context.Background(), Options{
			Repo: repo.Remote, Agent: writeAgent{}, Verify: []string{"true"}, WorkDir: b.TempDir(),
			Reporter: rep, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil || out.Status != StatusSucceeded || len(wall) != n {
			b.Fatalf("Run: %v (%s), %d checkpoints of %d", err, out.Status, len(wall), n)
		}
		first, last := median(wall[:20]), median(wall[n-20:])
		firstCPU, lastCPU := median(cpu[:20]), median(cpu[n-20:])
		// The floor's growth: plain git doing each task's change on a repository of the same shape.
		_, floor := gitFloorTasks(b, gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)}).Remote, n)
		floorFirst, floorLast := median(floor[:20]), median(floor[n-20:])
		b.Logf("akira-bench: growth.%d.floor_first_cpu.ms %.1f", n, ms(floorFirst))
		b.Logf("akira-bench: growth.%d.floor_last_cpu.ms %.1f", n, ms(floorLast))
		b.ReportMetric(float64(last)/float64(first), "growth")
		b.ReportMetric(float64(lastCPU)/float64(firstCPU), "cpu-growth")
		b.Logf("akira-bench: growth.%d.first.ms %.1f", n, ms(first))
		b.Logf("akira-bench: growth.%d.last.ms %.1f", n, ms(last))
		b.Logf("akira-bench: growth.%d.first_cpu.ms %.1f", n, ms(firstCPU))
		b.Logf("akira-bench: growth.%d.last_cpu.ms %.1f", n, ms(lastCPU))
	}
}

// BenchmarkParallel runs a roadmap of three [P] tasks whose agent takes three seconds each (as the
// issue that asked for parallel tasks measured), one at a time
// and then three at once, in the same run: parallel-x-sequential is the ratio of the wall times
// (goal 0.5 or less: the engine's own work per task is small beside an agent's).
func BenchmarkParallel(b *testing.B) {
	const plan = "- [ ] T1 [P] One\n- [ ] T2 [P] Two\n- [ ] T3 [P] Three\n"
	agent := &agent.Exec{Command: `sleep 3; echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`}
	run := func(parallel int) time.Duration {
		repo := gittest.New(b, map[string]string{"ROADMAP.md": plan})
		start := time.Now()
		out, err := Run(context.Background(), Options{Repo: repo.Remote, Agent: agent, Verify: []string{"true"}, WorkDir: b.TempDir(),
			MaxParallel: parallel, Logger: slog.New(slog.DiscardHandler)})
		if err != nil || out.Status != StatusSucceeded {
			b.Fatalf("Run: %v (%s)", err, out.Status)
		}
		return time.Since(start)
	}
	var seq, par time.Duration
	for range b.N {
		seq += run(1)
		par += run(3)
	}
	b.ReportMetric(float64(par)/float64(seq), "parallel-x-sequential")
	b.Logf("akira-bench: parallel.sequential.seconds %.2f", seq.Seconds()/float64(b.N))
	b.Logf("akira-bench: parallel.parallel.seconds %.2f", par.Seconds()/float64(b.N))
}
