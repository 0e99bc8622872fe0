package flow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
)

// TestHandle: every task type's handler counts its job under its type: a payload that can never be
// processed as invalid (and not retried, without the job being done), otherwise what the job says.
func TestHandle(t *testing.T) {
	resume := queue.ResumePayload{TaskHeader: queue.TaskHeader{DeliveryID: "d1", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"},
		Number: 3, TaskID: "1", Decision: "approve"}
	good, err := queue.TaskOptions{}.NewResumeTask(resume)
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New("github answered 502")
	for _, tt := range []struct {
		name       string
		task       *asynq.Task
		result     string
		err        error
		wantResult string
		wantDone   bool
		skipRetry  bool
	}{
		{name: "done", task: good, result: metrics.ResultDecided, wantResult: metrics.ResultDecided, wantDone: true},
		{name: "the job's own failure", task: good, result: metrics.ResultRetry, err: failed, wantResult: metrics.ResultRetry, wantDone: true},
		{name: "not JSON", task: asynq.NewTask(queue.TypeResume, []byte("{")), wantResult: metrics.ResultInvalid, skipRetry: true},
		{name: "another type's task", task: asynq.NewTask(queue.TypeRun, good.Payload()), wantResult: metrics.ResultInvalid, skipRetry: true},
		{name: "an invalid payload", task: asynq.NewTask(queue.TypeResume, []byte(`{"v":2,"delivery_id":"d"}`)), wantResult: metrics.ResultInvalid, skipRetry: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metrics.NewMetrics(reg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got *queue.ResumePayload
			err = Handle(context.Background(), tt.task, m, queue.TypeResume, func(_ context.Context, p queue.ResumePayload) (string, error) {
				got = &p
				return tt.result, tt.err
			})
			if done := got != nil; done != tt.wantDone {
				t.Fatalf("job done: %v, want %v", done, tt.wantDone)
			}
			if got != nil && (got.TaskID != "1" || got.Sender != "alice" || got.Version != queue.PayloadVersion) {
				t.Errorf("payload handed to the job: %+v", *got)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("error %v, want the job's %v", err, tt.err)
			}
			if errors.Is(err, asynq.SkipRetry) != tt.skipRetry {
				t.Errorf("error %v: wraps SkipRetry %v, want %v", err, errors.Is(err, asynq.SkipRetry), tt.skipRetry)
			}
			want := `# HELP akira_jobs_total Jobs processed, by task type and result.
# TYPE akira_jobs_total counter
akira_jobs_total{result="` + tt.wantResult + `",type="` + queue.TypeResume + `"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "akira_jobs_total"); err != nil {
				t.Error(err)
			}
		})
	}
}
