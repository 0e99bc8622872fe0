package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

// parkedIssueRun starts a run on a new issue whose second task (flaky) fails every attempt, and waits for
// it to park.
func (e *env) parkedIssueRun(title string) (*lifecycle.Run, githubtest.PullRequest) {
	e.t.Helper()
	is := e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Title: title, User: "alice",
		Body: "- [ ] Add a stable thing\n- [ ] Add a flaky thing\n- [ ] Add a last thing\n  - depends: 1.2\n"})
	number := is.Number
	e.comment(number, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(number, lifecycle.StatusParked)
	pr := e.onlyPR(run.Branch)
	return run, pr
}

// TestEscalation is flow 2: a task that fails its attempts is escalated once (check run action_required
// with buttons, one comment); a reply from someone without write access changes nothing; retry with
// guidance from a collaborator continues, and the guidance reaches the agent.
func TestEscalation(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	run, pr := e.parkedIssueRun("Flaky")

	if len(run.Parked) != 1 || run.Parked[0].TaskID != "1.2" {
		t.Fatalf("parked = %+v, want task 1.2", run.Parked)
	}
	cr := e.latestCheckRuns()["akira: 1.2 Add a flaky thing"]
	if cr.Conclusion != "action_required" || len(cr.Actions) != 3 {
		t.Errorf("check run of the flaky task: conclusion %q actions %+v", cr.Conclusion, cr.Actions)
	}
	if got := e.latestCheckRuns()["akira: 1.3 Add a last thing"]; got.ID != 0 {
		t.Errorf("a blocked task got a check run: %+v", got)
	}
	esc := e.commentsWith(pr.Number, templates.EscalationMarker(run.ID, "1.2"))
	if len(esc) != 1 || !strings.Contains(esc[0].Body, "/akira retry") {
		t.Fatalf("escalation comments: %+v", esc)
	}
	// GitHub notifies whoever is @-mentioned: the person who started the run.
	if !strings.Contains(esc[0].Body, "@alice: this run waits for your answer") {
		t.Errorf("the escalation does not mention the person who started the run:\n%s", esc[0].Body)
	}
	if got := e.taskCommits(run.Branch); got["1.1"] != 1 || got["1.2"] != 0 {
		t.Errorf("checkpoints = %v", got)
	}

	// Someone with read access only: the intake refuses, once, and nothing changes.
	e.comment(pr.Number, "mallory", "/akira retry use the MAGIC-WORD", true, http.StatusAccepted)
	e.eventually("the refusal", func() bool { return len(e.commentsWith(pr.Number, "Sorry @mallory")) > 0 })
	if n := len(e.commentsWith(pr.Number, "Sorry @mallory")); n != 1 {
		t.Fatalf("%d refusals", n)
	}
	if r := e.runOf(pr.Number); r.Status != lifecycle.StatusParked || len(r.Decisions) != 0 {
		t.Fatalf("after a reply without write access: status %s decisions %v", r.Status, r.Decisions)
	}

	// A collaborator's retry with guidance.
	e.comment(pr.Number, "alice", "/akira retry\nUse the MAGIC-WORD this time.", true, http.StatusAccepted)
	run = e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if got := e.taskCommits(run.Branch); got["1.1"] != 1 || got["1.2"] != 1 || got["1.3"] != 1 {
		t.Errorf("checkpoints after retry = %v, want one per task", got)
	}
	if !promptMentions(t, e.logDir, "1.2", "Use the MAGIC-WORD this time.") {
		t.Error("the guidance never reached the agent's prompt")
	}
	if cr := e.latestCheckRuns()["akira: 1.2 Add a flaky thing"]; cr.Conclusion != "success" {
		t.Errorf("check run of the retried task: %q", cr.Conclusion)
	}
	if got := e.onlyPR(run.Branch); got.Draft {
		t.Error("the pull request is still a draft")
	}
	if n := len(e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))); n != 1 {
		t.Errorf("%d summary comments", n)
	}
	if n := len(e.commentsWith(pr.Number, templates.EscalationMarker(run.ID, "1.2"))); n != 1 {
		t.Errorf("%d escalation comments, want the one", n)
	}
}

