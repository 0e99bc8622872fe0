package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/internal/browsertest"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// adminServer starts the admin address's handler for e, wired as akira serve wires it.
func (e *env) adminServer() *httptest.Server {
	e.t.Helper()
	enq := queue.NewEnqueuer(asynq.NewClientFromRedisClient(e.rdb), queue.TaskOptions{Queue: e.spec.Queue})
	h, err := admin.NewServer(admin.Deps{Store: e.store, Queue: asynq.NewInspectorFromRedisClient(e.rdb), Logger: testLogger(e.t),
		Controller: &intake.Controller{Store: e.store, Enqueuer: enq}})
	must(e.t, err)
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv
}

func apiCall(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestControlThroughTheAPI: a retry and a stop through the API do what `/akira retry` and `/akira
// stop` do — the same jobs, the same outcome — and each is audited and mirrored on the pull request.
func TestControlThroughTheAPI(t *testing.T) {
	e := newEnv(t, false)
	api := e.adminServer()
	ctx := context.Background()
	ops, err := e.store.CreateToken(ctx, "ops", store.ScopeControl)
	must(t, err)
	reader, err := e.store.CreateToken(ctx, "viewer", store.ScopeRead)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flaky", User: "alice", Body: "- [ ] Add a flaky thing\n- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.2") // 1.1 parked, 1.2 working
	run := e.runOf(1)
	pr := e.onlyPR(run.Branch)

	if code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/stop", reader, ""); code != http.StatusForbidden {
		t.Fatalf("a read token stopped the run: %d %s", code, body)
	}
	if code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/stop", ops, ""); code != http.StatusAccepted {
		t.Fatalf("stop: %d %s", code, body)
	}
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.2") })
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if cr := e.latestCheckRuns()["akira: 1.2 Add a slow thing"]; cr.Conclusion != "cancelled" {
		t.Errorf("check run of the stopped task: %+v", cr)
	}
	if !strings.HasPrefix(stopped.StoppedBy, "ops") {
		t.Errorf("stopped by %q", stopped.StoppedBy)
	}
	e.eventually("the stop's line on the pull request", func() bool {
		return len(e.commentsWith(pr.Number, "stopped through the API by operator token `ops`")) == 1
	})

	// A stopped run takes no decision (as a comment would be told); `/akira run` continues it, and
	// it parks again on the task that waits.
	if code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/retry", ops, `{"task_id":"1.1"}`); code != http.StatusConflict {
		t.Errorf("a retry of a stopped run: %d %s, want 409", code, body)
	}
	must(t, os.WriteFile(filepath.Join(e.logDir, "release"), nil, 0o644)) // the slow task may finish now
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitStatus(1, lifecycle.StatusParked)

	// The parked task: a retry with guidance through the API, like `/akira retry`.
	code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/retry", ops,
		`{"task_id":"1.1","guidance":"the flaky things need the MAGIC-WORD in their prompt"}`)
	if code != http.StatusAccepted {
		t.Fatalf("retry: %d %s", code, body)
	}
	e.eventually("the retry's line on the pull request", func() bool {
		return len(e.commentsWith(pr.Number, "Task `1.1` of run `"+run.ID+"` retried through the API by operator token `ops`")) == 1
	})
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	if done.ID != run.ID {
		t.Errorf("a new run %s instead of %s", done.ID, run.ID)
	}
	if p := e.promptOf("1.1"); !strings.Contains(p, "MAGIC-WORD") {
		t.Error("the guidance given through the API is not in the prompt")
	}

	code, body = apiCall(t, "GET", api.URL+"/api/v1/audit", reader, "")
	var audit struct{ Entries []store.AuditEntry }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &audit) != nil || len(audit.Entries) < 3 {
		t.Fatalf("audit: %d %s", code, body)
	}
	// The tokens' creation and the slash commands are audited too (by the store and the intake,
	// through no controller): the API's control actions are the rest.
	created, commands := 0, 0
	audit.Entries = slices.DeleteFunc(audit.Entries, func(a store.AuditEntry) bool {
		switch {
		case a.Action == "token_create":
			created++
		case a.Via == store.ViaComment:
			commands++
		}
		return strings.HasPrefix(a.Action, "token_") || a.Via == store.ViaComment
	})
	if commands == 0 {
		t.Error("the /akira run that started the run is not in the audit")
	}
	if created < 2 {
		t.Errorf("%d token creations audited, want the reader's and the operator's", created)
	}
	if a := audit.Entries[len(audit.Entries)-1]; a.Token != "viewer" || !strings.HasPrefix(a.Result, "refused") {
		// The refused stop of the read token is not audited by the controller (it never got there).
		if a.Token != "ops" || a.Action != "stop" {
			t.Errorf("oldest audit entry %+v", a)
		}
	}
	if a := audit.Entries[0]; a.Token != "ops" || a.Action != "retry" || a.TaskID != "1.1" || a.Via != "API" {
		t.Errorf("newest audit entry %+v", a)
	}
}

