package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// startFixture is an admin server whose Starter is the real intake.Controller: a handoff is recorded
// in Redis and its job queued on a queue of the test's own.
type startFixture struct {
	*fixture
	queue   string
	insp    *asynq.Inspector
	starter string // a start token limited to octo/demo
}

func newStartFixture(t *testing.T) *startFixture {
	t.Helper()
	f := newFixture(t)
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	qname := "akira-admin-start-" + f.runID + "-" + strings.ReplaceAll(t.Name(), "/", "-")
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(qname, true) })
	ctl := &intake.Controller{Store: f.store, Enqueuer: queue.NewEnqueuer(client, queue.TaskOptions{Queue: qname})}
	starter, err := f.store.CreateTokenFor(context.Background(), "editor", store.ScopeStart, []string{"octo/demo"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewServer(Deps{Store: f.store, Controller: f.ctl, Starter: ctl, Queue: insp})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return &startFixture{fixture: f, queue: qname, insp: insp, starter: starter}
}

// handoffs are the handoff jobs queued.
func (f *startFixture) handoffs(t *testing.T) []queue.HandoffPayload {
	t.Helper()
	tasks, err := f.insp.ListPendingTasks(f.queue)
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	var out []queue.HandoffPayload
	for _, tk := range tasks {
		if tk.Type != queue.TypeHandoff {
			continue
		}
		var p queue.HandoffPayload
		if err := json.Unmarshal(tk.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestStartRunThroughOpenAPI drives POST /api/v1/runs and the escalation answer through the served
// description: every request and answer is validated against it.
func TestStartRunThroughOpenAPI(t *testing.T) {
	f := newStartFixture(t)
	_, router := loadSpec(t)
	ctx := context.Background()
	call := func(method, path, token, key, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
		}
		sreq, _ := http.NewRequest(method, "http://akira.test"+path, strings.NewReader(body))
		sreq.Header.Set("Content-Type", "application/json")
		if key != "" {
			sreq.Header.Set("Idempotency-Key", key)
		}
		route, params, err := router.FindRoute(sreq)
		if err != nil {
			t.Fatalf("%s %s is not described: %v", method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: sreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if want < 400 {
			if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
				t.Errorf("%s %s: the request does not match the description: %v", method, path, err)
			}
		}
		if err := openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(data)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}); err != nil {
			t.Errorf("%s %s (%d) does not match the description: %v", method, path, resp.StatusCode, err)
		}
		var out map[string]any
		_ = json.Unmarshal(data, &out)
		return out
	}
	for _, d := range []time.Duration{2 * time.Minute, 4 * time.Minute, 9 * time.Minute} {
		if err := f.store.RecordTaskDuration(ctx, "octo", "demo", d); err != nil {
			t.Fatal(err)
		}
	}
	plan := "- [ ] 1 Add the parser\n- [ ] 2 Document it\n"
	body := `{"repository":"octo/demo","base":"main","plan":` + quote(plan) + `,"reference":"chat-42"}`

	first := call("POST", "/api/v1/runs", f.starter, "k-1", body, http.StatusAccepted)
	id, _ := first["id"].(string)
	if id == "" || first["branch"] != "akira/handoff-"+id || first["status"] != "queued" || first["repeated"] != false ||
		!strings.HasSuffix(first["url"].(string), "/ui/runs/"+id) {
		t.Fatalf("first answer %v", first)
	}
	est, _ := first["estimate"].(map[string]any)
	if est["tasks"] != 2.0 || est["median_task_seconds"] != 240.0 || est["seconds"] != 480.0 {
		t.Errorf("estimate %v, want 2 tasks × 240 s", est)
	}
	again := call("POST", "/api/v1/runs", f.starter, "k-1", body, http.StatusAccepted)
	if again["id"] != id || again["repeated"] != true {
		t.Errorf("the repeat answered %v, want run %s repeated", again, id)
	}
	// The same key with another request is a mistake, said as such: never the first run.
	changed := strings.Replace(body, `"reference":"chat-42"`, `"reference":"chat-43"`, 1)
	reused := call("POST", "/api/v1/runs", f.starter, "k-1", changed, http.StatusUnprocessableEntity)
	if msg, _ := reused["error"].(string); !strings.Contains(msg, `Idempotency-Key "k-1" started run `+id+" for a different request") ||
		reused["id"] != nil {
		t.Errorf("the key sent with another request answered %v", reused)
	}
	other := call("POST", "/api/v1/runs", f.starter, "k-2", body, http.StatusAccepted)
	if other["id"] == id {
		t.Errorf("another key started the same run %s", id)
	}
	hs := f.handoffs(t)
	if len(hs) != 2 {
		t.Fatalf("handoff jobs %+v, want one per key", hs)
	}
	for _, h := range hs {
		if h.Owner != "octo" || h.Repo != "demo" || h.Base != "main" || h.Plan != plan || h.Reference != "chat-42" || h.TokenName != "editor" {
			t.Errorf("handoff %+v", h)
		}
	}
	// Until the run job creates it, the run reads as queued.
	got := call("GET", "/api/v1/runs/"+id, f.starter, "", "", http.StatusOK)
	if got["status"] != "queued" || got["repo"] != "octo/demo" || got["tasks_total"] != 2.0 {
		t.Errorf("queued handoff reads %v", got)
	}

	// Refusals: nothing is queued for any of them.
	bad := call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/demo","plan":"- [ ] 1 a\n- [ ] 1 b\n"}`, http.StatusUnprocessableEntity)
	if msg, _ := bad["error"].(string); !strings.Contains(msg, "plan:2: duplicate task id 1") {
		t.Errorf("bad plan: %v, want the line named", bad)
	}
	call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/other","plan":`+quote(plan)+`}`, http.StatusForbidden)
	call("POST", "/api/v1/runs", f.read, "", body, http.StatusForbidden)
	call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/demo"}`, http.StatusBadRequest)
	call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/demo","plan":"x","plan_path":"R.md"}`, http.StatusBadRequest)
	call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/demo","plan_path":"../etc/passwd"}`, http.StatusBadRequest)
	call("POST", "/api/v1/runs", f.starter, "", `{"repository":"octo/demo","plan_path":"R.md","reference":"[win](https://evil.example)"}`, http.StatusBadRequest)
	if n := len(f.handoffs(t)); n != 2 {
		t.Errorf("%d handoff jobs after the refusals, want 2", n)
	}
	// A token limited to octo/demo sees no run of another repository.
	if _, _, err := f.store.Create(ctx, &lifecycle.Run{ID: "r-elsewhere", Owner: "octo", Repo: "other", Branch: "akira/roadmap", Status: lifecycle.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	call("GET", "/api/v1/runs/r-elsewhere", f.starter, "", "", http.StatusNotFound)
	list := call("GET", "/api/v1/runs", f.starter, "", "", http.StatusOK)
	for _, r := range list["runs"].([]any) {
		if r.(map[string]any)["repo"] != "octo/demo" {
			t.Errorf("a limited token lists %v", r)
		}
	}

	if err := f.store.Audit(ctx, store.AuditEntry{Time: time.Now(), Token: "ops", Via: "API", Action: "stop", RunID: "r-elsewhere", Repo: "octo/other"}); err != nil {
		t.Fatal(err)
	}
	audit := call("GET", "/api/v1/audit", f.starter, "", "", http.StatusOK)
	entries, _ := audit["entries"].([]any)
	if len(entries) == 0 {
		t.Error("the limited token reads no audit of its repository")
	}
	for _, e := range entries {
		if e.(map[string]any)["repo"] != "octo/demo" {
			t.Errorf("a limited token reads the audit of %v", e)
		}
	}

	// A token limited to repositories has the API, not the dashboard (which shows every repository).
	resp, err := http.PostForm(f.srv.URL+"/ui/login", url.Values{"token": {f.starter}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(page), "limited to repositories") {
		t.Errorf("dashboard login with a limited token: %d", resp.StatusCode)
	}

	// Escalations: a start token may not answer; a control token answers the parked task.
	esc := "/api/v1/runs/" + f.runID + "/escalations/1"
	call("POST", esc, f.starter, "", `{"action":"approve"}`, http.StatusForbidden)
	call("POST", esc, f.write, "", `{"action":"merge"}`, http.StatusBadRequest)
	call("POST", "/api/v1/runs/"+f.runID+"/escalations/2", f.write, "", `{"action":"approve"}`, http.StatusConflict)
	call("POST", esc, f.write, "", `{"action":"skip","task_id":"1.1"}`, http.StatusConflict)
	call("POST", esc, f.write, "e-1", `{"action":"retry","guidance":"use the v2 client"}`, http.StatusAccepted)
	if len(f.ctl.reqs) != 1 {
		t.Fatalf("controller saw %+v", f.ctl.reqs)
	}
	if r := f.ctl.reqs[0]; r.Action != "retry" || r.TaskID != "1.2" || r.Guidance != "use the v2 client" || !r.Answer || r.Via != "API" || r.Token.Name != "ops" {
		t.Errorf("escalation answer %+v", r)
	}
}

// TestIdempotencyKeyIsTheTokens: a key belongs to the token that sent it, not to its name: a token
// revoked and created again under the same name starts a run of its own with the key its
// predecessor used, and the predecessor's run is not handed to it.
func TestIdempotencyKeyIsTheTokens(t *testing.T) {
	f := newStartFixture(t)
	ctx := context.Background()
	start := func(token string) StartResult {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/runs",
			strings.NewReader(`{"repository":"octo/demo","plan":"- [ ] 1 Add the parser\n"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "chat-42")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out StartResult
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /api/v1/runs: %d %+v (%v)", resp.StatusCode, out, err)
		}
		return out
	}
	first := start(f.starter)
	if again := start(f.starter); again.ID != first.ID || !again.Repeated {
		t.Fatalf("the same token's repeat: %+v, want run %s repeated", again, first.ID)
	}
	if ok, err := f.store.RevokeToken(ctx, "editor"); err != nil || !ok {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	successor, err := f.store.CreateTokenFor(ctx, "editor", store.ScopeStart, []string{"octo/demo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := start(successor); got.ID == first.ID || got.Repeated {
		t.Errorf("a new token named editor got its predecessor's run: %+v (first %s)", got, first.ID)
	}
	if n := len(f.handoffs(t)); n != 2 {
		t.Errorf("%d handoff jobs, want 2 (one per token)", n)
	}
}

// TestControlKeyIsTheTokens: a control action's Idempotency-Key makes one token's retries one action,
// and another token's same key another action.
func TestControlKeyIsTheTokens(t *testing.T) {
	f := newFixture(t)
	other, err := f.store.CreateToken(context.Background(), "ops-2", store.ScopeControl)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{f.write, f.write, other} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/runs/"+f.runID+"/stop", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "stop-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("stop: %d", resp.StatusCode)
		}
	}
	if r := f.ctl.reqs; len(r) != 3 || r[0].RequestID != r[1].RequestID || r[1].RequestID == r[2].RequestID {
		t.Errorf("request ids %q, %q, %q: want the first token's two the same and the other token's another",
			r[0].RequestID, r[1].RequestID, r[2].RequestID)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPlainReference pins what a caller's reference may hold: what the former regexp
// `^[\p{L}\p{N} ._:/#@+=-]{1,200}$` allowed, letters and digits of any script included.
func TestPlainReference(t *testing.T) {
	tests := []struct {
		ref  string
		want bool
	}{
		{"chat-42", true},
		{"JIRA-1234 https://tracker.example/browse/JIRA-1234", true},
		{"チケット 七", true},
		{"x²", true},
		{strings.Repeat("é", 200), true},
		{strings.Repeat("é", 201), false},
		{"", false},
		{"[win](https://evil.example)", false},
		{"a\nb", false},
		{"<script>", false},
		{"tab\there", false},
		{"bad \xff utf-8", false},
	}
	for _, tt := range tests {
		if got := plainReference(tt.ref); got != tt.want {
			t.Errorf("plainReference(%q) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}
