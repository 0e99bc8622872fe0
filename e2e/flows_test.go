package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/templates"
)

// TestIssueRun is flow 1: `/akira run` on an issue whose body holds the tasks, delivered twice, then
// `/akira status`.
func TestIssueRun(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Greet the world", User: "alice",
		Body: "We need greetings.\n\n- [ ] Add hello\n- [ ] Add goodbye\n"})

	c := e.gh.AddComment(e.owner, e.repo, 1, "alice", "/akira run")
	payload := map[string]any{
		"action": "created", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
		"issue": map[string]any{"number": 1}, "comment": map[string]any{"id": c.ID, "body": "/akira run", "user": user("alice")},
	}
	e.deliver("issue_comment", "delivery-1", payload, http.StatusAccepted)
	// GitHub redelivers: the same delivery id must not start a second run.
	e.deliver("issue_comment", "delivery-1", payload, http.StatusAccepted)

	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if run.ID != queue.RunIDFor("delivery-1") || run.Branch != "akira/issue-1" {
		t.Fatalf("run %s on %s", run.ID, run.Branch)
	}
	// One clone per run: the start commit, the pull request and every checkpoint come from the one
	// workspace. Each git command that talks to the fake opens with GET info/refs: the workspace's
	// clone and its fetch of parked work read; the start commit and the two checkpoints push.
	reads, pushes := 0, 0
	for _, r := range e.gh.Requests() {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.Path, "/info/refs") {
			continue
		}
		switch r.Query.Get("service") {
		case "git-upload-pack":
			reads++
		case "git-receive-pack":
			pushes++
		}
	}
	if reads != 2 || pushes != 3 {
		t.Errorf("git served %d reads and %d pushes for the run, want 2 (one clone, its parked-work fetch) and 3", reads, pushes)
	}
	cm, _ := e.gh.Comment(c.ID)
	if !hasReaction(cm, "eyes") {
		t.Errorf("the /akira run comment has no 👀 reaction: %+v", cm.Reactions)
	}
	pr := e.onlyPR("akira/issue-1")
	if pr.Title != "Greet the world" || !strings.Contains(pr.Body, "Closes #1") || pr.Draft {
		t.Errorf("pull request: title %q draft %v body:\n%s", pr.Title, pr.Draft, pr.Body)
	}
	// The body Akira opened the pull request with is kept current: finished, both boxes ticked.
	e.eventually("the pull request's body to say the run is finished", func() bool {
		b := e.onlyPR("akira/issue-1").Body
		return strings.Contains(b, "**✅ Finished: ready for review.**") && strings.Contains(b, "- [x] `1.1` Add hello") &&
			strings.Contains(b, "- [x] `1.2` Add goodbye") && !strings.Contains(b, "stays a draft")
	})
	// The body is sent when it changes only; its reads are conditional (a 304 costs no rate limit).
	patches, reads, unchanged := 0, 0, 0
	for _, r := range e.gh.Requests() {
		if !strings.HasSuffix(r.Path, "/pulls/"+strconv.Itoa(pr.Number)) {
			continue
		}
		switch {
		case r.Method == http.MethodPatch && strings.Contains(string(r.Body), `"body"`):
			patches++
		case r.Method == http.MethodGet:
			reads++
			if r.Status == http.StatusNotModified {
				unchanged++
			}
		}
	}
	t.Logf("the pull request's body: %d edits, %d reads (%d answered 304 Not Modified)", patches, reads, unchanged)
	if patches == 0 || patches > 4 {
		t.Errorf("the body was edited %d times for a run of two tasks: want once per change of what it shows (at most 4)", patches)
	}
	if got := e.taskCommits("akira/issue-1"); len(got) != 2 || got["1.1"] != 1 || got["1.2"] != 1 {
		t.Errorf("checkpoints per task = %v, want one each for 1.1 and 1.2", got)
	}
	runs := e.latestCheckRuns()
	for _, name := range []string{"akira: 1.1 Add hello", "akira: 1.2 Add goodbye"} {
		cr, ok := runs[name]
		if !ok || cr.Conclusion != "success" || cr.ExternalID != run.ID+"/"+strings.Fields(name)[1] {
			t.Errorf("check run %q = %+v", name, cr)
		}
	}
	sums := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))
	if len(sums) != 1 {
		t.Fatalf("%d summary comments on the PR, want 1", len(sums))
	}
	if sums[0].Edits == 0 || !strings.Contains(sums[0].Body, "All tasks are done") {
		t.Errorf("summary (edited %d times):\n%s", sums[0].Edits, sums[0].Body)
	}

	// /akira status on the issue answers with the run's progress.
	e.comment(1, "alice", "/akira status", false, http.StatusAccepted)
	e.eventually("the status reply", func() bool { return len(e.commentsWith(1, "Akira run `"+run.ID+"`")) > 0 })
	status := e.commentsWith(1, "Akira run `"+run.ID+"`")
	if len(status) != 1 || !strings.Contains(status[0].Body, "2 of 2 tasks done") {
		t.Errorf("status replies: %+v", status)
	}
}

func hasReaction(c githubtest.Comment, content string) bool {
	for _, r := range c.Reactions {
		if r.Content == content {
			return true
		}
	}
	return false
}

// onlyPR returns the one pull request from head.
func (e *env) onlyPR(head string) githubtest.PullRequest {
	e.t.Helper()
	var found []githubtest.PullRequest
	for _, pr := range e.gh.PullRequests(e.owner, e.repo) {
		if pr.Head == head {
			found = append(found, pr)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("%d pull requests from %s, want 1", len(found), head)
	}
	return found[0]
}

// TestSecondRunWhileActive: `/akira run` again while the issue's run works is answered, not started:
// never two writers on one branch.
func TestSecondRunWhileActive(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Twice", User: "alice", Body: "- [ ] Add a slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("the agent to start", func() bool {
		_, err := os.Stat(filepath.Join(e.logDir, "started-1.1"))
		return err == nil
	})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("a reply that a run is in progress", func() bool {
		return len(e.commentsWith(1, "already in progress")) == 1
	})
	must(t, os.WriteFile(filepath.Join(e.logDir, "release"), nil, 0o644))
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if got := e.taskCommits(run.Branch); got["1.1"] != 1 {
		t.Errorf("checkpoints = %v", got)
	}
	pr := e.onlyPR(run.Branch)
	if n := len(e.commentsWith(pr.Number, "<!-- akira:summary")); n != 1 {
		t.Errorf("%d summary comments, want 1", n)
	}
}
