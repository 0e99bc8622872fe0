package runner

import (
	"bytes"
	"cmp"
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
	start := time.Now()
	f := newGitFloor(tb, remote)
	cpu := make([]time.Duration, 0, n)
	for i := 1; i <= n; i++ {
		cpu = append(cpu, f.step(i))
	}
	return time.Since(start), cpu
}

// gitFloor is plain git doing a task's change (write its file, tick the roadmap, add, commit, push)
// in a clone of its own.
type gitFloorRepo struct {
	tb  testing.TB
	dir string
	git func(dir string, args ...string)
}

func newGitFloor(tb testing.TB, remote string) *gitFloorRepo {
	tb.Helper()
	ctx := context.Background()
	env := proc.Environ(nil, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Akira", "GIT_AUTHOR_EMAIL=akira@users.noreply.github.com",
		"GIT_COMMITTER_NAME=Akira", "GIT_COMMITTER_EMAIL=akira@users.noreply.github.com")
	root := tb.TempDir()
	f := &gitFloorRepo{tb: tb, dir: filepath.Join(root, "clone")}
	f.git = func(dir string, args ...string) {
		res, err := proc.Run(ctx, proc.Cmd{Args: append([]string{"git"}, args...), Dir: dir, Env: env})
		if err != nil || res.ExitCode != 0 {
			tb.Fatalf("git %v: %v %s", args, err, res.Output)
		}
	}
	f.git(root, "clone", "-q", remote, f.dir)
	f.git(f.dir, "checkout", "-q", "-b", "floor")
	return f
}

// step does task i's change and returns the CPU time it took.
func (f *gitFloorRepo) step(i int) time.Duration {
	taskStart := cpuTime(f.tb)
	f.steps(i, i)
	return cpuTime(f.tb) - taskStart
}

