package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

const roadmapV1 = "# Roadmap\n\n## Phase 1\n\n- [x] 1.1: Set up\n"

const roadmapV2 = roadmapV1 + "- [ ] 1.2: Add a parser\n- [ ] 1.3: Add a printer\n"

// TestPushToDefaultBranch is flow 3: a push to the default branch that adds unchecked tasks to the
// roadmap runs them on akira/roadmap, with a pull request.
func TestPushToDefaultBranch(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": roadmapV1})
	before := e.gh.Branch(e.owner, e.repo, "main")
	after := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "main", Message: "Plan the parser",
		Files: map[string]string{"ROADMAP.md": roadmapV2}})
	e.deliver("push", "push-1", map[string]any{
		"ref": "refs/heads/main", "before": before, "after": after, "installation": e.installation(),
		"repository": e.repository(), "sender": user("alice"), "pusher": map[string]any{"name": "alice"},
		"commits":     []map[string]any{{"id": after, "added": []string{}, "modified": []string{"ROADMAP.md"}}},
		"head_commit": map[string]any{"id": after, "added": []string{}, "modified": []string{"ROADMAP.md"}},
	}, http.StatusAccepted)

	e.eventually("a pull request from akira/roadmap", func() bool {
		for _, pr := range e.gh.PullRequests(e.owner, e.repo) {
			if pr.Head == "akira/roadmap" {
				return true
			}
		}
		return false
	})
	pr := e.onlyPR("akira/roadmap")
	run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	pr = e.onlyPR("akira/roadmap")
	if run.Trigger != lifecycle.TriggerPush || pr.Base != "main" || pr.Draft {
		t.Errorf("run trigger %s, PR base %s draft %v", run.Trigger, pr.Base, pr.Draft)
	}
	if got := e.taskCommits("akira/roadmap"); len(got) != 2 || got["1.2"] != 1 || got["1.3"] != 1 {
		t.Errorf("checkpoints = %v, want 1.2 and 1.3 once each (1.1 was done)", got)
	}
	rm, _ := e.gh.FileAt(e.owner, e.repo, "akira/roadmap", "ROADMAP.md")
	if !strings.Contains(rm, "- [x] 1.2: Add a parser") || !strings.Contains(rm, "- [x] 1.3: Add a printer") {
		t.Errorf("roadmap on the branch:\n%s", rm)
	}
	if n := len(e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))); n != 1 {
		t.Errorf("%d summary comments", n)
	}
}

// TestPullRequestChangingRoadmap is flow 4: a pull request from the same repository that changes the
// roadmap gets its checkpoints pushed onto its own branch.
func TestPullRequestChangingRoadmap(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": roadmapV1})
	head := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "feature", From: "main", Message: "Plan",
		Files: map[string]string{"ROADMAP.md": roadmapV2}})
	pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "Plan the parser", User: "alice", Head: "feature", Base: "main"})
	repo := e.repository()
	e.deliver("pull_request", "pr-1", map[string]any{
		"action": "opened", "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user("alice"),
		"pull_request": map[string]any{"number": pr.Number, "user": user("alice"),
			"head": map[string]any{"ref": "feature", "sha": head, "repo": repo},
			"base": map[string]any{"ref": "main", "sha": e.gh.Branch(e.owner, e.repo, "main"), "repo": repo}},
	}, http.StatusAccepted)

	run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if run.Branch != "feature" || run.PR != pr.Number {
		t.Fatalf("run on %s for #%d", run.Branch, run.PR)
	}
	if got := e.taskCommits("feature"); len(got) != 2 || got["1.2"] != 1 || got["1.3"] != 1 {
		t.Errorf("checkpoints on the PR branch = %v", got)
	}
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 1 {
		t.Errorf("%d pull requests, want only the author's", n)
	}
	if n := len(e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))); n != 1 {
		t.Errorf("%d summary comments on the PR", n)
	}
}
