package jobs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestMetrics registers on a registry of its own and reads the queue size from a real queue.
func TestMetrics(t *testing.T) {
	rdb, prefix := testRedis(t)
	queue := strings.TrimSuffix(prefix, ":")
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true) })
	e := NewEnqueuer(asynq.NewClientFromRedisClient(rdb), TaskOptions{Queue: queue})
	for _, id := range []string{"a", "b"} {
		p := validRun()
		p.DeliveryID = id
		if err := e.EnqueueRun(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, insp, queue)
	if err != nil {
		t.Fatal(err)
	}
	m.job(TypeRun, ResultParked)
	m.usage(100, 20, 0.5)
	m.escalated()
	m.task("passed", 12, 2)
	var nilMetrics *Metrics
	nilMetrics.job(TypeRun, ResultFailed) // a worker without metrics must not panic

	want := `
# HELP akira_queue_tasks Tasks in the asynq queue, by state.
# TYPE akira_queue_tasks gauge
akira_queue_tasks{queue="` + queue + `",state="active"} 0
akira_queue_tasks{queue="` + queue + `",state="archived"} 0
akira_queue_tasks{queue="` + queue + `",state="completed"} 0
akira_queue_tasks{queue="` + queue + `",state="pending"} 2
akira_queue_tasks{queue="` + queue + `",state="retry"} 0
akira_queue_tasks{queue="` + queue + `",state="scheduled"} 0
# HELP akira_agent_tokens_total Tokens the agents consumed, by direction (input, output).
# TYPE akira_agent_tokens_total counter
akira_agent_tokens_total{direction="input"} 100
akira_agent_tokens_total{direction="output"} 20
# HELP akira_jobs_total Jobs processed, by task type and result.
# TYPE akira_jobs_total counter
akira_jobs_total{result="parked",type="akira:run"} 1
# HELP akira_escalations_total Tasks parked for a human decision.
# TYPE akira_escalations_total counter
akira_escalations_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"akira_queue_tasks", "akira_agent_tokens_total", "akira_jobs_total", "akira_escalations_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.attempts); n != 1 {
		t.Errorf("attempt histograms: %d", n)
	}
	if _, err := NewMetrics(reg, nil); err == nil {
		t.Error("registering twice on one registry must fail")
	}
}

// TestRefusedTransitionLoggedAndCounted: an event the lifecycle's table does not allow in the stored
// run's state is an error naming both, changes nothing in Redis, and is logged and counted.
func TestRefusedTransitionLoggedAndCounted(t *testing.T) {
	rdb, prefix := testRedis(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	st := store.NewStore(rdb, prefix)
	if _, err := NewHandler(Deps{Store: st, Locker: store.NewLocker(rdb, prefix), Enqueuer: &Enqueuer{}, GitHub: newFakeGitHub().installations(),
		Metrics: m, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, _, err := st.Create(ctx, newRun("r1", "akira/issue-4"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Apply(ctx, run.ID, lifecycle.Revived{})
	if !errors.Is(err, lifecycle.ErrTransition) || !strings.Contains(err.Error(), `"revived" is not allowed in state queued`) {
		t.Fatalf("err = %v", err)
	}
	after, err := st.Get(ctx, run.ID)
	if err != nil || after.Rev != run.Rev || after.Status != StatusQueued {
		t.Fatalf("the refused event wrote the run: %+v, %v", after, err)
	}
	if got := testutil.ToFloat64(m.refused.WithLabelValues("queued", "revived")); got != 1 {
		t.Errorf("akira_transitions_refused_total{from=queued,event=revived} = %v", got)
	}
	if !strings.Contains(logs.String(), `"msg":"lifecycle: event refused"`) {
		t.Errorf("not logged: %s", logs.String())
	}
}

// TestRunResultsAreJobResults: the result a run job reports for the state it leaves a run in is one
// of the result labels akira_jobs_total documents.
func TestRunResultsAreJobResults(t *testing.T) {
	known := []string{ResultSucceeded, ResultParked, ResultFailed, ResultRetry, ResultBusy, ResultNoop, ResultAccepted,
		ResultReplied, ResultDecided, ResultRefused, ResultAborted, ResultWaiting, ResultPaused, ResultInvalid, ResultQueued}
	for _, s := range lifecycle.RunStatuses {
		if r := s.Result(); r != "" && !slices.Contains(known, r) {
			t.Errorf("state %s: result %q is not a result label of akira_jobs_total", s, r)
		}
	}
}
