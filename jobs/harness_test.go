package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/jobstest"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

// jobsHarness is a Handler wired to a recording fake GitHub, a real Redis store and a real asynq queue
// of its own, whose tasks the test reads back.
type jobsHarness struct {
	t     *testing.T
	gh    *jobstest.GitHub
	h     *Handler
	store *store.Store
	queue string
	// prefix is the store's and the locker's key prefix, for tests that play Redis losing a key.
	prefix string
	insp   *asynq.Inspector
	logs   *syncBuffer
}

// syncBuffer is a log sink for the handler and asynq's goroutines at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newJobsHarness(t *testing.T) *jobsHarness {
	t.Helper()
	rdb, prefix := testRedis(t)
	qname := "test-" + randomHex(t, 4)
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() {
		_ = insp.DeleteQueue(qname, true)
	})
	logs := &syncBuffer{}
	gh := jobstest.NewGitHub()
	st := store.NewStore(rdb, prefix)
	op, err := config.ParseOperator([]byte("agents:\n  sh:\n    kind: exec\n    command: sh \"$AKIRA_TEST_AGENT\"\n    env: [AKIRA_TEST_AGENT]\ndefault_agent: sh\n" +
		// The fake repositories have no CI of their own (run_ci_test.go plays one where it matters).
		"ci:\n  watch: off\n"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(flow.Deps{
		Store: st, Locker: store.NewLocker(rdb, prefix), Enqueuer: queue.NewEnqueuer(client, queue.TaskOptions{Queue: qname}),
		GitHub: gh.Installations(), Operator: op, WorkDir: t.TempDir(),
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &jobsHarness{t: t, gh: gh, h: h, store: st, prefix: prefix, queue: qname, insp: insp, logs: logs}
}

// queued returns the payloads of the tasks of a type enqueued so far, in any state, decoded into T.
func queued[T any](jh *jobsHarness, typ string) []T {
	jh.t.Helper()
	var tasks []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		jh.insp.ListPendingTasks, jh.insp.ListActiveTasks, jh.insp.ListRetryTasks, jh.insp.ListCompletedTasks, jh.insp.ListArchivedTasks,
	} {
		ts, err := list(jh.queue)
		if err != nil {
			return nil // the queue does not exist until a task is enqueued
		}
		tasks = append(tasks, ts...)
	}
	var out []T
	for _, ti := range tasks {
		if ti.Type != typ {
			continue
		}
		var p T
		if err := json.Unmarshal(ti.Payload, &p); err != nil {
			jh.t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// process enqueues the intake tasks and runs a real asynq worker on the harness's queue until every
// task is done (retries included, with no delay between them) or archived.
func (jh *jobsHarness) process(ps ...queue.IntakePayload) {
	jh.t.Helper()
	rdb, _ := testRedis(jh.t)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Queues: map[string]int{jh.queue: 1}, Concurrency: 1, TaskCheckInterval: 10 * time.Millisecond,
		DelayedTaskCheckInterval: 10 * time.Millisecond, IsFailure: IsFailure,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return time.Millisecond },
		Logger:         slogAsynq{slog.New(slog.NewJSONHandler(jh.logs, nil))}, LogLevel: asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(queue.TypeIntake, jh.h.intake.HandleIntake)
	// What an intake queues is only looked at: it completes untouched and is kept for queued.
	done := func(context.Context, *asynq.Task) error { return nil }
	mux.HandleFunc(queue.TypeRun, done)
	mux.HandleFunc(queue.TypeResume, done)
	if err := srv.Start(mux); err != nil {
		jh.t.Fatal(err)
	}
	defer srv.Shutdown()
	ids := map[string]bool{}
	for i, p := range ps {
		p = withDefaults(p)
		p.DeliveryID = fmt.Sprintf("d-%d-%s", i, randomHex(jh.t, 3))
		if err := jh.h.d.Enqueuer.EnqueueIntake(context.Background(), p); err != nil {
			jh.t.Fatal(err)
		}
		ids[p.JobID()] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for id := range ids {
			ti, err := jh.insp.GetTaskInfo(jh.queue, id)
			if err == nil && (ti.State == asynq.TaskStateCompleted || ti.State == asynq.TaskStateArchived) {
				if ti.State == asynq.TaskStateArchived {
					jh.t.Errorf("task %s archived: %s", id, ti.LastErr)
				}
				done++
			}
		}
		if done == len(ids) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	jh.t.Fatalf("intake tasks not done in 30 s; log:\n%s", jh.logs.String())
}

// intake runs one intake task through the handler, as asynq would on its first try.
func (jh *jobsHarness) intake(p queue.IntakePayload) error {
	jh.t.Helper()
	if p.DeliveryID == "" {
		p.DeliveryID = "d-" + randomHex(jh.t, 4)
	}
	if p.InstallationID == 0 {
		p.InstallationID = 7
	}
	if p.Owner == "" {
		p.Owner, p.Repo = "o", "r"
	}
	if p.DefaultBranch == "" {
		p.DefaultBranch = "main"
	}
	task, err := queue.TaskOptions{}.NewIntakeTask(p)
	if err != nil {
		jh.t.Fatalf("intake payload: %v", err)
	}
	return jh.h.intake.HandleIntake(context.Background(), task)
}

// withDefaults fills in what every test intake has: the repository o/r of installation 7.
func withDefaults(p queue.IntakePayload) queue.IntakePayload {
	p.Version, p.InstallationID, p.Owner, p.Repo, p.DefaultBranch = queue.PayloadVersion, 7, "o", "r", "main"
	return p
}

// newRun is a run of two pending tasks on branch.
func newRun(id, branch string) *lifecycle.Run {
	return &lifecycle.Run{ID: id, Owner: "Octo", Repo: "Hello", InstallationID: 1, Trigger: lifecycle.TriggerIssue, Issue: 4, Branch: branch,
		Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "one", Status: lifecycle.TaskStatusPending}, {ID: "1.2", Title: "two", Status: lifecycle.TaskStatusPending}}}
}