// TestDashboardInBrowser: in a real browser, log in with a token, see a parked run with its tasks,
// open an attempt's log, and stop a running run from its page; a form without the CSRF token is
// refused. A screenshot of each page is saved (AKIRA_TEST_ARTIFACTS, else the test's directory).
func TestDashboardInBrowser(t *testing.T) {
	browser := browsertest.New(t)
	e := newEnv(t, false)
	ui := e.adminServer()
	ops, err := e.store.CreateToken(context.Background(), "ops", store.ScopeControl)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flaky", User: "alice", Body: "- [ ] Add a flaky thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	parked := e.waitStatus(1, lifecycle.StatusParked)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 3, Title: "Long", User: "alice", Body: "- [ ] Add a slow thing\n"})
	e.comment(3, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.1")
	working := e.runOf(3)

	artifacts := os.Getenv("AKIRA_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	must(t, os.MkdirAll(artifacts, 0o755))
	bctx, cancel := context.WithTimeout(browser, 2*time.Minute)
	defer cancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("browser: text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("browser: screenshot %s: %v", name, err)
		}
		must(t, os.WriteFile(filepath.Join(artifacts, "dashboard-"+name+".png"), png, 0o644))
	}
	do("login page", chromedp.Navigate(ui.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	shot("login")
	do("log in", chromedp.SendKeys(chromedp.CSS("#token"), ops), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#runs")))
	runs := text("#runs")
	shot("runs")
	do("run page", chromedp.Navigate(ui.URL+"/ui/runs/"+parked.ID), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	runPage := text("main")
	shot("run-parked")
	do("an attempt's log", chromedp.Click(chromedp.CSS("a.log")), chromedp.WaitVisible(chromedp.CSS("#log")))
	logText := text("#log")
	shot("log")
	do("escalations", chromedp.Navigate(ui.URL+"/ui/escalations"), chromedp.WaitVisible(chromedp.CSS("#escalations")))
	escalations := text("#escalations")
	shot("escalations")
	do("queue", chromedp.Navigate(ui.URL+"/ui/queue"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	shot("queue")
	do("stop from the page", chromedp.Navigate(ui.URL+"/ui/runs/"+working.ID), chromedp.WaitVisible(chromedp.CSS("#stop")),
		chromedp.Click(chromedp.CSS("#stop")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	flash := text("#flash")
	shot("run-stopped")
	// A form posted without the CSRF token (as another site's page would) is refused.
	do("a form without the CSRF token", chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.createElement("form"); f.method = "POST"; f.action = "/ui/runs/`+parked.ID+`/abort";
		const i = document.createElement("input"); i.name = "task_id"; i.value = "1.1"; f.appendChild(i);
		document.body.appendChild(f); f.submit(); })()`), chromedp.WaitVisible(chromedp.CSS("#error")))
	refused := text("#error")
	shot("csrf-refused")
	if !strings.Contains(flash, "stop requested") {
		t.Errorf("after Stop the page says %q", flash)
	}
	if !strings.Contains(escalations, parked.ID) || !strings.Contains(escalations, "1.1") {
		t.Errorf("escalations page:\n%s", escalations)
	}
	if !strings.Contains(runs, parked.ID) || !strings.Contains(runs, working.ID) || !strings.Contains(runs, "needs a decision") {
		t.Errorf("runs page:\n%s", runs)
	}
	for _, want := range []string{"Task 1.1 “Add a flaky thing” needs a decision", "I cannot do this without the magic word", "attempt 1", "attempt 2"} {
		if !strings.Contains(runPage, want) {
			t.Errorf("run page lacks %q:\n%s", want, runPage)
		}
	}
	if !strings.Contains(logText, "==> Agent") || !strings.Contains(logText, "I cannot do this without the magic word") {
		t.Errorf("log page:\n%s", logText)
	}
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.1") })
	if st := e.waitStatus(3, lifecycle.StatusStopped); !strings.HasPrefix(st.StoppedBy, "ops") {
		t.Errorf("stopped by %q", st.StoppedBy)
	}
	if !strings.Contains(refused, "CSRF token is missing or wrong") {
		t.Errorf("a form without the CSRF token: %q", refused)
	}
	if r := e.runOf(1); r.Status != lifecycle.StatusParked {
		t.Errorf("the refused abort changed the run: %s", r.Status)
	}
	t.Logf("dashboard screenshots in %s", artifacts)
}
