package githubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

func TestPullRequests(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	head := s.PushCommit("octo", "hello", Push{Branch: "akira/issue-1", Message: "Add feature",
		Files:  map[string]string{"feature.go": "package feature\n", "ROADMAP.md": "# Roadmap\n\n- [x] first task\n"},
		Delete: []string{"docs/guide/a.txt"}})

	pr, resp, err := gh.PullRequests.Create(ctx, "octo", "hello", &github.NewPullRequest{
		Title: ptr("Akira: issue 1"), Head: ptr("akira/issue-1"), Base: ptr("main"), Body: ptr("Closes #1"), Draft: ptr(true),
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || !pr.GetDraft() || pr.GetHead().GetSHA() != head ||
		pr.GetBase().GetRef() != "main" || pr.GetHead().GetRepo().GetFullName() != "octo/hello" ||
		pr.GetUser().GetLogin() != s.BotLogin() || pr.GetNodeID() == "" || pr.GetState() != "open" {
		t.Errorf("created = %d draft=%v head=%s/%s base=%s user=%s", resp.StatusCode, pr.GetDraft(),
			pr.GetHead().GetRepo().GetFullName(), pr.GetHead().GetSHA(), pr.GetBase().GetRef(), pr.GetUser().GetLogin())
	}

	createErr := func(np *github.NewPullRequest) *github.ErrorResponse {
		t.Helper()
		_, _, err := gh.PullRequests.Create(ctx, "octo", "hello", np)
		var er *github.ErrorResponse
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("create %+v: %v, want 422", np, err)
		}
		return er
	}
	if er := createErr(&github.NewPullRequest{Title: ptr("again"), Head: ptr("octo:akira/issue-1"), Base: ptr("main")}); !strings.Contains(er.Errors[0].Message, "A pull request already exists for octo:akira/issue-1") {
		t.Errorf("duplicate: %+v", er.Errors)
	}
	createErr(&github.NewPullRequest{Title: ptr("x"), Head: ptr("nope"), Base: ptr("main")})
	createErr(&github.NewPullRequest{Title: ptr("x"), Head: ptr("akira/issue-1"), Base: ptr("nope")})
	createErr(&github.NewPullRequest{Head: ptr("akira/issue-1"), Base: ptr("main")})
	log := s.Log("octo", "hello", "main")
	if _, _, err := gh.Git.CreateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/stale"),
		Object: &github.GitObject{SHA: ptr(log[len(log)-1].SHA)}}); err != nil {
		t.Fatal(err)
	}
	if er := createErr(&github.NewPullRequest{Title: ptr("x"), Head: ptr("stale"), Base: ptr("main")}); !strings.Contains(er.Errors[0].Message, "No commits between") {
		t.Errorf("no commits: %+v", er.Errors)
	}

	s.AddPullRequest("octo", "hello", PullRequest{Title: "old", Head: "old", State: "closed", User: "bob"})
	list := func(opts *github.PullRequestListOptions) []int {
		t.Helper()
		prs, _, err := gh.PullRequests.List(ctx, "octo", "hello", opts)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, p := range prs {
			ns = append(ns, p.GetNumber())
		}
		return ns
	}
	tests := []struct {
		name string
		opts *github.PullRequestListOptions
		want []int
	}{
		{"default open", nil, []int{pr.GetNumber()}},
		{"head owner:ref", &github.PullRequestListOptions{Head: "octo:akira/issue-1"}, []int{pr.GetNumber()}},
		{"head of another owner", &github.PullRequestListOptions{Head: "eve:akira/issue-1"}, nil},
		{"base", &github.PullRequestListOptions{Base: "develop"}, nil},
		{"closed", &github.PullRequestListOptions{State: "closed"}, []int{2}},
		{"all newest first", &github.PullRequestListOptions{State: "all"}, []int{2, 1}},
		{"all ascending", &github.PullRequestListOptions{State: "all", Direction: "asc"}, []int{1, 2}},
	}
	for _, tc := range tests {
		if got := list(tc.opts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}

	files, _, err := gh.PullRequests.ListFiles(ctx, "octo", "hello", pr.GetNumber(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.GetFilename()+":"+f.GetStatus())
	}
	if want := []string{"ROADMAP.md:modified", "docs/guide/a.txt:removed", "feature.go:added"}; !slices.Equal(got, want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	if files[2].GetAdditions() != 1 || files[0].GetAdditions() != 1 || files[0].GetDeletions() != 1 {
		t.Errorf("line counts: %+v %+v", files[0], files[2])
	}

	upd, _, err := gh.PullRequests.Edit(ctx, "octo", "hello", pr.GetNumber(), &github.PullRequest{Title: ptr("Akira: done"), Body: ptr("all good")})
	if err != nil || upd.GetTitle() != "Akira: done" || upd.GetBody() != "all good" {
		t.Errorf("edit: %v %q", err, upd.GetTitle())
	}

	// Real GitHub un-drafts only through GraphQL.
	gql := map[string]any{
		"query":     `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`,
		"variables": map[string]any{"id": pr.GetNodeID()},
	}
	var out struct {
		Data struct {
			Mark struct {
				PullRequest struct{ IsDraft bool } `json:"pullRequest"`
			} `json:"markPullRequestReadyForReview"`
		} `json:"data"`
		Errors []graphQLError `json:"errors"`
	}
	graphql(t, s, s.InstallationToken(repo.InstallationID), gql, &out)
	if len(out.Errors) > 0 || out.Data.Mark.PullRequest.IsDraft {
		t.Errorf("graphql: %+v", out)
	}
	if p, _ := s.PullRequest("octo", "hello", pr.GetNumber()); p.Draft {
		t.Error("still a draft after markPullRequestReadyForReview")
	}
	graphql(t, s, s.InstallationToken(repo.InstallationID), map[string]any{
		"query": `mutation { markPullRequestReadyForReview(input: {pullRequestId: "PR_nope"}) { clientMutationId } }`,
	}, &out)
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Message, "PR_nope") {
		t.Errorf("unknown node: %+v", out.Errors)
	}

	closed, _, err := gh.PullRequests.Edit(ctx, "octo", "hello", pr.GetNumber(), &github.PullRequest{State: ptr("closed")})
	if err != nil || closed.GetState() != "closed" || closed.ClosedAt == nil {
		t.Errorf("close: %v %q", err, closed.GetState())
	}
	is, _, err := gh.Issues.Get(ctx, "octo", "hello", pr.GetNumber())
	if err != nil || !is.IsPullRequest() || is.GetState() != "closed" {
		t.Errorf("pull request as issue: %v pr=%v state=%q", err, is.IsPullRequest(), is.GetState())
	}
	final, ok := s.PullRequest("octo", "hello", pr.GetNumber())
	if !ok || final.Title != "Akira: done" || final.State != "closed" || final.Head != "akira/issue-1" || final.Base != "main" {
		t.Errorf("final = %+v", final)
	}
}

