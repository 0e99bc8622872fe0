package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/runs"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// These tests run Akira on a Redis of their own and take it away mid-run.

// checkOneOfEach asserts the end state every interrupted run must reach: each task committed once, one
// summary comment, and no check run left in progress.
func (e *env) checkOneOfEach(run *lifecycle.Run, tasks ...string) githubtest.PullRequest {
	e.t.Helper()
	got := e.taskCommits(run.Branch)
	for _, id := range tasks {
		if got[id] != 1 {
			e.t.Errorf("task %s committed %d times, want once (checkpoints %v)", id, got[id], got)
		}
	}
	if len(got) != len(tasks) {
		e.t.Errorf("checkpoints %v, want exactly %v", got, tasks)
	}
	pr := e.onlyPR(run.Branch)
	if n := len(e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))); n != 1 {
		e.t.Errorf("%d summary comments for run %s, want 1", n, run.ID)
	}
	if n := len(e.commentsWith(pr.Number, "<!-- akira:summary")); n != 1 {
		e.t.Errorf("%d summary comments on the pull request, want 1", n)
	}
	for _, cr := range e.gh.CheckRuns(e.owner, e.repo) {
		if cr.Status != "completed" {
			e.t.Errorf("check run %q left %s", cr.Name, cr.Status)
		}
	}
	return pr
}

func (e *env) agentCalls(task string) int {
	calls, _ := os.ReadFile(filepath.Join(e.logDir, "calls"))
	return strings.Count(string(calls), task+" ")
}

func (e *env) waitFile(name string) {
	e.t.Helper()
	e.eventually(name, func() bool {
		_, err := os.Stat(filepath.Join(e.logDir, name))
		return err == nil
	})
}

func (e *env) touch(name string) {
	e.t.Helper()
	must(e.t, os.WriteFile(filepath.Join(e.logDir, name), nil, 0o644))
}

// TestRedisOutageWithAOF: Redis, with its append-only file on as in the compose file, goes away for 20
// s while the agent works on task 1.2. The branch lock cannot be renewed, so the worker stops the task
// when the lock's TTL has passed; when Redis is back, the run (still marked running, from the AOF) is
// found by the reaper and continued from the last checkpoint. The time from Redis answering again to
// the agent working again is logged and must stay under 30 s.
func TestRedisOutageWithAOF(t *testing.T) {
	srv := redistest.StartServer(t, true)
	e := newEnvOn(t, true, srv.Addr)
	e.spec.LockTTL = store.DefaultLockTTL // the production TTL: it bounds how long the outage stalls the run
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Outage", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n- [ ] Add three\n"})
	e.startWorkerProcess("worker")

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	before := e.runOf(1)

	srv.Stop()
	time.Sleep(20 * time.Second)
	e.touch("release")
	srv.Start()
	back := time.Now()
	e.eventually("the agent to work on task 1.2 again", func() bool { return e.agentCalls("1.2") >= 2 })
	recovery := time.Since(back)
	t.Logf("recovery: the agent worked again %.1f s after Redis (AOF) came back from a 20 s outage (lock TTL %v, reaper every %v)",
		recovery.Seconds(), store.DefaultLockTTL, runs.DefaultReapInterval)
	if recovery > 30*time.Second {
		t.Errorf("recovery took %v, want under 30 s", recovery.Round(100*time.Millisecond))
	}

	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if run.ID != before.ID {
		t.Errorf("the run is %s after the outage, was %s", run.ID, before.ID)
	}
	e.checkOneOfEach(run, "1.1", "1.2", "1.3")
	if n := e.agentCalls("1.1"); n != 1 {
		t.Errorf("the agent ran task 1.1 %d times; its checkpoint was pushed before the outage", n)
	}
}

// TestRedisLostRunningRun: Redis restarts without persistence while the agent works on task 1.2, so
// the run's record, its queue and its lock are gone. The worker notices its lock is gone, stops the
// agent and writes back the record it held with a job that continues the run: nobody has to reply for
// the run to go on, under the same id, with no second pull request or summary and task 1.1 not done
// twice.
func TestRedisLostRunningRun(t *testing.T) {
	srv := redistest.StartServer(t, false)
	e := newEnvOn(t, false, srv.Addr)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Lost", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n- [ ] Add three\n"})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	before := e.runOf(1)

	srv.Restart()
	if e.runOf(1) != nil {
		t.Fatal("the run's record survived a restart without persistence; the test proves nothing")
	}
	// The worker finds its branch lock gone within a third of the lock's TTL, stops the agent, puts
	// the record back and continues: the agent starts on 1.2 again by itself.
	e.eventually("the agent to work on 1.2 again", func() bool { return e.agentCalls("1.2") >= 2 })
	e.touch("release")

	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if run.ID != before.ID {
		t.Errorf("the run is %s after the restart, was %s", run.ID, before.ID)
	}
	e.checkOneOfEach(run, "1.1", "1.2", "1.3")
	if n := e.agentCalls("1.1"); n != 1 {
		t.Errorf("the agent ran task 1.1 %d times; its checkpoint was on the branch", n)
	}
}

