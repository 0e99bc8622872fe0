package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/audit"
	"github.com/akira-bot/akira/jobs/store"
)

// TestServeAuditSink: akira serve with AKIRA_AUDIT_SINK=file:… relays the audit stream to the file:
// a token created and revoked while it runs are two JSON lines there, in order, and /metrics counts
// them delivered with nothing pending.
func TestServeAuditSink(t *testing.T) {
	fake := githubtest.New(t)
	env := serveEnvOf(t, fake, "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh agent.sh\nsandbox:\n  mode: none\nci:\n  watch: off\n")
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env["AKIRA_AUDIT_SINK"] = "file:" + path
	env["AKIRA_METRICS"] = "open"
	env["AKIRA_BOT_LOGIN"] = "akira[bot]"
	setServeEnv(t, env)
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(env["REDIS_URL"], "redis://"), "/0")})
	t.Cleanup(func() { rdb.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := serveInProcess(ctx, "--web-only")
	base, admin := "http://"+env["AKIRA_ADDR"], "http://"+env["AKIRA_ADMIN_ADDR"]
	waitFor(t, "akira serve to be ready", func() bool {
		select {
		case res := <-done:
			t.Fatalf("serve ended early: exit %d: %v", res.code, res.err)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	st := store.NewStore(rdb, "")
	by := store.Actor{Name: "alice@ops", Via: store.ViaCLI}
	if _, err := st.CreateTokenBy(ctx, by, "ci", store.ScopeRead, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeTokenBy(ctx, by, "ci"); err != nil {
		t.Fatal(err)
	}
	var evs []audit.Event
	waitFor(t, "two events in the audit file", func() bool {
		data, _ := os.ReadFile(path)
		evs = nil
		for line := range strings.Lines(string(data)) {
			var ev audit.Event
			if json.Unmarshal([]byte(line), &ev) == nil {
				evs = append(evs, ev)
			}
		}
		return len(evs) >= 2
	})
	if len(evs) != 2 || evs[0].Action != store.ActionTokenCreate || evs[1].Action != store.ActionTokenRevoke ||
		evs[0].Actor != "alice@ops" || evs[1].Target != "token:ci" || evs[0].ID == "" {
		t.Errorf("audit file events = %+v; want the creation then the revocation of token:ci by alice@ops", evs)
	}
	waitForMetrics(t, admin+"/metrics", "akira_audit_sink_delivered_total 2", "akira_audit_sink_pending 0", "akira_audit_sink_failures_total 0")

	cancel()
	if res := <-done; res.code != 0 || res.err != nil {
		t.Fatalf("serve after its context ended: exit %d: %v", res.code, res.err)
	}
}
