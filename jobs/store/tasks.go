package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// A run's record is kept in two parts, so that what one event costs does not grow with the tasks done
// before it: the record without its tasks (the run key: status, outbox, parked tasks, counters) and its
// tasks, one hash field per task (the tasks key), with their order in the field "" (no task id is
// empty). A change writes the record and only the tasks it changed. The job that works on a run makes
// nearly every change to it, so the store keeps the tasks it last read or wrote of a few runs,
// tagged with the record's revision: a change finds them there while no other writer moved the
// revision, and reads them again from Redis otherwise. A record written before the split still has its
// tasks inline: it is read as it is and split at its next change.

// taskOrderField is the tasks key's field holding the task ids in order.
const taskOrderField = ""

// maxCachedRuns bounds the runs whose tasks a store keeps.
const maxCachedRuns = 16

// cachedTasks are a run's tasks as of a revision of its record, with the digest of each (taskSum)
// taken when they were stored.
type cachedTasks struct {
	// rev and created name the revision: a run rebuilt under the same id after Redis lost it starts
	// its revisions again, at another time.
	rev     int64
	created time.Time
	tasks   []lifecycle.TaskState
	sums    []uint64
}

// taskCache is the store's tasks of the runs it changed last.
type taskCache struct {
	mu   sync.Mutex
	runs map[string]cachedTasks
	// order is the runs from least to most recently used.
	order []string
}

// get returns the run's tasks at rev and their digests, or false. The tasks are shared: the caller
// copies the slice before changing it.
func (c *taskCache) get(r *lifecycle.Run) (cachedTasks, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs[r.ID]
	if !ok || e.rev != r.Rev || !e.created.Equal(r.CreatedAt) {
		return cachedTasks{}, false
	}
	return e, true
}

// put keeps the tasks of run r (tasks and their digests sums); a finished run's are dropped instead.
func (c *taskCache) put(r *lifecycle.Run, sums []uint64) {
	c.keep(r.ID, cachedTasks{rev: r.Rev, created: r.CreatedAt, tasks: r.Tasks, sums: sums}, !r.Status.Terminal())
}

func (c *taskCache) keep(id string, e cachedTasks, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]cachedTasks{}
	}
	c.order = slices.DeleteFunc(c.order, func(o string) bool { return o == id })
	if !live {
		delete(c.runs, id)
		return
	}
	e.tasks = slices.Clone(e.tasks)
	c.runs[id] = e
	c.order = append(c.order, id)
	for len(c.order) > maxCachedRuns {
		delete(c.runs, c.order[0])
		c.order = c.order[1:]
	}
}

// drop forgets a run's tasks: a change that failed may have changed them in place.
func (c *taskCache) drop(id string) { c.keep(id, cachedTasks{}, false) }

// A change gets a copy of the task list whose tasks share what they hold behind references (slices,
// the judgement) with the stored ones: copying all of that for every event would cost as much as the
// tasks before it. Whether a task changed is told by its fields held by value, and by a digest of
// what it holds behind references taken when it was stored, so a change made in place is seen too.
// (Code changing a task replaces its slices rather than changing them in place all the same: a change
// that is not stored must not show in the stored state.)

var taskSeed = maphash.MakeSeed()

// taskSum digests what a task holds behind references.
func taskSum(t *lifecycle.TaskState) uint64 {
	var h maphash.Hash
	h.SetSeed(taskSeed)
	var b [8]byte
	num := func(n int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	str := func(s string) {
		num(int64(len(s)))
		h.WriteString(s)
	}
	num(int64(len(t.Interrupted)))
	for _, n := range t.Interrupted {
		num(int64(n))
	}
	num(int64(len(t.Accept)))
	for _, a := range t.Accept {
		str(a)
	}
	num(int64(len(t.Workflows)))
	for _, w := range t.Workflows {
		str(w)
	}
	num(int64(len(t.Blocked)))
	for _, x := range t.Blocked {
		str(x.TaskID)
		num(int64(x.Attempt))
		str(x.Who)
		str(x.Host)
		num(int64(x.Port))
		str(x.Method)
		str(x.Path)
		num(int64(x.Count))
		num(x.First.UnixNano())
		str(x.Reason)
		str(x.Allow)
	}
	if j := t.Judgement; j != nil {
		num(1)
		num(int64(math.Float64bits(j.Confidence)))
		if j.Accepted {
			num(1)
		} else {
			num(0)
		}
	} else {
		num(0)
	}
	return h.Sum64()
}

// sameTask reports whether task b is a, whose digest was aSum when it was stored: every field held by
// value compared, and the digest of the rest (TestSameTaskSeesEveryField fails when a field of
// TaskState is left out of either).
func sameTask(a *lifecycle.TaskState, aSum uint64, b *lifecycle.TaskState) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Status == b.Status && a.Attempts == b.Attempts &&
		a.Duration == b.Duration && a.CheckRunID == b.CheckRunID && a.CheckRunURL == b.CheckRunURL &&
		a.CheckRunDone == b.CheckRunDone && a.CheckRunAsked == b.CheckRunAsked && a.CheckRunHead == b.CheckRunHead &&
		a.Checkpoint == b.Checkpoint && a.Note == b.Note && a.Unverified == b.Unverified &&
		a.Escalations == b.Escalations && a.EscalationCommentID == b.EscalationCommentID &&
		a.EscalationURL == b.EscalationURL && a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens &&
		a.CostUSD == b.CostUSD && a.UsageEstimated == b.UsageEstimated && aSum == taskSum(b)
}

