package store

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// takeNotifySlot counts a notification against the sink's rate for this minute (INCR is atomic, so
// workers never both take the last slot); over the rate, it says how long until the next minute.
func (s *Slots) TakeNotifySlot(ctx context.Context, sink string, perMinute int) (time.Duration, error) {
	now := s.now()
	window := now.Truncate(time.Minute)
	key := s.prefix + "notify-rate:" + sink + ":" + strconv.FormatInt(window.Unix(), 10)
	n, err := s.rdb.Incr(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("jobs: notify rate: %w", err)
	}
	if n == 1 {
		s.rdb.Expire(ctx, key, 2*time.Minute)
	}
	if n > int64(perMinute) {
		return window.Add(time.Minute).Sub(now) + time.Second, nil
	}
	return 0, nil
}
