package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// Errors of the store.
var (
	ErrNotFound = errors.New("jobs: run not found")
	// ErrBranchBusy is wrapped by *BranchBusyError.
	ErrBranchBusy = errors.New("jobs: another run is active on the branch")
	// ErrConflict is returned when a run kept changing under an update (more writers than retries).
	ErrConflict = errors.New("jobs: run state kept changing; giving up")
)

// BranchBusyError says which run holds the branch.
type BranchBusyError struct {
	Branch string
	Active *lifecycle.Run
}

func (e *BranchBusyError) Error() string {
	return fmt.Sprintf("jobs: run %s is %s on branch %s", e.Active.ID, e.Active.Status, e.Branch)
}

// Unwrap makes errors.Is(err, ErrBranchBusy) true.
func (e *BranchBusyError) Unwrap() error { return ErrBranchBusy }

// Defaults of the store.
const (
	DefaultPrefix = "akira:"
	// DefaultStateRetention is how long a finished run's state is kept for /akira status and replies.
	DefaultStateRetention = 30 * 24 * time.Hour
	// DefaultStaleAfter is how long a queued or running run may go without a write before a new run
	// may take its branch: longer than any job's timeout (queue.DefaultTimeout, 3 hours, and a test in
	// jobs holds it so), so only a run whose jobs all died qualifies.
	DefaultStaleAfter = 4 * time.Hour
)

func (s *Records) retention() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return DefaultStateRetention
}

func (s *Records) staleAfter() time.Duration {
	if s.StaleAfter > 0 {
		return s.StaleAfter
	}
	return DefaultStaleAfter
}

// forgetRunning drops a run from the running set (it stopped running, or its state is gone).
func (s *Records) ForgetRunning(ctx context.Context, id string) error {
	if err := s.rdb.SRem(ctx, s.runningKey(), id).Err(); err != nil {
		return fmt.Errorf("jobs: running runs: %w", err)
	}
	return nil
}

// Running returns the ids of the runs marked running.
func (s *Records) Running(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.runningKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: running runs: %w", err)
	}
	return ids, nil
}

// compareAndDelete deletes KEYS[1] only when it holds ARGV[1].
const compareAndDeleteLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// compareAndExpire sets a TTL on KEYS[1] only when it holds ARGV[1].
// Both are sent with EVAL rather than EVALSHA because they run inside MULTI, where a missing script
// could not be retried.
const compareAndExpireLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

// active reports whether r still owns its branch.
func (s *Records) active(r *lifecycle.Run) bool {
	if r.Status.Terminal() {
		return false
	}
	if r.Status.Waits() {
		return true // waiting for people, or for CI, is not stale
	}
	return s.now().Sub(r.UpdatedAt) < s.staleAfter()
}

// Create stores a new run and makes it the branch's active run. When a run with the same id exists
// (a retried or redelivered job), it is returned with created false and nothing is written. When
// another run is active on the branch the error is a *BranchBusyError.
func (s *Records) Create(ctx context.Context, r *lifecycle.Run) (run *lifecycle.Run, created bool, err error) {
	if r.ID == "" || r.Owner == "" || r.Repo == "" || r.Branch == "" {
		return nil, false, errors.New("jobs: create run: id, repository and branch are required")
	}
	key := s.runKey(r.ID)
	bkey := s.branchKey(r.Owner, r.Repo, r.Branch)
	txf := func(tx *redis.Tx) error {
		if existing, err := s.get(ctx, tx, r.ID); err == nil {
			run, created = existing, false
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		other, err := tx.Get(ctx, bkey).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("jobs: create run: %w", err)
		}
		if other != "" && other != r.ID {
			o, err := s.get(ctx, tx, other)
			switch {
			case err == nil && s.active(o):
				return &BranchBusyError{Branch: r.Branch, Active: o}
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
		}
		nr := *r
		// The store keeps its own copy of the tasks it is given: their caller built them and may go on
		// changing them in place, and the store shares what it keeps with every reader.
		if r.Tasks != nil {
			nr.Tasks = make([]*lifecycle.TaskState, len(r.Tasks))
			for i, t := range r.Tasks {
				c := *t
				nr.Tasks[i] = &c
			}
		}
		now := s.now()
		nr.CreatedAt, nr.UpdatedAt, nr.Rev = now, now, 1
		if nr.Status == lifecycle.StatusNew {
			if _, err := lifecycle.Apply(&nr, lifecycle.Created{}, now); err != nil {
				return err
			}
		}
		data, err := encodeRecord(&nr)
		if err != nil {
			return fmt.Errorf("jobs: create run: %w", err)
		}
		writes, err := diffTasks(nil, nr.Tasks, true)
		if err != nil {
			return fmt.Errorf("jobs: create run: %w", err)
		}
		var stored map[*lifecycle.TaskState][]byte
		if s.tasks.check {
			if stored, err = storedForm(nr.Tasks); err != nil {
				return fmt.Errorf("jobs: create run: %w", err)
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, data, 0)
			p.Del(ctx, s.tasksKey(nr.ID)) // left by a run of the same id that expired
			s.queueTaskWrites(ctx, p, nr.ID, writes, 0)
			p.Set(ctx, bkey, nr.ID, 0)
			s.listing.indexRun(ctx, p, &nr)
			for _, n := range nr.Numbers() {
				p.Set(ctx, s.indexKey(nr.Owner, nr.Repo, n), nr.ID, 0)
			}
			return nil
		})
		run, created = &nr, true
		if err == nil {
			s.tasks.put(&nr, stored)
		}
		return err
	}
	if err := s.watch(ctx, txf, key, bkey, s.tasksKey(r.ID)); err != nil {
		return nil, false, err
	}
	return run, created, nil
}

