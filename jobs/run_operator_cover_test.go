package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/gittest"
)

// commentBy is a command comment with its own id, so replies and reactions of several commands on one
// issue do not mix.
func commentBy(author, body string, number int, id int64) queue.IntakePayload {
	p := comment(author, body, number)
	p.Body.(*queue.CommentIntake).ID = id
	return p
}

func TestIntakeOperatorCommands(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.Permissions["alice"] = "write"
	ctx := context.Background()

	// /akira stop where there is no run says so, and asks nothing of anyone.
	if err := jh.intake(commentBy("alice", "/akira stop", 4, 601)); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(4); len(got) != 1 {
		t.Fatalf("replies on #4 = %q, want one", got)
	}

	// /akira stop on a working run writes the request into its record, naming who asked.
	controlRun(t, jh.store, "busy", lifecycle.StatusRunning)
	if err := jh.intake(commentBy("alice", "/akira stop", 9, 602)); err != nil {
		t.Fatal(err)
	}
	if r, _ := jh.store.Get(ctx, "busy"); r.Stop == nil || r.Stop.By != "alice" || r.Stop.Abort {
		t.Errorf("stop request = %+v, want one by alice", r.Stop)
	}
	if got := jh.gh.CommentsOn(9); len(got) != 1 || !strings.Contains(got[0], "busy") {
		t.Errorf("replies on #9 = %q, want one naming run busy", got)
	}

	// /akira remember keeps a lesson; /akira forget removes it by the id the reply gave.
	if err := jh.intake(commentBy("alice", "/akira remember always run gofmt", 4, 603)); err != nil {
		t.Fatal(err)
	}
	ls, err := jh.store.Lessons(7, "o", "r").List(ctx)
	if err != nil || len(ls) != 1 || ls[0].Text != "always run gofmt" || ls[0].Author != "alice" {
		t.Fatalf("lessons = %+v, %v; want alice's one", ls, err)
	}
	replies := jh.gh.CommentsOn(4)
	if !strings.Contains(replies[len(replies)-1], ls[0].ID) {
		t.Errorf("remember reply %q does not name lesson %s", replies[len(replies)-1], ls[0].ID)
	}
	if err := jh.intake(commentBy("alice", "/akira forget "+ls[0].ID, 4, 604)); err != nil {
		t.Fatal(err)
	}
	if ls, _ := jh.store.Lessons(7, "o", "r").List(ctx); len(ls) != 0 {
		t.Errorf("lessons after forget = %+v", ls)
	}

	// /akira rollback and /akira plan are handed to jobs with what the comment said.
	if err := jh.intake(commentBy("alice", "/akira rollback 1.2 --retry keep the old API", 4, 605)); err != nil {
		t.Fatal(err)
	}
	rbs := queued[queue.RollbackPayload](jh, queue.TypeRollback)
	if len(rbs) != 1 || rbs[0].TaskID != "1.2" || !rbs[0].Retry || rbs[0].Guidance != "keep the old API" || rbs[0].Sender != "alice" || rbs[0].CommentID != 605 {
		t.Errorf("rollback jobs = %+v", rbs)
	}
	if err := jh.intake(commentBy("alice", "/akira plan small steps", 4, 606)); err != nil {
		t.Fatal(err)
	}
	plans := queued[queue.PlanPayload](jh, queue.TypePlan)
	if len(plans) != 1 || plans[0].Number != 4 || plans[0].Guidance != "small steps" || plans[0].FromRun {
		t.Errorf("plan jobs = %+v", plans)
	}
	// On a pull request /akira plan and /akira fix are answered with where they belong.
	for i, body := range []string{"/akira plan", "/akira fix"} {
		p := commentBy("alice", body, 12, int64(610+i))
		p.Body.(*queue.CommentIntake).OnPullRequest = true
		if err := jh.intake(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := jh.gh.CommentsOn(12); len(got) != 2 {
		t.Errorf("replies on pull request 12 = %q, want two", got)
	}
	if plans := queued[queue.PlanPayload](jh, queue.TypePlan); len(plans) != 1 {
		t.Errorf("a plan was queued from a pull request: %+v", plans)
	}
}

func (jh *jobsHarness) rollbackJob(p queue.RollbackPayload) error {
	jh.t.Helper()
	task, err := queue.TaskOptions{}.NewRollbackTask(p)
	if err != nil {
		jh.t.Fatal(err)
	}
	return jh.h.rollbacks.HandleRollback(context.Background(), task)
}

func TestRollbackJobRevertsATaskAndRefusesWhatItCannot(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	ctx := context.Background()
	rb := func(task string, id int64) queue.RollbackPayload {
		return queue.RollbackPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-rb", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, Number: 4, CommentID: id, TaskID: task}
	}

	// Nothing to roll back yet.
	if err := jh.rollbackJob(rb("1.1", 700)); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(4); len(got) != 1 {
		t.Fatalf("replies = %q, want the refusal", got)
	}

	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run = %+v, %v", run, err)
	}
	// A task the run does not have is refused by name.
	if err := jh.rollbackJob(rb("9.9", 701)); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(4); len(got) != 2 || !strings.Contains(got[1], "9.9") {
		t.Fatalf("replies = %q, want a refusal naming 9.9", got)
	}

	if err := jh.rollbackJob(rb("1.2", 702)); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	// The branch gets a revert of 1.2's checkpoint: its file is gone, 1.1's stays.
	gittest.Git(t, repo.Work, "fetch", "-q", repo.Remote, "akira/issue-4")
	files := gittest.Git(t, repo.Work, "ls-tree", "--name-only", "FETCH_HEAD")
	if !strings.Contains(files, "done-1.1.txt") || strings.Contains(files, "done-1.2.txt") {
		t.Errorf("branch files after rollback = %q, want done-1.1.txt only", files)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Status != lifecycle.StatusStopped || run.Task("1.2").Status != lifecycle.TaskStatusPending || run.Task("1.1").Status != lifecycle.TaskStatusPassed {
		t.Errorf("run after rollback = %s, 1.1 %s, 1.2 %s; want stopped with 1.2 pending", run.Status, run.Task("1.1").Status, run.Task("1.2").Status)
	}
	replies := jh.gh.CommentsOn(4)
	if last := replies[len(replies)-1]; !strings.Contains(last, "1.2") || !strings.Contains(last, "alice") {
		t.Errorf("rollback reply = %q, want it to name 1.2 and alice", last)
	}
	// The same command delivered again does nothing more.
	n := len(jh.gh.CommentsOn(4))
	if err := jh.rollbackJob(rb("1.2", 702)); err != nil {
		t.Fatal(err)
	}
	if got := len(jh.gh.CommentsOn(4)); got != n {
		t.Errorf("a redelivered rollback replied again (%d comments, had %d)", got, n)
	}
}

func TestRollbackPayloadValidate(t *testing.T) {
	if _, err := (queue.TaskOptions{}).NewRollbackTask(queue.RollbackPayload{}); err == nil || !strings.Contains(err.Error(), "rollback") {
		t.Errorf("NewRollbackTask of an empty payload = %v, want an error", err)
	}
	p := queue.RollbackPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d1", InstallationID: 7, Owner: "o", Repo: "r"}, Number: 4, TaskID: "1.1"}
	if p.JobID() == (queue.RollbackPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d1"}, CommentID: 5}).JobID() {
		t.Error("a delivery and a comment share a job id")
	}
	task, err := queue.TaskOptions{}.NewRollbackTask(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := queue.DecodeRollbackPayload(task)
	if err != nil || got.TaskID != "1.1" || got.Number != 4 {
		t.Errorf("DecodeRollbackPayload = %+v, %v", got, err)
	}
}

// stopAgent blocks on its first task until killed, after leaving a mark the test waits for; later
// calls work like agentScript.
func stopAgent(t *testing.T) (mark string) {
	t.Helper()
	dir := t.TempDir()
	mark = filepath.Join(dir, "started")
	script := filepath.Join(dir, "agent.sh")
	body := "#!/bin/sh\nset -eu\nif [ ! -e '" + mark + "' ]; then touch '" + mark + "'; sleep 120; fi\n" +
		`echo "$AKIRA_TASK_ID" > "done-$AKIRA_TASK_ID.txt"` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AKIRA_TEST_AGENT", script)
	return mark
}

func TestStopWhileWorkingThenRunContinues(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Permissions["alice"] = "write"
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	mark := stopAgent(t)
	ctx := context.Background()

	done := make(chan error, 1)
	go func() { done <- jh.runJob(issueRun(4)) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never started; log:\n%s", jh.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The command finds the working run through the issue.
	if err := jh.intake(commentBy("alice", "/akira stop", 4, 801)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("stopped run job = %v, want it to end cleanly", err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusStopped || run.StoppedBy != "alice" || run.Task("1.1").Status == lifecycle.TaskStatusPassed {
		t.Fatalf("run = %s by %q, 1.1 %s; want stopped by alice before 1.1 was done", run.Status, run.StoppedBy, run.Task("1.1").Status)
	}

	// `/akira run` on the issue continues the same run instead of starting another.
	p := issueRun(4)
	p.DeliveryID, p.CommentID = "d-again", 802
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	again, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || again.ID != run.ID || again.Status != lifecycle.StatusSucceeded {
		t.Fatalf("after /akira run: run %s status %s (%v); want run %s succeeded", again.ID, again.Status, err, run.ID)
	}
	if runs, _ := jh.store.Runs(ctx, store.RunFilter{Repo: "o/r"}); len(runs) != 1 {
		t.Errorf("runs of o/r = %d, want the one continued", len(runs))
	}
}

func TestStopOfAQueuedRunEndsItsJob(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	ctx := context.Background()
	// The run exists and waits in the queue when the abort comes.
	p := issueRun(4)
	stopAgent(t) // the first task would hang: the job must not start it
	r := newRun(queue.RunIDFor(p.DeliveryID), "akira/issue-4")
	r.Owner, r.Repo, r.InstallationID, r.CloneURL, r.Base = "o", "r", 7, jh.gh.Info.CloneURL, "main"
	if _, _, err := jh.store.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, asked, err := jh.store.RequestStop(ctx, r.ID, "mona", true); err != nil || !asked {
		t.Fatalf("RequestStop = %v, %v", asked, err)
	}
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	run, _ := jh.store.Get(ctx, r.ID)
	if run.Status != lifecycle.StatusAborted || run.AbortedBy != "mona" {
		t.Errorf("run = %s by %q, want aborted by mona", run.Status, run.AbortedBy)
	}
}

func TestBudgetRaiseContinuesARunParkedForItsBudget(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	ctx := context.Background()
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || run.Status != lifecycle.StatusParked {
		t.Fatalf("run = %+v, %v; want parked", run, err)
	}
	// A raise where the run waits for another reason changes nothing: the command starts no second run
	// either (its delivery is the run's own).
	if runs.ParkedForBudget(run) {
		t.Fatal("a run parked for a failed verification counts as parked for its budget")
	}
	// Parked because its budget is spent, as the engine would have it.
	if _, err := jh.store.Update(ctx, run.ID, func(r *lifecycle.Run) error {
		for i := range r.Parked {
			r.Parked[i].Reason = runner.ReasonBudget
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := roadmapRun(4)
	p.DeliveryID, p.CommentID, p.BudgetUSD, p.Sender = "d-budget", 901, 7.5, "mona"
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Budget.CostUSD != 7.5 || run.AnsweredBy != "mona" {
		t.Errorf("run budget %v answered by %q, want 7.5 by mona", run.Budget.CostUSD, run.AnsweredBy)
	}
	// 1.2 was retried (and failed again): the run is parked once more, for its verification.
	if run.Status != lifecycle.StatusParked || len(run.Parked) != 1 || run.Parked[0].Reason == runner.ReasonBudget {
		t.Errorf("run after the raise = %s parked %+v", run.Status, run.Parked)
	}
}

// TestRollbackRefusesARunThatIsNotFinished: a run that works, waits for a decision or was aborted has
// nothing to roll back yet (or any more); the reply says which, and the branch is not touched.
func TestRollbackRefusesARunThatIsNotFinished(t *testing.T) {
	for _, tc := range []struct {
		status lifecycle.RunStatus
		want   string // the way forward the reply names
	}{
		{lifecycle.StatusQueued, "`/akira stop` first"},
		{lifecycle.StatusRunning, "`/akira stop` first"},
		{lifecycle.StatusParked, "needs a decision"},
		{lifecycle.StatusAborted, "start a new one with `/akira run`"},
	} {
		status := tc.status
		t.Run(string(status), func(t *testing.T) {
			jh := newJobsHarness(t)
			controlRun(t, jh.store, "r-"+string(status), status)
			p := queue.RollbackPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-rb", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, Number: 9, CommentID: 5, TaskID: "1.1"}
			if err := jh.rollbackJob(p); err != nil {
				t.Fatal(err)
			}
			got := jh.gh.CommentsOn(9)
			if len(got) != 1 || !strings.Contains(got[0], "r-"+string(status)) || !strings.Contains(got[0], tc.want) {
				t.Fatalf("replies = %q, want one refusal naming the run and %q", got, tc.want)
			}
			for _, e := range jh.gh.Effects() {
				if !strings.HasPrefix(e, "comment #9: ") {
					t.Errorf("effect %q besides the reply", e)
				}
			}
			if r, _ := jh.store.Get(context.Background(), "r-"+string(status)); r.Status != status {
				t.Errorf("run status %s after a refused rollback, want %s", r.Status, status)
			}
		})
	}
}
