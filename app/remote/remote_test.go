package remote

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

func TestRepoOfURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/octo/demo.git", "octo/demo"},
		{"https://github.com/octo/demo", "octo/demo"},
		{"git@github.com:octo/demo.git", "octo/demo"},
		{"ssh://git@github.com/octo/demo.git", "octo/demo"},
		{"https://x-access-token@ghe.example.com/octo/my.repo.git\n", "octo/my.repo"},
		{"/srv/git/demo.git", ""},
		{"https://github.com/octo", ""},
	} {
		if got := RepoOfURL(tc.url); got != tc.want {
			t.Errorf("RepoOfURL(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// TestFollowEvents: what a follower tells between reads of a run, each thing once.
func TestFollowEvents(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := func(id, status, checkpoint string, attempts int) admin.TaskDetail {
		return admin.TaskDetail{ID: id, Title: "Task " + id, Status: status, Checkpoint: checkpoint, Attempts: attempts}
	}
	reads := []admin.RunDetail{
		{RunSummary: admin.RunSummary{ID: "r1", Status: "queued"}},
		{RunSummary: admin.RunSummary{ID: "r1", Status: "running"}, Tasks: []admin.TaskDetail{task("1", "running", "", 1), task("2", "pending", "", 0)}},
		{RunSummary: admin.RunSummary{ID: "r1", Status: "running"}, Tasks: []admin.TaskDetail{task("1", "passed", "abcdef1234", 1), task("2", "running", "", 1)}},
		{RunSummary: admin.RunSummary{ID: "r1", Status: "parked", WaitingOn: "2"}, Tasks: []admin.TaskDetail{task("1", "passed", "abcdef1234", 1), task("2", "escalated", "", 2)},
			Parked: []admin.ParkedTask{{TaskID: "2", Reason: "max_attempts", Since: at}}},
		{RunSummary: admin.RunSummary{ID: "r1", Status: "parked", WaitingOn: "2"}, Tasks: []admin.TaskDetail{task("1", "passed", "abcdef1234", 1), task("2", "escalated", "", 2)},
			Parked: []admin.ParkedTask{{TaskID: "2", Reason: "max_attempts", Since: at}}},
		{RunSummary: admin.RunSummary{ID: "r1", Status: "succeeded", PRURL: "https://github.example/octo/demo/pull/3"},
			Tasks: []admin.TaskDetail{task("1", "passed", "abcdef1234", 1), task("2", "passed", "0123456789", 3)}},
	}
	var got []string
	seen := map[string]bool{}
	for i, r := range reads {
		var prev admin.RunDetail
		if i > 0 {
			prev = reads[i-1]
		}
		diff(prev, r, i == 0, seen, func(ev Event) { got = append(got, ev.Kind+" "+ev.Text) })
	}
	want := []string{
		"status run r1: queued",
		"status run r1: running",
		"task_started task 1 started: Task 1",
		"checkpoint task 1 checkpoint abcdef1: Task 1",
		"task_started task 2 started: Task 2",
		"status run r1: task 2 needs a decision",
		"escalation escalation 1: task 2 needs a decision (max_attempts)",
		"checkpoint task 2 checkpoint 0123456: Task 2",
		"status run r1: succeeded · https://github.example/octo/demo/pull/3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMCPInProcess: the MCP server, connected in process to the SDK's client, calls a real admin
// server: start_run queues a run, run_status reads it, a refusal is a tool error with the reason.
func TestMCPInProcess(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	prefix := "akira-remote-test:" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "") + ":"
	qname := "akira-remote-test-" + prefix[len("akira-remote-test:"):len(prefix)-1]
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = insp.DeleteQueue(qname, true)
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	ctx := context.Background()
	rs := store.NewStore(rdb, prefix)
	token, err := rs.CreateTokenFor(ctx, "editor", store.ScopeControl, []string{"octo/demo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rs.Create(ctx, &lifecycle.Run{ID: "r-parked", Owner: "octo", Repo: "demo", InstallationID: 7, PR: 2, Branch: "akira/issue-1", Status: lifecycle.StatusParked,
		Tasks:  []*lifecycle.TaskState{{ID: "1", Title: "Flaky", Status: lifecycle.TaskStatusEscalated}},
		Parked: []lifecycle.Parked{{TaskID: "1", Reason: "max_attempts", At: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	h, err := admin.NewServer(admin.Deps{Store: rs, Queue: insp,
		Controller: &intake.Controller{Store: rs, Enqueuer: queue.NewEnqueuer(asynq.NewClientFromRedisClient(rdb), queue.TaskOptions{Queue: qname})}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := c.MCPServer("test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	call := func(name string, args map[string]any, out any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			return res.Content[0].(*mcp.TextContent).Text
		}
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	var started admin.StartResult
	if msg := call("start_run", map[string]any{"repository": "octo/demo", "plan": "- [ ] 1 One\n- [ ] 2 Two\n"}, &started); msg != "" {
		t.Fatalf("start_run: %s", msg)
	}
	var run admin.RunDetail
	if msg := call("run_status", map[string]any{"run_id": started.ID}, &run); msg != "" || run.Status != "queued" || run.TasksTotal != 2 {
		t.Errorf("run_status: %q %+v", msg, run)
	}
	if msg := call("start_run", map[string]any{"repository": "octo/demo", "plan": "- [ ] 1 One\n- [ ] 1 Two\n"}, nil); !strings.Contains(msg, "422") || !strings.Contains(msg, "plan:2") {
		t.Errorf("a bad plan: %q", msg)
	}
	var answered ControlOutput
	if msg := call("answer_escalation", map[string]any{"run_id": "r-parked", "action": "retry", "guidance": "try harder"}, &answered); msg != "" || answered.Result != "retry queued" {
		t.Errorf("answer_escalation: %q %+v", msg, answered)
	}
	if msg := call("resume_run", map[string]any{"run_id": "r-parked"}, nil); !strings.Contains(msg, "409") || !strings.Contains(msg, "not paused") {
		t.Errorf("resume_run of a parked run: %q", msg)
	}
	if msg := call("pause_run", map[string]any{"run_id": "r-parked", "now": true}, nil); !strings.Contains(msg, "409") || !strings.Contains(msg, "neither queued nor working") {
		t.Errorf("pause_run of a parked run: %q", msg)
	}
	if msg := call("run_status", map[string]any{"run_id": ""}, nil); !strings.Contains(msg, "run_id is required") {
		t.Errorf("run_status without a run: %q", msg)
	}
}