// Get returns the run with the id, or ErrNotFound.
func (s *Records) Get(ctx context.Context, id string) (*lifecycle.Run, error) {
	return s.get(ctx, s.rdb, id)
}

func (s *Records) get(ctx context.Context, c redis.Cmdable, id string) (*lifecycle.Run, error) {
	rec, err := s.readRecord(ctx, c, id)
	if err != nil || rec.inline {
		return rec.run, err
	}
	if cached, ok := s.tasks.get(rec.run); ok {
		// The list and its tasks are shared with the cache and the runs read before (see tasks.go).
		rec.run.Tasks = cached.tasks
		return rec.run, nil
	}
	if rec.run.Tasks, err = s.readTasks(ctx, c, id); err != nil {
		return nil, err
	}
	return rec.run, nil
}

// ByNumber returns the latest run started from, or pushing to, the issue or pull request.
func (s *Records) ByNumber(ctx context.Context, owner, repo string, number int) (*lifecycle.Run, error) {
	id, err := s.rdb.Get(ctx, s.indexKey(owner, repo, number)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s#%d", ErrNotFound, repoKey(owner, repo), number)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: run of %s#%d: %w", repoKey(owner, repo), number, err)
	}
	return s.Get(ctx, id)
}

// activeOnBranch returns the run that owns the branch, or ErrNotFound when none does.
func (s *Records) ActiveOnBranch(ctx context.Context, owner, repo, branch string) (*lifecycle.Run, error) {
	id, err := s.rdb.Get(ctx, s.branchKey(owner, repo, branch)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: branch %s", ErrNotFound, branch)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: run on %s: %w", branch, err)
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.active(r) {
		return nil, fmt.Errorf("%w: branch %s", ErrNotFound, branch)
	}
	return r, nil
}

