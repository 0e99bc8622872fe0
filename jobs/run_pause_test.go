package jobs

import (
	"context"
	"github.com/akira-bot/akira/jobs/intake"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// TestPauseWhileWorkingThenResume: `/akira pause --now` while the agent works ends the job with the
// run paused by the commenter and its task pending; a second pause and a resume of a run that is
// not paused are answered without effect; `/akira resume` queues the continuation, whose job
// finishes the run.
func TestPauseWhileWorkingThenResume(t *testing.T) {
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
	if err := jh.intake(commentBy("alice", "/akira pause --now", 4, 901)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("paused run job = %v, want it to end cleanly", err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusPaused || run.PausedBy != "alice" || run.Task("1.1").Status != lifecycle.TaskStatusPending || run.Pause != nil {
		t.Fatalf("run = %s by %q, 1.1 %s, request %+v; want paused by alice with 1.1 pending", run.Status, run.PausedBy, run.Task("1.1").Status, run.Pause)
	}
	if replies := jh.gh.CommentsOn(4); len(replies) == 0 || !strings.Contains(replies[len(replies)-1], "Pausing run") {
		t.Errorf("replies = %q", replies)
	}

	// Pausing a paused run asks nothing; the reply says why.
	if err := jh.intake(commentBy("alice", "/akira pause", 4, 902)); err != nil {
		t.Fatal(err)
	}
	if replies := jh.gh.CommentsOn(4); !strings.Contains(replies[len(replies)-1], "nothing to pause") {
		t.Errorf("reply to a second pause = %q", replies[len(replies)-1])
	}

	if err := jh.intake(commentBy("alice", "/akira resume", 4, 903)); err != nil {
		t.Fatal(err)
	}
	resumed, _ := jh.store.Get(ctx, run.ID)
	if resumed.Status != lifecycle.StatusQueued || len(resumed.Outbox) != 0 {
		t.Fatalf("after /akira resume: %s, outbox %v; want queued with its effects performed", resumed.Status, resumed.Outbox)
	}
	next := queued[queue.RunPayload](jh, queue.TypeRun)
	var cont *queue.RunPayload
	for i := range next {
		if next[i].RunID == run.ID {
			cont = &next[i]
		}
	}
	if cont == nil {
		t.Fatalf("no continuation queued for run %s: %+v", run.ID, next)
	}
	if err := jh.runJob(*cont); err != nil {
		t.Fatal(err)
	}
	if end, _ := jh.store.Get(ctx, run.ID); end.Status != lifecycle.StatusSucceeded {
		t.Fatalf("after the continuation: %s", end.Status)
	}
	if err := jh.intake(commentBy("alice", "/akira resume", 4, 904)); err != nil {
		t.Fatal(err)
	}
	if replies := jh.gh.CommentsOn(4); !strings.Contains(replies[len(replies)-1], "nothing to resume") {
		t.Errorf("reply to a resume of a finished run = %q", replies[len(replies)-1])
	}
}

// TestPauseOfAQueuedRunBeforeItsClone: a run paused while it waits in the queue pauses when its job
// starts, before the agent is ever called; the Controller's resume (the API's) queues it again and a
// paused run takes an abort.
func TestPauseOfAQueuedRunBeforeItsClone(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	ctx := context.Background()
	p := issueRun(4)
	mark := stopAgent(t)
	r := newRun(queue.RunIDFor(p.DeliveryID), "akira/issue-4")
	r.Owner, r.Repo, r.InstallationID, r.CloneURL, r.Base = "o", "r", 7, jh.gh.Info.CloneURL, "main"
	if _, _, err := jh.store.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	c := &intake.Controller{Store: jh.store, Enqueuer: jh.h.d.Enqueuer}
	if res, err := c.Control(ctx, intake.ControlRequest{RunID: r.ID, Action: intake.ActionPause, Token: store.Token{Name: "ops"}, Via: "API", RequestID: "p1"}); err != nil || res != "pause requested after the current task" {
		t.Fatalf("pause = %q, %v", res, err)
	}
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the agent was called for a run paused in the queue")
	}
	run, _ := jh.store.Get(ctx, r.ID)
	if run.Status != lifecycle.StatusPaused || run.PausedBy != "ops (API)" {
		t.Fatalf("run = %s by %q, want paused by ops (API)", run.Status, run.PausedBy)
	}
	if _, err := c.Control(ctx, intake.ControlRequest{RunID: r.ID, Action: intake.ActionPause, Token: store.Token{Name: "ops"}, Via: "API", RequestID: "p2"}); err == nil {
		t.Error("pausing a paused run must be refused")
	}
	if res, err := c.Control(ctx, intake.ControlRequest{RunID: r.ID, Action: intake.ActionResume, Token: store.Token{Name: "ops"}, Via: "API", RequestID: "r1"}); err != nil || res != "resumed" {
		t.Fatalf("resume = %q, %v", res, err)
	}
	if got := queued[queue.PublishPayload](jh, queue.TypePublish); len(got) != 1 || got[0].RunID != r.ID {
		t.Errorf("publish jobs after the resume = %+v, want one for the run", got)
	}
	if _, err := c.Control(ctx, intake.ControlRequest{RunID: r.ID, Action: intake.ActionResume, Token: store.Token{Name: "ops"}, Via: "API", RequestID: "r2"}); err == nil {
		t.Error("resuming a queued run that was not asked to pause must be refused")
	}

	// Paused again, then aborted: a paused run ends at once, no job needed.
	if _, asked, err := jh.store.RequestPause(ctx, r.ID, "ops", true); err != nil || !asked {
		t.Fatalf("RequestPause = %v, %v", asked, err)
	}
	if err := jh.runJob(p); err != nil {
		t.Fatal(err)
	}
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{Version: queue.PayloadVersion, DeliveryID: "abort-1", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"},
		Number: 4, RunID: r.ID, Decision: "abort"}); err != nil {
		t.Fatal(err)
	}
	if end, _ := jh.store.Get(ctx, r.ID); end.Status != lifecycle.StatusAborted || end.AbortedBy != "alice" {
		t.Fatalf("after abort: %s by %q", end.Status, end.AbortedBy)
	}
}
