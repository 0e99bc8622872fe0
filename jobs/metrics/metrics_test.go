package metrics

import (
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestMetrics registers on a registry of its own and reads the queue size from a real queue.
func TestMetrics(t *testing.T) {
	rdb, prefix := testRedis(t)
	queue := strings.TrimSuffix(prefix, ":")
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true) })
	client := asynq.NewClientFromRedisClient(rdb)
	for _, id := range []string{"a", "b"} {
		if _, err := client.Enqueue(asynq.NewTask("akira:run", []byte("{}"), asynq.TaskID(id), asynq.Queue(queue))); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, insp, queue)
	if err != nil {
		t.Fatal(err)
	}
	m.Job("akira:run", ResultParked)
	m.Usage(100, 20, 0.5)
	m.Escalated()
	m.Task("passed", 12, 2)
	var nilMetrics *Metrics
	nilMetrics.Job("akira:run", ResultFailed) // a worker without metrics must not panic

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
