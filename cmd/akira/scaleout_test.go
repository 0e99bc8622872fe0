package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
)

// scaleOut is Akira spread over processes as it is over machines: one `akira serve --web-only`
// and `akira serve --worker-only` processes (each running two runs at once, the default), all on one
// real Redis, against the fake GitHub, with an agent that sleeps per task and logs which
// worker process ran it and when.
type scaleOut struct {
	tb     testing.TB
	fake   *githubtest.Server
	web    string
	setup  serveSetup
	logDir string
	issues int // issues made so far, for titles that tell the runs apart
	// run is the index in the titles ("i<run>t<k>") of each issue's run, by issue number (pull
	// requests take numbers too).
	run map[int]int
}

// agentCall is one line of the agent's log: a task started or done by the worker process pid.
type agentCall struct {
	at     time.Time
	what   string // start or done
	worker int
	task   string // the task's title, unique across runs: "i<issue>t<k>"
}

func newScaleOut(tb testing.TB, agentSleep string) *scaleOut {
	tb.Helper()
	fake := githubtest.New(tb)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	logDir, scripts := tb.TempDir(), tb.TempDir()
	agent := filepath.Join(scripts, "agent.sh")
	// The worker process is the parent of the agent's process group leader (every command runs in a
	// group of its own): the log names it, so that the test knows which process ran what. Without a
	// sandbox the agent can write its log outside the work tree.
	mustWrite(tb, agent, `#!/bin/sh
read -r _ _ _ _ pg _ < /proc/$$/stat
read -r _ _ _ worker _ < /proc/$pg/stat
task=${AKIRA_TASK_TITLE##* }
echo "$(date +%s.%N) start $worker $task" >> `+logDir+`/calls
sleep `+agentSleep+`
echo "$AKIRA_TASK_TITLE" > "task-$AKIRA_TASK_ID.txt"
echo "$(date +%s.%N) done $worker $task" >> `+logDir+`/calls
`)
	s := &scaleOut{tb: tb, fake: fake, logDir: logDir, setup: serveSetup{
		operator: "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh " + agent + "\n" +
			"sandbox:\n  mode: none\n" +
			// Every run of the one installation may have a worker: the default cap is half the workers.
			"fair:\n  max_runs_per_installation: 16\n" +
			"ci:\n  watch: off\n",
		redisURL: "redis://" + redistest.Own(tb) + "/0",
	}}
	web := s.setup
	web.args = []string{"--web-only"}
	s.web, _, _ = startServeWith(tb, fake, web)
	return s
}

// startWorker starts one more `akira serve --worker-only` on the same Redis.
func (s *scaleOut) startWorker() *exec.Cmd {
	s.tb.Helper()
	w := s.setup
	w.args = []string{"--worker-only"}
	_, cmd, _ := startServeWith(s.tb, s.fake, w)
	return cmd
}

// startRuns files runs issues of tasks tasks each and comments `/akira run` on each; it returns
// the issues' numbers.
func (s *scaleOut) startRuns(runs, tasks int) []int {
	s.tb.Helper()
	var numbers []int
	for range runs {
		s.issues++
		var body strings.Builder
		for k := 1; k <= tasks; k++ {
			fmt.Fprintf(&body, "- [ ] Write file i%dt%d\n", s.issues, k)
		}
		issue := s.fake.AddIssue("octo", "svc", githubtest.Issue{Title: fmt.Sprintf("Scale %d", s.issues), User: "alice", Body: body.String()})
		deliver(s.tb, s.fake, s.web, "issue_comment", fmt.Sprintf("scale-%d", issue.Number), commentPayload(s.fake, issue, "alice", "/akira run"))
		if s.run == nil {
			s.run = map[int]int{}
		}
		s.run[issue.Number] = s.issues
		numbers = append(numbers, issue.Number)
	}
	return numbers
}

// waitReady waits for the pull request of every issue to be marked ready: its run is over.
func (s *scaleOut) waitReady(issues []int) {
	s.tb.Helper()
	for _, n := range issues {
		waitFor(s.tb, fmt.Sprintf("the pull request of issue %d to be marked ready", n), func() bool { return s.ready(n) })
	}
}

// ready says whether the pull request of issue n's run is marked ready.
func (s *scaleOut) ready(n int) bool {
	branch := fmt.Sprintf("akira/issue-%d", n)
	for _, pr := range s.fake.PullRequests("octo", "svc") {
		if pr.Head == branch && !pr.Draft {
			return true
		}
	}
	return false
}

// calls reads the agent's log.
func (s *scaleOut) calls() []agentCall {
	s.tb.Helper()
	data, err := os.ReadFile(filepath.Join(s.logDir, "calls"))
	if err != nil && !os.IsNotExist(err) {
		s.tb.Fatal(err)
	}
	var calls []agentCall
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		at, err1 := strconv.ParseFloat(f[0], 64)
		pid, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			s.tb.Fatalf("agent log line %q", line)
		}
		calls = append(calls, agentCall{at: time.Unix(0, int64(at*1e9)), what: f[1], worker: pid, task: f[3]})
	}
	return calls
}

