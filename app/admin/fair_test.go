package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

func fairPayload(inst int64, owner, repo, delivery string) queue.RunPayload {
	return queue.RunPayload{TaskHeader: queue.TaskHeader{Version: queue.PayloadVersion, DeliveryID: delivery, InstallationID: inst, Owner: owner, Repo: repo}, Trigger: lifecycle.TriggerIssue, Number: 3}
}

// fairLine fills a fair gate of two workers: installation 7 (octo/demo) ran a run job of ten
// minutes, runs a second and has two more waiting; installation 9 (acme/web) has one waiting.
func fairLine(t *testing.T, rdb *redis.Client, prefix string) *fair.Gate {
	t.Helper()
	ctx := context.Background()
	f := fair.New(rdb, prefix, config.Fair{}, 2)
	now := time.Now().Add(-10 * time.Minute)
	f.Now = func() time.Time { return now }
	first := fairPayload(7, "octo", "demo", "d0")
	if err := f.Acquire(ctx, first.Ticket()); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute)
	f.Hold(ctx, first.Ticket())() // the first run job ends, ten minutes after it started
	if err := f.Acquire(ctx, fairPayload(7, "octo", "demo", "d1").Ticket()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []queue.RunPayload{fairPayload(7, "octo", "demo", "d2"), fairPayload(7, "octo", "demo", "d3"), fairPayload(9, "acme", "web", "e1")} {
		if err := f.List(ctx, p.Ticket()); err != nil {
			t.Fatal(err)
		}
	}
	f.Now = nil
	return f
}

// TestQueueByInstallation: GET /api/v1/queue and the queue page show each installation's line:
// running runs, waiting runs with their position and estimated start, and a token limited to
// repositories sees only theirs.
func TestQueueByInstallation(t *testing.T) {
	f := newFixture(t)
	get := func(token string) QueueState {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/queue", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var st QueueState
		if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &st) != nil {
			t.Fatalf("queue: %d %s", resp.StatusCode, data)
		}
		return st
	}
	st := get(f.read)
	if len(st.Installations) != 2 {
		t.Fatalf("installations %+v, want 7 and 9", st.Installations)
	}
	a, b := st.Installations[0], st.Installations[1]
	if a.InstallationID != 7 || a.Cap != 1 || len(a.Running) != 1 || a.Running[0].Started == nil || len(a.Waiting) != 2 {
		t.Fatalf("installation 7: %+v", a)
	}
	for i, w := range a.Waiting {
		if w.Position != i+1 || w.RunID != queue.RunIDFor("d"+string(rune('2'+i))) || w.EstimatedStart == nil {
			t.Fatalf("installation 7's waiting run %d: %+v", i, w)
		}
		// One at a time, ten minutes each (the one run job that finished took ten).
		if want := time.Duration(i+1) * 10 * time.Minute; w.EstimatedStart.Sub(*a.Running[0].Started)-want > time.Second ||
			w.EstimatedStart.Sub(*a.Running[0].Started)-want < -time.Second {
			t.Fatalf("installation 7's run %d is estimated %s after the running one started, want %s",
				i+1, w.EstimatedStart.Sub(*a.Running[0].Started), want)
		}
	}
	if b.InstallationID != 9 || len(b.Waiting) != 1 || b.Waiting[0].Position != 1 || b.Waiting[0].EstimatedStart == nil ||
		time.Until(*b.Waiting[0].EstimatedStart) > time.Second {
		t.Fatalf("installation 9 (the free worker is its): %+v", b)
	}

	limited, err := f.store.CreateTokenFor(context.Background(), "web-team", store.ScopeRead, []string{"acme/web"})
	if err != nil {
		t.Fatal(err)
	}
	if st := get(limited); len(st.Installations) != 1 || st.Installations[0].InstallationID != 9 {
		t.Fatalf("a token limited to acme/web sees %+v", st.Installations)
	}

	br := newBrowser(t, f.srv.URL)
	br.login(f.read, "/ui/queue")
	page := br.get("/ui/queue")
	for _, want := range []string{"Installation 7: 1 running (at most 1), 2 waiting", "Installation 9: 0 running (at most 1), 1 waiting",
		`<td class="num">2</td><td><a href="/ui/runs/` + queue.RunIDFor("d3") + `">`, `acme/web</td><td><span class="state state-queued">waiting</span></td><td>next</td>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the queue page lacks %q:\n%s", want, page.body)
		}
	}
}

// TestQueueOfALimitedToken: the queues' depths and the workers are every installation's; a token
// limited to repositories reads its own runs in line and neither of them, and says it is limited.
func TestQueueOfALimitedToken(t *testing.T) {
	f := newFixture(t)
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	// A queue with a task in it, and a worker process on it, as another tenant's load would be.
	b := make([]byte, 4)
	rand.Read(b)
	queue := "akira-admin-queue-" + hex.EncodeToString(b)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true) })
	if _, err := asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask("other-tenant", nil), asynq.Queue(queue),
		asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	worker := asynq.NewServerFromRedisClient(rdb, asynq.Config{Queues: map[string]int{queue: 1}, Concurrency: 3, LogLevel: asynq.FatalLevel})
	if err := worker.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Shutdown)
	get := func(token string) QueueState {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/queue", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st QueueState
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("queue: %d (%v)", resp.StatusCode, err)
		}
		return st
	}
	// The worker's first heartbeat registers it; the operator's token then sees it and the queue.
	deadline := time.Now().Add(time.Minute)
	for st := get(f.read); !slices.ContainsFunc(st.Servers, func(s ServerInfo) bool { return s.Concurrency == 3 }) ||
		!slices.ContainsFunc(st.Queues, func(q QueueInfo) bool { return q.Name == queue }); st = get(f.read) {
		if time.Now().After(deadline) {
			t.Fatalf("the operator's token does not see the worker and queue %s within a minute: %+v", queue, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	limited, err := f.store.CreateTokenFor(context.Background(), "web-team", store.ScopeRead, []string{"acme/web"})
	if err != nil {
		t.Fatal(err)
	}
	st := get(limited)
	if len(st.Queues) != 0 || len(st.Servers) != 0 || st.Workers != 0 || !st.Limited {
		t.Errorf("a token limited to acme/web reads queues %+v, servers %+v, %d workers, limited %v", st.Queues, st.Servers, st.Workers, st.Limited)
	}
	if len(st.Installations) != 1 || st.Installations[0].InstallationID != 9 {
		t.Errorf("a token limited to acme/web sees the line %+v, want installation 9's", st.Installations)
	}
	if st := get(f.read); st.Limited {
		t.Error("the operator's token reads as limited")
	}
}
