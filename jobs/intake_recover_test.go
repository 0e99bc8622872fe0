package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/jobstest"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/recovery"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// TestRecoverReplaysAcknowledgedComments: a recovery asks GitHub again, oldest first, for the comment
// deliveries Akira acknowledged before Redis lost its data, each marked recovered before the ask;
// nothing else (pushes, deleted comments, what failed and is the sweep's, what came after the loss,
// what is older than the window).
func TestRecoverReplaysAcknowledgedComments(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	since := time.Now()
	at := func(ago time.Duration) time.Time { return since.Add(-ago) }
	f := &fakeDeliveries{list: []ports.Delivery{ // newest first, as GitHub lists them
		{ID: 9, GUID: "after", Event: "issue_comment", Action: "created", StatusCode: 202, DeliveredAt: since.Add(time.Hour)},
		// GitHub's clock a little ahead of Akira's: still looked at.
		{ID: 11, GUID: "skewed", Event: "issue_comment", Action: "created", StatusCode: 202, DeliveredAt: since.Add(30 * time.Second)},
		{ID: 8, GUID: "edited", Event: "issue_comment", Action: "edited", StatusCode: 202, DeliveredAt: at(time.Minute)},
		{ID: 7, GUID: "push", Event: "push", StatusCode: 202, DeliveredAt: at(2 * time.Minute)},
		{ID: 6, GUID: "failed", Event: "issue_comment", Action: "created", StatusCode: 502, DeliveredAt: at(3 * time.Minute)},
		{ID: 5, GUID: "answer", Event: "issue_comment", Action: "created", StatusCode: 202, Redelivery: true, DeliveredAt: at(4 * time.Minute)},
		{ID: 4, GUID: "deleted", Event: "issue_comment", Action: "deleted", StatusCode: 202, DeliveredAt: at(5 * time.Minute)},
		{ID: 3, GUID: "answer", Event: "issue_comment", Action: "created", StatusCode: 0, DeliveredAt: at(6 * time.Minute)},
		{ID: 2, GUID: "ancient", Event: "issue_comment", Action: "created", StatusCode: 202, DeliveredAt: at(recovery.RecoverWindow + time.Hour)},
	}}
	// A button pressed on a check run is an answer too; a check run completing is not.
	f.list = append(f.list[:3], append([]ports.Delivery{
		{ID: 12, GUID: "button", Event: "check_run", Action: "requested_action", StatusCode: 202, DeliveredAt: at(150 * time.Second)},
		{ID: 13, GUID: "completed", Event: "check_run", Action: "completed", StatusCode: 202, DeliveredAt: at(160 * time.Second)},
	}, f.list[3:]...)...)
	// "kept" reached the worker and its intake task is still in Redis: it was not lost.
	f.list = append(f.list[:1], append([]ports.Delivery{{ID: 10, GUID: "kept", Event: "issue_comment", Action: "created", StatusCode: 202, DeliveredAt: at(30 * time.Second)}}, f.list[1:]...)...)
	if err := jh.h.d.Enqueuer.EnqueueIntake(ctx, withDefaults(queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: "kept"}, Event: "issue_comment",
		Body: &queue.CommentIntake{ID: 1, Number: 5, Author: "alice", Body: "/akira run"}})); err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Recover(ctx, f, jh.store, since, jh.h.recovery.IntakeLost())
	if err != nil {
		t.Fatal(err)
	}
	if res != (recovery.RecoverResult{Seen: 5, Kept: 1, Redelivered: 4}) || !slices.Equal(f.redelivered, []int64{5, 12, 8, 11}) {
		t.Errorf("recover = %+v, redelivered %v; want the answer (its newest attempt, 5), the button (12), the edit (8), the skewed one (11)", res, f.redelivered)
	}
	for guid, want := range map[string]bool{"answer": true, "button": true, "completed": false, "edited": true, "skewed": true, "kept": false, "push": false, "failed": false, "after": false, "ancient": false} {
		if _, got, err := jh.store.Recovered(ctx, guid); err != nil || got != want {
			t.Errorf("delivery %s marked recovered = %v (%v), want %v", guid, got, err, want)
		}
	}
	// An answer is placed by its first attempt: GitHub's first delivery of it.
	if got, _, _ := jh.store.Recovered(ctx, "answer"); !got.Equal(at(6 * time.Minute)) {
		t.Errorf("the answer is marked as given at %s, want its first attempt's %s", got, at(6*time.Minute))
	}
}

