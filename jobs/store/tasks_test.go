package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner"
)

// filledTask has every field of TaskState set, each to a value of its own.
func filledTask(t testing.TB) lifecycle.TaskState {
	t.Helper()
	var ts lifecycle.TaskState
	v := reflect.ValueOf(&ts).Elem()
	for i := 0; i < v.NumField(); i++ {
		setDifferent(t, v.Field(i), v.Type().Field(i).Name, 1)
	}
	return ts
}

// setDifferent sets a field to a non-zero value that depends on n.
func setDifferent(t testing.TB, f reflect.Value, name string, n int) {
	t.Helper()
	switch f.Kind() {
	case reflect.String:
		f.SetString(fmt.Sprintf("%s-%d", name, n))
	case reflect.Int, reflect.Int64:
		f.SetInt(int64(10 + n))
	case reflect.Float64:
		f.SetFloat(0.5 + float64(n))
	case reflect.Bool:
		f.SetBool(n%2 == 1)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		setDifferent(t, s.Index(0), name, n)
		f.Set(s)
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		setDifferent(t, p.Elem(), name, n)
		f.Set(p)
	case reflect.Struct:
		if f.Type() == reflect.TypeOf(time.Time{}) {
			f.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+n), 0)))
			return
		}
		for i := 0; i < f.NumField(); i++ {
			setDifferent(t, f.Field(i), name+"."+f.Type().Field(i).Name, n)
		}
	default:
		t.Fatalf("field %s: kind %s not handled by the test", name, f.Kind())
	}
}

// taskJSON is the task as the store writes it.
func taskJSON(t testing.TB, ts *lifecycle.TaskState) string {
	t.Helper()
	data, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestChangeInPlaceIsCaught: in a test binary a change that finds a task it shares with the store's
// readers changed in place (any field of TaskState, a new one included, also through a slice or
// pointer the copies share) fails with ErrChangedInPlace and stores nothing, whether a reader of an
// earlier run or the change's fn wrote it (into a task it kept or one it replaced); the same change
// through EditTask is stored.
func TestChangeInPlaceIsCaught(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	typ := reflect.TypeOf(lifecycle.TaskState{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		t.Run(name, func(t *testing.T) {
			s := NewStore(rdb, prefix)
			if !s.tasks.check {
				t.Fatal("the store does not check for changes in place in a test binary")
			}
			filled := filledTask(t)
			id := "in-place-" + name
			created, _, err := s.Create(ctx, &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: id, Status: lifecycle.StatusRunning,
				Tasks: []*lifecycle.TaskState{&filled, {ID: "other", Status: lifecycle.TaskStatusPending}}})
			if err != nil {
				t.Fatal(err)
			}
			taskID, was := filled.ID, taskJSON(t, created.Tasks[0])
			change := func(ts *lifecycle.TaskState, inPlace bool) {
				f := reflect.ValueOf(ts).Elem().Field(i)
				switch {
				case inPlace && f.Kind() == reflect.Slice:
					setDifferent(t, f.Index(0), name, 2)
				case inPlace && f.Kind() == reflect.Pointer:
					setDifferent(t, f.Elem(), name, 2)
				default: // a new slice or pointer, not the shared one changed
					setDifferent(t, f, name, 2)
				}
			}
			stored := func() string {
				t.Helper()
				got, err := NewStore(rdb, prefix).Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return taskJSON(t, got.Tasks[0])
			}

			// A reader of the run (which shares the tasks the store keeps since it created the run) writes
			// into it; the next change of the run, of anything, sees it.
			reader, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			change(reader.Tasks[0], true)
			if _, err := s.Update(ctx, id, func(r *lifecycle.Run) error { r.Jobs++; return nil }); !errors.Is(err, ErrChangedInPlace) {
				t.Fatalf("a change in place of %s by a reader: err = %v", name, err)
			}
			if got := stored(); got != was {
				t.Fatalf("the change after a reader's was stored: %s", got)
			}

			// The change's own fn writes into the task it was given (read from Redis again: the store
			// forgot what it kept when the change above failed).
			_, err = s.Update(ctx, id, func(r *lifecycle.Run) error { change(r.Tasks[0], true); return nil })
			if !errors.Is(err, ErrChangedInPlace) {
				t.Fatalf("a change in place of %s by the change: err = %v", name, err)
			}
			if got := stored(); got != was {
				t.Fatalf("the refused change was stored: %s", got)
			}
			// Or it takes a copy with EditTask, and writes into the task it replaced, which readers hold.
			_, err = s.Update(ctx, id, func(r *lifecycle.Run) error {
				shared := r.Tasks[0]
				r.EditTask(shared.ID).Note = "edited"
				change(shared, true)
				return nil
			})
			if !errors.Is(err, ErrChangedInPlace) {
				t.Fatalf("a change in place of %s in the task EditTask replaced: err = %v", name, err)
			}
			if got := stored(); got != was {
				t.Fatalf("the refused change was stored: %s", got)
			}

			run, err := s.Update(ctx, id, func(r *lifecycle.Run) error {
				if r.Task(taskID) == nil {
					return fmt.Errorf("task %s is gone", taskID)
				}
				change(r.EditTask(taskID), false)
				return nil
			})
			if err != nil {
				t.Fatalf("the change of %s through EditTask: %v", name, err)
			}
			if want := taskJSON(t, run.Tasks[0]); stored() != want || want == was {
				t.Errorf("the change of %s through EditTask: stored %s, want %s (was %s)", name, stored(), want, was)
			}
		})
	}
}

// TestChangeOfASharedListIsCaught: the runs the store returns share their list of tasks with it; a
// holder that changes a run outside Update (EditTask on it, or a task put in its list) changes that
// list, and in a test binary the next change fails with ErrChangedInPlace and stores nothing.
func TestChangeOfASharedListIsCaught(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(r *lifecycle.Run)
	}{
		{"EditTask outside Update", func(r *lifecycle.Run) { r.EditTask("1.2").Note = "local" }},
		{"a task put in the list", func(r *lifecycle.Run) { r.Tasks[1] = &lifecycle.TaskState{ID: "1.2", Note: "local"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(rdb, prefix)
			id := "shared-list-" + strings.ReplaceAll(tc.name, " ", "-")
			returned, _, err := s.Create(ctx, &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: id, Status: lifecycle.StatusRunning,
				Tasks: []*lifecycle.TaskState{{ID: "1.1"}, {ID: "1.2"}}})
			if err != nil {
				t.Fatal(err)
			}
			tc.change(returned)
			if _, err := s.Update(ctx, id, func(r *lifecycle.Run) error { r.Jobs++; return nil }); !errors.Is(err, ErrChangedInPlace) {
				t.Fatalf("the next change: err = %v, want ErrChangedInPlace", err)
			}
			got, err := NewStore(rdb, prefix).Get(ctx, id)
			if err != nil || got.Task("1.2").Note != "" || got.Jobs != 0 {
				t.Fatalf("stored: %+v, %v", got, err)
			}
		})
	}
}

