package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
	"github.com/hibiken/asynq"
)

// agentAlive reports whether the scripted agent of a task still runs.
func (e *env) agentAlive(task string) bool {
	pid, err := os.ReadFile(filepath.Join(e.logDir, "pid-"+task))
	if err != nil {
		return false
	}
	_, err = os.Stat("/proc/" + strings.TrimSpace(string(pid)))
	return err == nil
}

// TestStopAndContinue: `/akira stop` while the agent works on a long task ends the agent within
// seconds and leaves the branch at the last checkpoint, with the task's check run cancelled and the
// summary naming who stopped it; a read-only user's stop does nothing; `/akira run` continues from the
// last checkpoint, in the same run.
func TestStopAndContinue(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Long", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n- [ ] Add three\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	run := e.runOf(1)

	e.comment(1, "mallory", "/akira stop", false, http.StatusAccepted)
	e.eventually("the refusal", func() bool { return len(e.commentsWith(1, "Sorry @mallory")) == 1 })
	if !e.agentAlive("1.2") || e.runOf(1).Status != lifecycle.StatusRunning {
		t.Fatal("a read-only user's stop stopped the run")
	}

	asked := time.Now()
	e.comment(1, "alice", "/akira stop", false, http.StatusAccepted)
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.2") })
	took := time.Since(asked)
	t.Logf("stop: the agent's process ended %.1f s after /akira stop was delivered", took.Seconds())
	if took > 5*time.Second {
		t.Errorf("stopping took %v, want under 5 s", took.Round(100*time.Millisecond))
	}
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if stopped.ID != run.ID || stopped.StoppedBy != "alice" {
		t.Errorf("run %s stopped by %q", stopped.ID, stopped.StoppedBy)
	}
	if got := e.taskCommits(run.Branch); len(got) != 1 || got["1.1"] != 1 {
		t.Errorf("checkpoints after the stop = %v, want only 1.1", got)
	}
	if cr := e.latestCheckRuns()["akira: 1.2 Add a slow thing"]; cr.Conclusion != "cancelled" {
		t.Errorf("check run of the stopped task: %+v", cr)
	}
	pr := e.onlyPR(run.Branch)
	if sum := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID)); len(sum) != 1 || !strings.Contains(sum[0].Body, "stopped by @alice") {
		t.Errorf("summary: %+v", sum)
	}
	if len(e.commentsWith(1, "Stopping run")) != 1 {
		t.Error("no answer to /akira stop")
	}

	e.touch("release")
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	if done.ID != run.ID {
		t.Errorf("/akira run after a stop made run %s beside %s", done.ID, run.ID)
	}
	e.checkOneOfEach(done, "1.1", "1.2", "1.3")
}

// TestAbortWhileWorking: `/akira abort` on a run that is working ends it for good.
func TestAbortWhileWorking(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Long", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	e.comment(1, "alice", "/akira abort", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusAborted)
	if run.AbortedBy != "alice" {
		t.Errorf("aborted by %q", run.AbortedBy)
	}
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.2") })
	if got := e.taskCommits(run.Branch); len(got) != 1 {
		t.Errorf("checkpoints = %v", got)
	}
}

// TestStopButton: the "Stop" button of the check run of the task in progress stops the run.
func TestStopButton(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Long", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	run := e.runOf(1)
	pr := e.onlyPR(run.Branch)
	cr := e.latestCheckRuns()["akira: 1.2 Add a slow thing"]
	if cr.Status != "in_progress" || len(cr.Actions) != 1 || cr.Actions[0].Identifier != "stop" {
		t.Fatalf("check run of the task in progress: %+v", cr)
	}
	e.deliver("check_run", "stop-button", map[string]any{
		"action": "requested_action", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
		"check_run": map[string]any{"id": cr.ID, "external_id": cr.ExternalID, "head_sha": cr.HeadSHA,
			"app": map[string]any{"id": e.gh.AppID()}, "pull_requests": []map[string]any{{"number": pr.Number}}},
		"requested_action": map[string]any{"identifier": "stop"},
	}, http.StatusAccepted)
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if stopped.StoppedBy != "alice" {
		t.Errorf("stopped by %q", stopped.StoppedBy)
	}
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.2") })
	if cr := e.latestCheckRuns()["akira: 1.2 Add a slow thing"]; cr.Conclusion != "cancelled" || len(cr.Actions) != 0 {
		t.Errorf("check run after the stop: %+v", cr)
	}
}