// TestCheckEpochQueuesOneRecoveryPerLoss: the first check writes the epoch and queues a recovery;
// later checks find it and do nothing; when Redis loses the key, the next check queues another.
func TestCheckEpochQueuesOneRecoveryPerLoss(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	now := time.Now()
	for i, want := range []bool{true, false, false} {
		got, err := jh.h.recovery.CheckEpoch(ctx, now.Add(time.Duration(i)*time.Millisecond))
		if err != nil || got != want {
			t.Fatalf("check %d = %v, %v; want %v", i, got, err, want)
		}
	}
	// Redis loses the epoch, and asynq's list of queues with it.
	if err := jh.store.Client().Del(ctx, jh.prefix+"epoch", "asynq:queues").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := jh.h.recovery.CheckEpoch(ctx, now.Add(time.Second)); err != nil || !got {
		t.Fatalf("check after the loss = %v, %v; want a recovery", got, err)
	}
	if got := queued[queue.RecoverPayload](jh, queue.TypeRecover); len(got) != 2 || got[0].Epoch == got[1].Epoch {
		t.Errorf("recoveries queued = %+v, want two of different epochs", got)
	}
	if qs, err := jh.insp.Queues(); err != nil || !slices.Contains(qs, jh.queue) {
		t.Errorf("after the loss the inspector knows the queues %v (%v), not %s", qs, err, jh.queue)
	}
}

// TestRecoveredIntakeActsOnlyOnAnswers: a delivery a recovery asked for acts only when it is an
// answer by someone who may give it, and says nothing either way (no reply, no reaction): what it
// had to say it said when it first came.
func TestRecoveredIntakeActsOnlyOnAnswers(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	jh.gh.Permissions["alice"], jh.gh.Permissions["mallory"] = ports.PermWrite, "read"
	cases := []struct {
		author, body string
		queued       bool
	}{
		{"alice", "/akira run", false},
		{"alice", "/akira status", false},
		{"mallory", "/akira retry try harder", false},
		{"alice", "/akira helpme", false},
		{"alice", "/akira retry say MAGIC-WORD", true},
	}
	for i, c := range cases {
		guid := "recovered-" + randomHex(t, 3)
		if err := jh.store.MarkRecovered(ctx, guid, time.Now()); err != nil {
			t.Fatal(err)
		}
		err := jh.intake(queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: guid}, Event: "issue_comment",
			Body: &queue.CommentIntake{ID: int64(500 + i), Number: 5, OnPullRequest: true, Author: c.author, Body: c.body}})
		if err != nil {
			t.Fatalf("%q by %s: %v", c.body, c.author, err)
		}
		resumes := queued[queue.ResumePayload](jh, queue.TypeResume)
		got := slices.ContainsFunc(resumes, func(p queue.ResumePayload) bool { return p.CommentID == int64(500+i) })
		if got != c.queued {
			t.Errorf("%q by %s: resume queued = %v, want %v", c.body, c.author, got, c.queued)
		}
		if got && !resumes[len(resumes)-1].Recovered {
			t.Errorf("%q: the resume is not marked recovered", c.body)
		}
	}
	// Buttons: Stop is no answer; Approve by a writer is, placed at the time the recovery kept.
	at := time.Now().Add(-time.Minute).UTC()
	for _, c := range []struct {
		decision runner.DecisionKind
		queued   bool
	}{{ports.StopDecision, false}, {runner.DecisionApprove, true}} {
		guid := "button-" + randomHex(t, 3)
		if err := jh.store.MarkRecovered(ctx, guid, at); err != nil {
			t.Fatal(err)
		}
		if err := jh.intake(queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: guid, Sender: "alice"}, Event: "check_run",
			Body: &queue.CheckRunIntake{ID: 77, RunID: "r1", TaskID: "1.2", Decision: c.decision, Number: 5}}); err != nil {
			t.Fatal(err)
		}
		resumes := queued[queue.ResumePayload](jh, queue.TypeResume)
		got := slices.ContainsFunc(resumes, func(p queue.ResumePayload) bool {
			return p.ByButton && p.Decision == c.decision && p.Recovered && p.AnsweredAt.Equal(at)
		})
		if got != c.queued {
			t.Errorf("button %s: recovered resume queued = %v, want %v (%+v)", c.decision, got, c.queued, resumes)
		}
	}
	if len(jh.gh.Reactions) != 0 || len(jh.gh.Comments) != 0 {
		t.Errorf("a recovered delivery spoke: reactions %v, comments %d", jh.gh.Reactions, len(jh.gh.Comments))
	}
	if got := queued[queue.RunPayload](jh, queue.TypeRun); len(got) != 0 {
		t.Errorf("a recovered /akira run started %d runs", len(got))
	}
}

