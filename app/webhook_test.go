package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
)

func pingPayload() []byte {
	return []byte(`{"zen":"Keep it logically awesome.","hook_id":1,"hook":{"type":"App","id":1,"events":["push"]}}`)
}

func TestWebhookSignature(t *testing.T) {
	h := newHarness(t)
	body := pingPayload()
	newReq := func() *http.Request {
		return h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "ping", "d-sig", body)
	}
	sha1Sig := func(secret string, b []byte) string {
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write(b)
		return "sha1=" + hex.EncodeToString(mac.Sum(nil))
	}

	tests := []struct {
		name   string
		mutate func(r *http.Request)
		status int
		reason string
	}{
		{"valid", func(*http.Request) {}, http.StatusOK, "pong"},
		{"valid, SHA-1 sent alongside", func(r *http.Request) { r.Header.Set("X-Hub-Signature", sha1Sig(testSecret, body)) }, http.StatusOK, "pong"},
		{"wrong secret", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", githubtest.SignPayload("not the secret", body))
		}, http.StatusUnauthorized, "signature does not match"},
		{"signature of another body", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", githubtest.SignPayload(testSecret, append(body, ' ')))
		}, http.StatusUnauthorized, "signature does not match"},
		{"missing", func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") }, http.StatusUnauthorized, "missing X-Hub-Signature-256"},
		{"SHA-1 only", func(r *http.Request) {
			r.Header.Del("X-Hub-Signature-256")
			r.Header.Set("X-Hub-Signature", sha1Sig(testSecret, body))
		}, http.StatusUnauthorized, "SHA-1 signatures are not accepted"},
		{"not hex", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256=zz") }, http.StatusUnauthorized, "not sha256=<64 hex digits>"},
		{"no algorithm prefix", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", strings.TrimPrefix(githubtest.SignPayload(testSecret, body), "sha256="))
		}, http.StatusUnauthorized, "not sha256=<64 hex digits>"},
		{"truncated", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", githubtest.SignPayload(testSecret, body)[:41])
		}, http.StatusUnauthorized, "not sha256=<64 hex digits>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq()
			tt.mutate(req)
			got := h.do(req)
			if got.Status != tt.status || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("answer = %s, want %d with %q", got, tt.status, tt.reason)
			}
		})
	}
	if calls := h.apiCalls(); len(calls) != 0 {
		t.Fatalf("GitHub was called: %v", calls)
	}
}

func TestWebhookBodyCap(t *testing.T) {
	t.Run("GitHub's 25 MB cap", func(t *testing.T) {
		h := newHarness(t)
		// A valid JSON body one byte over the cap: only its size is wrong.
		big := make([]byte, 0, MaxWebhookBytes+1)
		big = append(big, `{"zen":"`...)
		big = append(big, bytes.Repeat([]byte("a"), MaxWebhookBytes+1-len(big)-2)...)
		big = append(big, `"}`...)
		got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "ping", "d-big", big))
		expect(t, got, http.StatusRequestEntityTooLarge, resultRejected)

		atCap := big[:MaxWebhookBytes-2]
		atCap = append(atCap[:len(atCap):len(atCap)], `"}`...)
		expect(t, h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "ping", "d-cap", atCap)), http.StatusOK, resultAcknowledged)
	})
	t.Run("configured cap", func(t *testing.T) {
		h := newHarness(t, withServerConfig(func(c *ServerConfig) { c.MaxBodyBytes = 64 }))
		got := h.send("ping", map[string]any{"zen": strings.Repeat("z", 64)})
		expect(t, got, http.StatusRequestEntityTooLarge, resultRejected)
		expect(t, h.send("ping", map[string]any{"zen": "z"}), http.StatusOK, resultAcknowledged)
	})
}

func TestWebhookMalformed(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name    string
		event   string
		body    string
		headers map[string]string
		status  int
		result  string
	}{
		{"not JSON", "push", "this is not json", nil, http.StatusBadRequest, resultRejected},
		{"JSON array", "push", `[1,2]`, nil, http.StatusBadRequest, resultRejected},
		{"truncated JSON", "issue_comment", `{"action":"created","comment":{"body":"/akira run"`, nil, http.StatusBadRequest, resultRejected},
		{"wrong field type", "issue_comment", `{"action":"created","comment":{"id":"seven","body":"/akira run"}}`, nil, http.StatusBadRequest, resultRejected},
		{"wrong type in envelope", "ping", `{"installation":{"id":"x"}}`, nil, http.StatusBadRequest, resultRejected},
		{"no event header", "", `{}`, nil, http.StatusBadRequest, resultRejected},
		{"form body without payload", "ping", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusBadRequest, resultRejected},
		{"form body with payload", "ping", "payload=" + url.QueryEscape(string(pingPayload())), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusOK, resultAcknowledged},
		{"event Akira does not handle", "issues", `{"action":"opened","issue":{"number":1}}`, nil, http.StatusOK, resultIgnored},
		{"unknown event", "made_up", `{}`, nil, http.StatusOK, resultIgnored},
		// Well-formed JSON that cannot make a job is the sender's fault, never an outage: a 5xx would
		// have the redelivery sweep send it again and again.
		{"comment without an id", "issue_comment", `{"action":"created","installation":{"id":5},"repository":{"name":"r","full_name":"ghost/r","owner":{"login":"ghost"}},"sender":{"login":"eve","type":"User"},"issue":{"number":1},"comment":{"body":"/akira help","user":{"login":"eve","type":"User"}}}`, nil, http.StatusBadRequest, resultRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, tt.event, "d-"+tt.name, []byte(tt.body))
			if tt.event == "" {
				req.Header.Del("X-GitHub-Event")
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			got := h.do(req)
			expect(t, got, tt.status, tt.result)
			if got.Reason == "" {
				t.Fatalf("answer has no reason: %s", got)
			}
		})
	}
	t.Run("no delivery header", func(t *testing.T) {
		req := h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "ping", "", pingPayload())
		req.Header.Del("X-GitHub-Delivery")
		expect(t, h.do(req), http.StatusBadRequest, resultRejected)
	})
	if got := h.enq.enqueued(); len(got) != 0 {
		t.Fatalf("enqueued %+v", got)
	}
}

