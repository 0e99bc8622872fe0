package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// workflowTask is the task of the workflow tests, and its check run.
const (
	workflowPlan  = "- [ ] Add a lint workflow\n"
	workflowCheck = "akira: 1.1 Add a lint workflow"
	workflowFile  = ".github/workflows/lint.yml"
)

// TestWorkflowFilesThroughGitHub: a task that adds a workflow file is refused while the repository
// does not allow it (the attempts fail, the task escalates, its check run names the file, nothing of
// it reaches the branch); once the repository says `workflows: allow` on its default branch, with the
// operator's allow_workflows and the installation holding GitHub's workflows permission, /akira retry
// checkpoints it and the check run says which workflow files the task changed.
func TestWorkflowFilesThroughGitHub(t *testing.T) {
	e := newFilesEnv(t, "allow_workflows: true\n")
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "agent: files\n"})
	e.gh.SetWorkflowsPermission(e.owner, true)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Lint", User: "alice", Body: workflowPlan})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked, lifecycle.StatusSucceeded, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusParked {
		t.Fatalf("run is %s; want the workflow change refused and the task escalated", run.Status)
	}
	branch := run.Branch
	cr := e.latestCheckRuns()[workflowCheck]
	if cr.Conclusion != "action_required" || !strings.Contains(cr.Summary, "protected paths") || !strings.Contains(cr.Summary, workflowFile) {
		t.Fatalf("check run while refused: %s\n%s", cr.Conclusion, cr.Summary)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, branch, workflowFile); ok {
		t.Fatal("the refused workflow reached the branch")
	}

	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Message: "Let Akira change workflows",
		Files: map[string]string{".github/akira.yml": "agent: files\nworkflows: allow\n"}})
	pr := e.onlyPR(branch)
	jobs := run.Jobs
	e.comment(pr.Number, "alice", "/akira retry", true, http.StatusAccepted)
	e.eventually("the retry's job to end", func() bool {
		run = e.runOf(1)
		return run.Jobs > jobs && len(run.Outbox) == 0 && (run.Status == lifecycle.StatusSucceeded ||
			run.Status == lifecycle.StatusParked || run.Status == lifecycle.StatusFailed)
	})
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run after the repository allowed workflows is %s: %s", run.Status, run.Error)
	}
	if got, ok := e.gh.FileAt(e.owner, e.repo, branch, workflowFile); !ok || !strings.Contains(got, "make lint") {
		t.Fatalf("%s on the branch: %q, %v", workflowFile, got, ok)
	}
	if n := e.taskCommits(branch)["1.1"]; n != 1 {
		t.Errorf("%d checkpoints of 1.1, want 1", n)
	}
	cr = e.latestCheckRuns()[workflowCheck]
	if cr.Conclusion != "success" || !strings.Contains(cr.Summary, "Workflow files changed") || !strings.Contains(cr.Summary, "`"+workflowFile+"`") {
		t.Errorf("check run once allowed: %s\n%s", cr.Conclusion, cr.Summary)
	}
}

// TestWorkflowFilesNeedThePermission: the operator and the repository allow workflow changes, but the
// installation does not hold GitHub's workflows permission (the operator never ran akira setup
// --workflows, or the installation has not accepted it): the change is refused by Akira, in the
// attempt, where its check run says so, instead of by GitHub at the push.
func TestWorkflowFilesNeedThePermission(t *testing.T) {
	e := newFilesEnv(t, "allow_workflows: true\n")
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "agent: files\nworkflows: allow\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Lint", User: "alice", Body: workflowPlan})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked, lifecycle.StatusSucceeded, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusParked {
		t.Fatalf("run is %s (%s); want the change refused in the attempt and the task escalated", run.Status, run.Error)
	}
	cr := e.latestCheckRuns()[workflowCheck]
	if cr.Conclusion != "action_required" || !strings.Contains(cr.Summary, "protected paths") || !strings.Contains(cr.Summary, workflowFile) {
		t.Fatalf("check run: %s\n%s", cr.Conclusion, cr.Summary)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, run.Branch, workflowFile); ok {
		t.Fatal("the workflow reached the branch")
	}
}
