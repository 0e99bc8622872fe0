package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs"
)

// TestSchedulerShutdownLogsNoError: a scheduler built on serve's shared Redis client stops without
// an ERROR line (asynq logs "Failed to close redis client connection" for a client it must not
// close), while its other errors still reach the log.
func TestSchedulerShutdownLogsNoError(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	sched := asynq.NewSchedulerFromRedisClient(rdb, &asynq.SchedulerOpts{Logger: sharedClientLogger{jobs.AsynqLogger(log)}, LogLevel: asynq.WarnLevel})
	if err := sched.Start(); err != nil {
		t.Fatal(err)
	}
	sched.Shutdown()
	if strings.Contains(buf.String(), `"level":"ERROR"`) {
		t.Errorf("the scheduler's shutdown logged an error:\n%s", buf.String())
	}
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Errorf("serve's client was closed under it: %v", err)
	}
	sharedClientLogger{jobs.AsynqLogger(log)}.Error("something else went wrong")
	if !strings.Contains(buf.String(), "something else went wrong") {
		t.Errorf("another error was dropped:\n%s", buf.String())
	}
}
