package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestHandedOffRunListedAtOnce: a run the API accepted is listed from that moment, queued, before
// any worker has made it a run: in GET /api/v1/runs (which akira status --server and MCP's
// list_runs read), filtered like the runs, and only to a token that sees its repository.
func TestHandedOffRunListedAtOnce(t *testing.T) {
	f := newStartFixture(t)
	other, err := f.store.CreateTokenFor(context.Background(), "elsewhere", store.ScopeRead, []string{"octo/other"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	code, data := do("POST", "/api/v1/runs", f.starter, `{"repository":"octo/demo","base":"main","plan":"- [ ] 1 Add the parser\n"}`)
	var started struct{ ID string }
	if code != http.StatusAccepted || json.Unmarshal(data, &started) != nil || started.ID == "" {
		t.Fatalf("POST: %d %s", code, data)
	}
	if len(f.handoffs(t)) != 1 {
		t.Fatal("no handoff job queued")
	}
	list := func(path, token string) map[string]string {
		t.Helper()
		code, data := do("GET", path, token, "")
		var out struct {
			Runs []RunSummary `json:"runs"`
		}
		if code != http.StatusOK || json.Unmarshal(data, &out) != nil {
			t.Fatalf("GET %s: %d %s", path, code, data)
		}
		got := map[string]string{}
		for _, r := range out.Runs {
			got[r.ID] = r.Status
		}
		return got
	}
	tests := []struct {
		path, token string
		listed      bool
	}{
		{"/api/v1/runs", f.starter, true},
		{"/api/v1/runs", f.read, true},
		{"/api/v1/runs?state=queued&repo=OCTO/demo", f.read, true},
		{"/api/v1/runs?state=running", f.read, false},
		{"/api/v1/runs?repo=octo/other", f.read, false},
		{"/api/v1/runs", other, false},
	}
	for _, tt := range tests {
		got := list(tt.path, tt.token)
		if status, ok := got[started.ID]; ok != tt.listed || ok && status != "queued" {
			t.Errorf("GET %s: run %s listed %t as %q, want listed %t, queued", tt.path, started.ID, ok, status, tt.listed)
		}
	}
	// Once a worker has made it a run, the run is listed, once.
	if _, _, err := f.store.Create(context.Background(), &lifecycle.Run{ID: started.ID, Owner: "octo", Repo: "demo", InstallationID: 7,
		Branch: "akira/handoff-" + started.ID, Status: lifecycle.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	code, data = do("GET", "/api/v1/runs", f.read, "")
	if n := strings.Count(string(data), `"id":"`+started.ID+`"`); code != http.StatusOK || n != 1 {
		t.Fatalf("after the worker: listed %d times: %s", n, data)
	}
	if got := list("/api/v1/runs", f.read); got[started.ID] != "running" || !slices.Contains([]string{"parked"}, got[f.runID]) {
		t.Errorf("after the worker: %v", got)
	}
}