// TestRedisLostParkedRun: Redis restarts without persistence while a run is parked on an escalation.
// The person's `/akira retry` on the pull request finds no run, so the run is rebuilt from its branch
// (task 1.1 from its trailer, task 1.2 parked from its parked ref) and the retry acts on it.
func TestRedisLostParkedRun(t *testing.T) {
	srv := redistest.StartServer(t, false)
	e := newEnvOn(t, false, srv.Addr)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Parked", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a flaky thing\n- [ ] Add three\n"})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	before := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(before.Branch)

	srv.Restart()
	if e.runOf(1) != nil {
		t.Fatal("the run's record survived a restart without persistence; the test proves nothing")
	}
	e.comment(pr.Number, "alice", "/akira retry say MAGIC-WORD", true, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if run.ID != before.ID {
		t.Errorf("the run is %s after the rebuild, was %s", run.ID, before.ID)
	}
	if run.Rebuilt == "" {
		t.Error("the run is not marked rebuilt")
	}
	e.checkOneOfEach(run, "1.1", "1.2", "1.3")
	if n := e.agentCalls("1.1"); n != 1 {
		t.Errorf("the agent ran task 1.1 %d times; its checkpoint was on the branch", n)
	}
	if len(e.commentsWith(pr.Number, "did nothing")) != 0 {
		t.Error("the retry was refused")
	}
}

// TestRedisFlushedMidRun: a person answers an escalation (`/akira retry` with the magic word the task
// needs), and while the agent works on that retry Redis loses everything (a wipe of a Redis of the
// test's own): the run's record, its decision, the queue and the lock. The job that held the lock
// notices, stops, and puts back the record it held (decision included) with a job to continue it;
// then the worker is restarted. The run continues on the new worker with no task repeated and the
// answer not lost: the retried task gets the magic word again and is not escalated a second time.
func TestRedisFlushedMidRun(t *testing.T) {
	srv := redistest.StartServer(t, false)
	e := newEnvOn(t, true, srv.Addr)
	e.spec.LockTTL = store.DefaultLockTTL
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flushed", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a patient thing\n- [ ] Add three\n"})
	first := e.startWorkerProcess("worker-1")

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	before := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(before.Branch)
	e.comment(pr.Number, "alice", "/akira retry say MAGIC-WORD", true, http.StatusAccepted)
	e.waitFile("started-1.2")
	callsBefore := e.agentCalls("1.2")

	must(t, srv.Wipe(context.Background()))
	if e.runOf(1) != nil {
		t.Fatal("the run's record survived the wipe; the test proves nothing")
	}
	e.eventually("the job to put the run's record back", func() bool { return e.runOf(1) != nil })
	must(t, first.Process.Signal(syscall.SIGTERM))
	_ = first.Wait()
	e.startWorkerProcess("worker-2")

	e.eventually("the agent to work on the retried task again", func() bool { return e.agentCalls("1.2") > callsBefore })
	e.touch("release")
	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusParked, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run %s after the flush (%s); the answer was lost", run.Status, run.Error)
	}
	if run.ID != before.ID {
		t.Errorf("the run is %s after the flush, was %s", run.ID, before.ID)
	}
	e.checkOneOfEach(run, "1.1", "1.2", "1.3")
	for task, want := range map[string]int{"1.1": 1, "1.3": 1} {
		if n := e.agentCalls(task); n != want {
			t.Errorf("the agent worked on %s %d times, want %d: its checkpoint was on the branch", task, n, want)
		}
	}
	if ts := run.Task("1.2"); ts == nil || ts.Escalations != 1 {
		t.Errorf("task 1.2 = %+v, want escalated once: the retry's answer must survive the flush", ts)
	}
	if n := len(e.commentsWith(pr.Number, "did nothing")); n != 0 {
		t.Errorf("%d decisions refused", n)
	}
}

