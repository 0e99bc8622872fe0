package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/jobstest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// TestRefusedTransitionLoggedAndCounted: an event the lifecycle's table does not allow in the stored
// run's state is an error naming both, changes nothing in Redis, and is logged and counted.
func TestRefusedTransitionLoggedAndCounted(t *testing.T) {
	rdb, prefix := testRedis(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.NewMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	st := store.NewStore(rdb, prefix)
	if _, err := NewHandler(flow.Deps{Store: st, Locker: store.NewLocker(rdb, prefix), Enqueuer: &queue.Enqueuer{}, GitHub: jobstest.NewGitHub().Installations(),
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
	if err != nil || after.Rev != run.Rev || after.Status != lifecycle.StatusQueued {
		t.Fatalf("the refused event wrote the run: %+v, %v", after, err)
	}
	want := `
# HELP akira_transitions_refused_total Events the run's transition table did not allow in the run's state, by state and event.
# TYPE akira_transitions_refused_total counter
akira_transitions_refused_total{event="revived",from="queued"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "akira_transitions_refused_total"); err != nil {
		t.Errorf("akira_transitions_refused_total{from=queued,event=revived}: %v", err)
	}
	if !strings.Contains(logs.String(), `"msg":"lifecycle: event refused"`) {
		t.Errorf("not logged: %s", logs.String())
	}
}
