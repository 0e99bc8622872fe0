package githubtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

func specOrSkip(t *testing.T) string {
	t.Helper()
	p, ok := OpenAPISubsetPath()
	if !ok {
		t.Skip("no shared/fixtures/github/openapi/subset.json beside the repository")
	}
	return p
}

// Every route the fake serves is an operation of GitHub's description with the same method and operationId,
// and every operation of the subset is served.
func TestRoutesMatchOpenAPISubset(t *testing.T) {
	sp, err := loadSpec(specOrSkip(t))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, rt := range routes {
		key := rt.Method + " " + rt.Path
		served[key] = true
		var found *specOp
		for _, o := range sp.ops {
			if o.method == rt.Method && o.path == rt.Path {
				found = o
			}
		}
		if found == nil {
			t.Errorf("route %s is not in the OpenAPI subset", key)
			continue
		}
		if found.id != rt.OperationID {
			t.Errorf("route %s: operationId %q, spec says %q", key, rt.OperationID, found.id)
		}
		for name := range found.multi {
			if !multiSegment[name] {
				t.Errorf("route %s: parameter %q is multi-segment in the spec but not in the mux", key, name)
			}
		}
	}
	for _, o := range sp.ops {
		if !served[o.method+" "+o.path] {
			t.Errorf("operation %s %s (%s) is not served", o.method, o.path, o.id)
		}
	}
}