// Update applies fn to the run atomically and returns the stored result. fn may be called more than
// once (when another writer got in between) and must only change the run it is given; an error from
// fn aborts the update and is returned as is. fn changes a task through r.EditTask, never in place:
// the run's tasks are shared with the store's copy and with the runs returned before, which must
// stay as they were (see tasks.go); the list r.Tasks is fn's own. The run returned shares its list
// with the store: read it, and change the run through Update. The indexes follow the run: a number
// it gains is indexed, and when it turns terminal it frees its branch and its state starts to
// expire.
func (s *Records) Update(ctx context.Context, id string, fn func(*lifecycle.Run) error) (*lifecycle.Run, error) {
	key := s.runKey(id)
	var out *lifecycle.Run
	txf := func(tx *redis.Tx) error {
		rec, err := s.readRecord(ctx, tx, id)
		if err != nil {
			return err
		}
		r := rec.run
		base, cached := s.tasks.get(r)
		if !cached {
			base.tasks = r.Tasks // inline, in a record from before the split
			if !rec.inline {
				if base.tasks, err = s.readTasks(ctx, tx, id); err != nil {
					return err
				}
			}
			if s.tasks.check {
				if base.stored, err = storedForm(base.tasks); err != nil {
					return fmt.Errorf("jobs: update run %s: %w", id, err)
				}
			}
		}
		// fn changes a copy of the list (a pointer per task); base is what the tasks key holds.
		r.Tasks = slices.Clone(base.tasks)
		if err := fn(r); err != nil {
			s.tasks.drop(id)
			return err
		}
		r.ID = id
		r.Rev++
		r.UpdatedAt = s.now()
		if r.Status.Terminal() && r.FinishedAt.IsZero() {
			r.FinishedAt = r.UpdatedAt
		}
		data, err := encodeRecord(r)
		if err != nil {
			return fmt.Errorf("jobs: update run %s: %w", id, err)
		}
		writes, err := diffTasks(base.tasks, r.Tasks, rec.inline)
		if err != nil {
			return fmt.Errorf("jobs: update run %s: %w", id, err)
		}
		var stored map[*lifecycle.TaskState][]byte
		if s.tasks.check {
			if stored, err = unchangedInPlace(id, base, r.Tasks); err != nil {
				s.tasks.drop(id)
				return err
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			ttl := time.Duration(0)
			if r.Status.Terminal() {
				ttl = s.retention()
			}
			p.Set(ctx, key, data, ttl)
			s.queueTaskWrites(ctx, p, id, writes, ttl)
			// What the change added to the run's cost counts in this month's spend.
			s.queueSpend(ctx, p, r, writes.cost, r.UpdatedAt)
			s.listing.indexRun(ctx, p, r)
			for _, n := range r.Numbers() {
				ik := s.indexKey(r.Owner, r.Repo, n)
				if r.Status.Terminal() {
					// Only this run's own index entries expire with it; a newer run keeps its entry.
					p.Eval(ctx, compareAndExpireLua, []string{ik}, id, ttl.Milliseconds())
				} else {
					p.Set(ctx, ik, id, 0)
				}
			}
			if r.Status.Terminal() {
				p.Eval(ctx, compareAndDeleteLua, []string{s.branchKey(r.Owner, r.Repo, r.Branch)}, id)
			}
			if r.Status == lifecycle.StatusRunning {
				p.SAdd(ctx, s.runningKey(), id)
			} else {
				p.SRem(ctx, s.runningKey(), id)
			}
			if r.Status == lifecycle.StatusWaitingCI {
				p.SAdd(ctx, s.waitingKey(), id)
			} else {
				p.SRem(ctx, s.waitingKey(), id)
			}
			if len(r.Outbox) > 0 {
				// The oldest unperformed effect's time: the relay replays outboxes left for long.
				p.ZAddNX(ctx, s.outboxKey(), redis.Z{Score: float64(r.UpdatedAt.UnixMilli()), Member: id})
			} else {
				p.ZRem(ctx, s.outboxKey(), id)
			}
			return nil
		})
		if err != nil {
			s.tasks.drop(id)
			return err
		}
		s.tasks.put(r, stored)
		out = r
		return nil
	}
	if err := s.watch(ctx, txf, key, s.tasksKey(id)); err != nil {
		return nil, err
	}
	return out, nil
}

// watch runs an optimistic transaction, retrying while other writers get in between.
func (s *Records) watch(ctx context.Context, txf func(*redis.Tx) error, keys ...string) error {
	for range 100 {
		err := s.rdb.Watch(ctx, txf, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return ErrConflict
}

// NotParkedError says why a decision does not apply to the run as it is now.
type NotParkedError struct {
	Reason string
}

func (e *NotParkedError) Error() string { return "jobs: " + e.Reason }

// errAlreadyDecided aborts an update that would take the same decision twice.
var errAlreadyDecided = errors.New("jobs: decision already taken")

// maxDecisionKeys bounds Run.DecisionKeys.
const maxDecisionKeys = 20

// Decide records a decision on a parked task (lifecycle.Decided). The run moves from parked to queued
// (approve, retry, skip: a job continues it) or to aborted. It acts only while the task is parked (a
// run already queued by a decision on another parked task still takes decisions on the rest) and, when
// headSHA is given, while the branch is still at the head the run left it at; otherwise it returns a
// *NotParkedError and changes nothing. An empty d.TaskID means the first parked task. A decision whose
// Key was taken before is not taken again: the run is returned as it is, with already true.
func (s *Records) Decide(ctx context.Context, id string, d lifecycle.Decision, headSHA string) (run *lifecycle.Run, already bool, err error) {
	run, _, err = s.Transition(ctx, id, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if d.Key != "" && slices.Contains(r.DecisionKeys, d.Key) {
			return nil, errAlreadyDecided
		}
		if !lifecycle.Allowed(r.Status, lifecycle.EventDecided) || len(r.Parked) == 0 {
			return nil, &NotParkedError{Reason: fmt.Sprintf("run %s is %s, not waiting for a decision", r.ID, r.Status)}
		}
		if d.TaskID == "" {
			d.TaskID = r.Parked[0].TaskID
		}
		if r.ParkedTask(d.TaskID) == nil {
			waiting := make([]string, len(r.Parked))
			for i, p := range r.Parked {
				waiting[i] = p.TaskID
			}
			return nil, &NotParkedError{Reason: fmt.Sprintf("run %s waits on task %s, not %s", r.ID, strings.Join(waiting, ", "), d.TaskID)}
		}
		// While the run is running, its own checkpoints move the branch; the head is checked once it stops.
		if r.Status != lifecycle.StatusRunning && headSHA != "" && r.Head != "" && headSHA != r.Head {
			return nil, &NotParkedError{Reason: fmt.Sprintf("branch %s moved from %s to %s since the run parked",
				r.Branch, short(r.Head), short(headSHA))}
		}
		if d.Key != "" {
			r.DecisionKeys = append(r.DecisionKeys, d.Key)
			if n := len(r.DecisionKeys); n > maxDecisionKeys {
				r.DecisionKeys = r.DecisionKeys[n-maxDecisionKeys:]
			}
		}
		return lifecycle.Decided{Decision: d}, nil
	})
	if errors.Is(err, errAlreadyDecided) {
		run, err = s.Get(ctx, id)
		return run, true, err
	}
	return run, false, err
}

// Transition applies the event that decide returns to the run, atomically, as the lifecycle's table
// allows; decide sees the run as stored and may refuse with an error of its own (returned as is) or
// return a nil event (nothing happens). The effects of a durable transition are stored in the run's
// outbox with its new state. An event the table refuses is a *lifecycle.TransitionError, logged and
// counted by OnRefused.
func (s *Records) Transition(ctx context.Context, id string, decide func(*lifecycle.Run) (lifecycle.Event, error)) (*lifecycle.Run, []lifecycle.Effect, error) {
	var effects []lifecycle.Effect
	run, err := s.Update(ctx, id, func(r *lifecycle.Run) error {
		effects = nil
		ev, err := decide(r)
		if err != nil || ev == nil {
			return err
		}
		effects, err = lifecycle.Apply(r, ev, s.now())
		return err
	})
	if te, ok := errors.AsType[*lifecycle.TransitionError](err); ok && s.OnRefused != nil {
		s.OnRefused(te)
	}
	return run, effects, err
}

// Apply is Transition of one event, whatever the run's state: the table decides.
func (s *Records) Apply(ctx context.Context, id string, ev lifecycle.Event) (*lifecycle.Run, []lifecycle.Effect, error) {
	return s.Transition(ctx, id, func(*lifecycle.Run) (lifecycle.Event, error) { return ev, nil })
}

// WaitingForCI returns the ids of the runs waiting for their pull request's CI.
func (s *Records) WaitingForCI(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.waitingKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: runs waiting for CI: %w", err)
	}
	return ids, nil
}