func graphql(t *testing.T, s *Server, tok string, body any, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.GraphQLURL(), bytes.NewReader(b))
	req.Header.Set("Authorization", "bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("graphql status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func TestForkPullRequest(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	fork := s.Fork("octo", "hello", "eve")
	if fork.InstallationID != 0 {
		t.Errorf("fork is installed: %+v", fork)
	}
	sha := s.PushCommit("eve", "hello", Push{Branch: "patch", Files: map[string]string{"ROADMAP.md": "# evil\n"}})
	pr, _, err := gh.PullRequests.Create(ctx, "octo", "hello", &github.NewPullRequest{
		Title: ptr("from a fork"), Head: ptr("eve:patch"), Base: ptr("main"),
	})
	if err != nil {
		t.Fatalf("create from fork: %v", err)
	}
	if pr.GetHead().GetRepo().GetFullName() != "eve/hello" || !pr.GetHead().GetRepo().GetFork() ||
		pr.GetHead().GetSHA() != sha || pr.GetHead().GetLabel() != "eve:patch" {
		t.Errorf("head = %s fork=%v sha=%s", pr.GetHead().GetRepo().GetFullName(), pr.GetHead().GetRepo().GetFork(), pr.GetHead().GetSHA())
	}
	files, _, err := gh.PullRequests.ListFiles(ctx, "octo", "hello", pr.GetNumber(), nil)
	if err != nil || len(files) != 1 || files[0].GetFilename() != "ROADMAP.md" {
		t.Errorf("fork files: %v %v", err, files)
	}
	if got := s.Branch("octo", "hello", "refs/pull/1/head"); got != sha {
		t.Errorf("refs/pull/1/head = %q, want %s", got, sha)
	}
	if p, _ := s.PullRequest("octo", "hello", 1); p.HeadRepo != "eve/hello" {
		t.Errorf("state head repo = %q", p.HeadRepo)
	}
}

func TestRESTDraftConvenience(t *testing.T) {
	s, repo := newRepoServer(t)
	gh, _ := installationClient(t, s, repo.InstallationID)
	pr := s.AddPullRequest("octo", "hello", PullRequest{Title: "t", Head: "main", Draft: true})
	// go-github's PullRequests.Edit does not send draft, so send the PATCH by hand.
	req, err := gh.NewRequest(http.MethodPatch, "repos/octo/hello/pulls/1", map[string]any{"draft": false})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Do(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.PullRequest("octo", "hello", pr.Number); got.Draft {
		t.Error("draft: false over REST was not applied")
	}
}