// A flow through every operation with the real clients; everything the fake received must conform.
func TestRequestsConformToOpenAPI(t *testing.T) {
	specPath := specOrSkip(t)
	s, repo := newRepoServer(t)
	ctx := context.Background()
	app := appClient(t, s)
	gh, _ := installationClient(t, s, repo.InstallationID)
	must := func(_ any, _ *github.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(app.Apps.Get(ctx, ""))
	must(app.Apps.FindRepositoryInstallation(ctx, "octo", "hello"))
	must(app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 10}))
	d := s.AddDelivery(Delivery{GUID: "g", Event: "ping"})
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, d.ID); err != nil {
		if _, ok := err.(*github.AcceptedError); !ok {
			t.Fatal(err)
		}
	}
	must(gh.Repositories.Get(ctx, "octo", "hello"))
	is := s.AddIssue("octo", "hello", Issue{Title: "i"})
	c, _, err := gh.Issues.CreateComment(ctx, "octo", "hello", is.Number, &github.IssueComment{Body: ptr("hi")})
	must(c, nil, err)
	must(gh.Issues.EditComment(ctx, "octo", "hello", c.GetID(), &github.IssueComment{Body: ptr("ho")}))
	must(gh.Issues.ListComments(ctx, "octo", "hello", is.Number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 5}}))
	must(gh.Issues.Get(ctx, "octo", "hello", is.Number))
	must(gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "hello", c.GetID(), "+1"))
	s.PushCommit("octo", "hello", Push{Branch: "feature/a", Files: map[string]string{"x": "y"}})
	pr, _, err := gh.PullRequests.Create(ctx, "octo", "hello", &github.NewPullRequest{Title: ptr("p"), Head: ptr("feature/a"), Base: ptr("main"), Draft: ptr(true)})
	must(pr, nil, err)
	must(gh.PullRequests.List(ctx, "octo", "hello", &github.PullRequestListOptions{Head: "octo:feature/a", State: "all", Base: "main"}))
	must(gh.PullRequests.Get(ctx, "octo", "hello", pr.GetNumber()))
	must(gh.PullRequests.Edit(ctx, "octo", "hello", pr.GetNumber(), &github.PullRequest{Body: ptr("b")}))
	must(gh.PullRequests.ListFiles(ctx, "octo", "hello", pr.GetNumber(), &github.ListOptions{PerPage: 100}))
	sha := s.Branch("octo", "hello", "feature/a")
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "octo", "hello", github.CreateCheckRunOptions{Name: "c", HeadSHA: sha,
		Status: ptr("in_progress"), Output: &github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s")}})
	must(cr, nil, err)
	must(gh.Checks.UpdateCheckRun(ctx, "octo", "hello", cr.GetID(), github.UpdateCheckRunOptions{Name: "c",
		Conclusion: ptr("failure"), Output: &github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s"), Annotations: annotations(2)},
		Actions: []*github.CheckRunAction{{Label: "Retry", Description: "again", Identifier: "retry"}}}))
	must(gh.Repositories.GetPermissionLevel(ctx, "octo", "hello", "alice"))
	f, _, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", "docs/guide/a.txt", &github.RepositoryContentGetOptions{Ref: "feature/a"})
	must(f, nil, err)
	must(gh.Git.GetRef(ctx, "octo", "hello", "heads/feature/a"))
	must(gh.Git.CreateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/b"), Object: &github.GitObject{SHA: ptr(sha)}}))
	must(gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "feature/a", nil))
	must(gh.Repositories.GetBranch(ctx, "octo", "hello", "feature/a", 1))
	must(gh.Checks.ListCheckRunsForRef(ctx, "octo", "hello", "feature/a", &github.ListCheckRunsOptions{CheckName: ptr("c")}))
	must(gh.Issues.GetComment(ctx, "octo", "hello", c.GetID()))
	if _, err := gh.Issues.DeleteComment(ctx, "octo", "hello", c.GetID()); err != nil {
		t.Fatal(err)
	}
	s.SetPermission("octo", "hello", "rev", "write")
	rv := s.AddReview("octo", "hello", pr.GetNumber(), Review{User: "rev", State: "CHANGES_REQUESTED", Body: "please",
		Comments: []ReviewComment{{Path: "x", Line: 1, Body: "here"}}})
	must(gh.PullRequests.ListReviews(ctx, "octo", "hello", pr.GetNumber(), nil))
	must(gh.PullRequests.ListReviewComments(ctx, "octo", "hello", pr.GetNumber(), rv.ID, nil))
	must(gh.PullRequests.ListComments(ctx, "octo", "hello", pr.GetNumber(), nil))
	// go-github v60 replies through POST …/pulls/{n}/comments with in_reply_to; GitHub's own reply route:
	req, err := gh.NewRequest("POST", fmt.Sprintf("repos/octo/hello/pulls/%d/comments/%d/replies", pr.GetNumber(), rv.Comments[0].ID),
		map[string]string{"body": "done"})
	must(nil, nil, err)
	reply := new(github.PullRequestComment)
	resp, err := gh.Do(ctx, req, reply)
	must(reply, resp, err)
	if reply.GetInReplyTo() != rv.Comments[0].ID || resp.StatusCode != 201 {
		t.Fatalf("reply = %+v, status %d", reply, resp.StatusCode)
	}
	must(gh.PullRequests.RequestReviewers(ctx, "octo", "hello", pr.GetNumber(), github.ReviewersRequest{Reviewers: []string{"rev"}}))
	s.AddManifestCode("abc123")
	conv, _, err := app.Apps.CompleteAppManifest(ctx, "abc123")
	must(conv, nil, err)
	ciFlow(t, s, gh, sha)
	gitFlow(t, s, gh)

	reqs := s.Requests()
	CheckRequestsAgainstOpenAPI(t, specPath, reqs)
	CheckResponsesAgainstOpenAPI(t, specPath, reqs, "git/create-blob", "git/create-tree", "git/create-commit",
		"git/get-commit", "git/update-ref", "repos/get-commit-signature-protection", "repos/get-branch-rules")
	CheckResponseFieldsAgainstOpenAPI(t, specPath, reqs, "pulls/get", "mergeable", "mergeable_state", "merge_commit_sha")
	CheckResponseFieldsAgainstOpenAPI(t, specPath, reqs, "repos/compare-commits", "status", "ahead_by", "behind_by",
		"total_commits", "merge_base_commit", "base_commit", "files", "url", "html_url", "permalink_url", "diff_url", "patch_url")

	sp, err := loadSpec(specPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		if o := sp.find(r.Method, r.Path); o != nil {
			seen[o.id] = true
		}
	}
	for _, rt := range routes {
		if !seen[rt.OperationID] {
			t.Errorf("the flow did not exercise %s", rt.OperationID)
		}
	}
}

