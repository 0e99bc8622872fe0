package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLockContention(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	ctx := context.Background()
	a, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	if _, err := l.Acquire(ctx, "o/r:b"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want ErrLocked", err)
	}
	other, err := l.Acquire(ctx, "o/r:other")
	if err != nil {
		t.Fatalf("Acquire of another branch: %v", err)
	}
	defer other.Release(ctx)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.Context().Err(); err == nil {
		t.Fatal("a released lock's context is still live")
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	b, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	_ = b.Release(ctx)
}

// TestLockExpiryTakeover: a holder that died (its key is never renewed) blocks the branch only until
// the TTL runs out.
func TestLockExpiryTakeover(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	ctx := context.Background()
	if err := rdb.SetNX(ctx, prefix+"lock:o/r:b", "dead-worker", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "o/r:b"); !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire while the dead worker's key lives = %v, want ErrLocked", err)
	}
	var lk *Lock
	for {
		var err error
		lk, err = l.Acquire(ctx, "o/r:b")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("Acquire: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer lk.Release(ctx)
	if v, _ := rdb.Get(ctx, prefix+"lock:o/r:b").Result(); v != lk.token {
		t.Fatalf("lock holds %q after takeover, want the new token", v)
	}
}

// TestLockRenewal: a held lock's TTL is pushed back while its holder works.
func TestLockRenewal(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	l.TTL = 600 * time.Millisecond
	ctx := context.Background()
	lk, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release(ctx)
	key := prefix + "lock:o/r:b"
	low := time.Duration(1 << 62)
	for {
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil || ttl < 0 {
			t.Fatalf("PTTL = %v, %v: the lock expired while held", ttl, err)
		}
		if ttl > low {
			break // renewed
		}
		low = ttl
		time.Sleep(20 * time.Millisecond)
	}
	if err := lk.Context().Err(); err != nil {
		t.Fatalf("a renewed lock's context ended: %v", err)
	}
}

// TestLockLostCancelsWork: when the lock is taken over behind the holder's back, the holder's work
// context ends with ErrLockLost, and its release does not delete the new holder's lock.
func TestLockLostCancelsWork(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	l.TTL = 300 * time.Millisecond
	ctx := context.Background()
	a, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatal(err)
	}
	key := prefix + "lock:o/r:b"
	// As if a's worker had stalled past the TTL and another worker had taken the branch.
	if err := rdb.Set(ctx, key, "new-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	<-a.Context().Done()
	if cause := context.Cause(a.Context()); !errors.Is(cause, ErrLockLost) {
		t.Fatalf("cause = %v, want ErrLockLost", cause)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if v, _ := rdb.Get(ctx, key).Result(); v != "new-holder" {
		t.Fatalf("the old holder's release changed the lock to %q", v)
	}
}

// TestLockReleaseByNonOwner: releasing a lock whose key now holds another token leaves it alone, also
// when nothing noticed the takeover yet.
func TestLockReleaseByNonOwner(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	ctx := context.Background()
	a, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatal(err)
	}
	key := prefix + "lock:o/r:b"
	rdb.Del(ctx, key)
	b, err := l.Acquire(ctx, "o/r:b")
	if err != nil {
		t.Fatalf("Acquire after the key vanished: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.Get(ctx, key).Result(); v != b.token {
		t.Fatalf("release by the old holder left %q, want b's token", v)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("the owner's release did not delete the lock")
	}
}

// TestLockLapse: the reaper reads how long a lease has left: nothing for a free branch, at most the
// TTL for a held one, nothing again once it is released.
func TestLockLapse(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := NewLocker(rdb, prefix)
	l.TTL = 2 * time.Second
	ctx := context.Background()
	if d, err := l.Lapse(ctx, "b"); err != nil || d != 0 {
		t.Fatalf("free lock: lapse %v, %v; want 0", d, err)
	}
	lk, err := l.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Lapse(ctx, "b"); err != nil || d <= 0 || d > l.TTL {
		t.Fatalf("held lock: lapse %v, %v; want in (0, %v]", d, err, l.TTL)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Lapse(ctx, "b"); err != nil || d != 0 {
		t.Fatalf("released lock: lapse %v, %v; want 0", d, err)
	}
}
