package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestAssignAndLabelStartRuns: assigning an issue to Akira's bot, and adding the `akira` label to
// another, each start exactly one run, also when GitHub delivers the event twice; a reader's label
// starts nothing but a refusal; removing the label stops nothing and says so.
func TestAssignAndLabelStartRuns(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Assigned", User: "alice", Body: "- [ ] Add one\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 2, Title: "Labelled", User: "alice", Body: "- [ ] Add two\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 3, Title: "By a reader", User: "rita", Body: "- [ ] Add three\n"})
	// Created now: issues and pull requests share their numbers, and the pull requests opened below take the next ones.
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 4, Title: "Slow", User: "alice", Body: "- [ ] Add a slow thing\n"})
	e.gh.SetPermission(e.owner, e.repo, "rita", "read")
	issues := func(number int, action, sender string, extra map[string]any) map[string]any {
		p := map[string]any{"action": action, "installation": e.installation(), "repository": e.repository(), "sender": user(sender),
			"issue": map[string]any{"number": number, "title": "x"}}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	bot := map[string]any{"assignee": map[string]any{"login": e.gh.BotLogin(), "type": "Bot"}}
	label := map[string]any{"label": map[string]any{"name": "akira"}}
	for range 2 { // GitHub delivers each twice
		e.deliver("issues", "assign-1", issues(1, "assigned", "alice", bot), http.StatusAccepted)
		e.deliver("issues", "label-2", issues(2, "labeled", "alice", label), http.StatusAccepted)
	}
	e.deliver("issues", "label-3", issues(3, "labeled", "rita", label), http.StatusAccepted)
	e.deliver("issues", "label-other", issues(3, "labeled", "alice", map[string]any{"label": map[string]any{"name": "bug"}}), http.StatusAccepted)

	for _, n := range []int{1, 2} {
		run := e.waitStatus(n, lifecycle.StatusSucceeded)
		if run.Sender != "alice" || run.Issue != n {
			t.Errorf("run of #%d = %+v", n, run)
		}
		if prs := e.gh.PullRequests(e.owner, e.repo); len(prs) != 2 && n == 2 {
			t.Errorf("pull requests = %d, want one per issue", len(prs))
		}
	}
	e.eventually("the reader's refusal", func() bool { return len(e.commentsWith(3, "write")) == 1 })
	if e.runOf(3) != nil {
		t.Fatal("a reader's label started a run")
	}
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 2 {
		t.Fatalf("%d pull requests, want 2", n)
	}
	// The audit says who started each run and through what; the reader's label is there, refused.
	audit, err := e.store.AuditLog(context.Background(), 50)
	must(t, err)
	seen := map[string]string{}
	for _, a := range audit {
		if a.Action == "run" {
			seen[a.Target+" "+a.Via+" "+a.Actor] = a.Result
		}
	}
	for key, want := range map[string]string{"#1 assignment alice": "accepted", "#2 label alice": "accepted", "#3 label rita": "refused: rita has read access"} {
		if got, ok := seen[key]; !ok || !strings.HasPrefix(got, want) {
			t.Errorf("audit of %s: %q (%v); want %q", key, got, ok, want)
		}
	}

	// Taking the label back while the run waits says how to stop it.
	e.deliver("issues", "label-4", issues(4, "labeled", "alice", label), http.StatusAccepted)
	e.waitStatus(4, lifecycle.StatusRunning)
	e.deliver("issues", "unlabel-4", issues(4, "unlabeled", "alice", label), http.StatusAccepted)
	e.eventually("the reply to the label taken back", func() bool { return len(e.commentsWith(4, "/akira stop")) == 1 })
	e.touch("release")
	e.waitStatus(4, lifecycle.StatusSucceeded)
	if c := e.commentsWith(4, "does not stop"); len(c) != 1 || !strings.Contains(c[0].Body, "`akira`") {
		t.Errorf("reply = %+v", c)
	}
}