// TestRedisFlushedAroundRollback: Redis loses everything after a run finished; a writer's `/akira
// rollback 1.2` still acts (the run is rebuilt from its branch, at rest, under its id) and reverts the
// task. Redis loses everything again; `/akira run` rebuilds the run from the branch, where the revert's
// trailer says 1.2 is to do again: the agent does 1.2 once more and nothing else twice.
func TestRedisFlushedAroundRollback(t *testing.T) {
	srv := redistest.StartServer(t, false)
	e := newEnvOn(t, false, srv.Addr)
	ctx := context.Background()
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Three", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add two\n- [ ] Add three\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	pr := e.onlyPR(run.Branch)

	must(t, srv.Wipe(ctx))
	e.comment(pr.Number, "alice", "/akira rollback 1.2", true, http.StatusAccepted)
	e.eventually("the rollback's reply", func() bool {
		return len(e.commentsWith(pr.Number, "rolled back on"))+len(e.commentsWith(pr.Number, "no Akira run")) > 0
	})
	if n := len(e.commentsWith(pr.Number, "rolled back on")); n != 1 {
		t.Fatalf("the rollback after the flush did not act; replies: %+v", e.gh.Comments(e.owner, e.repo, pr.Number))
	}
	if last := e.gh.Log(e.owner, e.repo, run.Branch)[0]; last.Trailers["Akira-Revert"] != "1.2" {
		t.Errorf("the newest commit is not the revert of 1.2: %q %v", last.Subject, last.Trailers)
	}
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if stopped.ID != run.ID || stopped.Rebuilt == "" {
		t.Errorf("the rolled-back run is %s (rebuilt %q), want %s rebuilt", stopped.ID, stopped.Rebuilt, run.ID)
	}

	must(t, srv.Wipe(ctx))
	e.comment(pr.Number, "alice", "/akira run", true, http.StatusAccepted)
	again := e.waitStatus(1, lifecycle.StatusSucceeded)
	if again.ID != run.ID {
		t.Errorf("/akira run after the flush made run %s beside %s", again.ID, run.ID)
	}
	if got := e.taskCommits(run.Branch); got["1.2"] != 2 || got["1.1"] != 1 || got["1.3"] != 1 || len(got) != 3 {
		t.Errorf("checkpoints = %v; want 1.2 twice (before and after the rollback), the others once", got)
	}
	for task, want := range map[string]int{"1.1": 1, "1.2": 2, "1.3": 1} {
		if n := e.agentCalls(task); n != want {
			t.Errorf("the agent worked on %s %d times, want %d", task, n, want)
		}
	}
	if again.Rebuilt == "" {
		t.Error("the run is not marked rebuilt")
	}
	if sum := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID)); len(sum) != 1 {
		t.Errorf("%d summary comments, want 1", len(sum))
	} else if !strings.Contains(sum[0].Body, "rebuilt it from the branch") {
		t.Errorf("the summary does not say the run was rebuilt:\n%s", sum[0].Body)
	}
}

// parkedWithNoWorker starts a run on a Redis of the test's own whose second task escalates, waits
// for it to park, and stops its worker: what is delivered next waits in the queue.
func parkedWithNoWorker(t *testing.T) (*redistest.Server, *env, *lifecycle.Run, githubtest.PullRequest) {
	t.Helper()
	srv := redistest.StartServer(t, false)
	e := newEnvOn(t, true, srv.Addr)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Parked", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a flaky thing\n- [ ] Add three\n"})
	first := e.startWorkerProcess("worker-1")
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	before := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(before.Branch)
	must(t, first.Process.Signal(syscall.SIGTERM))
	_ = first.Wait()
	return srv, e, before, pr
}