// TestPendingAnswer: a recovered answer acts only when it is the first answer, by someone who may
// give it, after the run's latest escalation, which only Akira itself can have written.
func TestPendingAnswer(t *testing.T) {
	ctx := context.Background()
	escalation := func(f *jobstest.GitHub, round int) {
		_, _, _ = f.CreateComment(ctx, "o", "r", 5, "Task 1.2 failed.\n"+templates.EscalationMarker("r1", "1.2")+
			publish.EscalationRoundMarker("r1", "1.2", round))
	}
	type step func(f *jobstest.GitHub) int64 // returns the id of the answer under test when it posts it
	// press is a button pressed now: -1 marks it, the answer's time is the fake's clock then.
	press := func(f *jobstest.GitHub) int64 { return -1 }
	person := func(number int, author, body string) step {
		return func(f *jobstest.GitHub) int64 { f.AddPersonComment(number, author, body); return 0 }
	}
	answer := func(number int) step {
		return func(f *jobstest.GitHub) int64 {
			return f.AddPersonComment(number, "alice", "/akira retry say MAGIC-WORD")
		}
	}
	esc := func(round int) step { return func(f *jobstest.GitHub) int64 { escalation(f, round); return 0 } }
	cases := []struct {
		name  string
		steps []step
		want  bool
	}{
		{"the answer after the escalation", []step{esc(1), answer(5)}, true},
		{"an answer on the issue the run came from", []step{esc(1), answer(3)}, true},
		{"acted on, then the task escalated again", []step{esc(1), answer(5), esc(2)}, false},
		{"a writer answered first", []step{esc(1), person(5, "bob", "/akira skip"), answer(5)}, false},
		{"a reader's earlier answer does not count", []step{esc(1), person(5, "mallory", "/akira skip"), answer(5)}, true},
		{"talk is not an answer", []step{esc(1), person(5, "bob", "looks hard"), answer(5)}, true},
		{"a person quoting the marker is no escalation", []step{esc(1), answer(5),
			person(5, "mallory", "ha "+templates.EscalationMarker("r1", "1.2"))}, true},
		{"no escalation at all", []step{answer(5)}, false},
		{"an older escalation, then the answer", []step{esc(1), esc(2), answer(5)}, true},
		{"a button after the escalation", []step{esc(1), press}, true},
		{"a button, then the task escalated again", []step{esc(1), press, esc(2)}, false},
		{"a writer's reply before the button", []step{esc(1), person(5, "bob", "/akira skip"), press}, false},
		{"a reply after the button", []step{esc(1), press, person(5, "bob", "/akira skip")}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := jobstest.NewGitHub()
			f.Permissions["alice"], f.Permissions["bob"], f.Permissions["mallory"] = ports.PermWrite, ports.PermMaintain, "read"
			var id int64
			var pressed time.Time
			number := 0
			for _, s := range c.steps {
				got := s(f)
				if got == -1 {
					// The next comment id's time, as the fake gives comments times by id.
					f.Mu.Lock()
					f.NextID++
					pressed = (&jobstest.Comment{ID: f.NextID}).CreatedAt()
					f.Mu.Unlock()
					number = 5
					continue
				}
				if got != 0 {
					id = got
					for _, cm := range f.Comments {
						if cm.ID == got {
							number = cm.Number
						}
					}
				}
			}
			h := &Handler{}
			run := &lifecycle.Run{ID: "r1", Owner: "o", Repo: "r", PR: 5, Issue: 3}
			p := queue.ResumePayload{CommentID: id, Number: number, Decision: runner.DecisionRetry, Recovered: true}
			if !pressed.IsZero() {
				p.ByButton, p.AnsweredAt, p.RunID, p.TaskID = true, pressed, "r1", "1.2"
			}
			got, why, err := h.recovery.PendingAnswer(ctx, f, run, p)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("pending = %v (%s), want %v", got, why, c.want)
			}
			if !got && strings.TrimSpace(why) == "" {
				t.Error("no reason given for a replayed answer left alone")
			}
		})
	}
}
