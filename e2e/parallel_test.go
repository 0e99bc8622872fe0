package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// killAgent ends the process group of a task's scripted agent (an orphan of a killed worker).
func (e *env) killAgent(task string) {
	if pid, err := os.ReadFile(filepath.Join(e.logDir, "pid-"+task)); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
			_ = syscall.Kill(-n, syscall.SIGKILL)
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

const twoSlowParallel = "- [ ] T1 [P] Add a slow thing\n- [ ] T2 [P] Add another slow thing\n- [ ] T3 Add a last one\n"

// TestParallelStopAndContinue: with max_parallel 2, both [P] tasks' agents work at once; `/akira
// stop` ends both within seconds and checkpoints nothing; `/akira run` continues, each task is
// committed once, and the plain task runs after them.
func TestParallelStopAndContinue(t *testing.T) {
	e := newEnv(t, true)
	e.startWorkerWith("max_parallel: 2\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Two at once", User: "alice", Body: twoSlowParallel})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-T1")
	e.waitFile("started-T2")
	if !e.agentAlive("T1") || !e.agentAlive("T2") {
		t.Fatal("the two [P] tasks' agents are not working at once")
	}
	run := e.runOf(1)
	e.comment(1, "alice", "/akira stop", false, http.StatusAccepted)
	e.eventually("both agents to be ended", func() bool { return !e.agentAlive("T1") && !e.agentAlive("T2") })
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if got := e.taskCommits(stopped.Branch); len(got) != 0 {
		t.Errorf("checkpoints after the stop = %v; want none", got)
	}
	e.touch("release")
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	if done.ID != run.ID {
		t.Errorf("/akira run after the stop made run %s beside %s", done.ID, run.ID)
	}
	e.checkOneOfEach(done, "T1", "T2", "T3")
}

// TestParallelWorkerKilled: the worker is SIGKILLed while two tasks are in flight; a new worker
// continues the run and each task is committed exactly once.
func TestParallelWorkerKilled(t *testing.T) {
	e := newEnv(t, true)
	op, err := os.ReadFile(e.spec.OperatorFile)
	must(t, err)
	file := filepath.Join(t.TempDir(), "akira.yml")
	must(t, os.WriteFile(file, append(op, []byte("max_parallel: 2\n")...), 0o644))
	e.spec.OperatorFile = file
	e.spec.LockTTL = store.DefaultLockTTL
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Crash two", User: "alice", Body: twoSlowParallel})
	first := e.startWorkerProcess("worker-1")
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-T1")
	e.waitFile("started-T2")
	must(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	e.killAgent("T1")
	e.killAgent("T2")
	e.touch("release")
	e.startWorkerProcess("worker-2")
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	e.checkOneOfEach(run, "T1", "T2", "T3")
}
