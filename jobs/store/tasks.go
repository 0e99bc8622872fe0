package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
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
//
// The tasks are shared, not copied: the list kept here is the one of the run the last change returned
// and of the runs Get returns since, the list a change's fn works on is a copy of it (a pointer per
// task), and a change replaces the tasks it changes (lifecycle.Run.EditTask) instead of writing into
// them. So a change copies a pointer per task, tells what it changed by the pointers it replaced, and
// a reader keeps the run it was given as it was while later changes go on. A write into a shared task
// in place, or into the list of a run the store returned, breaks all of that silently: the change is
// not stored (or is, by the next change of anything), yet every holder sees it. In test binaries
// every change checks that neither happened (see checkInPlace).

// taskOrderField is the tasks key's field holding the task ids in order.
const taskOrderField = ""

// maxCachedRuns bounds the runs whose tasks a store keeps.
const maxCachedRuns = 16

// checkInPlace is whether a store checks, at every change of a run, that the tasks the change did
// not replace are still as they were stored: a write made in place to a shared task (bypassing
// EditTask) fails the change with ErrChangedInPlace instead of being lost. It costs an encoding of
// every task per change, so it is on in test binaries only (and off in the benchmarks that measure
// a change).
var checkInPlace = testing.Testing()

// ErrChangedInPlace is returned, when the store checks for it, by a change that finds a task the run
// shares with its readers changed in place instead of through lifecycle.Run.EditTask.
var ErrChangedInPlace = errors.New("jobs: a shared task was changed in place (use Run.EditTask)")

// cachedTasks are a run's tasks as of a revision of its record.
type cachedTasks struct {
	// rev and created name the revision: a run rebuilt under the same id after Redis lost it starts
	// its revisions again, at another time.
	rev     int64
	created time.Time
	// tasks is shared with the runs the store returned: nobody changes it.
	tasks []*lifecycle.TaskState
	// stored is each task as it was stored (JSON) and list a copy of tasks, kept while the store
	// checks for changes in place.
	stored map[*lifecycle.TaskState][]byte
	list   []*lifecycle.TaskState
}

// taskCache is the store's tasks of the runs it changed last.
type taskCache struct {
	mu   sync.Mutex
	runs map[string]cachedTasks
	// order is the runs from least to most recently used.
	order []string
	// check: see checkInPlace.
	check bool
}

// get returns the run's tasks at rev, or false. The list is shared: the caller copies it before
// changing it.
func (c *taskCache) get(r *lifecycle.Run) (cachedTasks, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs[r.ID]
	if !ok || e.rev != r.Rev || !e.created.Equal(r.CreatedAt) {
		return cachedTasks{}, false
	}
	return e, true
}

// put keeps the tasks of run r (and, when checking, stored: each as stored); a finished run's are
// dropped instead.
func (c *taskCache) put(r *lifecycle.Run, stored map[*lifecycle.TaskState][]byte) {
	c.keep(r.ID, cachedTasks{rev: r.Rev, created: r.CreatedAt, tasks: r.Tasks, stored: stored}, !r.Status.Terminal())
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
	// The list is the run's that the change returns, not a copy: copying a pointer per task costs
	// what the run's length does (and more while the GC runs), and no holder changes it.
	if c.check {
		e.list = slices.Clone(e.tasks)
	}
	c.runs[id] = e
	c.order = append(c.order, id)
	for len(c.order) > maxCachedRuns {
		delete(c.runs, c.order[0])
		c.order = c.order[1:]
	}
}

// drop forgets a run's tasks.
func (c *taskCache) drop(id string) { c.keep(id, cachedTasks{}, false) }

// storedForm is each task as JSON, for the check of changes in place.
func storedForm(ts []*lifecycle.TaskState) (map[*lifecycle.TaskState][]byte, error) {
	out := make(map[*lifecycle.TaskState][]byte, len(ts))
	for _, t := range ts {
		data, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("jobs: task %s: %w", t.ID, err)
		}
		out[t] = data
	}
	return out, nil
}