// steps does the changes of tasks from to to (their files, their boxes ticked) as one commit, pushed.
func (f *gitFloorRepo) steps(from, to int) {
	tb := f.tb
	roadmapFile := filepath.Join(f.dir, "ROADMAP.md")
	data, err := os.ReadFile(roadmapFile)
	if err != nil {
		tb.Fatal(err)
	}
	for i := from; i <= to; i++ {
		id := fmt.Sprintf("B%d", i)
		if err := os.WriteFile(filepath.Join(f.dir, "task-"+id+".txt"), []byte("Task\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		data = bytes.Replace(data, []byte("- [ ] "+id+":"), []byte("- [x] "+id+":"), 1)
	}
	if err := os.WriteFile(roadmapFile, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	id := fmt.Sprintf("B%d", to)
	f.git(f.dir, "add", "--all")
	f.git(f.dir, "commit", "-q", "-m", "akira: "+id+"\n\nAkira-Task: "+id)
	f.git(f.dir, "push", "-q", "origin", "refs/heads/floor:refs/heads/floor")
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
		Inputs: Inputs{
			Repo:   repo.Remote,
			Verify: []string{"true"},
		},
		Hooks: Hooks{
			Reporter: NewJSONReporter(io.Discard),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
		Agent:   writeAgent{},
		WorkDir: b.TempDir(),
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

// BenchmarkTaskGrowth runs a roadmap of 1,000 tasks (40 with BENCH_QUICK=1) five times (see
// growthReps) with the cheapest agent and a `true` verification, and compares the engine's cost per
// task at the end of each run with its cost at the start (the median of the first and of the last
// twenty tasks, from task start to checkpoint pushed; medians, so that one pause of the machine does
// not decide):
// the history, the branch and the events grow with every task, and none of that may make a task
// cost more. Each task is measured twice: wall time, and CPU time (this process and the git
// commands it ran, from getrusage), which is what the task costs whatever else the machine runs
// (a shared machine's load drifts between the first and the last tasks of a long run, and wall
// time compares two different loads). Next to it, the floor: plain git's CPU per task (add, commit,
// push of the same change) at the start and the end of the same number of tasks, for what the
// repository's growth (a file and a commit per task) costs git itself. growth and cpu-growth are
// last over first; the goal is 1.05 or less.
func BenchmarkTaskGrowth(b *testing.B) {
	sizes := []int{1000}
	if os.Getenv("BENCH_QUICK") != "" {
		sizes = []int{40}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) { taskGrowth(b, n) })
	}
}

// cpuTime is the CPU time this process and its waited-for children have used.
func cpuTime(tb testing.TB) time.Duration {
	self, children := cpuTimes(tb)
	return self + children
}

// cpuTimes is the CPU time this process has used, and that its waited-for children have.
func cpuTimes(tb testing.TB) (self, children time.Duration) {
	tb.Helper()
	var s, c syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &s); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(s.Utime.Nano() + s.Stime.Nano()), time.Duration(c.Utime.Nano() + c.Stime.Nano())
}

// growthReps is how many times taskGrowth runs each size (BENCH_GROWTH_RUNS sets it): the run
// whose stepped growth is the median is the one reported.
func growthReps() int {
	if os.Getenv("BENCH_QUICK") != "" {
		return 1
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_GROWTH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// growth is one run's figures: wall time, CPU (this process and git) and this process's own CPU per
// task, first and last twenty tasks, and plain git's CPU per task on a repository of the same shape.
type growth struct {
	first, last, firstCPU, lastCPU, firstSelf, lastSelf, floorFirst, floorLast time.Duration
	// stepped is the growth of the task's CPU over plain git's, measured task by task in step: each
	// task's CPU divided by git's for the same change done right after it, last 20 over first 20
	// (medians). Whatever the machine does meanwhile weighs on both alike.
	stepped float64
}

func (g growth) ratio() float64 { return float64(g.lastCPU) / float64(g.firstCPU) }

// median is the middle of xs (the upper one of an even count).
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func taskGrowth(b *testing.B, n int) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for range b.N {
		var runs []growth
		for range growthReps() {
			repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
			// Plain git on a repository of the same shape, one task's change after each task of the engine.
			floorRepo := newGitFloor(b, gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)}).Remote)
			started := map[string]time.Time{}
			startedCPU, startedSelf := map[string]time.Duration{}, map[string]time.Duration{}
			var wall, cpu, self, floor []time.Duration
			var per []float64
			rep := ReporterFunc(func(_ context.Context, ev Event) error {
				switch ev.Type {
				case EventTaskStarted:
					s, c := cpuTimes(b)
					started[ev.TaskID], startedCPU[ev.TaskID], startedSelf[ev.TaskID] = time.Now(), s+c, s
				case EventTaskCheckpointed:
					s, c := cpuTimes(b)
					wall = append(wall, time.Since(started[ev.TaskID]))
					cpu = append(cpu, s+c-startedCPU[ev.TaskID])
					self = append(self, s-startedSelf[ev.TaskID])
					// Outside the task's window: the next task starts after this returns. Plain git
					// is measured on the tasks compared, the first and last twenty; the tasks between
					// reach its repository as one commit (git's cost per task depends on the tree's
					// size, not on the number of commits before), which saves most of its time.
					switch i := len(wall); {
					case i <= 20 || i > n-20:
						floor = append(floor, floorRepo.step(i))
						per = append(per, float64(cpu[i-1])/float64(floor[len(floor)-1]))
					case i == n-20:
						floorRepo.steps(21, i)
					}
				}
				return nil
			})
			out, err := Run(context.Background(), Options{
				Inputs: Inputs{
					Repo:   repo.Remote,
					Verify: []string{"true"},
				},
				Hooks: Hooks{
					Reporter: rep,
					Logger:   slog.New(slog.DiscardHandler),
				},
				Agent:   writeAgent{},
				WorkDir: b.TempDir(),
			})
			if err != nil || out.Status != StatusSucceeded || len(wall) != n {
				b.Fatalf("Run: %v (%s), %d checkpoints of %d", err, out.Status, len(wall), n)
			}
			runs = append(runs, growth{stepped: median(per[20:]) / median(per[:20]), first: median(wall[:20]), last: median(wall[n-20:]),
				firstCPU: median(cpu[:20]), lastCPU: median(cpu[n-20:]), firstSelf: median(self[:20]), lastSelf: median(self[n-20:]),
				floorFirst: median(floor[:20]), floorLast: median(floor[20:])})
		}
		slices.SortFunc(runs, func(a, b growth) int { return cmp.Compare(a.stepped, b.stepped) })
		g := runs[len(runs)/2]
		b.Logf("akira-bench: growth.%d.floor_first_cpu.ms %.1f", n, ms(g.floorFirst))
		b.Logf("akira-bench: growth.%d.floor_last_cpu.ms %.1f", n, ms(g.floorLast))
		b.ReportMetric(float64(g.last)/float64(g.first), "growth")
		b.ReportMetric(g.ratio(), "cpu-growth")
		b.Logf("akira-bench: growth.%d.first.ms %.1f", n, ms(g.first))
		b.Logf("akira-bench: growth.%d.last.ms %.1f", n, ms(g.last))
		b.Logf("akira-bench: growth.%d.first_cpu.ms %.1f", n, ms(g.firstCPU))
		b.Logf("akira-bench: growth.%d.last_cpu.ms %.1f", n, ms(g.lastCPU))
		b.Logf("akira-bench: growth.%d.first_self_cpu.ms %.1f", n, ms(g.firstSelf))
		b.Logf("akira-bench: growth.%d.last_self_cpu.ms %.1f", n, ms(g.lastSelf))
		b.Logf("akira-bench: growth.%d.stepped %.3f", n, g.stepped)
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
		out, err := Run(context.Background(), Options{
			Inputs: Inputs{
				Repo:   repo.Remote,
				Verify: []string{"true"},
			},
			Limits: Limits{
				MaxParallel: parallel,
			},
			Hooks: Hooks{
				Logger: slog.New(slog.DiscardHandler),
			},
			Agent:   agent,
			WorkDir: b.TempDir(),
		})
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
