package jobs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

func notifyTask(t *testing.T, jh *jobsHarness, p queue.NotifyPayload) *asynq.Task {
	t.Helper()
	task, err := jh.h.d.Enqueuer.Options().NewNotifyTask(p)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestNotifyRateAndRetries: a sink gets at most its rate per minute (the rest is put back for the
// next minute, not lost); a 5xx is an error asynq retries, a 4xx is not retried.
func TestNotifyRateAndRetries(t *testing.T) {
	jh := newJobsHarness(t)
	var got atomic.Int32
	status := atomic.Int32{}
	status.Store(http.StatusOK)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := int(status.Load()); s != http.StatusOK {
			w.WriteHeader(s)
			return
		}
		got.Add(1)
	}))
	defer recv.Close()
	jh.h.d.Sinks = map[string]notify.Sink{"team": {Name: "team", Kind: notify.KindSlack, URL: recv.URL + "/hook"}}
	jh.h.d.Operator.Notify.RatePerMinute = 2
	// A fixed clock early in a minute, so the three sends share one window.
	minute := time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)
	jh.store.Now = func() time.Time { return minute }

	msg := notify.Message{Event: notify.EventEscalation, Title: "Akira needs a decision", Text: "x", Time: time.Now()}
	for i, id := range []string{"a", "b", "c"} {
		if err := jh.h.pub.HandleNotify(context.Background(), notifyTask(t, jh, queue.NotifyPayload{ID: id, Sink: "team", Message: msg})); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if got.Load() != 2 {
		t.Fatalf("the sink got %d notifications in one minute; its rate is 2", got.Load())
	}
	later, err := jh.insp.ListScheduledTasks(jh.queue)
	if err != nil || len(later) != 1 || !strings.Contains(string(later[0].Payload), `"id":"c:later-`) {
		t.Fatalf("the third notification is not put back for later: %v %+v", err, later)
	}
	if wait := time.Until(later[0].NextProcessAt); wait <= 0 || wait > 61*time.Second {
		t.Errorf("put back for %s", wait)
	}

	jh.store.Now = nil
	status.Store(http.StatusServiceUnavailable)
	err = jh.h.pub.HandleNotify(context.Background(), notifyTask(t, jh, queue.NotifyPayload{ID: "d", Sink: "team", Message: msg}))
	if err == nil || errors.Is(err, asynq.SkipRetry) {
		t.Errorf("a 503 must be retried: %v", err)
	}
	status.Store(http.StatusNotFound)
	err = jh.h.pub.HandleNotify(context.Background(), notifyTask(t, jh, queue.NotifyPayload{ID: "e", Sink: "team", Message: msg}))
	if !errors.Is(err, asynq.SkipRetry) {
		t.Errorf("a 404 (a deleted webhook) must not be retried: %v", err)
	}
	err = jh.h.pub.HandleNotify(context.Background(), notifyTask(t, jh, queue.NotifyPayload{ID: "f", Sink: "gone", Message: msg}))
	if !errors.Is(err, asynq.SkipRetry) {
		t.Errorf("an unknown sink: %v", err)
	}
}

// TestAttemptLogs: a log is kept compressed, masked, capped, and read back; a missing one says so.
func TestAttemptLogs(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := store.NewStore(rdb, prefix)
	ctx := context.Background()
	m := store.NewMasker("sk-live-0123456789", "ghs_abcdefghijkl", "short")
	text := m.Mask("calling with sk-live-0123456789 and token ghs_abcdefghijkl; short words stay\n")
	if strings.Contains(text, "sk-live") || strings.Contains(text, "ghs_") || !strings.Contains(text, "short words") {
		t.Fatalf("masked: %q", text)
	}
	big := strings.Repeat("a", store.MaxLogBytes) + "THE END"
	if err := s.SaveLog(ctx, "r1", "1.1", 2, text+big, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := s.Log(ctx, "r1", "1.1", 2)
	if err != nil || !strings.HasPrefix(got, "calling with [masked]") || !strings.HasSuffix(got, "THE END") || len(got) > store.MaxLogBytes+100 {
		t.Fatalf("log read back: %d bytes, %v", len(got), err)
	}
	if stored, _ := rdb.StrLen(ctx, prefix+"log:r1:1.1:2").Result(); stored > 64<<10 {
		t.Errorf("a 2 MB repetitive log takes %d bytes in Redis: not compressed", stored)
	}
	if ttl, _ := rdb.TTL(ctx, prefix+"log:r1:1.1:2").Result(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("retention %s", ttl)
	}
	if _, err := s.Log(ctx, "r1", "1.1", 3); !errors.Is(err, store.ErrNoLog) {
		t.Errorf("missing log: %v", err)
	}
}

// TestAuditLineRetried: the line that mirrors an operator's action is a job of its own, so GitHub
// failing when it is posted is an error asynq retries, and the next try posts it.
func TestAuditLineRetried(t *testing.T) {
	jh := newJobsHarness(t)
	p := queue.AuditLinePayload{ID: "r1-stop", InstallationID: 1, Owner: "octo", Repo: "demo", Number: 7, Body: "⚙️ Run `r1` stopped through the API by operator token `ops`."}
	p.Version = queue.PayloadVersion
	task, err := jh.h.d.Enqueuer.Options().NewAuditLineTask(p)
	if err != nil {
		t.Fatal(err)
	}
	jh.gh.FailOnce("CreateComment", errors.New("github: 502 Bad Gateway"))
	if err := jh.h.api.HandleAuditLine(context.Background(), task); err == nil || errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("a GitHub failure must be retried: %v", err)
	}
	if err := jh.h.api.HandleAuditLine(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(7); len(got) != 1 || !strings.Contains(got[0], "stopped through the API") {
		t.Errorf("comments on #7: %q", got)
	}
}
