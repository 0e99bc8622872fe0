package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
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

// TestSameTaskSeesEveryField: a change of any field of TaskState (a new one included) is a change to
// sameTask, also when it is made in place, through a slice or pointer the two states share.
func TestSameTaskSeesEveryField(t *testing.T) {
	base := filledTask(t)
	sum := taskSum(&base)
	if c := base; !sameTask(&base, sum, &c) {
		t.Fatal("a copy differs from its original")
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		before := filledTask(t)
		sum := taskSum(&before)
		changed := before // shares the slices and the judgement
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			setDifferent(t, f.Index(0), name, 2)
		case reflect.Pointer:
			setDifferent(t, f.Elem(), name, 2)
		default:
			setDifferent(t, f, name, 2)
		}
		if sameTask(&before, sum, &changed) {
			t.Errorf("sameTask misses a change of %s", name)
		}
	}
}

func storeWithTasks(t *testing.T, s *Store, id string, n int) *lifecycle.Run {
	t.Helper()
	r := &lifecycle.Run{ID: id, Owner: "o", Repo: "r", Branch: "b-" + id, Base: "main", Status: lifecycle.StatusRunning}
	for i := range n {
		r.Tasks = append(r.Tasks, lifecycle.TaskState{ID: fmt.Sprintf("1.%d", i+1), Title: fmt.Sprintf("Task %d", i+1), Status: lifecycle.TaskStatusPending})
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
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.Task("1.1").Attempts = 3; return nil }); err != nil {
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
		if _, err := st.s.Update(ctx, "r2", func(r *lifecycle.Run) error { r.Task(st.task).Attempts++; return nil }); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// A removed task and a new order, from b.
	if _, err := b.Update(ctx, "r2", func(r *lifecycle.Run) error {
		r.Tasks = append([]lifecycle.TaskState{r.Tasks[4]}, r.Tasks[:3]...)
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
		Tasks: []lifecycle.TaskState{{ID: "1.1", Title: "one", Status: lifecycle.TaskStatusPassed}, {ID: "1.2", Title: "two", Status: lifecycle.TaskStatusPending}}}
	data, _ := json.Marshal(old)
	if err := rdb.Set(ctx, s.runKey("r3"), data, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "r3")
	if err != nil || len(got.Tasks) != 2 || got.Tasks[1].Title != "two" {
		t.Fatalf("old record read as %+v, %v", got, err)
	}
	if _, err := s.Update(ctx, "r3", func(r *lifecycle.Run) error { r.Task("1.2").Status = lifecycle.TaskStatusRunning; return nil }); err != nil {
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

// BenchmarkStoreUpdate is one change of one task of a run with 20, 200 and 1,000 tasks: what an event
// costs the run's record as the run grows.
func BenchmarkStoreUpdate(b *testing.B) {
	rdb, prefix := testRedis(b)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	per := map[int]float64{}
	for _, n := range []int{20, 200, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := &lifecycle.Run{ID: fmt.Sprintf("bench-%d", n), Owner: "o", Repo: "r", Branch: fmt.Sprintf("bench-%d", n), Base: "main", Status: lifecycle.StatusRunning}
			for i := range n {
				r.Tasks = append(r.Tasks, lifecycle.TaskState{ID: fmt.Sprintf("1.%d", i), Title: "Add the thing number " + fmt.Sprint(i),
					Status: lifecycle.TaskStatusPassed, Attempts: 1, Duration: time.Second, CheckRunID: int64(1000 + i),
					CheckRunURL: "https://github.com/o/r/runs/123456789", CheckRunDone: true, CheckRunHead: strings.Repeat("a", 40),
					Checkpoint: strings.Repeat("b", 40), Accept: []string{"it works"}, InputTokens: 12345, OutputTokens: 2345, CostUSD: 0.12})
			}
			if _, _, err := s.Create(ctx, r); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Update(ctx, r.ID, func(r *lifecycle.Run) error { r.Tasks[i%n].Attempts++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			per[n] = float64(b.Elapsed().Microseconds()) / float64(b.N)
		})
	}
	for n, us := range per {
		b.Logf("akira-bench: store.update.%d.us %.1f", n, us)
	}
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
	if got, err := a.Update(ctx, "r5", func(r *lifecycle.Run) error { r.Task("1.3").Attempts = 1; return nil }); err != nil || len(got.Tasks) != 3 {
		t.Fatalf("update through the other store: %+v, %v", got, err)
	}
}
