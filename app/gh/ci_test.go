package gh_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/ports"
)

// TestCIChecksAndEvidence: a commit's checks from every source but Akira's own, each failure explained
// (an Actions job by its log, read without the App's token; another app's check run by its output and
// annotations; a status by its description), required checks from branch protection, and a re-run of
// a workflow's failed jobs; every request conforms to GitHub's description.
func TestCIChecksAndEvidence(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	sha := e.srv.Branch(owner, repo, "main")
	if _, _, err := e.c.CreateCheckRun(ctx, owner, repo, ports.CheckRun{Name: "akira: 1.1 one", HeadSHA: sha, Status: ports.CheckInProgress,
		ExternalID: "r/1.1", Title: "Running", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	wr := e.srv.AddWorkflowRun(owner, repo, githubtest.WorkflowRun{Name: "CI", HeadSHA: sha, HeadBranch: "main", Jobs: []githubtest.WorkflowJob{
		{Name: "lint", Conclusion: "success", Log: "ok\n"},
		{Name: "test (ubuntu)", Conclusion: "failure", Log: "##[group]Run go test\n--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\n##[error]Process completed with exit code 1.\n"},
	}})
	e.srv.AddForeignCheckRun(owner, repo, githubtest.ForeignCheckRun{App: githubtest.CIApp{ID: 77, Slug: "circleci", Name: "CircleCI"},
		Name: "build", HeadSHA: sha, Conclusion: "failure", Title: "Build failed", Summary: "make: *** [all] Error 2",
		Annotations: []githubtest.Annotation{{Path: "main.go", StartLine: 3, EndLine: 3, AnnotationLevel: "failure", Message: "undefined: x"}}})
	e.srv.AddStatus(owner, repo, githubtest.Status{SHA: sha, Context: "ci/jenkins", State: "pending", Description: "running"})
	e.srv.AddStatus(owner, repo, githubtest.Status{SHA: sha, Context: "ci/jenkins", State: "error", Description: "2 tests failed", TargetURL: "https://ci.example/7"})

	checks, err := e.c.CIChecks(ctx, owner, repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ports.CICheck{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	if len(checks) != 4 || byName["akira: 1.1 one"].Name != "" {
		t.Fatalf("checks = %+v (Akira's own must not be among them)", checks)
	}
	if c := byName["test (ubuntu)"]; c.App != ports.CIAppActions || c.ID != wr.Jobs[1].ID || !c.Failed() {
		t.Errorf("actions job = %+v", c)
	}
	if c := byName["lint"]; c.Failed() || !c.Done() {
		t.Errorf("lint = %+v", c)
	}
	if c := byName["ci/jenkins"]; c.Source != ports.CISourceStatus || c.Conclusion != "error" || !c.Failed() {
		t.Errorf("status = %+v (the latest state of a context counts)", c)
	}

	log, err := e.c.CIEvidence(ctx, owner, repo, byName["test (ubuntu)"])
	if err != nil || !strings.Contains(log, "add_test.go:9: got 3, want 4") {
		t.Fatalf("job log = %q, %v", log, err)
	}
	for _, r := range e.srv.Requests() {
		if strings.Contains(r.Path, "_job-logs") {
			t.Fatal("the log's storage address must not be reached through the API client")
		}
	}
	out, err := e.c.CIEvidence(ctx, owner, repo, byName["build"])
	if err != nil || !strings.Contains(out, "Build failed") || !strings.Contains(out, "main.go:3: failure: undefined: x") {
		t.Fatalf("check run evidence = %q, %v", out, err)
	}
	st, err := e.c.CIEvidence(ctx, owner, repo, byName["ci/jenkins"])
	if err != nil || !strings.Contains(st, "2 tests failed") || !strings.Contains(st, "https://ci.example/7") {
		t.Fatalf("status evidence = %q, %v", st, err)
	}
	if _, err := e.c.CIEvidence(ctx, owner, repo, ports.CICheck{Name: "gone", Source: ports.CISourceCheckRun, ID: 999999}); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Errorf("evidence of a missing check run: %v", err)
	}

	if err := e.c.RerunFailedJobs(ctx, owner, repo, wr.Jobs[1].ID); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.srv.WorkflowRunByID(wr.ID); after.RerunRequests != 1 {
		t.Errorf("re-runs = %d", after.RerunRequests)
	}

	if req, err := e.c.RequiredChecks(ctx, owner, repo, "main"); err != nil || len(req) != 0 {
		t.Fatalf("required of an unprotected branch = %v, %v", req, err)
	}
	e.srv.SetRequiredChecks(owner, repo, "main", "test (ubuntu)", "ci/jenkins")
	if req, err := e.c.RequiredChecks(ctx, owner, repo, "main"); err != nil || !slices.Equal(req, []string{"test (ubuntu)", "ci/jenkins"}) {
		t.Fatalf("required = %v, %v", req, err)
	}
	// A ruleset adds its own; a check both require is named once.
	e.srv.SetRulesetChecks(owner, repo, "main", "ci/jenkins", "lint")
	if req, err := e.c.RequiredChecks(ctx, owner, repo, "main"); err != nil || !slices.Equal(req, []string{"test (ubuntu)", "ci/jenkins", "lint"}) {
		t.Fatalf("required with a ruleset = %v, %v", req, err)
	}
	// Branch protection closed to the App (403): the ruleset still counts; both closed is an error.
	e.srv.InjectFault(githubtest.Fault{Method: "GET", PathPattern: "/" + repo + "/branches/main", Status: http.StatusForbidden, Message: "Resource not accessible by integration", Times: 2})
	if req, err := e.c.RequiredChecks(ctx, owner, repo, "main"); err != nil || !slices.Equal(req, []string{"ci/jenkins", "lint"}) {
		t.Fatalf("required without protection = %v, %v", req, err)
	}
	e.srv.InjectFault(githubtest.Fault{Method: "GET", PathPattern: "/rules/branches/main", Status: http.StatusForbidden, Message: "Resource not accessible by integration", Times: 1})
	if req, err := e.c.RequiredChecks(ctx, owner, repo, "main"); err == nil {
		t.Fatalf("required with both closed = %v, want an error", req)
	}
	e.srv.ClearFaults()
	if p, ok := githubtest.OpenAPISubsetPath(); ok {
		githubtest.CheckRequestsAgainstOpenAPI(t, p, e.srv.Requests())
	}
}

// The workflows a repository has at a commit are the .yml and .yaml files directly in
// .github/workflows; a repository without the folder has none.
func TestWorkflowFiles(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "# hello\n"}, nil)
	ctx := context.Background()
	if got, err := e.c.WorkflowFiles(ctx, owner, repo, "main"); err != nil || len(got) != 0 {
		t.Fatalf("no workflows folder: %v, %v", got, err)
	}
	head := e.srv.PushCommit(owner, repo, githubtest.Push{Files: map[string]string{
		".github/workflows/ci.yml": "on: push\n", ".github/workflows/release.yaml": "on: push\n",
		".github/workflows/README.md": "notes\n", ".github/workflows/shared/lint.yml": "on: workflow_call\n",
	}})
	got, err := e.c.WorkflowFiles(ctx, owner, repo, head)
	if err != nil || !slices.Equal(got, []string{".github/workflows/ci.yml", ".github/workflows/release.yaml"}) {
		t.Errorf("workflows = %v, %v", got, err)
	}
}

// Whether the installation holds the workflows permission is what GitHub says of its token.
func TestWorkflowsGranted(t *testing.T) {
	ctx := context.Background()
	for _, granted := range []bool{false, true} {
		e := newEnv(t, nil, nil)
		e.srv.SetWorkflowsPermission(owner, granted) // before the client's first token
		if ok, err := e.c.WorkflowsGranted(ctx); err != nil || ok != granted {
			t.Errorf("granted %v: WorkflowsGranted = %v, %v", granted, ok, err)
		}
	}
}
