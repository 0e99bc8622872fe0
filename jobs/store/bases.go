package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bases remembers which of Akira's branches stand on which base branch, and marks a branch when its
// base moved: the push webhook of the base marks every branch on it, and the branch's next run job
// merges the base before its next task (runner.Hooks.BaseMoved). A mark is per branch, not per run,
// so a follow-up run on the same branch and pull request sees a base that moved while no run worked;
// it lives in Redis, so a worker that dies before the merge leaves it for the job that continues.
//
// A mark holds what set it (the base's new head); the job that finds the branch no longer behind its
// base clears it by compare-and-delete, so a push that lands meanwhile keeps its own mark.
type Bases struct {
	*conn
	// Retention is how long a branch no run worked on stays watched, and a mark kept
	// (DefaultStateRetention when zero).
	Retention time.Duration
}

func (s *Bases) markRetention() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return DefaultStateRetention
}

// onBaseKey is the sorted set of the branches standing on base, scored by when a run job last
// worked on each (Unix seconds).
func (s *Bases) onBaseKey(owner, repo, base string) string {
	return s.prefix + "onbase:" + repoKey(owner, repo) + ":" + base
}

// movedKey is a branch's mark: the base moved since its last merge of it.
func (s *Bases) movedKey(owner, repo, branch string) string {
	return s.prefix + "basemoved:" + repoKey(owner, repo) + ":" + branch
}

// WatchBase records that branch stands on base: pushes to base mark it from now on.
func (s *Bases) WatchBase(ctx context.Context, owner, repo, base, branch string) error {
	key := s.onBaseKey(owner, repo, base)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, redis.Z{Score: float64(s.now().Unix()), Member: branch})
		p.Expire(ctx, key, s.markRetention())
		return nil
	})
	if err != nil {
		return fmt.Errorf("jobs: watch the base of %s: %w", branch, err)
	}
	return nil
}

// BaseMoved marks every branch standing on base (pushed to head) and returns them. Branches no run
// worked on for the retention are forgotten first.
func (s *Bases) BaseMoved(ctx context.Context, owner, repo, base, head string) ([]string, error) {
	key := s.onBaseKey(owner, repo, base)
	stale := strconv.FormatInt(s.now().Add(-s.markRetention()).Unix(), 10)
	if err := s.rdb.ZRemRangeByScore(ctx, key, "-inf", "("+stale).Err(); err != nil {
		return nil, fmt.Errorf("jobs: branches on %s: %w", base, err)
	}
	branches, err := s.rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: branches on %s: %w", base, err)
	}
	if len(branches) == 0 {
		return nil, nil
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range branches {
			p.Set(ctx, s.movedKey(owner, repo, b), head, s.markRetention())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: mark the branches on %s: %w", base, err)
	}
	return branches, nil
}

// MarkBaseMoved marks one branch: something other than a push (the pull request's mergeable_state) says its
// base moved. why is the mark's value.
func (s *Bases) MarkBaseMoved(ctx context.Context, owner, repo, branch, why string) error {
	if err := s.rdb.Set(ctx, s.movedKey(owner, repo, branch), why, s.markRetention()).Err(); err != nil {
		return fmt.Errorf("jobs: mark %s behind its base: %w", branch, err)
	}
	return nil
}

// BaseMark returns the branch's mark, "" when the base did not move since it was last cleared.
func (s *Bases) BaseMark(ctx context.Context, owner, repo, branch string) (string, error) {
	v, err := s.rdb.Get(ctx, s.movedKey(owner, repo, branch)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("jobs: base of %s: %w", branch, err)
	}
	return v, nil
}

// clearScript deletes a mark only while it still holds the value its reader saw.
var clearScript = redis.NewScript(compareAndDeleteLua)

// ClearBaseMark removes the branch's mark if it is still seen (the value BaseMark returned): a mark set since by
// a newer push stays.
func (s *Bases) ClearBaseMark(ctx context.Context, owner, repo, branch, seen string) error {
	if err := clearScript.Run(ctx, s.rdb, []string{s.movedKey(owner, repo, branch)}, seen).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("jobs: clear the base mark of %s: %w", branch, err)
	}
	return nil
}