func TestAcknowledgedEvents(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n"})
	inst := map[string]any{"id": repo.InstallationID, "account": userJSON("acme")}
	for _, tt := range []struct {
		event   string
		payload map[string]any
	}{
		{"ping", map[string]any{"zen": "Design for failure.", "hook_id": 1}},
		{"installation", map[string]any{"action": "created", "installation": inst, "sender": userJSON("acme"),
			"repositories": []any{map[string]any{"id": repo.ID, "full_name": repo.FullName()}}}},
		{"installation", map[string]any{"action": "deleted", "installation": inst, "sender": userJSON("acme")}},
		{"installation_repositories", map[string]any{"action": "added", "installation": inst, "sender": userJSON("acme"),
			"repositories_added": []any{map[string]any{"id": repo.ID, "full_name": repo.FullName()}}}},
	} {
		expect(t, h.send(tt.event, tt.payload), http.StatusOK, resultAcknowledged)
	}
	if calls := h.apiCalls(); len(calls) != 0 {
		t.Fatalf("GitHub was called: %v", calls)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	var redisUp atomic.Bool
	redisUp.Store(true)
	h := newHarness(t, withReadiness(
		ReadinessCheck{Name: "redis", Check: func(ctx context.Context) error {
			if !redisUp.Load() {
				return errors.New("dial tcp: connection refused")
			}
			return nil
		}},
		ReadinessCheck{Name: "github", Check: func(ctx context.Context) error { return nil }},
	))
	if code, body := h.get("/healthz"); code != http.StatusOK || body["status"] != "ok" {
		t.Fatalf("healthz = %d %v", code, body)
	}
	if code, body := h.get("/readyz"); code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("readyz = %d %v", code, body)
	}
	redisUp.Store(false)
	code, body := h.get("/readyz")
	failed, _ := body["failed"].(map[string]any)
	if code != http.StatusServiceUnavailable || failed["redis"] != "dial tcp: connection refused" || failed["github"] != nil {
		t.Fatalf("readyz = %d %v", code, body)
	}
	// Liveness does not depend on dependencies.
	if code, _ := h.get("/healthz"); code != http.StatusOK {
		t.Fatalf("healthz = %d while not ready", code)
	}
	if code, _ := h.get("/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown path = %d", code)
	}
	if code, _ := h.get("/webhook"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /webhook = %d", code)
	}
}

func TestReadinessCheckTimesOut(t *testing.T) {
	h := newHarness(t,
		withServerConfig(func(c *ServerConfig) { c.ReadinessTimeout = time.Millisecond }),
		withReadiness(ReadinessCheck{Name: "stuck", Check: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}}))
	code, body := h.get("/readyz")
	failed, _ := body["failed"].(map[string]any)
	if code != http.StatusServiceUnavailable || failed["stuck"] != context.DeadlineExceeded.Error() {
		t.Fatalf("readyz = %d %v", code, body)
	}
}

func TestPanicIsA500(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n"})
	h.gh.SetPermission("acme", "widgets", "alice", "write")
	h.enq.set(func(e *recordingEnqueuer) { e.panicMsg = "boom" })
	got := h.send("issue_comment", issueCommentJSON(repo, 1, false, 77, "alice", "/akira run"))
	if got.Status != http.StatusInternalServerError {
		t.Fatalf("answer = %s, want 500", got)
	}
	if !strings.Contains(h.logs.String(), `"repo":"acme/widgets","path":"/webhook","panic":"boom"`) {
		t.Fatalf("panic not logged:\n%s", h.logs.String())
	}
	// The server is still up.
	h.enq.set(func(e *recordingEnqueuer) { e.panicMsg = "" })
	expect(t, h.send("ping", pingPayload()), http.StatusOK, resultAcknowledged)
}

