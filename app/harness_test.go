package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/queue"
)

const testSecret = "It's a Secret to Everybody"

// recordingEnqueuer is the queue side of the webhook server: it records the intake tasks and can be
// told to fail or to panic.
type recordingEnqueuer struct {
	mu       sync.Mutex
	intakes  []queue.IntakePayload
	err      error // returned (and nothing recorded) when set
	panicMsg string
}

func (r *recordingEnqueuer) EnqueueIntake(_ context.Context, p queue.IntakePayload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panicMsg != "" {
		panic(r.panicMsg)
	}
	if r.err != nil {
		return r.err
	}
	// The payload must make a task, as the real enqueuer requires.
	if _, err := (queue.TaskOptions{}).NewIntakeTask(p); err != nil {
		return err
	}
	r.intakes = append(r.intakes, p)
	return nil
}

// set changes the enqueuer's behaviour between requests.
func (r *recordingEnqueuer) set(f func(*recordingEnqueuer)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *recordingEnqueuer) enqueued() []queue.IntakePayload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]queue.IntakePayload(nil), r.intakes...)
}

// harness is the webhook server wired to a fake GitHub through the real gh client, served over HTTP.
type harness struct {
	t      *testing.T
	gh     *githubtest.Server
	enq    *recordingEnqueuer
	srv    *httptest.Server
	logs   *syncBuffer
	cfg    ServerConfig
	nextID atomic.Int64

	obsMu    sync.Mutex
	observed []string        // "event result" of every delivery, as Deps.Observe saw them
	took     []time.Duration // how long each of them was held, in the same order
}

type harnessOption func(*harnessSetup)

type harnessSetup struct {
	cfg       ServerConfig
	readiness []ReadinessCheck
	ghOpts    []githubtest.Option
}

func withReadiness(rc ...ReadinessCheck) harnessOption {
	return func(s *harnessSetup) { s.readiness = append(s.readiness, rc...) }
}

func withServerConfig(f func(*ServerConfig)) harnessOption {
	return func(s *harnessSetup) { f(&s.cfg) }
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	setup := harnessSetup{}
	for _, o := range opts {
		o(&setup)
	}
	// The fake GitHub builds and signs the deliveries, and proves the server never calls GitHub.
	fake := githubtest.New(t, setup.ghOpts...)
	cfg := setup.cfg
	cfg.AppID = fake.AppID()
	cfg.WebhookSecret = []byte(testSecret)
	if cfg.BotLogin == "" {
		cfg.BotLogin = fake.BotLogin()
	}
	h := &harness{t: t, gh: fake, enq: &recordingEnqueuer{}, logs: &syncBuffer{}, cfg: cfg}
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	handler, err := NewServer(cfg, Deps{Enqueuer: h.enq, Readiness: setup.readiness, Logger: logger,
		Observe: func(event, result string, took time.Duration) {
			h.obsMu.Lock()
			defer h.obsMu.Unlock()
			h.observed = append(h.observed, event+" "+result)
			h.took = append(h.took, took)
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(handler)
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", h.logs.String())
		}
	})
	t.Cleanup(func() {
		if calls := h.apiCalls(); len(calls) != 0 {
			t.Errorf("the webhook server called GitHub: %q", calls)
		}
	})
	return h
}

// response is the server's answer to one webhook.
type response struct {
	Status int
	Result string `json:"result"`
	Reason string `json:"reason"`
	Raw    string
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Raw) }

// send posts a webhook signed with the harness secret, as GitHub would.
func (h *harness) send(event string, payload any) response {
	h.t.Helper()
	id := fmt.Sprintf("delivery-%d", h.nextID.Add(1))
	req := h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, event, id, payload)
	return h.do(req)
}

