package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A repository's history of task durations lets a run estimate its time left before it has
// finished a task of its own: each task an agent finished adds its duration to a short list per
// repository, and a new run takes a copy of that list when it starts.

// HistoryLen is how many recent task durations a repository keeps: enough for a stable median, few
// enough that a run's record can carry its copy.
const HistoryLen = 30

// historyRetention is how long a repository's durations outlive its last finished task.
const historyRetention = 90 * 24 * time.Hour

func (s *History) historyKey(owner, repo string) string {
	return s.prefix + "taskdurations:" + repoKey(owner, repo)
}

// RecordTaskDuration adds the duration of a task an agent finished to its repository's history.
func (s *History) RecordTaskDuration(ctx context.Context, owner, repo string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	key := s.historyKey(owner, repo)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, int64(d))
		p.LTrim(ctx, key, 0, HistoryLen-1)
		p.Expire(ctx, key, historyRetention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("jobs: task durations of %s/%s: %w", owner, repo, err)
	}
	return nil
}

// TaskDurations returns the repository's recent task durations, newest first.
func (s *History) TaskDurations(ctx context.Context, owner, repo string) ([]time.Duration, error) {
	vals, err := s.rdb.LRange(ctx, s.historyKey(owner, repo), 0, HistoryLen-1).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: task durations of %s/%s: %w", owner, repo, err)
	}
	out := make([]time.Duration, 0, len(vals))
	for _, v := range vals {
		// A value that is not a number was not written by Akira; it is no measure.
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			out = append(out, time.Duration(n))
		}
	}
	return out, nil
}
