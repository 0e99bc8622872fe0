package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// callTool calls a tool and decodes its structured answer into out; it returns the tool's error text
// when the call ended in one.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return strings.Join(text, " ")
	}
	if out != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s answered %s: %v", name, data, err)
		}
	}
	return ""
}

// TestMCPStartsAndFollowsARun: the `akira mcp` process, driven by the MCP SDK's own client over
// stdio, starts a run on a real `akira serve` with start_run, follows it with run_status to its
// end and finds it with list_runs; pause_run says the server cannot pause yet, and a refused call
// is a tool error with the server's reason.
func TestMCPStartsAndFollowsARun(t *testing.T) {
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	adminURL, token := handoffServer(t, fake, store.ScopeControl)

	cmd := exec.Command(akiraBin, "mcp")
	cmd.Env = append(os.Environ(), "AKIRA_SERVER="+adminURL, "AKIRA_TOKEN="+token)
	client := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "test"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"answer_escalation", "list_runs", "pause_run", "resume_run", "run_status", "start_run", "stop_run"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	var started admin.StartResult
	if msg := callTool(t, cs, "start_run", map[string]any{"repository": "octo/svc", "reference": "editor-session-3",
		"plan": "- [ ] Write the first file\n- [ ] Write the second file\n", "idempotency_key": "plan-v1"}, &started); msg != "" {
		t.Fatalf("start_run: %s", msg)
	}
	if started.ID == "" || started.Branch != "akira/handoff-"+started.ID {
		t.Fatalf("start_run answered %+v", started)
	}
	// The audit says the run came through MCP, not the API alone.
	if code, body := authedGet(t, adminURL+"/api/v1/audit", token); code != http.StatusOK ||
		!strings.Contains(body, `"via":"MCP","action":"start"`) || !strings.Contains(body, started.ID) {
		t.Errorf("the audit of start_run: %d %s", code, body)
	}
	var run admin.RunDetail
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if msg := callTool(t, cs, "run_status", map[string]any{"run_id": started.ID}, &run); msg != "" {
			t.Fatalf("run_status: %s", msg)
		}
		if run.Status == "succeeded" || run.Status == "failed" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if run.Status != "succeeded" || run.TasksDone != 2 || run.PRURL == "" || run.Reference != "editor-session-3" {
		t.Fatalf("the run ended as %+v", run)
	}
	var again admin.StartResult
	callTool(t, cs, "start_run", map[string]any{"repository": "octo/svc", "reference": "editor-session-3",
		"plan": "- [ ] Write the first file\n- [ ] Write the second file\n", "idempotency_key": "plan-v1"}, &again)
	if again.ID != started.ID || !again.Repeated {
		t.Errorf("start_run repeated with the same key: %+v, want run %s", again, started.ID)
	}
	if msg := callTool(t, cs, "start_run", map[string]any{"repository": "octo/svc", "plan": "- [ ] Write the first file\n",
		"idempotency_key": "plan-v1"}, nil); !strings.Contains(msg, "422") || !strings.Contains(msg, "started run "+started.ID+" for a different request") {
		t.Errorf("start_run with the same key and another plan: %q, want a 422 naming run %s", msg, started.ID)
	}
	var list struct{ Runs []admin.RunSummary }
	callTool(t, cs, "list_runs", map[string]any{"repository": "octo/svc", "states": []string{"succeeded"}}, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != started.ID {
		t.Errorf("list_runs: %+v", list.Runs)
	}
	if msg := callTool(t, cs, "pause_run", map[string]any{"run_id": started.ID}, nil); !strings.Contains(msg, "409") || !strings.Contains(msg, "neither queued nor working") {
		t.Errorf("pause_run of a finished run: %q", msg)
	}
	if msg := callTool(t, cs, "answer_escalation", map[string]any{"run_id": started.ID, "action": "approve"}, nil); !strings.Contains(msg, "409") {
		t.Errorf("answer_escalation on a finished run: %q", msg)
	}
	if msg := callTool(t, cs, "start_run", map[string]any{"repository": "octo/other", "plan": "- [ ] x\n"}, nil); !strings.Contains(msg, "403") {
		t.Errorf("start_run on another repository: %q", msg)
	}
	if msg := callTool(t, cs, "stop_run", map[string]any{"run_id": started.ID}, nil); !strings.Contains(msg, "409") {
		t.Errorf("stop_run of a finished run: %q", msg)
	}
}

// TestMCPAnswersAPipedSession: requests piped into `akira mcp` whose input then ends (printf '…' |
// akira mcp) are all answered before it exits, the tool calls that ask the server included.
func TestMCPAnswersAPipedSession(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	// A prefix of this run's own: a named Redis (CI's) outlives test runs, and a run left "running"
	// by an earlier one would hold the branch.
	prefix := fmt.Sprintf("akira-mcp-pipe-%s-%d:", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	st := store.NewStore(rdb, prefix)
	qname := "akira-mcp-pipe-" + fmt.Sprint(time.Now().UnixNano())
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(qname, true) })
	run, _, err := st.Create(ctx, &lifecycle.Run{ID: "r-piped-" + fmt.Sprint(time.Now().UnixNano()), Owner: "octo", Repo: "svc",
		Branch: "akira/issue-1", Status: lifecycle.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	token, err := st.CreateToken(ctx, "editor", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	h, err := admin.NewServer(admin.Deps{Store: st, Queue: insp,
		Controller: &intake.Controller{Store: st, Enqueuer: queue.NewEnqueuer(asynq.NewClientFromRedisClient(rdb), queue.TaskOptions{Queue: qname})}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)

	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_status","arguments":{"run_id":"` + run.ID + `"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_status","arguments":{"run_id":"no-such-run"}}}`,
	}
	cmd := exec.Command(akiraBin, "mcp")
	cmd.Env = append(os.Environ(), "AKIRA_SERVER="+api.URL, "AKIRA_TOKEN="+token)
	cmd.Stdin = strings.NewReader(strings.Join(requests, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("akira mcp: %v\n%s", err, stderr.String())
	}
	answers := map[int]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.ID == 0 || a.Result == nil {
			t.Fatalf("not an answer: %q (%v)", line, err)
		}
		answers[a.ID] = a.Result
	}
	if len(answers) != 4 {
		t.Fatalf("%d answers to 4 requests:\n%s\nstderr:\n%s", len(answers), out, stderr.String())
	}
	var status struct {
		StructuredContent admin.RunDetail `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(answers[3], &status); err != nil || status.IsError || status.StructuredContent.ID != run.ID ||
		status.StructuredContent.Status != "running" {
		t.Errorf("run_status of %s answered %s", run.ID, answers[3])
	}
	if !strings.Contains(string(answers[4]), `"isError":true`) || !strings.Contains(string(answers[4]), "404") {
		t.Errorf("run_status of an unknown run answered %s, want the server's 404 as a tool error", answers[4])
	}
}

// authedGet GETs url with a bearer token.
func authedGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}