func (h *harness) do(req *http.Request) response {
	h.t.Helper()
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("webhook: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	out := response{Status: resp.StatusCode, Raw: strings.TrimSpace(string(body))}
	if err := json.Unmarshal(body, &out); err != nil {
		h.t.Fatalf("answer is not JSON: %q", body)
	}
	out.Status = resp.StatusCode
	return out
}

func (h *harness) get(path string) (int, map[string]any) {
	h.t.Helper()
	resp, err := h.srv.Client().Get(h.srv.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		h.t.Fatalf("GET %s: answer is not JSON: %v", path, err)
	}
	return resp.StatusCode, body
}

// expect checks a webhook's answer.
func expect(t *testing.T, got response, status int, result string) {
	t.Helper()
	if got.Status != status || got.Result != result {
		t.Fatalf("answer = %s, want %d %s", got, status, result)
	}
}

// apiCalls lists the REST requests the server made to the fake, as "METHOD path", without token minting.
func (h *harness) apiCalls() []string {
	var out []string
	for _, r := range h.gh.Requests() {
		if strings.HasSuffix(r.Path, "/access_tokens") {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// syncBuffer is a bytes.Buffer the server's goroutines can log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Payload builders: the fields GitHub sends that the intake reads, plus enough around them to look real.

func userJSON(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{"login": login, "id": 1000 + len(login), "type": typ}
}

func repoJSON(r githubtest.Repo) map[string]any {
	return map[string]any{
		"id": r.ID, "name": r.Name, "full_name": r.FullName(), "private": r.Private,
		"owner": map[string]any{"login": r.Owner, "type": "User"}, "default_branch": r.DefaultBranch,
		"html_url": "https://github.com/" + r.FullName(),
	}
}

func baseJSON(r githubtest.Repo, action, sender string) map[string]any {
	m := map[string]any{"repository": repoJSON(r), "sender": userJSON(sender),
		"installation": map[string]any{"id": r.InstallationID, "node_id": "MDIz"}}
	if action != "" {
		m["action"] = action
	}
	return m
}

// commentCreatedAt and pullRequestUpdatedAt are the times in the payloads, as GitHub writes them.
const (
	commentCreatedAt     = "2026-11-26T12:00:00Z"
	pullRequestUpdatedAt = "2026-11-26T11:58:31Z"
)

func issueCommentJSON(r githubtest.Repo, number int, isPR bool, commentID int64, author, body string) map[string]any {
	m := baseJSON(r, "created", author)
	issue := map[string]any{"number": number, "title": "Add a thing", "state": "open", "user": userJSON("octocat")}
	if isPR {
		issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", r.FullName(), number)}
	}
	m["issue"] = issue
	m["comment"] = map[string]any{"id": commentID, "body": body, "user": userJSON(author), "author_association": "MEMBER",
		"created_at": commentCreatedAt, "updated_at": commentCreatedAt}
	return m
}

func pushJSON(r githubtest.Repo, ref, after, sender string, commits ...map[string]any) map[string]any {
	m := baseJSON(r, "", sender)
	m["ref"], m["before"], m["after"] = ref, strings.Repeat("0", 40), after
	m["created"], m["deleted"], m["forced"] = false, false, false
	m["pusher"] = map[string]any{"name": sender, "email": sender + "@example.com"}
	if commits == nil {
		commits = []map[string]any{}
	}
	m["commits"] = commits
	if len(commits) > 0 {
		m["head_commit"] = commits[len(commits)-1]
	} else {
		m["head_commit"] = nil
	}
	return m
}

func commitJSON(id string, added, modified []string) map[string]any {
	if added == nil {
		added = []string{}
	}
	if modified == nil {
		modified = []string{}
	}
	return map[string]any{"id": id, "message": "change", "added": added, "removed": []string{}, "modified": modified}
}

func pullRequestJSON(r githubtest.Repo, action string, pr githubtest.PullRequest, headSHA, sender string, headRepo map[string]any) map[string]any {
	m := baseJSON(r, action, sender)
	if headRepo == nil {
		headRepo = repoJSON(r)
	}
	m["number"] = pr.Number
	m["pull_request"] = map[string]any{
		"number": pr.Number, "state": "open", "title": pr.Title, "body": nil, "draft": pr.Draft,
		"user":       userJSON(pr.User),
		"head":       map[string]any{"ref": pr.Head, "sha": headSHA, "repo": headRepo, "label": pr.Head},
		"base":       map[string]any{"ref": pr.Base, "sha": strings.Repeat("b", 40), "repo": repoJSON(r), "label": pr.Base},
		"created_at": "2026-11-20T09:00:00Z", "updated_at": pullRequestUpdatedAt,
	}
	return m
}

func checkRunJSON(r githubtest.Repo, action string, appID int64, externalID string, prNumber int, sender, identifier string) map[string]any {
	m := baseJSON(r, action, sender)
	prs := []any{}
	if prNumber != 0 {
		prs = append(prs, map[string]any{"number": prNumber, "id": 9})
	}
	m["check_run"] = map[string]any{
		"id": 424242, "name": "akira: T1", "external_id": externalID, "head_sha": strings.Repeat("c", 40),
		"status": "completed", "conclusion": "action_required", "pull_requests": prs,
		"app": map[string]any{"id": appID, "slug": "akira-test", "created_at": "2018-04-25 20:42:10"},
	}
	if identifier != "" {
		m["requested_action"] = map[string]any{"identifier": identifier}
	}
	return m
}
