package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/browsertest"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/jobs/store"
	attempt "github.com/akira-bot/akira/runner/timeline"
)

// TestServeKeepsEachAttemptsTimeline: under akira serve, a task's first attempt calls the model
// through the egress proxy, changes two files and fails its verification command; the second
// passes. The events API gives each attempt's events in order — the call at the metered tokens ×
// the operator's price, the files from the work tree, the command and its exit code, the end — and
// the dashboard's task page shows the same timeline in a real browser (a screenshot is kept).
func TestServeKeepsEachAttemptsTimeline(t *testing.T) {
	const realKey = "sk-real-key-held-by-the-proxy-timeline-0123"
	model := modeltest.NewAnthropic(t, realKey)
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Grow the service", User: "alice",
		Body: "Please:\n\n- [ ] Write the notes\n  - verify: `test -f fixed.txt`\n"})
	agent := filepath.Join(t.TempDir(), "agent.sh")
	mustWrite(t, agent, "#!/bin/sh\nset -e\n"+
		`curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' `+
		`-d '{"model":"house-model","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}' "$ANTHROPIC_BASE_URL/v1/messages" > /dev/null`+"\n"+
		"echo \"attempt $AKIRA_ATTEMPT\" > notes.txt\n"+
		"echo \"$AKIRA_TASK_TITLE\" > \"task-$AKIRA_TASK_ID.txt\"\n"+
		"if [ \"$AKIRA_ATTEMPT\" -gt 1 ]; then echo fixed > fixed.txt; fi\n")
	operator := fmt.Sprintf("default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh %s\n    api: anthropic\n"+
		"    base_url: %s\n    model: house-model\n    network: allow\n"+
		"prices:\n  house-model: {input_per_mtok: 2.5, output_per_mtok: 10}\nsandbox:\n  mode: none\nci:\n  watch: off\n", agent, model.BaseURL())
	env := serveEnvOf(t, fake, operator)
	env["AKIRA_CONCURRENCY"] = "1"
	setServeEnv(t, env)
	t.Setenv("ANTHROPIC_API_KEY", realKey)

	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(env["REDIS_URL"], "redis://"), "/0")})
	t.Cleanup(func() { rdb.Close() })
	token, err := store.NewStore(rdb, "").CreateToken(context.Background(), "reviewer", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := serveInProcess(ctx)
	base, admin := "http://"+env["AKIRA_ADDR"], "http://"+env["AKIRA_ADMIN_ADDR"]
	waitFor(t, "akira serve to be ready", func() bool {
		select {
		case res := <-done:
			t.Fatalf("serve ended early: exit %d: %v", res.code, res.err)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	deliver(t, fake, base, "issue_comment", "timeline-1", commentPayload(fake, issue, "alice", "/akira run"))
	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the pull request to be marked ready", func() bool {
		return slices.ContainsFunc(fake.PullRequests("octo", "svc"), func(pr githubtest.PullRequest) bool { return pr.Head == branch && !pr.Draft })
	})

	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(data)
	}
	code, body := get("/api/v1/runs")
	var runs struct{ Runs []struct{ ID string } }
	if err := json.Unmarshal([]byte(body), &runs); code != http.StatusOK || err != nil || len(runs.Runs) != 1 {
		t.Fatalf("GET /api/v1/runs: %d %s (%v)", code, body, err)
	}
	runID := runs.Runs[0].ID

	// Each attempt's events, in order, with what the attempt had cost by each.
	callUSD := float64(model.Usage.Input)*2.5/1e6 + float64(model.Usage.Output)*10/1e6
	type seen struct {
		kinds []string
		files []string
		cmd   *attempt.Command
		call  *attempt.ModelCall
		end   *attempt.End
	}
	read := func(n int) seen {
		t.Helper()
		code, body := get(fmt.Sprintf("/api/v1/runs/%s/tasks/1.1/attempts/%d/events", runID, n))
		if code != http.StatusOK {
			t.Fatalf("events of attempt %d: %d %s", n, code, body)
		}
		var s seen
		for i, line := range strings.Split(strings.TrimSpace(body), "\n") {
			var ev attempt.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("attempt %d, line %d: %v: %q", n, i+1, err, line)
			}
			if ev.Seq != i+1 || ev.RunID != runID || ev.TaskID != "1.1" || ev.Attempt != n {
				t.Errorf("attempt %d, line %d: seq %d of run %s task %s attempt %d", n, i+1, ev.Seq, ev.RunID, ev.TaskID, ev.Attempt)
			}
			s.kinds = append(s.kinds, string(ev.Kind))
			switch {
			case ev.Call != nil:
				s.call = ev.Call
				if math.Abs(ev.CostUSD-callUSD) > 1e-12 {
					t.Errorf("attempt %d: cost so far after the call $%v, want $%v", n, ev.CostUSD, callUSD)
				}
			case ev.File != nil:
				s.files = append(s.files, ev.File.Path)
			case ev.Command != nil:
				s.cmd = ev.Command
			case ev.End != nil:
				s.end = ev.End
			}
		}
		return s
	}
	first, second := read(1), read(2)
	wantKinds := func(n int, s seen, files int) {
		t.Helper()
		want := []string{"attempt_started", "model_call", "agent_finished"}
		for range files {
			want = append(want, "file_changed")
		}
		want = append(want, "verify", "attempt_ended")
		if !slices.Equal(s.kinds, want) {
			t.Errorf("attempt %d's events: %v, want %v", n, s.kinds, want)
		}
	}
	wantKinds(1, first, 2)
	wantKinds(2, second, 3)
	slices.Sort(first.files)
	if !slices.Equal(first.files, []string{"notes.txt", "task-1.1.txt"}) {
		t.Errorf("attempt 1 changed %v, want notes.txt and task-1.1.txt", first.files)
	}
	for n, s := range map[int]seen{1: first, 2: second} {
		if s.call == nil || s.call.Model != "house-model" || s.call.Source != attempt.SourceProxy || s.call.InputTokens != model.Usage.Input ||
			s.call.OutputTokens != model.Usage.Output || math.Abs(s.call.CostUSD-callUSD) > 1e-12 {
			t.Errorf("attempt %d's model call: %+v, want house-model's %d+%d tokens at $%v", n, s.call, model.Usage.Input, model.Usage.Output, callUSD)
		}
		if s.end == nil || math.Abs(s.end.CostUSD-callUSD) > 1e-12 {
			t.Errorf("attempt %d's end: %+v, want it to cost $%v", n, s.end, callUSD)
		}
	}
	if c := first.cmd; c == nil || c.Command != "test -f fixed.txt" || c.Passed || c.ExitCode != 1 {
		t.Errorf("attempt 1's verification: %+v, want test -f fixed.txt failing with exit 1", c)
	}
	if c := second.cmd; c == nil || !c.Passed || c.ExitCode != 0 {
		t.Errorf("attempt 2's verification: %+v, want it passing", c)
	}
	if first.end != nil && first.end.Result != attempt.ResultFailed || second.end != nil && second.end.Result != attempt.ResultCheckpointed {
		t.Errorf("attempts ended %+v and %+v, want failed then checkpointed", first.end, second.end)
	}
	if code, _ := get(fmt.Sprintf("/api/v1/runs/%s/tasks/1.1/attempts/3/events", runID)); code != http.StatusNotFound {
		t.Errorf("an attempt never made: %d, want 404", code)
	}

	// The same timeline on the dashboard, as a reviewer reads it.
	browser := browsertest.New(t)
	bctx, bcancel := context.WithTimeout(browser, 3*waitLimit/4)
	defer bcancel()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(admin+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#runs")),
		chromedp.Navigate(admin+"/ui/runs/"+runID+"/tasks/1.1"), chromedp.WaitVisible(chromedp.CSS("#attempt-2")),
		chromedp.Click(chromedp.CSS("#attempt-1 summary")),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	page, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatalf("browser: the task page's text: %v", err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	artifacts := os.Getenv("AKIRA_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifacts, "dashboard-timeline.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the task page's timeline: %s", filepath.Join(artifacts, "dashboard-timeline.png"))
	for _, want := range []string{"Attempt 1: failed", "Attempt 2: checkpointed", "model call", "house-model",
		fmt.Sprintf("%d in / %d out tokens", model.Usage.Input, model.Usage.Output), "notes.txt", "task-1.1.txt",
		"verify failed", "$ test -f fixed.txt → exit 1", "verify passed", "cost so far"} {
		if !strings.Contains(page, want) {
			t.Errorf("the task page lacks %q:\n%s", want, page)
		}
	}
	cancel()
	<-done
}