// TestStalledAgent: an agent that prints nothing and changes nothing for the operator's stall_timeout
// is ended; the attempt fails as stalled, and the next attempt is told so.
func TestStalledAgent(t *testing.T) {
	e := newEnv(t, true)
	e.startWorkerWith("stall_timeout: 1s\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Hangs", User: "alice", Body: "- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("a second attempt", func() bool { return e.agentCalls("1.1") >= 2 })
	e.touch("release")
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if prompt := e.promptOf("1.1"); !strings.Contains(prompt, "stalled: no output and no change in the work tree for 1s") {
		t.Errorf("the second attempt was not told the first stalled:\n%s", prompt)
	}
	if got := e.taskCommits(run.Branch); got["1.1"] != 1 {
		t.Errorf("checkpoints = %v", got)
	}
}

// TestBudget: with the operator's budget of $1 per run, the third costly task parks before its agent
// runs, the escalation says what was spent and how to go on; `/akira run --budget 5` raises it and the
// run finishes.
func TestBudget(t *testing.T) {
	e := newEnv(t, true)
	e.startWorkerWith("budget:\n  cost_usd: 1\nbudget_ceiling:\n  cost_usd: 50\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Costly", User: "alice",
		Body: "- [ ] Add a costly one\n- [ ] Add a costly two\n- [ ] Add a costly three\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked)
	if len(run.Parked) != 1 || run.Parked[0].TaskID != "1.3" || e.agentCalls("1.3") != 0 {
		t.Fatalf("parked %+v, agent calls for 1.3: %d", run.Parked, e.agentCalls("1.3"))
	}
	pr := e.onlyPR(run.Branch)
	esc := e.commentsWith(pr.Number, templates.EscalationMarker(run.ID, "1.3"))
	if len(esc) != 1 || !strings.Contains(esc[0].Body, "spent $1.20 of the $1.00") || !strings.Contains(esc[0].Body, "/akira run --budget <usd>") ||
		!strings.Contains(esc[0].Body, "at most $50.00") {
		t.Fatalf("budget escalation: %+v", esc)
	}

	e.comment(1, "alice", "/akira run --budget 5", false, http.StatusAccepted)
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	if done.ID != run.ID || done.Budget.CostUSD != 5 {
		t.Errorf("run %s with budget %+v after the raise", done.ID, done.Budget)
	}
	if got := e.taskCommits(done.Branch); len(got) != 3 {
		t.Errorf("checkpoints = %v", got)
	}
}

// startWorkerWith starts a worker process whose operator configuration is the env's with more
// settings appended (for an env made with external workers).
func (e *env) startWorkerWith(settings string) {
	e.t.Helper()
	op, err := os.ReadFile(e.spec.OperatorFile)
	must(e.t, err)
	file := filepath.Join(e.t.TempDir(), "akira.yml")
	must(e.t, os.WriteFile(file, append(op, []byte(settings)...), 0o644))
	e.spec.OperatorFile = file
	e.startWorkerProcess("worker")
}

// TestClosingThePullRequestStopsItsRun: a person with write access closing the run's pull request
// while the agent works stops the run, as /akira stop would (the agent ended, the branch at its last
// checkpoint, stopped by them); the same close by a reader stops nothing.
func TestClosingThePullRequestStopsItsRun(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Long", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2")
	run := e.runOf(1)
	pr := e.onlyPR(run.Branch)
	closed := func(by string) string {
		t.Helper()
		repo := e.repository()
		delivery := "closed-" + randomHex(t, 4)
		e.deliver("pull_request", delivery, map[string]any{
			"action": "closed", "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user(by),
			"pull_request": map[string]any{"number": pr.Number, "state": "closed", "merged": false, "user": user(e.gh.BotLogin()),
				"head": map[string]any{"ref": run.Branch, "sha": e.gh.Branch(e.owner, e.repo, run.Branch), "repo": repo},
				"base": map[string]any{"ref": "main", "sha": e.gh.Branch(e.owner, e.repo, "main"), "repo": repo}},
		}, http.StatusAccepted)
		return delivery
	}

	refused := closed("mallory")
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	e.eventually("the intake of the reader's close", func() bool {
		info, err := insp.GetTaskInfo(e.spec.Queue, "intake:"+refused)
		return err == nil && info.State == asynq.TaskStateCompleted
	})
	if !e.agentAlive("1.2") || e.runOf(1).Status != lifecycle.StatusRunning {
		t.Fatal("a reader's close stopped the run")
	}
	closed("alice")
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.2") })
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if stopped.ID != run.ID || stopped.StoppedBy != "alice" {
		t.Errorf("run %s stopped by %q, want alice", stopped.ID, stopped.StoppedBy)
	}
	if got := e.taskCommits(run.Branch); len(got) != 1 || got["1.1"] != 1 {
		t.Errorf("checkpoints after the close = %v, want only 1.1", got)
	}
}
