package jobs

import (
	"context"
	"testing"
)

// TestReaper: a running run whose branch lock nobody holds lost its worker and gets one continuation,
// however many workers sweep; a run whose lock is held, or that waits for a retry, is left alone.
func TestReaper(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	mk := func(id, branch string, status RunStatus) {
		t.Helper()
		if _, _, err := jh.store.Create(ctx, &Run{ID: id, Owner: "o", Repo: "r", Branch: branch, InstallationID: 7}); err != nil {
			t.Fatal(err)
		}
		if _, err := jh.store.Update(ctx, id, func(r *Run) error { r.Status, r.Jobs = status, 1; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	mk("dead", "akira/dead", StatusRunning)
	mk("alive", "akira/alive", StatusRunning)
	mk("waiting", "akira/waiting", StatusQueued)
	lk, err := jh.h.d.Locker.Acquire(ctx, BranchLockName("o", "r", "akira/alive"))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release(ctx)

	for sweep := range 3 {
		n, err := jh.h.Reap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[sweep == 0]; n != want {
			t.Fatalf("sweep %d continued %d runs, want %d", sweep, n, want)
		}
	}
	conts := queued[RunPayload](jh, TypeRun)
	if len(conts) != 1 || conts[0].RunID != "dead" || conts[0].Trigger != TriggerContinue {
		t.Fatalf("continuations = %+v, want one for the dead run", conts)
	}
	// Once the run stops running, the reaper forgets it.
	if _, err := jh.store.Update(ctx, "dead", func(r *Run) error { r.Status = StatusParked; return nil }); err != nil {
		t.Fatal(err)
	}
	ids, _ := jh.store.Running(ctx)
	if len(ids) != 1 || ids[0] != "alive" {
		t.Fatalf("running = %v, want [alive]", ids)
	}
}