// TestReadersKeepTheirRun: the runs Get and Update return share their tasks with the store, yet each
// stays as it was returned while two workers' stores go on changing the run (run with -race: a
// write into a shared task would be a data race with the readers).
func TestReadersKeepTheirRun(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := NewStore(rdb, prefix), NewStore(rdb, prefix)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const tasks, changes = 10, 60
	storeWithTasks(t, a, "r6", tasks)

	type kept struct {
		run  *lifecycle.Run
		json []string
	}
	keep := func(r *lifecycle.Run) kept {
		k := kept{run: r}
		for _, ts := range r.Tasks {
			k.json = append(k.json, taskJSON(t, ts))
		}
		return k
	}
	var mu sync.Mutex
	var all []kept
	var readers, writers sync.WaitGroup
	errs := make(chan error, 64)
	for range 2 {
		readers.Go(func() {
			for ctx.Err() == nil {
				r, err := a.Get(ctx, "r6")
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				k := keep(r)
				mu.Lock()
				all = append(all, k)
				mu.Unlock()
			}
		})
	}
	for w, s := range []*Store{a, b} {
		writers.Go(func() {
			for n := range changes {
				task := fmt.Sprintf("1.%d", (n+w)%tasks+1)
				r, err := s.Update(ctx, "r6", func(r *lifecycle.Run) error {
					ts := r.EditTask(task)
					ts.Attempts++
					ts.Accept = append(ts.Accept, fmt.Sprint(w, n))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				k := keep(r)
				mu.Lock()
				all = append(all, k)
				mu.Unlock()
			}
		})
	}
	writers.Wait()
	cancel()
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range all {
		for i, ts := range k.run.Tasks {
			if got := taskJSON(t, ts); got != k.json[i] {
				t.Fatalf("a run returned at rev %d changed after it was returned: task %s is %s, was %s", k.run.Rev, ts.ID, got, k.json[i])
			}
		}
	}
	got, err := NewStore(rdb, prefix).Get(context.Background(), "r6")
	if err != nil {
		t.Fatal(err)
	}
	attempts, accepted := 0, 0
	for _, ts := range got.Tasks {
		attempts += ts.Attempts
		accepted += len(ts.Accept)
	}
	if attempts != 2*changes || accepted != 2*changes || len(all) < 2*changes {
		t.Errorf("after %d changes: %d attempts, %d criteria (%d runs kept)", 2*changes, attempts, accepted, len(all))
	}
}

// TestConflictingWriterIsDetected: another worker changes the run (the same task) between a change's
// read and its write; the change's transaction fails, fn runs again on the run as the other worker
// left it, and neither change is lost (nor is the first run of fn stored).
func TestConflictingWriterIsDetected(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := NewStore(rdb, prefix), NewStore(rdb, prefix)
	ctx := context.Background()
	storeWithTasks(t, a, "r7", 3) // a keeps the run's tasks: it made the last change
	calls := 0
	got, err := a.Update(ctx, "r7", func(r *lifecycle.Run) error {
		calls++
		if calls == 1 {
			if _, err := b.Update(ctx, "r7", func(r *lifecycle.Run) error { r.EditTask("1.1").Note = "b was here"; return nil }); err != nil {
				return err
			}
		}
		r.EditTask("1.1").Attempts++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("fn ran %d times, want 2: the other writer was not detected", calls)
	}
	for _, s := range []*Store{a, b, NewStore(rdb, prefix)} {
		r, err := s.Get(ctx, "r7")
		if err != nil {
			t.Fatal(err)
		}
		if tk := r.Task("1.1"); tk.Note != "b was here" || tk.Attempts != 1 || r.Rev != got.Rev || r.Rev != 3 {
			t.Errorf("task 1.1 read back at rev %d (want %d, 3) = %+v", r.Rev, got.Rev, tk)
		}
	}
}

func storeWithTasks(t *testing.T, s *Store, id string, n int) *lifecycle.Run {
	t.Helper()
	r := &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: "b-" + id, Base: "main", Status: lifecycle.StatusRunning}
	for i := range n {
		r.Tasks = append(r.Tasks, &lifecycle.TaskState{ID: fmt.Sprintf("1.%d", i+1), Title: fmt.Sprintf("Task %d", i+1), Status: lifecycle.TaskStatusPending})
	}
	created, ok, err := s.Create(context.Background(), r)
	if err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	return created
}

// TestUpdateWritesOnlyTheTasksItChanged: a change of one task writes that task and the record, and
// leaves the other tasks' fields in Redis alone (a value planted there behind the store's back stays).
func TestUpdateWritesOnlyTheTasksItChanged(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	storeWithTasks(t, s, "r1", 50)
	planted := `{"id":"1.40","title":"Task 40","status":"pending","note":"planted"}`
	if err := rdb.HSet(ctx, s.tasksKey("r1"), "1.40", planted).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.EditTask("1.1").Attempts = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, s.tasksKey("r1"), "1.40").Val(); got != planted {
		t.Errorf("task 1.40 was rewritten by a change of 1.1: %s", got)
	}
	var t1 lifecycle.TaskState
	if err := json.Unmarshal([]byte(rdb.HGet(ctx, s.tasksKey("r1"), "1.1").Val()), &t1); err != nil || t1.Attempts != 3 {
		t.Errorf("task 1.1 in Redis = %+v (%v), want 3 attempts", t1, err)
	}
	if rec := rdb.Get(ctx, s.runKey("r1")).Val(); strings.Contains(rec, `"tasks"`) {
		t.Errorf("the record holds its tasks inline: %s", rec)
	}
	// A fresh store (another worker) reads the tasks from Redis, the planted one included.
	got, err := NewStore(rdb, prefix).Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 50 || got.Tasks[0].Attempts != 3 || got.Task("1.40").Note != "planted" || got.Tasks[49].ID != "1.50" {
		t.Errorf("tasks read back: %d, first %+v, 1.40 %+v", len(got.Tasks), got.Tasks[0], got.Task("1.40"))
	}
}

// TestUpdatesOfTwoStoresMeet: two workers' stores change the same run in turn; neither loses the
// other's change, whatever each kept of the run.
func TestUpdatesOfTwoStoresMeet(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := NewStore(rdb, prefix), NewStore(rdb, prefix)
	ctx := context.Background()
	storeWithTasks(t, a, "r2", 5)
	steps := []struct {
		s    *Store
		task string
	}{{a, "1.1"}, {b, "1.2"}, {a, "1.3"}, {b, "1.1"}, {a, "1.5"}}
	for i, st := range steps {
		if _, err := st.s.Update(ctx, "r2", func(r *lifecycle.Run) error { r.EditTask(st.task).Attempts++; return nil }); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// A removed task and a new order, from b.
	if _, err := b.Update(ctx, "r2", func(r *lifecycle.Run) error {
		r.Tasks = append([]*lifecycle.TaskState{r.Tasks[4]}, r.Tasks[:3]...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Update(ctx, "r2", func(*lifecycle.Run) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	attempts := map[string]int{}
	for _, ts := range got.Tasks {
		ids = append(ids, ts.ID)
		attempts[ts.ID] = ts.Attempts
	}
	if strings.Join(ids, ",") != "1.5,1.1,1.2,1.3" || attempts["1.1"] != 2 || attempts["1.2"] != 1 || attempts["1.3"] != 1 || attempts["1.5"] != 1 {
		t.Errorf("tasks = %v, attempts %v", ids, attempts)
	}
	if n := rdb.HLen(ctx, a.tasksKey("r2")).Val(); n != 5 { // four tasks and the order
		t.Errorf("the tasks key has %d fields, want 5: the removed task is gone", n)
	}
}

// TestRecordWithInlineTasksIsSplitAtItsNextChange: a record stored before tasks had a key of their
// own is read as it is, and its next change moves its tasks out.
func TestRecordWithInlineTasksIsSplitAtItsNextChange(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	old := lifecycle.Run{ID: "r3", Owner: "o", Repo: "r", Branch: "b3", Base: "main", Status: lifecycle.StatusRunning, Rev: 4,
		Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "one", Status: lifecycle.TaskStatusPassed}, {ID: "1.2", Title: "two", Status: lifecycle.TaskStatusPending}}}
	data, _ := json.Marshal(old)
	if err := rdb.Set(ctx, s.runKey("r3"), data, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "r3")
	if err != nil || len(got.Tasks) != 2 || got.Tasks[1].Title != "two" {
		t.Fatalf("old record read as %+v, %v", got, err)
	}
	if _, err := s.Update(ctx, "r3", func(r *lifecycle.Run) error { r.EditTask("1.2").Status = lifecycle.TaskStatusRunning; return nil }); err != nil {
		t.Fatal(err)
	}
	if rec := rdb.Get(ctx, s.runKey("r3")).Val(); strings.Contains(rec, `"tasks"`) {
		t.Errorf("the record still holds its tasks inline: %s", rec)
	}
	got, err = NewStore(rdb, prefix).Get(ctx, "r3")
	if err != nil || len(got.Tasks) != 2 || got.Tasks[0].Status != lifecycle.TaskStatusPassed || got.Tasks[1].Status != lifecycle.TaskStatusRunning {
		t.Errorf("split record read as %+v, %v", got, err)
	}
}

// TestFinishedRunsTasksExpireWithIt: the tasks key takes the record's retention when the run ends.
func TestFinishedRunsTasksExpireWithIt(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	storeWithTasks(t, s, "r4", 3)
	if ttl := rdb.PTTL(ctx, s.tasksKey("r4")).Val(); ttl != -1 {
		t.Fatalf("a working run's tasks expire in %s", ttl)
	}
	if _, err := s.Update(ctx, "r4", func(r *lifecycle.Run) error { r.Status = lifecycle.StatusSucceeded; return nil }); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, s.tasksKey("r4")).Val(); ttl <= 0 || ttl > s.retention() {
		t.Errorf("a finished run's tasks expire in %s, want its retention %s", ttl, s.retention())
	}
}

// benchRun is a run of n tasks done, each as a finished task's record holds it.
func benchRun(id string, n int) *lifecycle.Run {
	r := &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: id, Base: "main", Status: lifecycle.StatusRunning}
	for i := range n {
		r.Tasks = append(r.Tasks, &lifecycle.TaskState{ID: fmt.Sprintf("1.%d", i), Title: "Add the thing number " + fmt.Sprint(i),
			Status: lifecycle.TaskStatusPassed, Attempts: 1, Duration: time.Second, CheckRunID: int64(1000 + i),
			CheckRunURL: "https://github.com/o/r/runs/123456789", CheckRunDone: true, CheckRunHead: strings.Repeat("a", 40),
			Checkpoint: strings.Repeat("b", 40), Accept: []string{"it works"}, InputTokens: 12345, OutputTokens: 2345, CostUSD: 0.12})
	}
	return r
}

// benchSizes are the runs' lengths the benchmarks of a change compare; the first is the floor.
var benchSizes = []int{20, 200, 1000}

// benchBlock is how many events one size takes before the next size's turn.
const benchBlock = 10

// benchEvents measures event, one change of the task named, on runs of 20, 200 and 1,000 tasks. The
// sizes take turns, a block of benchBlock events each, so that the load of a shared machine, which
// moves from one second to the next, weighs on every size alike and the floor is measured in the same
// moments as the rest; the blocks keep each size's events together, so that what a size costs the
// process after them (its garbage, the collector's work) is mostly its own. (Events interleaved one
// by one hid most of the growth the tasks copied whole at each event made: the 20 tasks' events paid
// for the 1,000's collections.) Each iteration is one event (-benchtime 900x: 300 a size). It reports
// each size's mean time per event (µs/event-<n>, and name.<n>.us for `make bench`) and the ratio of
// the longest run's to the floor's.
func benchEvents(b *testing.B, name string, event func(ctx context.Context, s *Store, run, task string) error) {
	rdb, prefix := testRedis(b)
	s := NewStore(rdb, prefix)
	// The check of changes in place is the tests': it encodes every task at every change.
	s.tasks.check = false
	ctx := context.Background()
	runs := make([]*lifecycle.Run, len(benchSizes))
	for k, n := range benchSizes {
		runs[k] = benchRun(fmt.Sprintf("bench-%s-%d", name, n), n)
		if _, _, err := s.Create(ctx, runs[k]); err != nil {
			b.Fatal(err)
		}
	}
	spent := make([]time.Duration, len(benchSizes))
	events := make([]int, len(benchSizes))
	i := 0
	for b.Loop() {
		k := (i / benchBlock) % len(runs)
		i++
		r := runs[k]
		task := r.Tasks[i%len(r.Tasks)].ID
		start := time.Now()
		if err := event(ctx, s, r.ID, task); err != nil {
			b.Fatal(err)
		}
		spent[k] += time.Since(start)
		events[k]++
	}
	us := make([]float64, len(benchSizes))
	for k, n := range benchSizes {
		us[k] = float64(spent[k].Nanoseconds()) / 1e3 / float64(max(events[k], 1))
		b.ReportMetric(us[k], fmt.Sprintf("µs/event-%d", n))
		b.Logf("akira-bench: %s.%d.us %.1f", name, n, us[k])
	}
	last := len(benchSizes) - 1
	b.ReportMetric(us[last]/us[0], fmt.Sprintf("x-%d-vs-%d", benchSizes[last], benchSizes[0]))
}

// BenchmarkStoreUpdate is one change of one task of a run with 20, 200 and 1,000 tasks, as the engine
// makes it (the task found by its id and changed through EditTask): what an event costs the run's
// record as the run grows.
func BenchmarkStoreUpdate(b *testing.B) {
	benchEvents(b, "store.update", func(ctx context.Context, s *Store, run, task string) error {
		_, err := s.Update(ctx, run, func(r *lifecycle.Run) error { r.EditTask(task).Attempts++; return nil })
		return err
	})
}

// BenchmarkStoreApply is an engine's event through the lifecycle (a task's checkpoint: its status,
// commit, note and duration, and the run's head), stored by Records.Apply.
func BenchmarkStoreApply(b *testing.B) {
	benchEvents(b, "store.apply", func(ctx context.Context, s *Store, run, task string) error {
		_, _, err := s.Apply(ctx, run, lifecycle.TaskCheckpointed{Engine: runner.Event{TaskID: task, Attempt: 1,
			Commit: strings.Repeat("c", 40), Message: "Add the thing", Duration: time.Second}})
		return err
	})
}

// TestRunRebuiltUnderItsIDIsReadAgain: Redis loses a run another worker's store still keeps the tasks
// of; the run is rebuilt under the same id, at the same revision number: that store reads the
// rebuilt run's tasks, not its own.
func TestRunRebuiltUnderItsIDIsReadAgain(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := NewStore(rdb, prefix), NewStore(rdb, prefix)
	ctx := context.Background()
	storeWithTasks(t, a, "r5", 2)
	if err := rdb.Del(ctx, a.runKey("r5"), a.tasksKey("r5"), a.branchKey("o", "r", "b-r5")).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // another creation time
	storeWithTasks(t, b, "r5", 3)
	got, err := a.Get(ctx, "r5")
	if err != nil || len(got.Tasks) != 3 {
		t.Fatalf("the rebuilt run read by the other store: %d tasks (%v), want 3", len(got.Tasks), err)
	}
	if got, err := a.Update(ctx, "r5", func(r *lifecycle.Run) error { r.EditTask("1.3").Attempts = 1; return nil }); err != nil || len(got.Tasks) != 3 {
		t.Fatalf("update through the other store: %+v, %v", got, err)
	}
}
