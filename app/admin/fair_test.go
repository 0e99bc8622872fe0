package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs"
	"github.com/akira-bot/akira/runner/config"
)

func fairPayload(inst int64, owner, repo, delivery string) jobs.RunPayload {
	return jobs.RunPayload{Version: jobs.PayloadVersion, DeliveryID: delivery, Trigger: jobs.TriggerIssue,
		InstallationID: inst, Owner: owner, Repo: repo, Number: 3}
}

// fairLine fills a fair gate of two workers: installation 7 (octo/demo) ran a run job of ten
// minutes, runs a second and has two more waiting; installation 9 (acme/web) has one waiting.
func fairLine(t *testing.T, rdb *redis.Client, prefix string) *jobs.Fair {
	t.Helper()
	ctx := context.Background()
	f := jobs.NewFair(rdb, prefix, config.Fair{}, 2)
	now := time.Now().Add(-10 * time.Minute)
	f.Now = func() time.Time { return now }
	first := fairPayload(7, "octo", "demo", "d0")
	if err := f.Acquire(ctx, first); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute)
	f.Hold(ctx, first)() // the first run job ends, ten minutes after it started
	if err := f.Acquire(ctx, fairPayload(7, "octo", "demo", "d1")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []jobs.RunPayload{fairPayload(7, "octo", "demo", "d2"), fairPayload(7, "octo", "demo", "d3"), fairPayload(9, "acme", "web", "e1")} {
		if err := f.List(ctx, p); err != nil {
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
		if w.Position != i+1 || w.RunID != jobs.RunIDFor("d"+string(rune('2'+i))) || w.EstimatedStart == nil {
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

	limited, err := f.store.CreateTokenFor(context.Background(), "web-team", jobs.ScopeRead, []string{"acme/web"})
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
		`<td class="num">2</td><td><a href="/ui/runs/` + jobs.RunIDFor("d3") + `">`, "acme/web</td><td>waiting</td><td>next</td>"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the queue page lacks %q:\n%s", want, page.body)
		}
	}
}