// recordingTB collects what CheckRequestsAgainstOpenAPI reports instead of failing the test.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestCheckRequestsAgainstOpenAPIFindsMistakes(t *testing.T) {
	specPath := specOrSkip(t)
	req := func(method, path, query, body string, status int) Request {
		q, _ := url.ParseQuery(query)
		return Request{Method: method, Path: path, Query: q, Body: []byte(body), Status: status}
	}
	tests := []struct {
		name string
		req  Request
		want string // substring of the single expected complaint; "" for none
	}{
		{"good comment", req("POST", "/repos/o/r/issues/1/comments", "", `{"body":"x"}`, 201), ""},
		{"good compare with slashes", req("GET", "/repos/o/r/compare/main...feature/a/b", "", "", 200), ""},
		{"good contents of root", req("GET", "/repos/o/r/contents/", "ref=feature/x", "", 200), ""},
		{"good check run", req("POST", "/repos/o/r/check-runs", "", `{"name":"n","head_sha":"s","status":"completed","conclusion":"success","output":{"title":"t","summary":"s"}}`, 201), ""},
		{"git traffic is skipped", req("POST", "/o/r.git/git-receive-pack", "", "", 200), ""},
		{"failed request status is not checked", req("POST", "/repos/o/r/issues/1/comments", "", `{"body":"x"}`, 502), ""},
		{"unknown operation", req("DELETE", "/repos/o/r", "", "", 204), "no such operation"},
		{"missing required field", req("POST", "/repos/o/r/check-runs", "", `{"name":"n"}`, 201), `missing required field "head_sha"`},
		{"missing nested field", req("POST", "/repos/o/r/check-runs", "", `{"name":"n","head_sha":"s","output":{"title":"t"}}`, 201), `body.output: missing required field "summary"`},
		{"missing field in array item", req("PATCH", "/repos/o/r/check-runs/1", "", `{"actions":[{"label":"l","identifier":"i"}]}`, 200), `"description"`},
		{"oneOf branch", req("POST", "/repos/o/r/check-runs", "", `{"name":"n","head_sha":"s","status":"completed"}`, 201), "oneOf"},
		{"enum", req("POST", "/repos/o/r/issues/comments/1/reactions", "", `{"content":"yay"}`, 201), "is not one of"},
		{"empty body", req("POST", "/repos/o/r/git/refs", "", "", 201), "empty body"},
		{"undeclared query parameter", req("GET", "/repos/o/r/git/ref/heads/main", "ref=x", "", 200), `query parameter "ref"`},
		{"undocumented success status", req("POST", "/repos/o/r/pulls", "", `{"head":"h","base":"b"}`, 200), "status 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			CheckRequestsAgainstOpenAPI(rec, specPath, []Request{tc.req})
			switch {
			case tc.want == "" && len(rec.errs) > 0:
				t.Errorf("unexpected complaints: %q", rec.errs)
			case tc.want != "" && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tc.want)):
				t.Errorf("complaints %q, want one containing %q", rec.errs, tc.want)
			}
		})
	}
}

func TestMatchSegments(t *testing.T) {
	multi := map[string]bool{"path": true, "basehead": true}
	tests := []struct {
		tmpl, path string
		lit        int
		ok         bool
	}{
		{"/repos/{owner}/{repo}", "/repos/o/r", 1, true},
		{"/repos/{owner}/{repo}", "/repos/o", 0, false},
		{"/repos/{owner}/{repo}", "/repos/o/r/x", 0, false},
		{"/repos/{owner}/{repo}/contents/{path}", "/repos/o/r/contents/a/b/c.md", 2, true},
		{"/repos/{owner}/{repo}/contents/{path}", "/repos/o/r/contents/", 2, true},
		{"/repos/{owner}/{repo}/compare/{basehead}", "/repos/o/r/compare/a/b...c/d", 2, true},
		{"/repos/{owner}/{repo}/issues/{issue_number}", "/repos/o/r/issues/comments", 2, true},
		{"/repos/{owner}/{repo}/issues/comments/{comment_id}", "/repos/o/r/issues/comments/5", 3, true},
		{"/repos/{owner}/{repo}/issues/{issue_number}", "/repos/o//issues/1", 0, false},
	}
	for _, tc := range tests {
		o := &specOp{segs: strings.Split(strings.Trim(tc.tmpl, "/"), "/"), multi: multi}
		lit, ok := o.match(tc.path)
		if ok != tc.ok || (ok && lit != tc.lit) {
			t.Errorf("%s ~ %s = %d %v, want %d %v", tc.tmpl, tc.path, lit, ok, tc.lit, tc.ok)
		}
	}
}