// promptMentions reports whether some prompt the agent got for the task contains s.
func promptMentions(t *testing.T, dir, task, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "prompt-"+task+"-*.md"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		must(t, err)
		if strings.Contains(string(data), s) {
			return true
		}
	}
	return false
}

// TestDecisions covers approve, skip and abort, and a decision refused because the branch moved.
func TestDecisions(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})

	t.Run("skip", func(t *testing.T) {
		e := e.sub(t)
		_, pr := e.parkedIssueRun("Issue 1")
		e.comment(pr.Number, "alice", "/akira skip", true, http.StatusAccepted)
		run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
		if s := run.Task("1.2").Status; s != lifecycle.TaskStatusSkipped {
			t.Errorf("skipped task status %q", s)
		}
		if cr := e.latestCheckRuns()["akira: 1.2 Add a flaky thing"]; cr.Conclusion != "neutral" {
			t.Errorf("check run of the skipped task: %q", cr.Conclusion)
		}
		if got := e.taskCommits(run.Branch); got["1.2"] != 0 || got["1.3"] != 0 {
			t.Errorf("checkpoints after skip = %v: neither the skipped task nor its dependent may be committed", got)
		}
	})

	t.Run("approve button", func(t *testing.T) {
		e := e.sub(t)
		_, pr := e.parkedIssueRun("Issue 2")
		cr := e.latestCheckRuns()["akira: 1.2 Add a flaky thing"]
		e.deliver("check_run", "button-1", map[string]any{
			"action": "requested_action", "installation": e.installation(), "repository": e.repository(), "sender": user("alice"),
			"check_run": map[string]any{"id": cr.ID, "external_id": cr.ExternalID, "head_sha": cr.HeadSHA,
				"app": map[string]any{"id": e.gh.AppID()}, "pull_requests": []map[string]any{{"number": pr.Number}}},
			"requested_action": map[string]any{"identifier": "approve"},
		}, http.StatusAccepted)
		run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
		if got := e.taskCommits(run.Branch); got["1.1"] != 1 || got["1.2"] != 1 || got["1.3"] != 1 {
			t.Errorf("checkpoints after approve = %v, want one per task", got)
		}
	})

	t.Run("abort", func(t *testing.T) {
		e := e.sub(t)
		_, pr := e.parkedIssueRun("Issue 3")
		e.comment(pr.Number, "alice", "/akira abort", true, http.StatusAccepted)
		run := e.waitStatus(pr.Number, lifecycle.StatusAborted)
		if run.AbortedBy != "alice" {
			t.Errorf("aborted by %q", run.AbortedBy)
		}
		e.eventually("the escalated check run to be cancelled", func() bool {
			return e.latestCheckRuns()["akira: 1.2 Add a flaky thing"].Conclusion == "cancelled"
		})
		if got := e.onlyPR(run.Branch); !got.Draft {
			t.Error("an aborted run's pull request was marked ready")
		}
	})

	t.Run("branch moved", func(t *testing.T) {
		e := e.sub(t)
		run, pr := e.parkedIssueRun("Issue 4")
		e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: run.Branch, Files: map[string]string{"human.txt": "mine\n"}})
		e.comment(pr.Number, "alice", "/akira approve", true, http.StatusAccepted)
		e.eventually("a reply saying why nothing happened", func() bool {
			return len(e.commentsWith(pr.Number, "did nothing")) == 1
		})
		if r := e.runOf(pr.Number); r.Status != lifecycle.StatusParked || len(r.Parked) != 1 {
			t.Errorf("after a refused decision: status %s parked %+v", r.Status, r.Parked)
		}
		if reply := e.commentsWith(pr.Number, "did nothing")[0].Body; !strings.Contains(reply, "moved") {
			t.Errorf("reply: %s", reply)
		}
	})
}