// committed counts the checkpoints of each task of the issues' runs on their branches, by title.
func (s *scaleOut) committed(issues []int) map[string]int {
	s.tb.Helper()
	counts := map[string]int{}
	for _, n := range issues {
		for _, c := range s.fake.Log("octo", "svc", fmt.Sprintf("akira/issue-%d", n)) {
			if id, ok := strings.CutPrefix(c.Trailers["Akira-Task"], "1."); ok {
				counts[fmt.Sprintf("i%dt%s", s.run[n], id)]++
			}
		}
	}
	return counts
}

// killed is a worker process SIGKILLed mid-run.
type killed struct {
	pid int
	at  time.Time
	// runs are the indexes of the runs it had started tasks of ("i<run>t<k>").
	runs []int
}

// runOf is the index of the run of a task's title.
func runOf(title string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(title, "t", 2)[0], "i"))
	return n
}

// checkOnce checks the issues' runs after a worker process was killed: every task is committed
// exactly once on its branch, and the agent started every task once, except tasks the killed worker
// had started, which another worker may have started again once, after the kill (when the kill
// cut them short of their checkpoint). A task whose checkpoint was pushed and that was done again
// would show as a second checkpoint.
func (s *scaleOut) checkOnce(issues []int, tasks int, k killed) {
	s.tb.Helper()
	starts := map[string][]agentCall{}
	for _, c := range s.calls() {
		if c.what == "start" {
			starts[c.task] = append(starts[c.task], c)
		}
	}
	commits := s.committed(issues)
	for _, n := range issues {
		for i := 1; i <= tasks; i++ {
			title := fmt.Sprintf("i%dt%d", s.run[n], i)
			if commits[title] != 1 {
				s.tb.Errorf("task %s committed %d times, want once", title, commits[title])
			}
			st := starts[title]
			switch {
			case len(st) == 1:
			case len(st) == 2 && st[0].worker == k.pid && st[1].worker != k.pid && st[1].at.After(k.at):
			default:
				s.tb.Errorf("task %s: started %v; want once, or by the killed worker %d and once again by another after the kill", title, st, k.pid)
			}
		}
	}
}

// killMidRun waits until one of the workers has its agent on a task after it finished at least one,
// SIGKILLs that process and says which runs it had.
func (s *scaleOut) killMidRun(workers ...*exec.Cmd) killed {
	s.tb.Helper()
	var victim *exec.Cmd
	waitFor(s.tb, "a worker to be mid-run", func() bool {
		calls := s.calls()
		for _, w := range workers {
			pid := w.Process.Pid
			done := slices.ContainsFunc(calls, func(c agentCall) bool { return c.worker == pid && c.what == "done" })
			busy := slices.ContainsFunc(calls, func(c agentCall) bool {
				return c.worker == pid && c.what == "start" &&
					!slices.ContainsFunc(calls, func(d agentCall) bool { return d.what == "done" && d.task == c.task })
			})
			if done && busy {
				victim = w
				return true
			}
		}
		return false
	})
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		s.tb.Fatal(err)
	}
	k := killed{pid: victim.Process.Pid, at: time.Now()}
	_ = victim.Wait()
	for _, c := range s.calls() {
		if c.worker == k.pid && !slices.Contains(k.runs, runOf(c.task)) {
			k.runs = append(k.runs, runOf(c.task))
		}
	}
	return k
}

// restartedAfter waits for another worker than the killed one to start a task of one of its runs
// after the kill, and returns when it did: the runs go on. (A run whose last checkpoint was pushed
// as its worker died has no task left; it is seen ready instead.)
func (s *scaleOut) restartedAfter(k killed, issues []int) time.Time {
	s.tb.Helper()
	var at time.Time
	waitFor(s.tb, fmt.Sprintf("another worker to go on with runs %v", k.runs), func() bool {
		for _, c := range s.calls() {
			if c.what == "start" && c.worker != k.pid && c.at.After(k.at) && slices.Contains(k.runs, runOf(c.task)) {
				at = c.at
				return true
			}
		}
		for _, n := range issues {
			if slices.Contains(k.runs, s.run[n]) && !s.ready(n) {
				return false
			}
		}
		at = time.Now()
		return true
	})
	return at
}

