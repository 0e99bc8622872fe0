package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// startRun posts a run to start and returns the status and the answer.
func startRun(t *testing.T, url, token, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/api/v1/runs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// apiRun reads a run through the API.
func apiRun(t *testing.T, url, token, id string) map[string]any {
	t.Helper()
	code, body := apiCall(t, "GET", url+"/api/v1/runs/"+id, token, "")
	if code != http.StatusOK {
		t.Fatalf("GET run %s: %d %s", id, code, body)
	}
	var out map[string]any
	must(t, json.Unmarshal([]byte(body), &out))
	return out
}

// TestHandoffThroughTheAPI: POST /api/v1/runs with a plan's text starts a run that goes the way of
// any other (a draft pull request, a checkpoint per task, the pull request made ready); the same
// Idempotency-Key returns the same run; a plan that cannot be read is a 422 naming the line; a token
// for another repository is refused and starts nothing.
func TestHandoffThroughTheAPI(t *testing.T) {
	e := newEnv(t, false)
	api := e.adminServer()
	ctx := context.Background()
	editor, err := e.store.CreateTokenFor(ctx, "editor", store.ScopeStart, []string{e.owner + "/" + e.repo})
	must(t, err)
	elsewhere, err := e.store.CreateTokenFor(ctx, "elsewhere", store.ScopeStart, []string{e.owner + "/other"})
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n"})

	plan := "- [ ] 1 Add the greeting\n- [ ] 2 Add the farewell\n  - verify: test -f out-1.txt\n"
	body := `{"repository":"octo/demo","base":"main","plan":` + jsonString(plan) + `,"reference":"chat-7"}`
	code, first := startRun(t, api.URL, editor, "handoff-1", body)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, first)
	}
	id, _ := first["id"].(string)
	if id == "" || first["branch"] != "akira/handoff-"+id {
		t.Fatalf("start answered %v", first)
	}
	var run map[string]any
	e.eventually("the handed-off run to succeed", func() bool {
		run = apiRun(t, api.URL, editor, id)
		if run["status"] == "failed" {
			t.Fatalf("the run failed: %v", run)
		}
		return run["status"] == string(lifecycle.StatusSucceeded)
	})
	if run["reference"] != "chat-7" || run["tasks_done"] != 2.0 || run["branch"] != "akira/handoff-"+id {
		t.Errorf("run %v", run)
	}
	pr := e.onlyPR("akira/handoff-" + id)
	if pr.Draft || pr.Base != "main" || !strings.Contains(pr.Title, "chat-7") {
		t.Errorf("pull request: draft %v base %s title %q", pr.Draft, pr.Base, pr.Title)
	}
	if commits := e.taskCommits("akira/handoff-" + id); commits["1"] != 1 || commits["2"] != 1 {
		t.Errorf("checkpoints %v, want one per task", commits)
	}

	// The same key: the same run, nothing new.
	code, again := startRun(t, api.URL, editor, "handoff-1", body)
	if code != http.StatusAccepted || again["id"] != id || again["repeated"] != true || again["status"] != string(lifecycle.StatusSucceeded) {
		t.Errorf("repeat: %d %v, want run %s", code, again, id)
	}

	// Refusals start nothing.
	code, bad := startRun(t, api.URL, editor, "", `{"repository":"octo/demo","plan":"- [ ] 1 One\n- [ ] 2 Two\n  - depends: 7\n"}`)
	if msg, _ := bad["error"].(string); code != http.StatusUnprocessableEntity || !strings.Contains(msg, "plan:3") {
		t.Errorf("bad plan: %d %v, want a 422 naming line 3", code, bad)
	}
	if code, out := startRun(t, api.URL, elsewhere, "", body); code != http.StatusForbidden {
		t.Errorf("another repository's token: %d %v", code, out)
	}
	runs, err := e.store.Runs(ctx, store.RunFilter{Repo: "octo/demo"})
	must(t, err)
	if len(runs) != 1 || runs[0].ID != id {
		t.Errorf("runs of octo/demo: %d, want only %s", len(runs), id)
	}
	if len(e.gh.PullRequests(e.owner, e.repo)) != 1 {
		t.Errorf("pull requests: %+v", e.gh.PullRequests(e.owner, e.repo))
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestEscalationAnsweredThroughTheAPI: a handed-off run parks on a task; POST
// /runs/{id}/escalations/1 with retry and guidance continues it as `/akira retry` would, and the pull
// request says who answered, and how.
func TestEscalationAnsweredThroughTheAPI(t *testing.T) {
	e := newEnv(t, false)
	api := e.adminServer()
	ctx := context.Background()
	ops, err := e.store.CreateToken(ctx, "ops", store.ScopeControl)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	code, started := startRun(t, api.URL, ops, "", `{"repository":"octo/demo","plan":"- [ ] 1 Add a flaky thing\n"}`)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, started)
	}
	id := started["id"].(string)
	e.eventually("the run to park", func() bool { return apiRun(t, api.URL, ops, id)["status"] == string(lifecycle.StatusParked) })
	pr := e.onlyPR("akira/handoff-" + id)
	esc := api.URL + "/api/v1/runs/" + id + "/escalations/1"
	if code, body := apiCall(t, "POST", esc, ops, `{"action":"retry","guidance":"say the MAGIC-WORD"}`); code != http.StatusAccepted {
		t.Fatalf("answer: %d %s", code, body)
	}
	e.eventually("the run to succeed", func() bool { return apiRun(t, api.URL, ops, id)["status"] == string(lifecycle.StatusSucceeded) })
	if got := e.commentsWith(pr.Number, "was answered by `ops` via the API: `retry`"); len(got) != 1 {
		t.Errorf("%d lines saying who answered, want 1", len(got))
	}
	if p := e.promptOf("1"); !strings.Contains(p, "MAGIC-WORD") {
		t.Error("the guidance given through the API is not in the prompt")
	}
	if code, body := apiCall(t, "POST", esc, ops, `{"action":"approve"}`); code != http.StatusConflict {
		t.Errorf("answering an escalation no longer waiting: %d %s, want 409", code, body)
	}

	// A repository the App is not installed on: the handoff is accepted, then reads as failed with
	// the reason, and no run is made.
	code, ghost := startRun(t, api.URL, ops, "", `{"repository":"octo/ghost","plan":"- [ ] 1 Anything\n"}`)
	if code != http.StatusAccepted {
		t.Fatalf("start on octo/ghost: %d %v", code, ghost)
	}
	var failed map[string]any
	e.eventually("the ghost handoff to fail", func() bool {
		failed = apiRun(t, api.URL, ops, ghost["id"].(string))
		return failed["status"] == string(lifecycle.StatusFailed)
	})
	if msg, _ := failed["error"].(string); !strings.Contains(msg, "not installed on octo/ghost") {
		t.Errorf("ghost handoff: %v", failed)
	}
}

// TestHandoffBranchPrefix: a repository's branch_prefix names a handed-off run's branch; a repeat
// of the request answers with that branch.
func TestHandoffBranchPrefix(t *testing.T) {
	e := newEnv(t, false)
	api := e.adminServer()
	ops, err := e.store.CreateToken(context.Background(), "ops", store.ScopeControl)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "branch_prefix: bot/\n"})
	body := `{"repository":"octo/demo","plan":"- [ ] 1 Add the greeting\n"}`
	code, first := startRun(t, api.URL, ops, "k", body)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, first)
	}
	id := first["id"].(string)
	e.eventually("the run to succeed", func() bool { return apiRun(t, api.URL, ops, id)["status"] == string(lifecycle.StatusSucceeded) })
	if pr := e.onlyPR("bot/handoff-" + id); pr.Draft {
		t.Errorf("pull request still a draft: %+v", pr)
	}
	if _, again := startRun(t, api.URL, ops, "k", body); again["id"] != id || again["branch"] != "bot/handoff-"+id {
		t.Errorf("repeat: %v", again)
	}
}