// The mux serves multi-segment values with slashes, encoded or not.
func TestMultiSegmentRouting(t *testing.T) {
	s, repo := newRepoServer(t)
	s.PushCommit("octo", "hello", Push{Branch: "a/b", Files: map[string]string{"x": "1"}})
	tok := s.InstallationToken(repo.InstallationID)
	for _, path := range []string{
		"repos/octo/hello/git/ref/heads/a/b",
		"repos/octo/hello/git/ref/heads/a%2Fb",
		"repos/octo/hello/compare/main...a/b",
		"repos/octo/hello/compare/main...a%2Fb",
		"repos/octo/hello/contents/docs/guide/a.txt?ref=a/b",
		"api/v3/repos/octo/hello/git/ref/heads/a%2Fb",
	} {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d", path, resp.StatusCode)
		}
	}
}

// ciFlow reads a commit's CI through every CI route with go-github, as Akira does, and checks what it
// reads.
func ciFlow(t *testing.T, s *Server, gh *github.Client, sha string) {
	t.Helper()
	ctx := context.Background()
	wr := s.AddWorkflowRun("octo", "hello", WorkflowRun{Name: "CI", HeadSHA: sha, HeadBranch: "feature/a",
		Jobs: []WorkflowJob{{Name: "lint", Conclusion: "success"}, {Name: "test", Conclusion: "failure", Log: "FAIL: TestX\n"}}})
	other := s.AddForeignCheckRun("octo", "hello", ForeignCheckRun{App: CIApp{ID: 77, Slug: "circleci", Name: "CircleCI"}, Name: "build",
		HeadSHA: sha, Conclusion: "failure", Title: "Build failed", Summary: "make: *** [all] Error 2",
		Annotations: []Annotation{{Path: "main.go", StartLine: 3, EndLine: 3, AnnotationLevel: "failure", Message: "undefined: x"}}})
	s.AddStatus("octo", "hello", Status{SHA: sha, Context: "ci/jenkins", State: "failure", Description: "2 tests failed"})

	suites, _, err := gh.Checks.ListCheckSuitesForRef(ctx, "octo", "hello", sha, nil)
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string]string{}
	for _, su := range suites.CheckSuites {
		apps[su.GetApp().GetSlug()] = su.GetConclusion()
	}
	if apps["github-actions"] != "failure" || apps["circleci"] != "failure" {
		t.Errorf("check suites by app = %v", apps)
	}
	st, _, err := gh.Repositories.GetCombinedStatus(ctx, "octo", "hello", sha, nil)
	if err != nil || st.GetState() != "failure" || len(st.Statuses) != 1 || st.Statuses[0].GetContext() != "ci/jenkins" {
		t.Fatalf("combined status = %+v, %v", st, err)
	}
	cr, _, err := gh.Checks.GetCheckRun(ctx, "octo", "hello", other)
	if err != nil || cr.GetApp().GetSlug() != "circleci" || cr.GetOutput().GetTitle() != "Build failed" {
		t.Fatalf("check run = %+v, %v", cr, err)
	}
	anns, _, err := gh.Checks.ListCheckRunAnnotations(ctx, "octo", "hello", other, nil)
	if err != nil || len(anns) != 1 || anns[0].GetMessage() != "undefined: x" {
		t.Fatalf("annotations = %+v, %v", anns, err)
	}
	runs, _, err := gh.Actions.ListRepositoryWorkflowRuns(ctx, "octo", "hello", &github.ListWorkflowRunsOptions{HeadSHA: sha})
	if err != nil || runs.GetTotalCount() != 1 || runs.WorkflowRuns[0].GetConclusion() != "failure" {
		t.Fatalf("workflow runs = %+v, %v", runs, err)
	}
	jobs, _, err := gh.Actions.ListWorkflowJobs(ctx, "octo", "hello", wr.ID, nil)
	if err != nil || len(jobs.Jobs) != 2 {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	failed := wr.Jobs[1].ID
	job, _, err := gh.Actions.GetWorkflowJobByID(ctx, "octo", "hello", failed)
	if err != nil || job.GetRunID() != wr.ID || job.GetConclusion() != "failure" {
		t.Fatalf("job = %+v, %v", job, err)
	}
	logURL, _, err := gh.Actions.GetWorkflowJobLogs(ctx, "octo", "hello", failed, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Client().Get(logURL.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "FAIL: TestX\n" {
		t.Fatalf("log = %q", body)
	}
	s.SetRulesetChecks("octo", "hello", "main", "build")
	rules, _, err := gh.Repositories.GetRulesForBranch(ctx, "octo", "hello", "main")
	if err != nil || len(rules) != 1 || rules[0].Type != "required_status_checks" || rules[0].Parameters == nil ||
		!strings.Contains(string(*rules[0].Parameters), `"context":"build"`) {
		t.Fatalf("rules = %+v, %v", rules, err)
	}
	if _, err := gh.Actions.RerunFailedJobsByID(ctx, "octo", "hello", wr.ID); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.WorkflowRunByID(wr.ID); after.Attempt != 2 || after.Jobs[1].Conclusion != "" || after.Jobs[0].Conclusion != "success" {
		t.Fatalf("after the re-run: %+v", after)
	}
	if _, err := gh.Actions.RerunFailedJobsByID(ctx, "octo", "hello", wr.ID); err == nil {
		t.Error("a run still in progress cannot re-run its failed jobs")
	}
	s.CompleteWorkflowJob(failed, "success", "ok\n")
	if after, _ := s.WorkflowRunByID(wr.ID); after.Jobs[1].Conclusion != "success" {
		t.Fatalf("job not completed: %+v", after)
	}
}

// gitFlow makes a checkpoint through the Git database API as Akira does when GitHub must sign it, reads
// a branch's signature rules both ways, and reads a pull request's mergeability once the base moved.
func gitFlow(t *testing.T, s *Server, gh *github.Client) {
	t.Helper()
	ctx := context.Background()
	head := s.Branch("octo", "hello", "feature/a")
	blob, _, err := gh.Git.CreateBlob(ctx, "octo", "hello", &github.Blob{Content: ptr("AAEC"), Encoding: ptr("base64")})
	if err != nil {
		t.Fatal(err)
	}
	parent, _, err := gh.Git.GetCommit(ctx, "octo", "hello", head)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "octo", "hello", parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: ptr("bin/x"), Mode: ptr("100644"), Type: ptr("blob"), SHA: blob.SHA},
		{Path: ptr("x"), Mode: ptr("100644"), Type: ptr("blob")},
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, "octo", "hello", &github.Commit{Message: ptr("m\n"), Tree: tree, Parents: []*github.Commit{{SHA: ptr(head)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/feature/a"), Object: &github.GitObject{SHA: commit.SHA}}, false); err != nil {
		t.Fatal(err)
	}
	s.RequireSignatures("octo", "hello", "main", SignaturesByProtection)
	s.SetAdministration("octo", "hello", true)
	if _, _, err := gh.Repositories.GetSignaturesProtectedBranch(ctx, "octo", "hello", "main"); err != nil {
		t.Fatal(err)
	}
	s.RequireSignatures("octo", "hello", "main", SignaturesByRuleset)
	if _, _, err := gh.Repositories.GetRulesForBranch(ctx, "octo", "hello", "main"); err != nil {
		t.Fatal(err)
	}
	s.RequireSignatures("octo", "hello", "main", "")
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"moved.txt": "m\n"}})
	for _, pr := range s.PullRequests("octo", "hello") {
		mergeState(t, gh, pr.Number)
	}
	if _, _, err := gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "feature/a", nil); err != nil {
		t.Fatal(err)
	}
}