// unchangedInPlace checks that the list of the run as it was before a change (base) is as it was
// kept, and that each of its tasks is still as it was stored, the tasks the change replaced included
// (a reader may hold them); it returns the tasks after the change as stored.
func unchangedInPlace(id string, base cachedTasks, after []*lifecycle.TaskState) (map[*lifecycle.TaskState][]byte, error) {
	if base.list != nil && !slices.Equal(base.tasks, base.list) {
		return nil, fmt.Errorf("%w: run %s: the list of tasks of a run the store returned was changed", ErrChangedInPlace, id)
	}
	stored := base.stored
	for t, was := range stored {
		data, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("jobs: task %s: %w", t.ID, err)
		}
		if !bytes.Equal(was, data) {
			return nil, fmt.Errorf("%w: run %s, task %s is now %s, was stored as %s", ErrChangedInPlace, id, t.ID, data, was)
		}
	}
	next := make(map[*lifecycle.TaskState][]byte, len(after))
	for _, t := range after {
		if was, kept := stored[t]; kept {
			next[t] = was
			continue
		}
		data, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("jobs: task %s: %w", t.ID, err)
		}
		next[t] = data
	}
	return next, nil
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
func (s *Records) readTasks(ctx context.Context, c redis.Cmdable, id string) ([]*lifecycle.TaskState, error) {
	fields, err := c.HGetAll(ctx, s.tasksKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: tasks of run %s: %w", id, err)
	}
	return decodeTasks(id, fields)
}

// decodeTasks makes the tasks of a tasks key's fields.
func decodeTasks(id string, fields map[string]string) ([]*lifecycle.TaskState, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	var order []string
	if err := json.Unmarshal([]byte(fields[taskOrderField]), &order); err != nil {
		return nil, fmt.Errorf("jobs: task order of run %s: %w", id, err)
	}
	tasks := make([]*lifecycle.TaskState, 0, len(order))
	for _, tid := range order {
		raw, ok := fields[tid]
		if !ok {
			return nil, fmt.Errorf("jobs: run %s: task %s is in the order but not stored", id, tid)
		}
		t := new(lifecycle.TaskState)
		if err := json.Unmarshal([]byte(raw), t); err != nil {
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
// a record whose tasks were inline). cost is what the change added to the tasks' cost.
type taskWrites struct {
	set     []any // field, value, field, value...
	removed []string
	cost    float64
}

// diffTasks compares the tasks after a change with before: a task whose pointer the change replaced
// (lifecycle.Run.EditTask) changed, one it kept did not. Nothing is compared field by field, so what
// a change costs is a pointer comparison per task besides the tasks it changed.
func diffTasks(before, after []*lifecycle.TaskState, all bool) (taskWrites, error) {
	var w taskWrites
	set := func(t *lifecycle.TaskState) error {
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("jobs: task %s: %w", t.ID, err)
		}
		w.set = append(w.set, t.ID, data)
		w.cost += t.CostUSD
		return nil
	}
	if i := slices.Index(after, nil); i >= 0 {
		return taskWrites{}, fmt.Errorf("jobs: task %d of %d is nil", i+1, len(after))
	}
	sameOrder := !all && len(before) == len(after)
	for i := 0; sameOrder && i < len(after); i++ {
		sameOrder = before[i] == after[i] || before[i].ID == after[i].ID
	}
	if sameOrder {
		// The usual change: the same tasks, one or two of them replaced.
		for i, t := range after {
			if t != before[i] {
				if err := set(t); err != nil {
					return taskWrites{}, err
				}
				w.cost -= before[i].CostUSD
			}
		}
		return w, nil
	}
	old := make(map[string]*lifecycle.TaskState, len(before))
	for _, t := range before {
		old[t.ID] = t
	}
	ids := make([]string, len(after))
	for i, t := range after {
		ids[i] = t.ID
		if b, ok := old[t.ID]; all || b != t {
			if err := set(t); err != nil {
				return taskWrites{}, err
			}
			if ok {
				w.cost -= b.CostUSD
			}
		}
		delete(old, t.ID)
	}
	for id, t := range old {
		w.removed = append(w.removed, id)
		w.cost -= t.CostUSD
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
