package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs"
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
	adminURL, token := handoffServer(t, fake, jobs.ScopeControl)

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
	callTool(t, cs, "start_run", map[string]any{"repository": "octo/svc", "plan": "- [ ] Write the first file\n", "idempotency_key": "plan-v1"}, &again)
	if again.ID != started.ID || !again.Repeated {
		t.Errorf("start_run with the same key: %+v, want run %s", again, started.ID)
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