// Every log line of the intake carries the delivery, the event, the installation and the repository.
func TestEveryLogLineHasDeliveryFields(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n"})
	h.gh.SetPermission("acme", "widgets", "alice", "write")
	h.gh.AddIssue("acme", "widgets", githubtest.Issue{Title: "x"})
	h.send("issue_comment", issueCommentJSON(repo, 1, false, 12345, "alice", "/akira approve"))
	h.send("ping", pingPayload())
	req := h.gh.SignedWebhook(h.srv.URL+"/webhook", "wrong", "push", "d-bad", []byte(`{}`))
	h.do(req)

	lines := 0
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	var sawRepo bool
	for sc.Scan() {
		lines++
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Text())
		}
		for _, k := range []string{"delivery", "event", "installation", "repo"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line without %s: %s", k, sc.Text())
			}
		}
		if rec["repo"] == "acme/widgets" && rec["installation"] == float64(repo.InstallationID) {
			sawRepo = true
		}
	}
	if lines < 3 || !sawRepo {
		t.Fatalf("%d log lines, repository fields filled: %v\n%s", lines, sawRepo, h.logs.String())
	}
}

func TestNewServerChecksItsInputs(t *testing.T) {
	enq := &recordingEnqueuer{}
	ok := ServerConfig{AppID: 1, WebhookSecret: []byte("s")}
	tests := []struct {
		name string
		cfg  ServerConfig
		deps Deps
	}{
		{"no secret", ServerConfig{AppID: 1}, Deps{Enqueuer: enq}},
		{"no app id", ServerConfig{WebhookSecret: []byte("s")}, Deps{Enqueuer: enq}},
		{"no enqueuer", ok, Deps{}},
		{"nameless readiness check", ok, Deps{Enqueuer: enq, Readiness: []ReadinessCheck{{Check: func(context.Context) error { return nil }}}}},
	}
	for _, tt := range tests {
		if _, err := NewServer(tt.cfg, tt.deps); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestServeShutsDownWithContext(t *testing.T) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewServer(ServerConfig{AppID: 1, WebhookSecret: []byte("s")}, Deps{Enqueuer: &recordingEnqueuer{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, 5*time.Second) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// Deps.Observe sees every delivery's event and result, with event names outside the known set folded into
// "other" so that unsigned requests cannot invent metric labels, and how long each was held.
func TestWebhookObserve(t *testing.T) {
	h := newHarness(t)
	h.send("ping", pingPayload())
	bad := h.gh.SignedWebhook(h.srv.URL+"/webhook", "wrong secret", "ping", "d-bad", pingPayload())
	h.do(bad)
	h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", "wrong secret", "made_up_event_1234", "d-odd", pingPayload()))
	h.send("deployment", map[string]any{"action": "created"})

	h.obsMu.Lock()
	defer h.obsMu.Unlock()
	want := []string{"ping acknowledged", "ping rejected", "other rejected", "other ignored"}
	if strings.Join(h.observed, ",") != strings.Join(want, ",") {
		t.Fatalf("observed %q, want %q", h.observed, want)
	}
	for i, took := range h.took {
		if took <= 0 || took > time.Minute {
			t.Errorf("delivery %d (%s) held for %v", i, h.observed[i], took)
		}
	}
}

// TestDecodeEvent pins the one decode of a payload: the envelope comes out of the event's own struct,
// and the reason of a refusal tells a body that is not JSON from a field of the wrong type.
func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name, event, body string
		wantErr           string
		wantRepo          string
		wantType          string
	}{
		{"comment", "issue_comment", `{"action":"created","installation":{"id":5},"repository":{"full_name":"o/r"},"comment":{"id":1}}`, "", "o/r", "*app.issueCommentEvent"},
		{"push", "push", `{"ref":"refs/heads/main","repository":{"full_name":"o/p"}}`, "", "o/p", "*app.pushEvent"},
		{"status", "status", `{"sha":"abc","repository":{"full_name":"o/s"}}`, "", "o/s", "*app.ciEvent"},
		{"unhandled event keeps the envelope", "ping", `{"repository":{"full_name":"o/q"}}`, "", "o/q", "<nil>"},
		{"not JSON", "push", `nope`, "body is not a JSON webhook payload", "", ""},
		{"truncated", "issue_comment", `{"action":"created"`, "body is not a JSON webhook payload", "", ""},
		{"wrong field type", "issue_comment", `{"comment":{"id":"seven"}}`, "malformed issue_comment payload", "", ""},
		{"wrong type in the envelope", "pull_request", `{"installation":{"id":"x"}}`, "malformed pull_request payload", "", ""},
		{"unhandled event, wrong envelope", "ping", `{"installation":{"id":"x"}}`, "body is not a JSON webhook payload", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, ev, err := decodeEvent(tt.event, []byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if env.repoFullName() != tt.wantRepo || fmt.Sprintf("%T", ev) != tt.wantType {
				t.Fatalf("decoded %q as %T, want %q as %s", env.repoFullName(), ev, tt.wantRepo, tt.wantType)
			}
		})
	}
}
