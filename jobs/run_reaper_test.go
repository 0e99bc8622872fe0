package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// TestReaper: a running run whose branch lock nobody holds lost its worker and gets one continuation,
// however many workers sweep; a run whose lock is held, or that waits for a retry, is left alone.
func TestReaper(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	mk := func(id, branch string, status lifecycle.RunStatus) {
		t.Helper()
		if _, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: branch, InstallationID: 7}); err != nil {
			t.Fatal(err)
		}
		if _, err := jh.store.Update(ctx, id, func(r *lifecycle.Run) error { r.Status, r.Jobs = status, 1; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	mk("dead", "akira/dead", lifecycle.StatusRunning)
	mk("alive", "akira/alive", lifecycle.StatusRunning)
	mk("waiting", "akira/waiting", lifecycle.StatusQueued)
	lk, err := jh.h.d.Locker.Acquire(ctx, store.BranchLockName("o", "r", "akira/alive"))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release(ctx)

	for sweep := range 3 {
		n, err := jh.h.reaper.Reap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[sweep == 0]; n != want {
			t.Fatalf("sweep %d continued %d runs, want %d", sweep, n, want)
		}
	}
	conts := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(conts) != 1 || conts[0].RunID != "dead" || conts[0].Trigger != lifecycle.TriggerContinue {
		t.Fatalf("continuations = %+v, want one for the dead run", conts)
	}
	// Once the run stops running, the reaper forgets it.
	if _, err := jh.store.Update(ctx, "dead", func(r *lifecycle.Run) error { r.Status = lifecycle.StatusParked; return nil }); err != nil {
		t.Fatal(err)
	}
	ids, _ := jh.store.Running(ctx)
	if len(ids) != 1 || ids[0] != "alive" {
		t.Fatalf("running = %v, want [alive]", ids)
	}
}

// TestReaperWakesWhenALeaseLapses: a running run whose job's lease is held but no longer renewed (its
// worker died a moment ago) is continued when the lease lapses, not at the next round: the loop runs
// with an hour between rounds, and the continuation comes all the same.
func TestReaperWakesWhenALeaseLapses(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	if _, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "dying", Owner: "o", Repo: "r", Branch: "akira/dying", InstallationID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Update(ctx, "dying", func(r *lifecycle.Run) error { r.Status, r.Jobs = lifecycle.StatusRunning, 1; return nil }); err != nil {
		t.Fatal(err)
	}
	// The dead worker's lease, as its last renewal left it: nobody renews it again.
	key := jh.prefix + "lock:" + store.BranchLockName("o", "r", "akira/dying")
	if err := jh.store.Client().Set(ctx, key, "dead-token", 500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	loop, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() { jh.h.reaper.RunReaper(loop, time.Hour); close(ended) }()
	defer func() { cancel(); <-ended }()
	deadline := time.Now().Add(30 * time.Second)
	for len(queued[queue.RunPayload](jh, queue.TypeRun)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the lapsed lease was not noticed before the next round; log:\n%s", jh.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if conts := queued[queue.RunPayload](jh, queue.TypeRun); len(conts) != 1 || conts[0].RunID != "dying" {
		t.Errorf("continuations = %+v, want one of the dying run", conts)
	}
}