// TestRedisFlushedBeforeTheAnswerActs: a run is parked on an escalation; its worker is stopped; a
// person answers (`/akira retry` with the word the task needs) and the webhook acknowledges the
// answer into the queue; then Redis loses everything before any job has acted on it. The answer is
// now only on GitHub. A new worker finds Redis without its epoch, asks GitHub to deliver the recent
// comments again, and the answer, still the first after the run's escalation, acts: the run is rebuilt
// from its branch and continues with the retry's guidance. The `/akira run` replayed with it starts
// nothing, and nothing is said twice. Redis is then wiped again after the run succeeded: the same
// answer, replayed once more, is older than nothing it could still answer, and does nothing.
func TestRedisFlushedBeforeTheAnswerActs(t *testing.T) {
	srv, e, before, pr := parkedWithNoWorker(t)

	answer := e.comment(pr.Number, "alice", "/akira retry say MAGIC-WORD", true, http.StatusAccepted)
	must(t, srv.Wipe(context.Background()))
	if e.runOf(1) != nil {
		t.Fatal("the run's record survived the wipe; the test proves nothing")
	}
	redelivered := len(e.gh.Redeliveries())
	e.startWorkerProcess("worker-2")

	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run %s after the flush (%s); the answer was lost", run.Status, run.Error)
	}
	if len(e.gh.Redeliveries()) <= redelivered {
		t.Error("the run went on without GitHub delivering the answer again: the test proves nothing")
	}
	if run.ID != before.ID || run.Rebuilt == "" {
		t.Errorf("the run is %s (rebuilt %q), want %s rebuilt from its branch", run.ID, run.Rebuilt, before.ID)
	}
	if p := e.promptOf("1.2"); !strings.Contains(p, "MAGIC-WORD") {
		t.Errorf("the retried task's prompt lacks the answer's guidance:\n%s", p)
	}
	e.checkOneOfEach(run, "1.1", "1.2", "1.3")
	for task, want := range map[string]int{"1.1": 1, "1.3": 1} {
		if n := e.agentCalls(task); n != want {
			t.Errorf("the agent worked on %s %d times, want %d", task, n, want)
		}
	}
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 1 {
		t.Errorf("%d pull requests: the replayed /akira run started another run", n)
	}
	if n := len(e.commentsWith(pr.Number, "did nothing")) + len(e.commentsWith(1, "did nothing")); n != 0 {
		t.Errorf("%d replies that a decision did nothing", n)
	}
	calls12 := e.agentCalls("1.2")

	// Wiped again: the answer is replayed again, and finds nothing left to answer.
	must(t, srv.Wipe(context.Background()))
	// The inspector knows the queue again (the recovery names it): the dashboard and metrics see it.
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	e.eventually("the replayed answer's resume job to end", func() bool {
		ti, err := insp.GetTaskInfo(e.spec.Queue, fmt.Sprintf("resume:comment:%d", answer.ID))
		return err == nil && (ti.State == asynq.TaskStateCompleted || ti.State == asynq.TaskStateArchived)
	})
	if n := e.agentCalls("1.2"); n != calls12 {
		t.Errorf("the replayed answer made the agent work on 1.2 again (%d calls, was %d)", n, calls12)
	}
	if r := e.runOf(1); r != nil && r.Status != lifecycle.StatusSucceeded {
		t.Errorf("the replayed answer left the run %s", r.Status)
	}
	if n := len(e.commentsWith(pr.Number, "did nothing")) + len(e.commentsWith(pr.Number, "no Akira run")); n != 0 {
		t.Errorf("%d replies to the replayed answer; a replay says nothing", n)
	}
}

// TestRedisFlushedBeforeTheButtonActs: as TestRedisFlushedBeforeTheAnswerActs, with the answer given
// by the check run's Approve button: GitHub's conversation does not hold it, but its delivery does, and
// the recovery places it at the time GitHub first delivered it, after the escalation.
func TestRedisFlushedBeforeTheButtonActs(t *testing.T) {
	srv, e, before, pr := parkedWithNoWorker(t)

	cr := e.latestCheckRuns()["akira: 1.2 Add a flaky thing"]
	e.deliver("check_run", "button-"+randomHex(t, 4), map[string]any{
		"action": "requested_action", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
		"check_run": map[string]any{"id": cr.ID, "external_id": cr.ExternalID, "head_sha": cr.HeadSHA,
			"app": map[string]any{"id": e.gh.AppID()}, "pull_requests": []map[string]any{{"number": pr.Number}}},
		"requested_action": map[string]any{"identifier": "approve"},
	}, http.StatusAccepted)
	must(t, srv.Wipe(context.Background()))
	e.startWorkerProcess("worker-2")

	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded || run.ID != before.ID {
		t.Fatalf("run %s %s after the flush (%s); the button's answer was lost", run.ID, run.Status, run.Error)
	}
	if got := e.taskCommits(run.Branch); got["1.1"] != 1 || got["1.2"] != 1 || got["1.3"] != 1 {
		t.Errorf("checkpoints after the approval = %v, want one per task", got)
	}
	if n := e.agentCalls("1.1"); n != 1 {
		t.Errorf("the agent worked on 1.1 %d times, want once", n)
	}
	if n := len(e.commentsWith(pr.Number, "did nothing")); n != 0 {
		t.Errorf("%d replies that a decision did nothing", n)
	}
}
