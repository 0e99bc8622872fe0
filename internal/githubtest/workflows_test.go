package githubtest

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

// A change under .github/workflows reaches a branch only from a token of an installation that holds
// the workflows permission, whichever way it comes (a push over git, an API ref update or ref, GraphQL's
// createCommitOnBranch); other changes need no such permission. Tokens state the permission.
func TestWorkflowsPermission(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()

	work := t.TempDir()
	clone := filepath.Join(work, "c")
	withoutTok := s.InstallationToken(repo.InstallationID)
	without := "http.extraheader=" + basicAuthHeader(withoutTok)
	mustGit(t, work, "-c", without, "clone", "--quiet", s.CloneURL("octo", "hello"), clone)
	if err := os.MkdirAll(filepath.Join(clone, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, ".github", "workflows", "ci.yml"), []byte("on: push\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "add", ".")
	mustGit(t, clone, "commit", "--quiet", "-m", "add CI")
	commit := mustGit(t, clone, "rev-parse", "HEAD")
	for _, ref := range []string{"main", "refs/heads/new-branch"} {
		out, err := runGit(t, clone, "-c", without, "push", "origin", "HEAD:"+ref)
		if err == nil || !strings.Contains(out, "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission") {
			t.Fatalf("push to %s without the permission: %v\n%s", ref, err, out)
		}
	}
	if s.Branch("octo", "hello", "new-branch") != "" {
		t.Fatal("a refused push created its branch")
	}

	// Through the API: the commit is made, the refs do not move to it.
	gh := tokenClient(t, s, withoutTok)
	main := s.Branch("octo", "hello", "main")
	parent, _, err := gh.Git.GetCommit(ctx, "octo", "hello", main)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "octo", "hello", parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: ptr(".github/workflows/ci.yml"), Mode: ptr("100644"), Type: ptr("blob"), Content: ptr("on: push\n")}})
	if err != nil {
		t.Fatal(err)
	}
	apiCommit, _, err := gh.Git.CreateCommit(ctx, "octo", "hello", &github.Commit{Message: ptr("add CI\n"), Tree: tree, Parents: []*github.Commit{{SHA: ptr(main)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: apiCommit.SHA}}, false)
	if statusOf(t, err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "without `workflows` permission") {
		t.Errorf("API ref update without the permission: %v, want 422", err)
	}
	_, _, err = gh.Git.CreateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/other"), Object: &github.GitObject{SHA: apiCommit.SHA}})
	if statusOf(t, err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "without `workflows` permission") {
		t.Errorf("API ref creation without the permission: %v, want 422", err)
	}
	if s.Branch("octo", "hello", "main") != main || s.Branch("octo", "hello", "other") != "" {
		t.Fatal("a refused API call moved a ref")
	}
	out := graphQL(t, s, withoutTok, createCommitMutation, map[string]any{"input": map[string]any{
		"branch":          map[string]any{"repositoryNameWithOwner": "octo/hello", "branchName": "main"},
		"message":         map[string]any{"headline": "akira: CI"},
		"fileChanges":     map[string]any{"additions": []any{map[string]any{"path": ".github/workflows/x.yml", "contents": base64.StdEncoding.EncodeToString([]byte("on: push\n"))}}},
		"expectedHeadOid": s.Branch("octo", "hello", "main"),
	}})
	if errs, _ := out["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "without `workflows` permission") {
		t.Errorf("createCommitOnBranch without the permission = %v", out)
	}

	// Other changes are anyone's.
	mustGit(t, clone, "checkout", "--quiet", "-b", "plain", "origin/main")
	if err := os.WriteFile(filepath.Join(clone, "notes.txt"), []byte("n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "add", "notes.txt")
	mustGit(t, clone, "commit", "--quiet", "-m", "notes")
	mustGit(t, clone, "-c", without, "push", "--quiet", "origin", "HEAD:main")

	// Granted: a token minted afterwards says so and may push the workflow.
	s.SetWorkflowsPermission("octo", true)
	c, itr := installationClient(t, s, repo.InstallationID)
	if _, _, err := c.Repositories.Get(ctx, "octo", "hello"); err != nil {
		t.Fatal(err)
	}
	if p, err := itr.Permissions(); err != nil || p.GetWorkflows() != "write" {
		t.Fatalf("token permissions = %+v, %v; want workflows: write", p, err)
	}
	with := "http.extraheader=" + basicAuthHeader(s.InstallationToken(repo.InstallationID))
	mustGit(t, clone, "checkout", "--quiet", commit)
	mustGit(t, clone, "-c", with, "fetch", "--quiet", "origin", "main")
	mustGit(t, clone, "merge", "--quiet", "--no-edit", "FETCH_HEAD")
	mustGit(t, clone, "-c", with, "push", "--quiet", "origin", "HEAD:main")
	if _, ok := s.FileAt("octo", "hello", "main", ".github/workflows/ci.yml"); !ok {
		t.Error("the granted push did not land")
	}
	// A token minted before the grant keeps what it said.
	if err := os.WriteFile(filepath.Join(clone, ".github", "workflows", "ci.yml"), []byte("on: [push, pull_request]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "commit", "--quiet", "-am", "CI on pull requests")
	if out, err := runGit(t, clone, "-c", without, "push", "origin", "HEAD:main"); err == nil {
		t.Errorf("a token minted before the grant pushed a workflow change: %s", out)
	}
}
