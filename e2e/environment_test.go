package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/templates"
)

// TestRedBaseThroughGitHub: a repository whose base branch fails its repository-wide verify gets the
// health check's failure (check run and summary) and no agent call; `/akira run --allow-red-base`
// then runs the plan.
func TestRedBaseThroughGitHub(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{
		"README.md":         "# demo\n",
		"check.sh":          "echo 'FAIL: the build is broken'; exit 1\n",
		".github/akira.yml": "setup:\n  - echo preparing > prepared.txt\nverify: [\"sh check.sh\"]\n",
	})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Greet", User: "alice",
		Body: "- [ ] Add hello\n  - verify: test -f out-1.1.txt\n"})
	c := e.gh.AddComment(e.owner, e.repo, 1, "alice", "/akira run")
	e.deliver("issue_comment", "delivery-red", map[string]any{
		"action": "created", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
		"issue": map[string]any{"number": 1}, "comment": map[string]any{"id": c.ID, "body": "/akira run", "user": user("alice")},
	}, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusFailed)
	if _, err := os.Stat(filepath.Join(e.logDir, "calls")); !os.IsNotExist(err) {
		t.Fatalf("the agent was called on a red base (%v)", err)
	}
	if want := "the base branch fails `sh check.sh` before any change: FAIL: the build is broken"; !strings.Contains(run.Error, want) {
		t.Errorf("run error = %q, want %q", run.Error, want)
	}
	runs := e.latestCheckRuns()
	if cr, ok := runs["akira / base"]; !ok || cr.Conclusion != "failure" {
		t.Errorf("akira / base = %+v, want a failure", cr)
	}
	if cr, ok := runs["akira / setup"]; !ok || cr.Conclusion != "success" {
		t.Errorf("akira / setup = %+v, want a success", cr)
	}
	sums := e.commentsWith(run.PR, templates.SummaryMarker(run.ID))
	if len(sums) != 1 || !strings.Contains(sums[0].Body, "base branch ❌ fails `sh check.sh`") {
		t.Errorf("summary comments = %+v, want one with the base branch's line", sums)
	}

	c2 := e.gh.AddComment(e.owner, e.repo, 1, "alice", "/akira run --allow-red-base")
	e.deliver("issue_comment", "delivery-allowed", map[string]any{
		"action": "created", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
		"issue":   map[string]any{"number": 1},
		"comment": map[string]any{"id": c2.ID, "body": "/akira run --allow-red-base", "user": user("alice")},
	}, http.StatusAccepted)
	e.eventually("the allowed run to succeed", func() bool {
		r := e.runOf(1)
		return r != nil && r.ID == queue.RunIDFor("delivery-allowed") && r.Status == lifecycle.StatusSucceeded
	})
	if got := e.taskCommits("akira/issue-1"); got["1.1"] != 1 {
		t.Errorf("checkpoints = %v, want one for 1.1", got)
	}
	if cr := e.latestCheckRuns()["akira / base"]; cr.Conclusion != "neutral" {
		t.Errorf("akira / base after --allow-red-base = %+v, want neutral", cr)
	}
}
