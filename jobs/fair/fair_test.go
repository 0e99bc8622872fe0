package fair

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/config"
)

// fairClock is a clock the test moves.
type fairClock struct{ t time.Time }

func (c *fairClock) now() time.Time          { return c.t }
func (c *fairClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestFair(t *testing.T, cfg config.Fair, workers int) (*Gate, *fairClock) {
	t.Helper()
	rdb, prefix := testRedis(t)
	f := New(rdb, prefix, cfg, workers)
	clock := &fairClock{t: time.Now()}
	f.Now = clock.now
	return f, clock
}

// fairRun is the run job a delivery starts on repo, as queue.RunPayload.Ticket makes it.
func fairRun(inst int64, repo, delivery string) Ticket {
	return Ticket{JobID: "run:" + delivery, RunID: "run-" + delivery, Installation: inst, Repo: repo, Number: 1}
}

// mustWait asserts that p is refused, for a reason containing why, and returns the refusal.
func mustWait(t *testing.T, f *Gate, p Ticket, why string) *SlotWaitError {
	t.Helper()
	err := f.Acquire(context.Background(), p)
	w, ok := errors.AsType[*SlotWaitError](err)
	if !ok {
		t.Fatalf("%s: got %v, want to wait (%s)", p.JobID, err, why)
	}
	if !strings.Contains(w.Reason, why) {
		t.Fatalf("%s waits because %q, want %q", p.JobID, w.Reason, why)
	}
	return w
}

func mustGrant(t *testing.T, f *Gate, p Ticket) {
	t.Helper()
	if err := f.Acquire(context.Background(), p); err != nil {
		t.Fatalf("%s: %v, want a slot", p.JobID, err)
	}
}

func release(t *testing.T, f *Gate, p Ticket) {
	t.Helper()
	if _, err := f.run(context.Background(), fairReleaseScript, entryOf(p).Run); err != nil {
		t.Fatal(err)
	}
}

// renew is what Hold does on its ticker, for tests that move the clock past a lease.
func renew(t *testing.T, f *Gate, p Ticket) {
	t.Helper()
	if _, err := f.run(context.Background(), fairRenewScript, entryOf(p).Run, LeaseTTL.Milliseconds(), "{}"); err != nil {
		t.Fatal(err)
	}
}

func TestFairCapIsHalfTheWorkersByDefault(t *testing.T) {
	f, _ := newTestFair(t, config.Fair{}, 4)
	a := func(i int) Ticket { return fairRun(1, "a/x", fmt.Sprintf("a%d", i)) }
	mustGrant(t, f, a(1))
	mustGrant(t, f, a(2))
	mustWait(t, f, a(3), "cap of 2")
	// Another installation is not held back by the first one's backlog.
	mustGrant(t, f, fairRun(2, "b/y", "b1"))
	// A slot granted is kept by a retry of the same job.
	mustGrant(t, f, a(1))
	release(t, f, a(1))
	mustGrant(t, f, a(3))
}

func TestFairCapFromConfig(t *testing.T) {
	f, _ := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1, Installations: map[int64]int{7: 3}}, 8)
	mustGrant(t, f, fairRun(1, "a/x", "a1"))
	mustWait(t, f, fairRun(1, "a/x", "a2"), "cap of 1")
	for i := range 3 {
		mustGrant(t, f, fairRun(7, "big/x", fmt.Sprintf("big%d", i)))
	}
	mustWait(t, f, fairRun(7, "big/x", "big3"), "cap of 3")
}

