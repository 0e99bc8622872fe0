package publish

import (
	"context"
	"sync"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/timeline"
)

// attemptTimelines keeps the run's attempts' timelines in the store, beside their logs and under
// the same retention. The engine records from the proxy's and the agent's goroutines while the
// reporter may be busy with GitHub, so it takes its own lock, not the reporter's.
type attemptTimelines struct {
	r  *Reporter
	mu sync.Mutex
	// base is, per task, the attempts of jobs that died on it (the reporter's attemptBase).
	base map[string]int
}

func (t *attemptTimelines) shift(taskID string, base int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.base[taskID] = base
}

func (t *attemptTimelines) Record(ctx context.Context, ev timeline.Event) error {
	t.mu.Lock()
	ev.Attempt += t.base[ev.TaskID]
	t.mu.Unlock()
	// The engine masked the run's secrets; the App's own (its key, webhook secret, tokens) go too,
	// as in the attempts' logs.
	return t.r.store.AppendEvent(ctx, t.r.masker.Clean(ev), t.r.logRetention)
}

// Timeline is where the engine records the attempts' timelines.
func (r *Reporter) Timeline() runner.TimelineSink { return r.timelines }