// taskSums digests each task.
func taskSums(ts []lifecycle.TaskState) []uint64 {
	out := make([]uint64, len(ts))
	for i := range ts {
		out[i] = taskSum(&ts[i])
	}
	return out
}

// storedRun is a run's record as read: inline says its tasks came inline (a record from before the
// split), so its next change writes them all.
type storedRun struct {
	run    *lifecycle.Run
	inline bool
}

// readRecord reads a run's record without its tasks (except inline ones), or ErrNotFound.
func (s *Records) readRecord(ctx context.Context, c redis.Cmdable, id string) (storedRun, error) {
	data, err := c.Get(ctx, s.runKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return storedRun{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return storedRun{}, fmt.Errorf("jobs: get run %s: %w", id, err)
	}
	var r lifecycle.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return storedRun{}, fmt.Errorf("jobs: run %s: %w", id, err)
	}
	return storedRun{run: &r, inline: r.Tasks != nil}, nil
}

// readTasks reads a run's tasks from its tasks key, in order.
func (s *Records) readTasks(ctx context.Context, c redis.Cmdable, id string) ([]lifecycle.TaskState, error) {
	fields, err := c.HGetAll(ctx, s.tasksKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: tasks of run %s: %w", id, err)
	}
	return decodeTasks(id, fields)
}

// decodeTasks makes the tasks of a tasks key's fields.
func decodeTasks(id string, fields map[string]string) ([]lifecycle.TaskState, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	var order []string
	if err := json.Unmarshal([]byte(fields[taskOrderField]), &order); err != nil {
		return nil, fmt.Errorf("jobs: task order of run %s: %w", id, err)
	}
	tasks := make([]lifecycle.TaskState, 0, len(order))
	for _, tid := range order {
		raw, ok := fields[tid]
		if !ok {
			return nil, fmt.Errorf("jobs: run %s: task %s is in the order but not stored", id, tid)
		}
		var t lifecycle.TaskState
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return nil, fmt.Errorf("jobs: run %s: task %s: %w", id, tid, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// encodeRecord is the run's record without its tasks.
func encodeRecord(r *lifecycle.Run) ([]byte, error) {
	rec := *r
	rec.Tasks = nil
	return json.Marshal(&rec)
}

// taskWrites are the changes a new state of a run's tasks makes to its tasks key: the tasks that
// changed or are new, the ids of those gone, and the order when it changed (everything, with all, for
// a record whose tasks were inline). sums are the digests of the new state.
type taskWrites struct {
	set     []any // field, value, field, value...
	removed []string
	sums    []uint64
}

// diffTasks compares the tasks after a change with before, whose digests are sums.
func diffTasks(before []lifecycle.TaskState, sums []uint64, after []lifecycle.TaskState, all bool) (taskWrites, error) {
	w := taskWrites{sums: make([]uint64, len(after))}
	set := func(t *lifecycle.TaskState) error {
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("jobs: task %s: %w", t.ID, err)
		}
		w.set = append(w.set, t.ID, data)
		return nil
	}
	sameOrder := !all && len(before) == len(after)
	for i := 0; sameOrder && i < len(after); i++ {
		sameOrder = before[i].ID == after[i].ID
	}
	if sameOrder {
		// The usual change: the same tasks, one or two of them changed; compared in place.
		for i := range after {
			if w.sums[i] = taskSum(&after[i]); !sameTask(&before[i], sums[i], &after[i]) {
				if err := set(&after[i]); err != nil {
					return taskWrites{}, err
				}
			}
		}
		return w, nil
	}
	old := make(map[string]int, len(before))
	for i := range before {
		old[before[i].ID] = i
	}
	ids := make([]string, len(after))
	for i := range after {
		t := &after[i]
		ids[i], w.sums[i] = t.ID, taskSum(t)
		if j, ok := old[t.ID]; all || !ok || !sameTask(&before[j], sums[j], t) {
			if err := set(t); err != nil {
				return taskWrites{}, err
			}
		}
		delete(old, t.ID)
	}
	for id := range old {
		w.removed = append(w.removed, id)
	}
	order, err := json.Marshal(ids)
	if err != nil {
		return taskWrites{}, err
	}
	w.set = append(w.set, taskOrderField, order)
	return w, nil
}

// queueTaskWrites adds the writes to a transaction, with the tasks key expiring with the record (ttl
// zero: never).
func (s *Records) queueTaskWrites(ctx context.Context, p redis.Pipeliner, id string, w taskWrites, ttl time.Duration) {
	key := s.tasksKey(id)
	if len(w.removed) > 0 {
		p.HDel(ctx, key, w.removed...)
	}
	if len(w.set) > 0 {
		p.HSet(ctx, key, w.set...)
	}
	if ttl > 0 {
		p.PExpire(ctx, key, ttl)
	} else {
		p.Persist(ctx, key)
	}
}