// LeftEffects returns the runs whose outbox has waited longer than age.
func (s *Records) LeftEffects(ctx context.Context, age time.Duration) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.outboxKey(), &redis.ZRangeBy{Min: "-inf",
		Max: strconv.FormatInt(s.now().Add(-age).UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: runs with effects left: %w", err)
	}
	return ids, nil
}

// forgetOutbox drops a run whose record is gone from the outbox index.
func (s *Records) ForgetOutbox(ctx context.Context, id string) error {
	if err := s.rdb.ZRem(ctx, s.outboxKey(), id).Err(); err != nil {
		return fmt.Errorf("jobs: outbox: %w", err)
	}
	return nil
}

// short is a commit's SHA as people read it.
func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// RequestPause asks the job working on the run to pause it after its current task, or now (the
// attempt is discarded); a queued run pauses when its job starts. It says false when the run is
// neither queued nor running, and changes nothing then.
func (s *Records) RequestPause(ctx context.Context, id, by string, now bool) (*lifecycle.Run, bool, error) {
	asked := false
	run, _, err := s.Transition(ctx, id, func(r *lifecycle.Run) (lifecycle.Event, error) {
		asked = lifecycle.Allowed(r.Status, lifecycle.EventPauseAsked)
		if !asked {
			return nil, nil
		}
		return lifecycle.PauseAsked{Request: lifecycle.PauseRequest{By: by, Now: now, At: s.now()}}, nil
	})
	return run, asked, err
}

// Resume continues a paused run at its next task (its job is queued by the effect), or withdraws a
// pause that has not taken effect yet. It says false when there is nothing to resume.
func (s *Records) Resume(ctx context.Context, id, by string) (*lifecycle.Run, bool, error) {
	resumed := false
	run, _, err := s.Transition(ctx, id, func(r *lifecycle.Run) (lifecycle.Event, error) {
		resumed = r.Status == lifecycle.StatusPaused || (r.Pause != nil && lifecycle.Allowed(r.Status, lifecycle.EventResumed))
		if !resumed {
			return nil, nil
		}
		return lifecycle.Resumed{By: by}, nil
	})
	return run, resumed, err
}

// RequestStop asks the job working on the run to stop it. It says false when the run is not working
// (queued or running), and changes nothing then.
func (s *Records) RequestStop(ctx context.Context, id, by string, abort bool) (*lifecycle.Run, bool, error) {
	asked := false
	run, _, err := s.Transition(ctx, id, func(r *lifecycle.Run) (lifecycle.Event, error) {
		asked = lifecycle.Allowed(r.Status, lifecycle.EventStopAsked)
		if !asked {
			return nil, nil
		}
		return lifecycle.StopAsked{Request: lifecycle.StopRequest{By: by, Abort: abort, At: s.now()}}, nil
	})
	return run, asked, err
}
