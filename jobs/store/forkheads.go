package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ForkHeads remembers when each head of a fork's pull request was first seen, in GitHub's own clock:
// the pull request's updated_at in the webhook that showed the head (opened, reopened, synchronize),
// or the time of a command that found a head no webhook had shown yet. A writer's `/akira run` on a
// fork runs the head only when it was seen before the command was written: a fork that pushes after
// the command, even before Akira reads the pull request, runs nothing.
type ForkHeads struct {
	*conn
	// Retention is how long a pull request's heads are remembered after the last one seen
	// (DefaultStateRetention when zero).
	Retention time.Duration
}

func (s *ForkHeads) key(owner, repo string, number int) string {
	return s.prefix + "forkhead:" + repoKey(owner, repo) + "#" + strconv.Itoa(number)
}

// earliestLua keeps the earliest time a head was seen: a late webhook of an earlier push moves it
// back, a later sighting never moves it forward.
const earliestLua = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or tonumber(ARGV[2]) < tonumber(cur) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`

var earliestScript = redis.NewScript(earliestLua)

// SawForkHead records that pull request number's head was sha at the time at (GitHub's clock).
func (s *ForkHeads) SawForkHead(ctx context.Context, owner, repo string, number int, sha string, at time.Time) error {
	if sha == "" || at.IsZero() {
		return nil // nothing to remember: a payload without the head or without GitHub's time
	}
	retention := s.Retention
	if retention <= 0 {
		retention = DefaultStateRetention
	}
	err := earliestScript.Run(ctx, s.rdb, []string{s.key(owner, repo, number)}, sha, at.UnixNano(), retention.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("jobs: remember the head of %s/%s#%d: %w", owner, repo, number, err)
	}
	return nil
}

// ForkHeadSeen is when pull request number's head sha was first seen; ok is false when never.
func (s *ForkHeads) ForkHeadSeen(ctx context.Context, owner, repo string, number int, sha string) (at time.Time, ok bool, err error) {
	v, err := s.rdb.HGet(ctx, s.key(owner, repo, number), sha).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("jobs: the heads of %s/%s#%d: %w", owner, repo, number, err)
	}
	return time.Unix(0, v).UTC(), true, nil
}