// TestServeScaleOutWorkerKilled runs Akira as on several machines — one web process and two worker
// processes on one Redis — with two runs of three tasks, and SIGKILLs a worker process while its
// agent is on a task: every run ends with its pull request ready, the killed worker's task is taken
// up by the other worker and done once, and no task is committed twice or started again once done.
// The timing (how soon the other worker takes it up, throughput) is BenchmarkScaleOut's.
func TestServeScaleOutWorkerKilled(t *testing.T) {
	s := newScaleOut(t, "0.3")
	workers := []*exec.Cmd{s.startWorker(), s.startWorker()}
	issues := s.startRuns(2, 3)
	k := s.killMidRun(workers...)
	t.Logf("worker %d killed; the other worker went on with its runs %v %.1f s later", k.pid, k.runs, s.restartedAfter(k, issues).Sub(k.at).Seconds())
	s.waitReady(issues)
	s.checkOnce(issues, 3, k)
}

// BenchmarkScaleOut measures the throughput of two worker processes against one (each runs two runs
// at once, AKIRA_CONCURRENCY's default) on the same work: four runs of five tasks whose agent sleeps
// 2 s (with BENCH_QUICK=1 four runs of two tasks, 0.5 s), from the comments to the last pull request
// ready. Then, with half as many runs so that the survivor has a free slot, it SIGKILLs a worker
// process mid-run and reports how long after the kill the other one had the agent on the killed task
// again (goal 5 s), checking that no task ran twice.
func BenchmarkScaleOut(b *testing.B) {
	runs, tasks, sleep := 4, 5, "2"
	if os.Getenv("BENCH_QUICK") != "" {
		tasks, sleep = 2, "0.5"
	}
	for range b.N {
		s := newScaleOut(b, sleep)
		timed := func() time.Duration {
			start := time.Now()
			s.waitReady(s.startRuns(runs, tasks))
			return time.Since(start)
		}
		first := s.startWorker()
		one := timed()
		second := s.startWorker()
		two := timed()
		issues := s.startRuns(runs/2, tasks)
		k := s.killMidRun(first, second)
		recovery := s.restartedAfter(k, issues).Sub(k.at)
		s.waitReady(issues)
		s.checkOnce(issues, tasks, k)
		b.ReportMetric(one.Seconds()/two.Seconds(), "x-throughput")
		b.Logf("akira-bench: scaleout.runs %d", runs)
		b.Logf("akira-bench: scaleout.tasks %d", tasks)
		b.Logf("akira-bench: scaleout.agent.seconds %s", sleep)
		b.Logf("akira-bench: scaleout.one.seconds %.2f", one.Seconds())
		b.Logf("akira-bench: scaleout.two.seconds %.2f", two.Seconds())
		b.Logf("akira-bench: scaleout.recovery.seconds %.2f", recovery.Seconds())
	}
}

// BenchmarkWorkerRSS runs one run of 1,000 tasks (50 with BENCH_QUICK=1; BENCH_SCALE=0.1 a tenth)
// through a real `akira serve --worker-only` beside a web process, with an agent that only writes
// its file, and reads the worker process's resident memory as the run goes: after its first task,
// at the middle, at the end, and the most seen. The goal is 100 MiB at most, and flat: a run's
// length must not grow what a worker holds.
func BenchmarkWorkerRSS(b *testing.B) {
	tasks := 1000
	if os.Getenv("BENCH_QUICK") != "" {
		tasks = 50
	}
	if f, err := strconv.ParseFloat(os.Getenv("BENCH_SCALE"), 64); err == nil && f > 0 && f < 1 {
		tasks = max(50, int(float64(tasks)*f))
	}
	for range b.N {
		s := newScaleOut(b, "0")
		pid := s.startWorker().Process.Pid
		idle := rssKiB(b, pid)
		start := time.Now()
		issues := s.startRuns(1, tasks)
		var first, middle, most int
		waitWithin(b, 30*time.Minute, fmt.Sprintf("the agent to have done %d tasks", tasks), func() bool {
			done := 0
			for _, c := range s.calls() {
				if c.what == "done" {
					done++
				}
			}
			rss := rssKiB(b, pid)
			most = max(most, rss)
			if first == 0 && done >= 1 {
				first = rss
			}
			if middle == 0 && done >= tasks/2 {
				middle = rss
			}
			return done >= tasks
		})
		s.waitReady(issues)
		end := rssKiB(b, pid)
		most = max(most, end)
		mib := func(kib int) float64 { return float64(kib) / 1024 }
		b.Logf("%d tasks in %.0f s", tasks, time.Since(start).Seconds())
		b.Logf("akira-bench: worker_rss.tasks %d", tasks)
		b.Logf("akira-bench: worker_rss.idle.mib %.1f", mib(idle))
		b.Logf("akira-bench: worker_rss.start.mib %.1f", mib(first))
		b.Logf("akira-bench: worker_rss.middle.mib %.1f", mib(middle))
		b.Logf("akira-bench: worker_rss.end.mib %.1f", mib(end))
		b.Logf("akira-bench: worker_rss.max.mib %.1f", mib(most))
	}
}
