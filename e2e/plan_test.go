package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

// TestProseIssue: `/akira run` on an issue written in prose asks the agent for a plan and posts it,
// opening no pull request; the next `/akira run` runs the plan as posted.
func TestProseIssue(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Login", User: "alice",
		Body: "We need a login form that posts to a handler. Thanks!"})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("the plan comment", func() bool { return len(e.commentsWith(1, templates.PlanMarker(1))) == 1 })
	plan := e.commentsWith(1, templates.PlanMarker(1))[0].Body
	for _, want := range []string{"- [ ] 1 Add the form", "- [ ] 2 Add the handler", "`/akira run`", "`/akira plan <guidance>`", "@alice"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan comment lacks %q:\n%s", want, plan)
		}
	}
	e.queueIdle()
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 0 || e.runOf(1) != nil {
		t.Fatalf("%d pull requests and run %v before anyone accepted the plan", n, e.runOf(1))
	}

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if !run.PlanFromComment || run.Source != "the plan for issue #1" {
		t.Errorf("run source %q, plan from comment %v", run.Source, run.PlanFromComment)
	}
	if got := e.taskCommits(run.Branch); len(got) != 2 || got["1"] != 1 || got["2"] != 1 {
		t.Errorf("checkpoints = %v, want the plan's two tasks once each", got)
	}
	e.onlyPR(run.Branch)
	if n := len(e.commentsWith(1, templates.PlanMarker(1))); n != 1 {
		t.Errorf("%d plan comments, want 1", n)
	}
}

// TestProseIssuePlanAuto: with `plan: auto`, the plan runs as soon as it is posted (the issue's author
// has write access).
func TestProseIssuePlanAuto(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "plan: auto\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Login", User: "alice", Body: "A login form, please."})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if got := e.taskCommits(run.Branch); len(got) != 2 {
		t.Errorf("checkpoints = %v, want the plan's two tasks", got)
	}
	if plan := e.commentsWith(1, templates.PlanMarker(1)); len(plan) != 1 || !strings.Contains(plan[0].Body, "the run starts now") {
		t.Errorf("plan comments: %+v", plan)
	}
}

// TestProseIssueUnparsablePlan: an agent that answers with no plan is asked once more with what was
// wrong, then the issue gets a reply saying how to go on; no pull request, no run.
func TestProseIssueUnparsablePlan(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Vague", User: "alice", Body: "Make it better. UNPARSABLE"})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("the reply", func() bool { return len(e.commentsWith(1, "could not write a plan")) == 1 })
	reply := e.commentsWith(1, "could not write a plan")[0].Body
	if !strings.Contains(reply, "no task checkboxes") || !strings.Contains(reply, "/akira plan <guidance>") {
		t.Errorf("reply:\n%s", reply)
	}
	if n := e.agentCalls("plan"); n != 2 {
		t.Errorf("the agent was asked for a plan %d times, want 2 (once more with the parse error)", n)
	}
	e.queueIdle()
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 0 || e.runOf(1) != nil {
		t.Errorf("%d pull requests and run %v for an issue without a plan", n, e.runOf(1))
	}
}

// TestUnreadChecklistNormalized: an issue whose checklist no format reads (a dependency on a task
// that is not there) gets a rewrite by the planner agent, posted beside the lines each task came
// from; a plain `/akira run` then runs nothing and says how to confirm; `/akira run --confirm` runs it.
func TestUnreadChecklistNormalized(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Login", User: "alice",
		Body: "- [ ] T1 Add the form (depends: T9)\n- [ ] T2 Add the handler after the form\n"})

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("the proposed plan", func() bool { return len(e.commentsWith(1, templates.NormalizedMarker)) == 1 })
	proposal := e.commentsWith(1, templates.NormalizedMarker)[0].Body
	for _, want := range []string{"unknown task", "- [ ] 2 Add the handler (depends: 1)", "line 1: - [ ] T1 Add the form (depends: T9)",
		"line 2: - [ ] T2 Add the handler after the form", "`/akira run --confirm`"} {
		if !strings.Contains(proposal, want) {
			t.Errorf("the proposed plan lacks %q:\n%s", want, proposal)
		}
	}
	e.queueIdle()
	if e.runOf(1) != nil {
		t.Fatal("a run started before anyone confirmed the proposed plan")
	}

	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.eventually("the answer to a plain /akira run", func() bool { return len(e.commentsWith(1, "did not start")) == 1 })
	e.queueIdle()
	if e.runOf(1) != nil {
		t.Fatal("a plain /akira run ran the proposed plan")
	}

	e.comment(1, "alice", "/akira run --confirm", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	if got := e.taskCommits(run.Branch); len(got) != 2 || got["1"] != 1 || got["2"] != 1 || !run.PlanFromComment {
		t.Errorf("checkpoints = %v (plan from comment %v), want the proposed plan's two tasks once each", got, run.PlanFromComment)
	}
}
