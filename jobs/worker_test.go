package jobs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// TestWorkerLogsEveryFailedAttempt: each failed attempt of a job is one log line of the worker with
// the job's type, task id, delivery, run, attempt and error; asynq alone says only "Retry exhausted".
func TestWorkerLogsEveryFailedAttempt(t *testing.T) {
	jh := newJobsHarness(t)
	rdb, _ := testRedis(t)
	logs := &syncBuffer{}
	w := NewWorker(rdb, WorkerConfig{Queue: jh.queue, Concurrency: 1, ShutdownTimeout: 5 * time.Second,
		RetryDelay: func(int, error, *asynq.Task) time.Duration { return time.Millisecond },
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := w.Start(NewServeMux(jh.h)); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown()
	jh.gh.Permissions["alice"] = "write"
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n"}

	// An intake whose permission check meets GitHub's 502 twice, then goes through.
	jh.gh.Mu.Lock()
	jh.gh.Fail["Permission"], jh.gh.FailTimes["Permission"] = errors.New("github: 502 Bad Gateway"), 2
	jh.gh.Mu.Unlock()
	intake := withDefaults(queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-intake-" + randomHex(t, 3), Sender: "alice"}, Event: queue.EventIssueComment,
		Body: &queue.CommentIntake{ID: 51, Number: 4, Author: "alice", Body: "/akira status"}})
	if err := jh.h.d.Enqueuer.EnqueueIntake(context.Background(), intake); err != nil {
		t.Fatal(err)
	}
	waitDone(t, jh, intake.JobID(), logs)

	// A run job whose payload cannot be read is not retried: the line says so, with its run.
	bad := asynq.NewTask(queue.TypeRun, []byte(`{"v":1,"delivery_id":"d-bad","trigger":"nonsense"}`), asynq.TaskID("d-bad"),
		asynq.Queue(jh.queue), asynq.MaxRetry(3))
	if _, err := asynq.NewClientFromRedisClient(rdb).Enqueue(bad); err != nil {
		t.Fatal(err)
	}
	waitDone(t, jh, "d-bad", logs)

	type line struct {
		Level, Msg, Type, TaskID, Delivery, Run, Err string
		Attempt, MaxAttempts                         int
	}
	var failed []line
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l struct {
			Level       string `json:"level"`
			Msg         string `json:"msg"`
			Type        string `json:"type"`
			TaskID      string `json:"task_id"`
			Delivery    string `json:"delivery"`
			Run         string `json:"run"`
			Err         string `json:"err"`
			Attempt     int    `json:"attempt"`
			MaxAttempts int    `json:"max_attempts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || !strings.HasPrefix(l.Msg, "job failed") {
			continue
		}
		failed = append(failed, line(l))
	}
	want := []line{
		{"WARN", "job failed; retried", queue.TypeIntake, intake.JobID(), intake.DeliveryID, "", "502 Bad Gateway", 1, queue.IntakeMaxRetry + 1},
		{"WARN", "job failed; retried", queue.TypeIntake, intake.JobID(), intake.DeliveryID, "", "502 Bad Gateway", 2, queue.IntakeMaxRetry + 1},
		{"ERROR", "job failed; not retried (archived)", queue.TypeRun, "d-bad", "d-bad", queue.RunIDFor("d-bad"), "trigger", 1, 4},
	}
	if len(failed) != len(want) {
		t.Fatalf("%d failed-job lines, want %d:\n%s", len(failed), len(want), logs.String())
	}
	for i, w := range want {
		g := failed[i]
		if g.Level != w.Level || g.Msg != w.Msg || g.Type != w.Type || g.TaskID != w.TaskID || g.Delivery != w.Delivery ||
			g.Run != w.Run || g.Attempt != w.Attempt || g.MaxAttempts != w.MaxAttempts || !strings.Contains(g.Err, w.Err) {
			t.Errorf("line %d = %+v, want %+v (err containing %q)", i, g, w, w.Err)
		}
	}
}

// waitDone waits for a task to be completed or archived, or fails saying which state it was left in.
func waitDone(t *testing.T, jh *jobsHarness, id string, logs *syncBuffer) {
	t.Helper()
	var state string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ti, err := jh.insp.GetTaskInfo(jh.queue, id)
		if err != nil {
			state = err.Error()
			continue
		}
		if state = ti.State.String(); ti.State == asynq.TaskStateCompleted || ti.State == asynq.TaskStateArchived {
			return
		}
	}
	t.Fatalf("task %s not done within a minute (last state: %s); worker log:\n%s", id, state, logs.String())
}
