package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lock errors.
var (
	// ErrLocked: another holder has the lock.
	ErrLocked = errors.New("jobs: branch is locked by another worker")
	// ErrLockLost is the cause of a lock's context when a renewal found the lock gone or taken over,
	// or could not renew it before it would have expired.
	ErrLockLost = errors.New("jobs: branch lock lost")
)

// Defaults of the Locker.
const (
	// DefaultLockTTL is the lease of the job working on a branch: the job renews it every TTL/3, so
	// a worker that dies is noticed when its lease lapses, at most this long after its last renewal,
	// and the reaper (every ReapInterval) continues its run on another worker. It bounds recovery
	// (issue 35: ≤ 5 s from the kill to the next attempt), so it is a few renewals long, not a
	// timeout: a live worker that cannot renew for a whole TTL (Redis unreachable) stops writing, and
	// its run goes on from the last pushed checkpoint.
	DefaultLockTTL = 3 * time.Second
)

// renewScript extends the lock's TTL only while it still holds our token.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes the lock only while it still holds our token.
var releaseScript = redis.NewScript(compareAndDeleteLua)

// Locker hands out branch locks: one worker writes to a branch at a time. A lock is a Redis key set
// with SET NX PX to a random token; the holder renews it on a ticker and releases it by
// compare-and-delete, so a worker that stalled past the TTL can never delete a lock someone else took.
type Locker struct {
	rdb    redis.UniversalClient
	prefix string
	// TTL is how long a lock outlives its holder's last renewal (DefaultLockTTL when zero). A dead
	// worker's branch is free again after at most TTL.
	TTL time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// NewLocker returns a locker whose keys start with prefix (DefaultPrefix when empty).
func NewLocker(rdb redis.UniversalClient, prefix string) *Locker {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Locker{rdb: rdb, prefix: prefix}
}

func (l *Locker) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return DefaultLockTTL
}

func (l *Locker) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// Held reports whether someone holds the named lock.
func (l *Locker) Held(ctx context.Context, name string) (bool, error) {
	n, err := l.rdb.Exists(ctx, l.prefix+"lock:"+name).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: lock %s: %w", name, err)
	}
	return n == 1, nil
}

// Lapse is how long the named lock has left before it lapses unless renewed: 0 when nobody holds it.
func (l *Locker) Lapse(ctx context.Context, name string) (time.Duration, error) {
	d, err := l.rdb.PTTL(ctx, l.prefix+"lock:"+name).Result()
	if err != nil {
		return 0, fmt.Errorf("jobs: lock %s: %w", name, err)
	}
	// go-redis gives PTTL's -2 (no such key) and -1 (no expiry, never set by Acquire) as they are.
	switch {
	case d == -2:
		return 0, nil
	case d < 0:
		return l.ttl(), nil
	}
	return d, nil
}

// BranchLockName is the lock name of a repository's branch.
func BranchLockName(owner, repo, branch string) string { return repoKey(owner, repo) + ":" + branch }

// Lock is a held lock. Its Context is cancelled (with cause ErrLockLost) as soon as the holder can no
// longer be sure it holds the lock, so the work it guards stops instead of writing unguarded.
type Lock struct {
	l     *Locker
	key   string
	token string

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once
}

// Acquire takes the named lock or returns ErrLocked at once. The lock is renewed in the background
// until Release; the lock's Context derives from ctx.
func (l *Locker) Acquire(ctx context.Context, name string) (*Lock, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("jobs: lock token: %w", err)
	}
	lk := &Lock{l: l, key: l.prefix + "lock:" + name, token: hex.EncodeToString(b), done: make(chan struct{})}
	ok, err := l.rdb.SetNX(ctx, lk.key, lk.token, l.ttl()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: lock %s: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	lk.ctx, lk.cancel = context.WithCancelCause(ctx)
	go lk.renew(time.Now())
	return lk, nil
}

// Context is cancelled when the lock is lost or released.
func (lk *Lock) Context() context.Context { return lk.ctx }

// renew extends the lock every third of its TTL. A renewal that finds another token (or none) means
// the lock is lost; renewals failing on Redis errors until the TTL has passed mean the same, because
// by then the key may have expired and been taken.
func (lk *Lock) renew(acquired time.Time) {
	defer close(lk.done)
	ttl := lk.l.ttl()
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	last := acquired
	for {
		select {
		case <-lk.ctx.Done():
			return
		case <-t.C:
		}
		// The renewal must not be cancelled by the context it protects: cancelling it mid-flight could
		// leave us unsure whether it happened. Bound it by the time we have left instead.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(lk.ctx), ttl-time.Since(last))
		n, err := renewScript.Run(rctx, lk.l.rdb, []string{lk.key}, lk.token, ttl.Milliseconds()).Int()
		cancel()
		switch {
		case err == nil && n == 1:
			last = time.Now()
		case err == nil:
			lk.l.logger().Warn("lock lost", "lock", lk.key)
			lk.cancel(ErrLockLost)
			return
		case time.Since(last) >= ttl:
			lk.l.logger().Warn("lock could not be renewed before it expired", "lock", lk.key, "err", err)
			lk.cancel(ErrLockLost)
			return
		default:
			lk.l.logger().Warn("lock renewal failed, retrying", "lock", lk.key, "err", err)
		}
	}
}

// Release stops renewing and deletes the lock if it is still ours. It is safe to call more than once.
func (lk *Lock) Release(ctx context.Context) error {
	var err error
	lk.once.Do(func() {
		lk.cancel(context.Canceled)
		<-lk.done
		if e := releaseScript.Run(ctx, lk.l.rdb, []string{lk.key}, lk.token).Err(); e != nil {
			err = fmt.Errorf("jobs: release lock: %w", e)
		}
	})
	return err
}
