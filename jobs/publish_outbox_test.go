package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// TestEffectsReplayedOnceAfterCrash: for every durable transition, the worker dies right after the
// transition is written (before any effect), or after performing the first effect but before
// recording it; recovery (the relay, then its publish job, run twice as by two workers) applies every
// effect, and each shows on GitHub once: one summary comment, one reply, one continuation, the check
// runs concluded.
func TestEffectsReplayedOnceAfterCrash(t *testing.T) {
	retry := lifecycle.Decision{Key: "resume:comment:1", TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, By: "carol"}}
	abort := lifecycle.Decision{Key: "resume:comment:2", TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionAbort, By: "carol"}}
	cases := []struct {
		name  string
		from  lifecycle.RunStatus
		event lifecycle.Event
		// concluded are the tasks whose check runs must end with conclusion.
		concluded  []string
		conclusion string
		continued  int
		reply      bool
		closed     bool
	}{
		{name: "decided retry", from: lifecycle.StatusParked, event: lifecycle.Decided{Decision: retry}, continued: 1},
		{name: "decided abort", from: lifecycle.StatusParked, event: lifecycle.Decided{Decision: abort}, concluded: []string{"1.2"}, conclusion: ports.ConclusionCancelled},
		{name: "stopped", from: lifecycle.StatusRunning, event: lifecycle.Stopped{}, concluded: []string{"1.1"}, conclusion: ports.ConclusionCancelled},
		{name: "taken away", from: lifecycle.StatusRunning, event: lifecycle.TakenAway{Why: "pull request #7 was closed"},
			concluded: []string{"1.1"}, conclusion: ports.ConclusionCancelled, reply: true},
		{name: "failed", from: lifecycle.StatusRunning, event: lifecycle.Failed{Message: "boom"}, closed: true},
		{name: "engine finished", from: lifecycle.StatusRunning, event: lifecycle.EngineFinished{Status: lifecycle.StatusSucceeded,
			Outcome: runner.Outcome{Status: runner.StatusSucceeded}}},
		{name: "rolled back", from: lifecycle.StatusSucceeded, event: lifecycle.RolledBack{Reverted: map[string]string{"1.1": "rolled back"},
			Texts: map[string]string{"1.1": "reverted"}, By: "frank", Task: "1.1", Key: "rollback:comment:3", Retry: true},
			concluded: []string{"1.1"}, conclusion: ports.ConclusionNeutral, continued: 1},
	}
	for _, tc := range cases {
		for _, performedFirst := range []bool{false, true} {
			name := tc.name + "/before any effect"
			if performedFirst {
				name = tc.name + "/after the first effect"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				jh := newJobsHarness(t)
				run := crashFixture(t, jh, tc.from)

				// The transition is written; the worker dies before its effects.
				run, effects, err := jh.store.Apply(ctx, run.ID, tc.event)
				if err != nil {
					t.Fatal(err)
				}
				if len(run.Outbox) == 0 || len(run.Outbox) != len(effects) {
					t.Fatalf("outbox = %+v, effects %+v", run.Outbox, effects)
				}
				if performedFirst {
					gh, _ := jh.gh.Installations().Installation(ctx, 7)
					if err := jh.h.pub.Perform(ctx, gh, run, run.Outbox[0]); err != nil {
						t.Fatal(err)
					}
				}

				// Recovery: every worker's relay finds the outbox; two of them publish it.
				for range 2 {
					if _, err := jh.h.pub.Relay(ctx, 0); err != nil {
						t.Fatal(err)
					}
					for _, p := range queued[queue.PublishPayload](jh, queue.TypePublish) {
						task, err := queue.TaskOptions{}.NewPublishTask(p)
						if err != nil {
							t.Fatal(err)
						}
						if err := jh.h.pub.HandlePublish(ctx, asynq.NewTask(queue.TypePublish, task.Payload())); err != nil {
							t.Fatal(err)
						}
					}
				}

				run, err = jh.store.Get(ctx, run.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(run.Outbox) != 0 {
					t.Fatalf("effects left: %+v", run.Outbox)
				}
				if left, _ := jh.store.LeftEffects(ctx, 0); len(left) != 0 {
					t.Fatalf("the relay still lists %v", left)
				}
				summaries := 0
				for _, body := range jh.gh.CommentsOn(7) {
					if strings.Contains(body, templates.SummaryMarker(run.ID)) {
						summaries++
					}
				}
				if summaries != 1 {
					t.Fatalf("%d summary comments, want 1; effects %v", summaries, jh.gh.Effects())
				}
				if !strings.Contains(jh.gh.CommentsOn(7)[0], run.Status.Label()) {
					t.Errorf("the summary does not say the run is %s: %s", run.Status, jh.gh.CommentsOn(7)[0])
				}
				for _, id := range tc.concluded {
					tk := run.Task(id)
					cr := jh.gh.CheckRuns[tk.CheckRunID]
					if cr.Conclusion != tc.conclusion || !tk.CheckRunDone {
						t.Errorf("check run of %s: %+v (done %v), want %s", id, cr, tk.CheckRunDone, tc.conclusion)
					}
				}
				if n := len(queued[queue.RunPayload](jh, queue.TypeRun)); n != tc.continued {
					t.Errorf("%d continuations queued, want %d", n, tc.continued)
				}
				replies := len(jh.gh.CommentsOn(5))
				if tc.reply != (replies == 1) || replies > 1 {
					t.Errorf("%d replies on the issue, want reply=%v", replies, tc.reply)
				}
				if closed := slices.Contains(jh.gh.Effects(), "close pull request #7"); closed != tc.closed {
					t.Errorf("pull request closed = %v, want %v", closed, tc.closed)
				}
			})
		}
	}
}

// crashFixture stores a run in state from, with a running task 1.1 whose check run is open and an
// escalated task 1.2 parked, on pull request #7 of issue #5.
func crashFixture(t *testing.T, jh *jobsHarness, from lifecycle.RunStatus) *lifecycle.Run {
	t.Helper()
	ctx := context.Background()
	jh.gh.Pulls[7] = &ports.PullRequest{Number: 7, Draft: true, HeadRef: "akira/issue-5"}
	open, _, err := jh.gh.CreateCheckRun(ctx, "o", "r", ports.CheckRun{Name: "akira: 1.1 one", Status: ports.CheckInProgress})
	if err != nil {
		t.Fatal(err)
	}
	parked, _, err := jh.gh.CreateCheckRun(ctx, "o", "r", ports.CheckRun{Name: "akira: 1.2 two", Status: ports.CheckInProgress})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "crash-" + randomHex(t, 3), Owner: "o", Repo: "r", InstallationID: 7,
		Trigger: lifecycle.TriggerIssue, Branch: "akira/issue-5", Base: "main", Issue: 5, PR: 7, OpenedPR: true, Sender: "alice",
		Tasks: []*lifecycle.TaskState{
			{ID: "1.1", Title: "one", Status: lifecycle.TaskStatusRunning, CheckRunID: open},
			{ID: "1.2", Title: "two", Status: lifecycle.TaskStatusEscalated, CheckRunID: parked, CheckRunDone: true},
		},
		Parked: []lifecycle.Parked{{TaskID: "1.2"}},
		Stop:   &lifecycle.StopRequest{By: "bob"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Update(ctx, run.ID, func(r *lifecycle.Run) error { r.Status = from; return nil }); err != nil {
		t.Fatal(err)
	}
	return run
}