func TestFairLeastRecentlyServedGoesFirst(t *testing.T) {
	ctx := context.Background()
	f, clock := newTestFair(t, config.Fair{}, 2)
	// A has used ten minutes of worker time; B and C none.
	a1 := fairRun(1, "a/x", "a1")
	mustGrant(t, f, a1)
	clock.advance(10 * time.Minute)
	release(t, f, a1)
	// C holds one of the two workers; A and B both wait for the other.
	mustGrant(t, f, fairRun(3, "c/z", "c1"))
	a2, b1 := fairRun(1, "a/x", "a2"), fairRun(2, "b/y", "b1")
	for _, p := range []Ticket{a2, b1} {
		if err := f.List(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// A's run reaches a worker first (asynq's order) but B used less: the slot is left for B.
	mustWait(t, f, a2, "used less")
	mustGrant(t, f, b1)
	mustWait(t, f, a2, "every worker is busy")

	// Time used is forgotten with the half-life: hours later A is as fresh as anyone.
	clock.advance(10 * time.Hour)
	release(t, f, b1)
	mustGrant(t, f, a2)
}

func TestFairRepositoriesShareAnInstallation(t *testing.T) {
	ctx := context.Background()
	f, clock := newTestFair(t, config.Fair{MaxRunsPerInstallation: 2}, 4)
	busy1, busy2, quiet := fairRun(1, "o/busy", "busy1"), fairRun(1, "o/busy", "busy2"), fairRun(1, "o/quiet", "quiet1")
	mustGrant(t, f, busy1)
	clock.advance(5 * time.Minute)
	renew(t, f, busy1)
	if err := f.List(ctx, busy2); err != nil {
		t.Fatal(err)
	}
	if err := f.List(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	// One slot left in the installation: the repository that has used none gets it, although
	// the busy one's run was queued first.
	mustWait(t, f, busy2, "go first")
	mustGrant(t, f, quiet)
	mustWait(t, f, busy2, "cap of 2")
}

func TestFairSameRepositoryInOrder(t *testing.T) {
	ctx := context.Background()
	f, _ := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1}, 4)
	first, second := fairRun(1, "o/r", "first"), fairRun(1, "o/r", "second")
	for _, p := range []Ticket{first, second} {
		if err := f.List(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mustWait(t, f, second, "older runs")
	mustGrant(t, f, first)
}

func TestFairRateLimitedInstallationOnly(t *testing.T) {
	ctx := context.Background()
	f, clock := newTestFair(t, config.Fair{}, 4)
	if err := f.Pause(ctx, 1, clock.now().Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A shorter pause does not shorten a longer one.
	if err := f.Pause(ctx, 1, clock.now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	w := mustWait(t, f, fairRun(1, "a/x", "a1"), "rate-limited")
	if w.Delay < 89*time.Second || w.Delay > 90*time.Second {
		t.Fatalf("a rate-limited run retries after %s, want when the limit ends (90s)", w.Delay)
	}
	mustGrant(t, f, fairRun(2, "b/y", "b1"))
	// Intake and plan jobs of the installation wait out the limit too; the other's do not.
	if w, ok := errors.AsType[*SlotWaitError](f.Paused(ctx, 1)); !ok || w.Delay > 90*time.Second {
		t.Fatalf("installation 1 paused: %v", f.Paused(ctx, 1))
	}
	if err := f.Paused(ctx, 2); err != nil {
		t.Fatalf("installation 2 paused: %v", err)
	}
	clock.advance(91 * time.Second)
	if err := f.Paused(ctx, 1); err != nil {
		t.Fatalf("installation 1 after its limit: %v", err)
	}
	mustGrant(t, f, fairRun(1, "a/x", "a1"))
}

// TestFairRunKeepsItsSlot: the job that continues a run whose worker died (the reaper's, with a
// task id of its own) takes over the run's slot at once, without waiting for the dead job's lease.
func TestFairRunKeepsItsSlot(t *testing.T) {
	f, _ := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1}, 2)
	first := fairRun(1, "a/x", "a1")
	mustGrant(t, f, first)
	reaped := Ticket{JobID: "run:reap:x", RunID: entryOf(first).Run, Installation: 1, Repo: "a/x"}
	mustGrant(t, f, reaped)
	mustWait(t, f, fairRun(1, "a/x", "a2"), "cap of 1")
}

func TestFairDeadWorkersSlotFrees(t *testing.T) {
	f, clock := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1}, 4)
	mustGrant(t, f, fairRun(1, "a/x", "a1"))
	mustWait(t, f, fairRun(1, "a/x", "a2"), "cap of 1")
	// The job of a1 died without releasing: its lease runs out.
	clock.advance(LeaseTTL + time.Second)
	mustGrant(t, f, fairRun(1, "a/x", "a2"))
}

func TestFairHoldRenewsAndReleases(t *testing.T) {
	f, _ := newTestFair(t, config.Fair{MaxRunsPerInstallation: 1}, 4)
	a1 := fairRun(1, "a/x", "a1")
	mustGrant(t, f, a1)
	done := f.Hold(context.Background(), a1)
	mustWait(t, f, fairRun(1, "a/x", "a2"), "cap of 1")
	done()
	mustGrant(t, f, fairRun(1, "a/x", "a2"))
	used, err := f.rdb.HGet(context.Background(), f.keys()[6], "d:1").Result()
	if err != nil || used == "" {
		t.Fatalf("a released slot records the run job's time (d:1 = %q, %v)", used, err)
	}
}

func TestFairWorkersRegister(t *testing.T) {
	rdb, prefix := testRedis(t)
	one := New(rdb, prefix, config.Fair{}, 3)
	two := New(rdb, prefix, config.Fair{}, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go one.Heartbeat(ctx)
	go two.Heartbeat(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := one.Queue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if q.Workers == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two worker processes of 3 make %d workers, want 6", q.Workers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Six workers: an installation may have three.
	for i := range 3 {
		mustGrant(t, one, fairRun(1, "a/x", fmt.Sprintf("a%d", i)))
	}
	mustWait(t, one, fairRun(1, "a/x", "a3"), "cap of 3")
}

func TestFairQueuePositionsAndEstimates(t *testing.T) {
	ctx := context.Background()
	f, clock := newTestFair(t, config.Fair{}, 2)
	// Each of A's run jobs takes ten minutes; the first finished, the second is running.
	a := func(i int) Ticket { return fairRun(1, "a/x", fmt.Sprintf("a%d", i)) }
	mustGrant(t, f, a(0))
	clock.advance(10 * time.Minute)
	release(t, f, a(0))
	mustGrant(t, f, a(1))
	a1Start := clock.now()
	for i := 2; i <= 4; i++ {
		if err := f.List(ctx, a(i)); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Second)
	}
	b := fairRun(2, "b/y", "b1")
	if err := f.List(ctx, b); err != nil {
		t.Fatal(err)
	}
	start := clock.now()
	q, err := f.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Workers != 2 || q.Running != 1 || len(q.Installations) != 2 {
		t.Fatalf("queue %+v: want 2 workers, 1 running, 2 installations", q)
	}
	qa, qb := q.Installations[0], q.Installations[1]
	if qa.InstallationID != 1 || qa.Cap != 1 || len(qa.Running) != 1 || len(qa.Waiting) != 3 {
		t.Fatalf("installation A: %+v", qa)
	}
	for i, w := range qa.Waiting {
		if w.Position != i+1 || w.Task != a(i+2).JobID || w.EstimatedStart == nil {
			t.Fatalf("A's waiting run %d: %+v, want position %d, task %s, an estimate", i, w, i+1, a(i+2).JobID)
		}
		// One at a time (A's cap), each after the ten minutes the one before takes.
		want := a1Start.Add(time.Duration(i+1) * 10 * time.Minute)
		if d := w.EstimatedStart.Sub(want); d < -time.Second || d > time.Second {
			t.Fatalf("A's run %d estimated at %s, want %s", i+1, w.EstimatedStart, want)
		}
	}
	// B starts now, on the free worker, whatever A queued.
	if len(qb.Waiting) != 1 || qb.Waiting[0].Position != 1 || qb.Waiting[0].EstimatedStart == nil || qb.Waiting[0].EstimatedStart.Sub(start).Abs() > time.Second {
		t.Fatalf("installation B: %+v, want its run first in line, starting now", qb.Waiting)
	}
	// A restart loses nothing: another process reads the same line.
	other := New(f.rdb, f.prefix, config.Fair{}, 2)
	other.Now = clock.now
	q2, err := other.Queue(ctx)
	if err != nil || len(q2.Installations) != 2 || len(q2.Installations[0].Waiting) != 3 {
		t.Fatalf("queue read by another process: %+v, %v", q2, err)
	}
}

func TestFairConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml, err string
	}{
		{"fair:\n  max_runs_per_installation: 2\n  installations: {42: 4}\n  usage_half_life: 1h\n", ""},
		{"fair:\n  max_runs_per_installation: -1\n", "fair.max_runs_per_installation: -1 is negative"},
		{"fair:\n  installations: {42: 0}\n", "fair.installations.42: cap 0 is below 1"},
		{"fair:\n  usage_half_life: soon\n", "not a duration"},
	} {
		op, err := config.ParseOperator([]byte(tc.yaml))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.err)
		case tc.err == "" && (op.Fair.MaxRunsPerInstallation != 2 || op.Fair.Installations[42] != 4 || time.Duration(op.Fair.UsageHalfLife) != time.Hour):
			t.Errorf("%q parsed as %+v", tc.yaml, op.Fair)
		}
	}
}
