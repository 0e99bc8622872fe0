package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/egress"
)

// TestBlockedDestinationsShown: what the egress proxy refused an attempt's agent and verification is
// kept with the task (counted once per attempt, who and destination) and shown in the task's check
// run and the run's summary, each with the line that would allow it.
func TestBlockedDestinationsShown(t *testing.T) {
	ctx := context.Background()
	jh := newJobsHarness(t)
	run := crashFixture(t, jh, lifecycle.StatusRunning)
	rep := publish.NewReporter(jh.gh, jh.store, nil, nil, run)
	first := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	refused := []egress.Blocked{{Host: "evil.example", Port: 443, Count: 2, First: first, Reason: "not on the allowlist"},
		{Host: "169.254.169.254", Port: 80, Count: 1, First: first, Reason: "link-local address"}}
	for _, ev := range []runner.Event{
		{Type: runner.EventAgentFinished, TaskID: "1.1", Attempt: 1, Blocked: refused},
		{Type: runner.EventAgentFinished, TaskID: "1.1", Attempt: 1, Blocked: []egress.Blocked{{Host: "evil.example", Port: 443, Count: 5, First: first, Reason: "not on the allowlist"}}},
		{Type: runner.EventVerifyFinished, TaskID: "1.1", Attempt: 1, Blocked: []egress.Blocked{{Host: "proxy.golang.org", Port: 443, Count: 1, First: first, Reason: "not on the allowlist"}}},
		{Type: runner.EventAttemptFailed, TaskID: "1.1", Attempt: 1, Message: "go test failed"},
	} {
		if err := rep.Report(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	tk := rep.Run().Task("1.1")
	if len(tk.Blocked) != 3 || tk.Blocked[0].Count != 5 || tk.Blocked[2].Who != "verification" {
		t.Fatalf("blocked = %+v", tk.Blocked)
	}
	text := jh.gh.CheckRuns[tk.CheckRunID].Text
	for _, want := range []string{"evil.example:443", "169.254.169.254:80", "attempt 1, verification", tk.Blocked[0].Allow} {
		if !strings.Contains(text, want) {
			t.Errorf("the check run's text lacks %q:\n%s", want, text)
		}
	}
	if err := jh.h.pub.Perform(ctx, jh.gh, rep.Run(), lifecycle.Effect{Kind: lifecycle.EffectSummary}); err != nil {
		t.Fatal(err)
	}
	if sum := jh.gh.CommentsOn(7); len(sum) != 1 || !strings.Contains(sum[0], "Network: 3 destinations refused (7 requests)") {
		t.Fatalf("summary = %v", sum)
	}
}

// Calls the model route refused are kept one per method and path, not folded into their host, and
// the check run names each call and the profile setting that would allow it.
func TestRefusedModelCallsShown(t *testing.T) {
	ctx := context.Background()
	jh := newJobsHarness(t)
	run := crashFixture(t, jh, lifecycle.StatusRunning)
	rep := publish.NewReporter(jh.gh, jh.store, nil, nil, run)
	first := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	refused := []egress.Blocked{
		{Host: "api.openai.com", Port: 443, Method: "POST", Path: "/images/generations", Count: 3, First: first, Reason: egress.ReasonUnmetered},
		{Host: "api.openai.com", Port: 443, Method: "GET", Path: "/files", Count: 1, First: first, Reason: egress.ReasonUnmetered},
	}
	for _, ev := range []runner.Event{
		{Type: runner.EventAgentFinished, TaskID: "1.1", Attempt: 1, Blocked: refused},
		{Type: runner.EventAttemptFailed, TaskID: "1.1", Attempt: 1, Message: "no image"},
	} {
		if err := rep.Report(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	tk := rep.Run().Task("1.1")
	if len(tk.Blocked) != 2 || tk.Blocked[0].Path != "/images/generations" || tk.Blocked[1].Method != "GET" || tk.Blocked[1].Path != "/files" {
		t.Fatalf("blocked = %+v", tk.Blocked)
	}
	text := jh.gh.CheckRuns[tk.CheckRunID].Text
	for _, want := range []string{"`api.openai.com:443 POST /images/generations` | 3", "`api.openai.com:443 GET /files` | 1",
		`api_paths: ["POST /images/generations"] in the agent's profile`} {
		if !strings.Contains(text, want) {
			t.Errorf("the check run's text lacks %q:\n%s", want, text)
		}
	}
}
