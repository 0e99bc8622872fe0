package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
)

func newTestFair(t *testing.T, cfg config.Fair, workers int) *fair.Gate {
	t.Helper()
	rdb, prefix := testRedis(t)
	return fair.New(rdb, prefix, cfg, workers)
}

func fairRun(inst int64, repo, delivery string) queue.RunPayload {
	owner, name, _ := strings.Cut(repo, "/")
	return queue.RunPayload{TaskHeader: queue.TaskHeader{Version: queue.PayloadVersion, DeliveryID: delivery, InstallationID: inst, Owner: owner, Repo: name}, Trigger: lifecycle.TriggerIssue, Number: 1}
}

// TestSlotWaitIsNotAFailure: a run job the gate makes wait ends without counting as a failure, and
// asynq tries it again after the gate's own delay.
func TestSlotWaitIsNotAFailure(t *testing.T) {
	f := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1}, 2)
	ctx := context.Background()
	if err := f.Acquire(ctx, fairRun(1, "a/x", "a1").Ticket()); err != nil {
		t.Fatal(err)
	}
	err := f.Acquire(ctx, fairRun(1, "a/x", "a2").Ticket())
	w, ok := errors.AsType[*fair.SlotWaitError](err)
	if !ok {
		t.Fatalf("second run of a capped installation: %v, want to wait", err)
	}
	if IsFailure(err) || RetryDelay(0, err, nil) != w.Delay {
		t.Fatalf("a wait must not count as a failure and must retry after its own delay: failure %v, delay %s vs %s",
			IsFailure(err), RetryDelay(0, err, nil), w.Delay)
	}
	if paused := f.Pause(ctx, 1, time.Now().Add(time.Minute)); paused != nil {
		t.Fatal(paused)
	}
	if w, ok := errors.AsType[*fair.SlotWaitError](f.Paused(ctx, 1)); !ok || IsFailure(w) {
		t.Fatalf("a paused installation's job: %v, want a wait that is not a failure", w)
	}
}

// TestTicketOfARunPayload: the gate keys a run job by its task id and a run by its id, derived from
// the delivery when the payload has none (a new run), so a continuation keeps its run's slot.
func TestTicketOfARunPayload(t *testing.T) {
	p := fairRun(7, "octo/demo", "d1")
	if got := p.Ticket(); got != (fair.Ticket{JobID: p.JobID(), RunID: queue.RunIDFor("d1"), Installation: 7, Repo: "octo/demo", Number: 1}) {
		t.Errorf("ticket of a new run = %+v", got)
	}
	cont := p
	cont.DeliveryID, cont.RunID = "continue:x", "r-1"
	if got := cont.Ticket(); got.RunID != "r-1" || got.JobID != "run:continue:x" {
		t.Errorf("ticket of a continuation = %+v", got)
	}
}

// TestFairForgetsVanishedTasks: a listed run whose asynq task is gone (deleted by hand) leaves the
// line; one whose task is there stays.
func TestFairForgetsVanishedTasks(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	f := fair.New(rdb, prefix, config.Fair{}, 2)
	f.TaskQueue = "akira-fair-test-" + randomHex(t, 4)
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(f.TaskQueue, true) })
	enq := queue.NewEnqueuer(client, queue.TaskOptions{Queue: f.TaskQueue}).WithFair(f)
	kept, gone := fairRun(1, "a/x", "kept"), fairRun(1, "a/x", "gone")
	for _, p := range []queue.RunPayload{kept, gone} {
		if err := enq.EnqueueRun(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := insp.DeleteTask(f.TaskQueue, gone.JobID()); err != nil {
		t.Fatal(err)
	}
	if err := f.Forget(ctx, insp); err != nil {
		t.Fatal(err)
	}
	q, err := f.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Installations) != 1 || len(q.Installations[0].Waiting) != 1 || q.Installations[0].Waiting[0].Task != kept.JobID() {
		t.Fatalf("the line after forgetting: %+v", q.Installations)
	}
}

// TestFairDefaultQueueIsTheRunQueue: the gate looks for run tasks on the queue they are put on.
func TestFairDefaultQueueIsTheRunQueue(t *testing.T) {
	if fair.DefaultTaskQueue != queue.Queue {
		t.Errorf("fair.DefaultTaskQueue = %q, want jobs.Queue %q", fair.DefaultTaskQueue, queue.Queue)
	}
}
