package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/runner/timeline"
)

// appendBounded pushes ARGV[1] onto KEYS[1] unless it holds ARGV[2] entries already, and keeps the
// list for ARGV[3] ms; it returns the new length, 0 when full.
var appendBounded = redis.NewScript(`
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return n
`)

// Timelines keeps each attempt's timeline (package runner/timeline) as the engine records it: one
// JSON line per event in a list per attempt, expiring with the attempt's log. The engine masks and
// bounds the events before they get here (runner's timeline sink); maxTimelineEvents is a last
// bound on what one attempt can make Redis hold.
type Timelines struct{ *conn }

// maxTimelineEvents is well above what the engine lets an attempt record (timeline.MaxEvents of the
// events an agent drives, plus the engine's own), so it only ever cuts a runaway.
const maxTimelineEvents = 4 * timeline.MaxEvents

func (s *Timelines) timelineKey(runID, taskID string, attempt int) string {
	return s.prefix + "timeline:" + runID + ":" + taskID + ":" + strconv.Itoa(attempt)
}

// AppendEvent adds ev to its attempt's timeline, kept for retention (DefaultLogRetention when zero)
// from the latest event.
func (s *Timelines) AppendEvent(ctx context.Context, ev timeline.Event, retention time.Duration) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("jobs: timeline: %w", err)
	}
	if retention <= 0 {
		retention = DefaultLogRetention
	}
	key := s.timelineKey(ev.RunID, ev.TaskID, ev.Attempt)
	// Appended only while the list is under its bound: one round trip, no read-then-write race
	// between the proxy's and the agent's events.
	n, err := appendBounded.Run(ctx, s.rdb, []string{key}, line, maxTimelineEvents, retention.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("jobs: timeline: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("jobs: timeline: attempt %d of task %s holds %d events already; %s not kept", ev.Attempt, ev.TaskID, maxTimelineEvents, ev.Kind)
	}
	return nil
}

// Timeline returns an attempt's events as the engine recorded them, one JSON object each, in order;
// none for an attempt without a kept timeline (never written, or expired).
func (s *Timelines) Timeline(ctx context.Context, runID, taskID string, attempt int) ([]json.RawMessage, error) {
	raw, err := s.rdb.LRange(ctx, s.timelineKey(runID, taskID, attempt), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: timeline: %w", err)
	}
	out := make([]json.RawMessage, len(raw))
	for i, r := range raw {
		out[i] = json.RawMessage(r)
	}
	return out, nil
}
