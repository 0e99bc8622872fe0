package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

func (s *Dedupe) epochKey() string { return s.prefix + "epoch" }

func (s *Dedupe) recoverKey(guid string) string { return s.prefix + "recovered:" + guid }

// NewEpoch writes the epoch key unless it exists: true means Redis did not have it, so whatever it
// held before is gone (or this is the deployment's first start), and the caller now owns the epoch.
func (s *Dedupe) NewEpoch(ctx context.Context, epoch string) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.epochKey(), epoch, 0).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: epoch: %w", err)
	}
	return ok, nil
}

// dropEpoch removes the epoch key if it is still epoch, so that the next check tries again.
func (s *Dedupe) DropEpoch(ctx context.Context, epoch string) {
	if v, err := s.rdb.Get(ctx, s.epochKey()).Result(); err == nil && v == epoch {
		s.rdb.Del(ctx, s.epochKey())
	}
}

// markRecovered marks a delivery as one a recovery asked for, before GitHub sends it again, with
// when GitHub first delivered it.
func (s *Dedupe) MarkRecovered(ctx context.Context, guid string, at time.Time) error {
	if err := s.rdb.Set(ctx, s.recoverKey(guid), at.UTC().Format(time.RFC3339Nano), recoverMarkTTL).Err(); err != nil {
		return fmt.Errorf("jobs: mark recovered %s: %w", guid, err)
	}
	return nil
}

// recovered reports whether a delivery is one a recovery asked for, and when GitHub first delivered it.
func (s *Dedupe) Recovered(ctx context.Context, guid string) (time.Time, bool, error) {
	v, err := s.rdb.Get(ctx, s.recoverKey(guid)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("jobs: recovered %s: %w", guid, err)
	}
	at, _ := time.Parse(time.RFC3339Nano, v) // zero when unreadable: no button answer acts then
	return at, true, nil
}

// replyRetention is how long a reply's key is remembered: longer than GitHub offers redelivery.
const replyRetention = 7 * 24 * time.Hour

func (s *Dedupe) replyKey(key string) string { return s.prefix + "reply:" + key }

// replied reports whether the reply of key was posted.
func (s *Dedupe) Replied(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.replyKey(key)).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: reply %s: %w", key, err)
	}
	return n == 1, nil
}

// markReplied records that the reply of key was posted.
func (s *Dedupe) MarkReplied(ctx context.Context, key string) error {
	if err := s.rdb.Set(ctx, s.replyKey(key), "1", replyRetention).Err(); err != nil {
		return fmt.Errorf("jobs: reply %s: %w", key, err)
	}
	return nil
}

// recoverMarkTTL is how long a delivery stays marked recovered: GitHub redelivers within seconds.
const recoverMarkTTL = time.Hour
