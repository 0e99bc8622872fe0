package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/timeline"
	"github.com/akira-bot/akira/templates"
)

// recordingController records the control requests it is given: the API's part ends there, and
// e2e tests show the real intake.Controller acting as the comment commands do.
type recordingController struct {
	mu   sync.Mutex
	reqs []intake.ControlRequest
	err  error
}

func (c *recordingController) Control(_ context.Context, req intake.ControlRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	if c.err != nil {
		return "", c.err
	}
	return req.Action + " queued", nil
}

type fixture struct {
	srv         *httptest.Server
	h           http.Handler
	store       *store.Store
	ctl         *recordingController
	read, write string
	runID       string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "akira-admin-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	st := store.NewStore(rdb, prefix)
	ctx := context.Background()
	run, _, err := st.Create(ctx, &lifecycle.Run{ID: "r-admin-1", Owner: "octo", Repo: "demo", InstallationID: 7, Branch: "akira/issue-1",
		Source: "issue #1", Issue: 1, Title: "Docs for the parser", Sender: "alice", RepoURL: "https://github.example/octo/demo", PR: 2, PRURL: "https://github.example/octo/demo/pull/2", Status: lifecycle.StatusParked,
		Tasks: []*lifecycle.TaskState{
			{ID: "1.1", Title: "Add <b>bold</b> parser", Status: lifecycle.TaskStatusPassed, Attempts: 2, Checkpoint: "3f2a9c1d7e5b4a6f8091a2b3c4d5e6f708192a3b",
				CostUSD: 0.12, InputTokens: 1000, OutputTokens: 200, UsageEstimated: true, Judgement: &templates.Judgement{Confidence: 0.93, Accepted: true}},
			{ID: "1.2", Title: "Write docs", Status: lifecycle.TaskStatusEscalated, Attempts: 3},
		},
		Parked: []lifecycle.Parked{{TaskID: "1.2", Attempt: 3, Reason: "max_attempts", Summary: "verification failed: `mkdocs build --strict` exited 1",
			At: time.Now().Add(-time.Hour), Changed: []string{"docs/guide.md", "mkdocs.yml"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveLog(ctx, run.ID, "1.1", 1, "==> Agent\nhello from the agent\n", time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, ev := range fixtureTimeline(run.ID) {
		if err := st.AppendEvent(ctx, ev, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// The parked attempt's log as the reporter writes it: one command passes, one fails.
	if err := st.SaveLog(ctx, run.ID, "1.2", 3, "==> Run r-admin-1, task 1.2 (Write docs), attempt 3\n\n==> Agent (2s)\nedited the guide\n"+
		"\n==> Verification\n\n$ go vet ./...\n(exit 0, 1.2s)\npassing-output\n\n$ mkdocs build --strict\n(exit 1, 3.4s)\nINFO - Building\n"+
		"WARNING - Doc file 'guide.md' contains a link to 'missing.md'\n", time.Hour); err != nil {
		t.Fatal(err)
	}
	read, err := st.CreateToken(ctx, "dash-reader", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	write, err := st.CreateToken(ctx, "ops", store.ScopeControl)
	if err != nil {
		t.Fatal(err)
	}
	ctl := &recordingController{}
	fair := fairLine(t, rdb, prefix)
	h, err := NewServer(Deps{Store: st, Controller: ctl, Queue: asynq.NewInspectorFromRedisClient(rdb), Fair: fair, Metrics: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, h: h, store: st, ctl: ctl, read: read, write: write, runID: run.ID}
}

func loadSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not valid OpenAPI: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://akira.test/api/v1"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, router
}

// TestRoutesMatchOpenAPI: every API route the server handles is described, and every described
// operation is handled.
func TestRoutesMatchOpenAPI(t *testing.T) {
	f := newFixture(t)
	doc, _ := loadSpec(t)
	var described []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" /api/v1"+path)
		}
	}
	var handled []string
	for _, r := range f.h.(*gin.Engine).Routes() {
		if strings.HasPrefix(r.Path, "/api/v1/") && r.Path != "/api/v1/openapi.json" {
			p := r.Path
			for _, seg := range []string{"id", "task", "n"} {
				p = strings.ReplaceAll(p, "/:"+seg, "/{"+seg+"}")
			}
			handled = append(handled, r.Method+" "+p)
		}
	}
	sort.Strings(described)
	sort.Strings(handled)
	if !slices.Equal(described, handled) {
		t.Errorf("routes and OpenAPI differ:\nhandled:   %v\ndescribed: %v", handled, described)
	}
}

// An attempt's events are JSON lines: the description says a string, as for text/plain, and the
// lines are checked by the test itself.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		data, err := io.ReadAll(body)
		return string(data), err
	})
}

// TestAPIAgainstOpenAPI calls every route, as each kind of caller, and checks each answer against the
// OpenAPI description (status, content type, schema).
func TestAPIAgainstOpenAPI(t *testing.T) {
	f := newFixture(t)
	_, router := loadSpec(t)
	call := func(method, path, token, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
		}
		// Validate against the description, as the spec's server would see the same request.
		sreq, _ := http.NewRequest(method, "http://akira.test"+path, strings.NewReader(body))
		if body != "" {
			sreq.Header.Set("Content-Type", "application/json")
		}
		route, params, err := router.FindRoute(sreq)
		if err != nil {
			t.Errorf("%s %s is not described: %v", method, path, err)
			return data
		}
		in := &openapi3filter.RequestValidationInput{Request: sreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(data)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}); err != nil {
			t.Errorf("%s %s (%d) does not match the description: %v", method, path, resp.StatusCode, err)
		}
		return data
	}
	run := "/api/v1/runs/" + f.runID
	// Authentication.
	call("GET", "/api/v1/runs", "", "", http.StatusUnauthorized)
	call("GET", "/api/v1/runs", "akira_0000", "", http.StatusUnauthorized)
	call("GET", "/api/v1/runs", "not-even-a-token", "", http.StatusUnauthorized)
	// Reading, with a read token.
	if body := call("GET", "/api/v1/runs?repo=OCTO/demo&state=parked,running", f.read, "", http.StatusOK); !strings.Contains(string(body), `"waiting_on":"1.2"`) {
		t.Errorf("runs: %s", body)
	}
	if body := call("GET", "/api/v1/runs?state=succeeded", f.read, "", http.StatusOK); string(body) != `{"runs":[]}` {
		t.Errorf("filtered runs: %s", body)
	}
	call("GET", "/api/v1/runs?state=sleeping", f.read, "", http.StatusBadRequest)
	// Pages: two more runs, one per page, each page's next leading to the following one.
	for _, id := range []string{"r-admin-2", "r-admin-3"} {
		if _, _, err := f.store.Create(context.Background(), &lifecycle.Run{ID: id, Owner: "octo", Repo: "demo", Branch: "akira/" + id}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	for path, pages := "/api/v1/runs?limit=1", 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatalf("pages never end: %v", seen)
		}
		var page struct {
			Runs []RunSummary `json:"runs"`
			Next string       `json:"next"`
		}
		if err := json.Unmarshal(call("GET", path, f.read, "", http.StatusOK), &page); err != nil || len(page.Runs) != 1 {
			t.Fatalf("page %s: %+v, %v", path, page, err)
		}
		seen = append(seen, page.Runs[0].ID)
		path = ""
		if page.Next != "" {
			path = "/api/v1/runs?limit=1&cursor=" + url.QueryEscape(page.Next)
		}
	}
	if strings.Join(seen, ",") != "r-admin-3,r-admin-2,r-admin-1" {
		t.Errorf("pages gave %v", seen)
	}
	call("GET", "/api/v1/runs?cursor=nonsense", f.read, "", http.StatusBadRequest)
	body := call("GET", run, f.read, "", http.StatusOK)
	for _, want := range []string{`"tasks_done":1`, `"cost_estimated":true`, `"judge":{"confidence":0.93,"accepted":true}`, `"url":"/api/v1/runs/r-admin-1/tasks/1.1/attempts/2/log"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("run lacks %s: %s", want, body)
		}
	}
	call("GET", "/api/v1/runs/nope", f.read, "", http.StatusNotFound)
	if body := call("GET", run+"/tasks/1.1/attempts/1/log", f.read, "", http.StatusOK); !strings.Contains(string(body), "hello from the agent") {
		t.Errorf("log: %s", body)
	}
	call("GET", run+"/tasks/1.1/attempts/2/log", f.read, "", http.StatusNotFound)
	call("GET", run+"/tasks/1.1/attempts/zero/log", f.read, "", http.StatusBadRequest)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(call("GET", run+"/tasks/1.1/attempts/1/events", f.read, "", http.StatusOK))), "\n") {
		var ev timeline.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.RunID != f.runID || ev.TaskID != "1.1" || ev.Attempt != 1 {
			t.Fatalf("event %q: %+v, %v", line, ev, err)
		}
		kinds = append(kinds, fmt.Sprintf("%d:%s:%.4f", ev.Seq, ev.Kind, ev.CostUSD))
	}
	if want := "1:attempt_started:0.0000 2:model_call:0.0420 3:file_changed:0.0420 4:verify:0.0420 5:attempt_ended:0.0420"; strings.Join(kinds, " ") != want {
		t.Errorf("events = %s, want %s", strings.Join(kinds, " "), want)
	}
	call("GET", run+"/tasks/1.1/attempts/2/events", f.read, "", http.StatusNotFound)
	call("GET", run+"/tasks/1.1/attempts/0/events", f.read, "", http.StatusBadRequest)
	call("GET", "/api/v1/runs/nope/tasks/1.1/attempts/1/events", f.read, "", http.StatusNotFound)
	if other, err := f.store.CreateTokenFor(context.Background(), "elsewhere", store.ScopeRead, []string{"octo/other"}); err != nil {
		t.Fatal(err)
	} else {
		call("GET", run+"/tasks/1.1/attempts/1/events", other, "", http.StatusNotFound)
	}
	call("GET", "/api/v1/queue", f.read, "", http.StatusOK)
	call("GET", "/api/v1/audit", f.read, "", http.StatusOK)
	// Spend: what a change to the run adds counts for its installation, repository and month.
	if _, err := f.store.Update(context.Background(), f.runID, func(r *lifecycle.Run) error { r.EditTask(r.Tasks[1].ID).CostUSD = 0.5; return nil }); err != nil {
		t.Fatal(err)
	}
	month := store.SpendMonth(time.Now())
	var spend struct {
		Rows    []store.SpendRow `json:"rows"`
		CostUSD float64          `json:"cost_usd"`
	}
	if err := json.Unmarshal(call("GET", "/api/v1/spend?month="+month, f.read, "", http.StatusOK), &spend); err != nil || len(spend.Rows) != 1 ||
		spend.Rows[0] != (store.SpendRow{Month: month, InstallationID: 7, Repo: "octo/demo", CostUSD: 0.5}) || spend.CostUSD != 0.5 {
		t.Errorf("spend of %s: %+v, %v", month, spend, err)
	}
	if csv := string(call("GET", "/api/v1/spend?format=csv&month="+month, f.read, "", http.StatusOK)); csv != "month,installation_id,repository,cost_usd\n"+month+",7,octo/demo,0.500000\n" {
		t.Errorf("spend as CSV: %q", csv)
	}
	call("GET", "/api/v1/spend?month=november", f.read, "", http.StatusBadRequest)
	call("GET", "/api/v1/spend?format=xml", f.read, "", http.StatusBadRequest)
	if other, err := f.store.CreateTokenFor(context.Background(), "spend-elsewhere", store.ScopeRead, []string{"octo/other"}); err != nil {
		t.Fatal(err)
	} else if body := string(call("GET", "/api/v1/spend", other, "", http.StatusOK)); body != `{"rows":[],"cost_usd":0}` {
		t.Errorf("a token of another repository reads the spend: %s", body)
	}
	// Control: a read token may not; a control token may; the request reaches the controller whole.
	for _, a := range []string{"stop", "abort", "retry", "approve", "skip"} {
		call("POST", run+"/"+a, f.read, "", http.StatusForbidden)
	}
	if len(f.ctl.reqs) != 0 {
		t.Fatalf("a read token reached the controller: %+v", f.ctl.reqs)
	}
	call("POST", run+"/retry", f.write, `{"task_id":"1.2","guidance":"use the v2 client"}`, http.StatusAccepted)
	call("POST", run+"/stop", f.write, "", http.StatusAccepted)
	call("POST", run+"/skip", f.write, `{"task":"1.2"}`, http.StatusBadRequest)
	if len(f.ctl.reqs) != 2 {
		t.Fatalf("controller saw %+v", f.ctl.reqs)
	}
	if r := f.ctl.reqs[0]; r.Action != "retry" || r.TaskID != "1.2" || r.Guidance != "use the v2 client" || r.Token.Name != "ops" || r.Via != "API" || r.RunID != f.runID {
		t.Errorf("retry request %+v", r)
	}
	f.ctl.err = intake.ErrNotNow
	call("POST", run+"/approve", f.write, "", http.StatusConflict)
	// The description itself is served.
	resp, err := http.Get(f.srv.URL + "/api/v1/openapi.json")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("openapi.json: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestTemplatesParse(t *testing.T) {
	tmpl, err := parseUI()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"head", "foot", "login", "error", "runs", "run", "task", "log", "queue", "escalations"} {
		if tmpl.Lookup(name) == nil {
			t.Errorf("no template %q", name)
		}
	}
}

// fixtureTimeline is a short attempt as the engine records it: a model call, a file, a command.
func fixtureTimeline(runID string) []timeline.Event {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	ev := func(seq int, kind timeline.Kind, cost float64) timeline.Event {
		return timeline.Event{V: 1, Seq: seq, Time: at.Add(time.Duration(seq) * time.Second), Kind: kind, RunID: runID, TaskID: "1.1", Attempt: 1, CostUSD: cost}
	}
	start, call, file, cmd, end := ev(1, timeline.KindAttemptStarted, 0), ev(2, timeline.KindModelCall, 0.042), ev(3, timeline.KindFileChanged, 0.042),
		ev(4, timeline.KindVerify, 0.042), ev(5, timeline.KindAttemptEnded, 0.042)
	call.Call = &timeline.ModelCall{Source: timeline.SourceProxy, Model: "claude-sonnet-4-5", InputTokens: 1200, OutputTokens: 300, CostUSD: 0.042, Status: 200}
	file.File = &timeline.File{Path: "parser/bold.go", Status: "added", Added: 40}
	cmd.Command = &timeline.Command{Command: "go test ./...", ExitCode: 1, Tail: "--- FAIL: TestBold"}
	end.End = &timeline.End{Result: timeline.ResultFailed, Summary: "go test ./... exited 1", Duration: 5 * time.Second, CostUSD: 0.042}
	return []timeline.Event{start, call, file, cmd, end}
}
