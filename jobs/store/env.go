package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/runner/env"
)

// BaseCheckRetention is how long the base-branch health check of a base commit is remembered.
const BaseCheckRetention = 30 * 24 * time.Hour

// BaseMemory remembers the base-branch health checks of one installation's repository in Redis, so
// that every run from the same base commit does not check it again.
func (s *Memory) BaseMemory(installation int64, owner, repo string) env.BaseMemory {
	return &baseMemory{s: s, prefix: s.prefix + "base:" + strconv.FormatInt(installation, 10) + ":" +
		strings.ToLower(owner) + "/" + strings.ToLower(repo) + ":"}
}

type baseMemory struct {
	s      *Memory
	prefix string
}

func (m *baseMemory) Base(ctx context.Context, key string) (env.BaseResult, bool, error) {
	data, err := m.s.rdb.Get(ctx, m.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return env.BaseResult{}, false, nil
	}
	if err != nil {
		return env.BaseResult{}, false, fmt.Errorf("jobs: base check: %w", err)
	}
	var r env.BaseResult
	if err := json.Unmarshal(data, &r); err != nil {
		return env.BaseResult{}, false, fmt.Errorf("jobs: base check: %w", err)
	}
	return r, true, nil
}

func (m *baseMemory) RememberBase(ctx context.Context, key string, r env.BaseResult) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("jobs: base check: %w", err)
	}
	if err := m.s.rdb.Set(ctx, m.prefix+key, data, BaseCheckRetention).Err(); err != nil {
		return fmt.Errorf("jobs: base check: %w", err)
	}
	return nil
}
