package jobs

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
