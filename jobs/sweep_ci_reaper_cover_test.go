package jobs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/recovery"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// fakeDeliveries is GitHub's list of the App's webhook deliveries, in pages of two, newest first.
type fakeDeliveries struct {
	list        []ports.Delivery
	redelivered []int64
	failList    error
}

func (f *fakeDeliveries) ListDeliveries(_ context.Context, cursor string) ([]ports.Delivery, string, error) {
	if f.failList != nil {
		return nil, "", f.failList
	}
	start := 0
	if cursor != "" {
		start = int(cursor[0] - '0')
	}
	end := min(start+2, len(f.list))
	next := ""
	if end < len(f.list) {
		next = string(rune('0' + end))
	}
	return f.list[start:end], next, nil
}

func (f *fakeDeliveries) Redeliver(_ context.Context, id int64) error {
	f.redelivered = append(f.redelivered, id)
	return nil
}

func TestSweepRedeliversWhatFailedOnServerSide(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	f := &fakeDeliveries{list: []ports.Delivery{
		{ID: 1, GUID: "lost", StatusCode: 502, Redelivery: true, DeliveredAt: at(time.Minute)},
		{ID: 2, GUID: "fine", StatusCode: 202, DeliveredAt: at(2 * time.Minute)},
		{ID: 3, GUID: "lost", StatusCode: 0, DeliveredAt: at(3 * time.Minute)},
		{ID: 4, GUID: "refused", StatusCode: 401, DeliveredAt: at(4 * time.Minute)},
		{ID: 5, GUID: "hopeless", StatusCode: 500, DeliveredAt: at(5 * time.Minute)},
		{ID: 6, GUID: "hopeless", StatusCode: 500, DeliveredAt: at(6 * time.Minute)},
		{ID: 7, GUID: "hopeless", StatusCode: 500, DeliveredAt: at(7 * time.Minute)},
		{ID: 8, GUID: "hopeless", StatusCode: 500, DeliveredAt: at(8 * time.Minute)},
		{ID: 9, GUID: "hopeless", StatusCode: 500, DeliveredAt: at(9 * time.Minute)},
		{ID: 10, GUID: "ancient", StatusCode: 500, DeliveredAt: at(recovery.SweepWindow + time.Hour)},
	}}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Sweep(context.Background(), f, now, m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// The newest attempt of the lost delivery is redelivered; a 2xx or 4xx one never is; five failed
	// attempts are enough; what is older than the window is not looked at.
	if res != (recovery.SweepResult{Seen: 4, Redelivered: 1, GivenUp: 1}) || !slices.Equal(f.redelivered, []int64{1}) {
		t.Errorf("sweep = %+v, redelivered %v; want 4 seen, delivery 1 redelivered, 1 given up", res, f.redelivered)
	}
	if got := counterValue(t, reg, "akira_redeliveries_total", "result", "given_up"); got != 1 {
		t.Errorf("given_up metric = %v", got)
	}

	f.failList = errors.New("401 bad credentials")
	if _, err := recovery.Sweep(context.Background(), f, now, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "sweep: 401 bad credentials") {
		t.Errorf("sweep with GitHub refusing = %v", err)
	}
}

func TestHandleSweep(t *testing.T) {
	jh := newJobsHarness(t)
	task := queue.NewSweepTask("")
	if task.Type() != queue.TypeSweep {
		t.Fatalf("sweep task type %q", task.Type())
	}
	// A worker without the App's credentials has nothing to sweep with.
	if err := jh.h.recovery.HandleSweep(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	f := &fakeDeliveries{list: []ports.Delivery{{ID: 41, GUID: "g", StatusCode: 503, DeliveredAt: time.Now()}}}
	jh.h.d.Deliveries = f
	if err := jh.h.recovery.HandleSweep(context.Background(), task); err != nil || !slices.Equal(f.redelivered, []int64{41}) {
		t.Errorf("HandleSweep = %v, redelivered %v; want 41", err, f.redelivered)
	}
	f.failList = errors.New("boom")
	if err := jh.h.recovery.HandleSweep(context.Background(), task); err == nil {
		t.Error("HandleSweep hid a failed listing")
	}
}

func TestCIReportsArePolledAndRouted(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	h1, old := strings.Repeat("a1", 20), strings.Repeat("0b", 20)
	run := waitingRun(t, jh, h1, lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 2})

	// The poll queues one reading per run and slot, however many workers poll.
	now := time.Now()
	for range 2 {
		if err := jh.h.ci.PollCI(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	readings := queued[queue.CIPayload](jh, queue.TypeCI)
	if len(readings) != 1 || readings[0].RunID != run.ID || readings[0].Head != "" || !strings.HasPrefix(readings[0].Key, "poll-") {
		t.Fatalf("readings after two polls = %+v, want one poll reading of %s", readings, run.ID)
	}

	// A CI report for the run's head on its branch is routed to it; another commit, another branch are not.
	report := func(head, branch string) queue.IntakePayload {
		return queue.IntakePayload{Event: queue.EventCheckSuite, Body: &queue.CIIntake{HeadSHA: head, Branches: []string{branch}, Name: "test", Conclusion: "failure"}}
	}
	for _, p := range []queue.IntakePayload{report(old, "akira/issue-5"), report(h1, "feature"), report(h1, "akira/issue-5")} {
		if err := jh.intake(p); err != nil {
			t.Fatal(err)
		}
	}
	readings = queued[queue.CIPayload](jh, queue.TypeCI)
	if len(readings) != 2 {
		t.Fatalf("readings = %+v, want the poll's and one for the report on h1", readings)
	}
	for _, r := range readings {
		if r.Head == h1 && r.RunID != run.ID {
			t.Errorf("report routed to %s, want %s", r.RunID, run.ID)
		}
	}

	// A reading through the task: a green head marks the pull request ready and ends the wait.
	jh.gh.CI.Checks[h1] = []ports.CICheck{{Name: "test", Source: ports.CISourceCheckRun, App: ports.CIAppActions, ID: 1, Status: "completed", Conclusion: "success"}}
	task, err := queue.TaskOptions{}.NewCITask(queue.CIPayload{Version: queue.PayloadVersion, RunID: run.ID, InstallationID: 7, Head: h1, Key: "d-green"})
	if err != nil {
		t.Fatal(err)
	}
	if err := jh.h.ci.HandleCI(ctx, task); err != nil {
		t.Fatal(err)
	}
	got, _ := jh.store.Get(ctx, run.ID)
	if got.Status != lifecycle.StatusSucceeded || jh.gh.Pulls[7].Draft {
		t.Errorf("after a green reading: run %s, draft %v; want succeeded and ready", got.Status, jh.gh.Pulls[7].Draft)
	}
	// Nothing waits any more: the poll queues nothing new.
	if ids, _ := jh.store.WaitingForCI(ctx); len(ids) != 0 {
		t.Errorf("waiting for CI = %v, want none", ids)
	}

	if err := (queue.CIPayload{Version: queue.PayloadVersion}).Validate(); err == nil || !strings.Contains(err.Error(), "run, installation and key are required") {
		t.Errorf("Validate of an empty CI payload = %v", err)
	}
}

// TestRunReaperLoop: the reaper loop's first round continues a dead run and polls the CI of a waiting
// one, and the loop returns when its context is done.
func TestRunReaperLoop(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	if _, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "dead", Owner: "o", Repo: "r", Branch: "akira/dead", InstallationID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Update(ctx, "dead", func(r *lifecycle.Run) error { r.Status, r.Jobs = lifecycle.StatusRunning, 1; return nil }); err != nil {
		t.Fatal(err)
	}
	waiting := waitingRun(t, jh, "h2", lifecycle.CIWatch{Since: time.Now(), Timeout: time.Hour, Grace: time.Minute, MaxRounds: 1})
	// The loop sweeps at once; the test waits for what the first round queues, then ends the loop.
	loop, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() { jh.h.reaper.RunReaper(loop, time.Hour); close(ended) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(queued[queue.RunPayload](jh, queue.TypeRun)) == 0 || len(queued[queue.CIPayload](jh, queue.TypeCI)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the reaper's first round queued nothing; log:\n%s", jh.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-ended
	if conts := queued[queue.RunPayload](jh, queue.TypeRun); len(conts) != 1 || conts[0].RunID != "dead" {
		t.Errorf("continuations = %+v, want one of the dead run", conts)
	}
	if rs := queued[queue.CIPayload](jh, queue.TypeCI); len(rs) != 1 || rs[0].RunID != waiting.ID {
		t.Errorf("CI readings = %+v, want one of %s", rs, waiting.ID)
	}
}

// counterValue reads the counter name{label=value} from reg, as a scraper would.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{%s=%q} not gathered", name, label, value)
	return 0
}
