package githubtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v60/github"
)

// The Git database API builds a commit out of blobs (binary ones too), a tree over a base tree with
// additions, an executable, a deletion (sha null) and a rename; GitHub signs the commit when the App
// gives no author of its own, and a ref moves only forward unless forced.
func TestGitDatabaseCommit(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	head := s.Branch("octo", "hello", "main")
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}
	blob, _, err := gh.Git.CreateBlob(ctx, "octo", "hello", &github.Blob{Content: ptr(base64.StdEncoding.EncodeToString(binary)), Encoding: ptr("base64")})
	if err != nil {
		t.Fatal(err)
	}
	parent, _, err := gh.Git.GetCommit(ctx, "octo", "hello", head)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "octo", "hello", parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: ptr("bin/data.bin"), Mode: ptr("100644"), Type: ptr("blob"), SHA: blob.SHA},
		{Path: ptr("run.sh"), Mode: ptr("100755"), Type: ptr("blob"), Content: ptr("#!/bin/sh\necho hi\n")},
		{Path: ptr("README.md"), Mode: ptr("100644"), Type: ptr("blob")},  // sha null: deleted
		{Path: ptr("docs/guide"), Mode: ptr("040000"), Type: ptr("tree")}, // a directory, deleted
		{Path: ptr("guide/a.txt"), Mode: ptr("100644"), Type: ptr("blob"), Content: ptr("a\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := "akira: 1 binary\n\nAkira-Run: r1\nAkira-Task: 1\n"
	commit, _, err := gh.Git.CreateCommit(ctx, "octo", "hello", &github.Commit{Message: ptr(msg), Tree: tree, Parents: []*github.Commit{{SHA: ptr(head)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := commit.GetVerification(); !v.GetVerified() || v.GetReason() != "valid" || v.GetSignature() == "" || !strings.Contains(v.GetPayload(), "Akira-Task: 1") {
		t.Errorf("verification of an App's commit without an author = %+v, want verified and valid", v)
	}
	if commit.GetCommitter().GetName() != "GitHub" || commit.GetAuthor().GetName() != s.BotLogin() || commit.GetMessage() != strings.TrimSuffix(msg, "\n") {
		t.Errorf("commit = author %q committer %q message %q", commit.GetAuthor().GetName(), commit.GetCommitter().GetName(), commit.GetMessage())
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: commit.SHA}}, false); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.FileAt("octo", "hello", "main", "bin/data.bin"); !ok || got != string(binary) {
		t.Errorf("binary file = %q", got)
	}
	for _, gone := range []string{"README.md", "docs/guide/a.txt"} {
		if _, ok := s.FileAt("octo", "hello", "main", gone); ok {
			t.Errorf("%s survived its deletion", gone)
		}
	}
	if mode := mustGit(t, "", "--git-dir="+s.GitDir("octo", "hello"), "ls-tree", "main", "run.sh"); !strings.HasPrefix(mode, "100755") {
		t.Errorf("run.sh = %q, want mode 100755", mode)
	}
	if !s.Verified("octo", "hello", commit.GetSHA()) {
		t.Error("the server does not count the commit it signed as verified")
	}

	// The caller's own author: GitHub does not sign it.
	unsigned, _, err := gh.Git.CreateCommit(ctx, "octo", "hello", &github.Commit{Message: ptr("mine\n"), Tree: tree,
		Parents: []*github.Commit{{SHA: ptr(head)}}, Author: &github.CommitAuthor{Name: ptr("Akira"), Email: ptr("akira@example.com")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := unsigned.GetVerification(); v.GetVerified() || v.GetReason() != "unsigned" {
		t.Errorf("verification with a custom author = %+v, want unsigned", v)
	}
	// unsigned sits beside the new head, not on top of it: only a forced update takes it.
	_, _, err = gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: unsigned.SHA}}, false)
	if statusOf(t, err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "fast forward") {
		t.Errorf("non-fast-forward update: %v, want 422 not a fast forward", err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: unsigned.SHA}}, true); err != nil {
		t.Errorf("forced update: %v", err)
	}
	_, _, err = gh.Git.CreateTree(ctx, "octo", "hello", "", []*github.TreeEntry{{Path: ptr("x"), Mode: ptr("100644"), Type: ptr("blob"), SHA: ptr(strings.Repeat("a", 40))}})
	if statusOf(t, err) != http.StatusUnprocessableEntity {
		t.Errorf("tree naming a missing blob: %v, want 422", err)
	}
}

// A branch whose ruleset requires signatures takes GitHub's signed commits and refuses the rest: a push
// over git with GH013's message, an API ref update with a 422. Branch protection's rule is read through
// its own endpoint, which needs the administration permission.
func TestRequiredSignatures(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	s.RequireSignatures("octo", "hello", "main", SignaturesByRuleset)
	rules, _, err := gh.Repositories.GetRulesForBranch(ctx, "octo", "hello", "main")
	if err != nil || len(rules) != 1 || rules[0].Type != "required_signatures" {
		t.Fatalf("rules = %+v, %v", rules, err)
	}

	work := t.TempDir()
	extra := "http.extraheader=" + basicAuthHeader(s.InstallationToken(repo.InstallationID))
	clone := filepath.Join(work, "c")
	mustGit(t, work, "-c", extra, "clone", "--quiet", s.CloneURL("octo", "hello"), clone)
	if err := os.WriteFile(filepath.Join(clone, "x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "add", "x.txt")
	mustGit(t, clone, "commit", "--quiet", "-m", "unsigned")
	unsigned := mustGit(t, clone, "rev-parse", "HEAD")
	out, err := runGit(t, clone, "-c", extra, "push", "origin", "HEAD:main")
	if err == nil || !strings.Contains(out, "GH013: Repository rule violations found for refs/heads/main") ||
		!strings.Contains(out, "Commits must have verified signatures") || !strings.Contains(out, unsigned) {
		t.Fatalf("push of an unsigned commit: %v\n%s", err, out)
	}
	// Other branches are not guarded.
	mustGit(t, clone, "-c", extra, "push", "--quiet", "origin", "HEAD:refs/heads/feature")
	_, _, err = gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: ptr(unsigned)}}, false)
	if statusOf(t, err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "Repository rule violations found") {
		t.Errorf("API update to an unsigned commit: %v, want 422 rule violation", err)
	}

	// GitHub's own commit passes, over the API and over git alike.
	main := s.Branch("octo", "hello", "main")
	parent, _, _ := gh.Git.GetCommit(ctx, "octo", "hello", main)
	signed, _, err := gh.Git.CreateCommit(ctx, "octo", "hello", &github.Commit{Message: ptr("signed\n"), Tree: parent.Tree, Parents: []*github.Commit{{SHA: ptr(main)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "-c", extra, "fetch", "--quiet", "origin", signed.GetSHA())
	mustGit(t, clone, "-c", extra, "push", "--quiet", "origin", signed.GetSHA()+":refs/heads/main")
	if got := s.Branch("octo", "hello", "main"); got != signed.GetSHA() {
		t.Errorf("main = %s, want the signed commit %s", got, signed.GetSHA())
	}

	s.RequireSignatures("octo", "hello", "main", SignaturesByProtection)
	if rules, _, err := gh.Repositories.GetRulesForBranch(ctx, "octo", "hello", "main"); err != nil || len(rules) != 0 {
		t.Errorf("rules once protection asks instead = %+v, %v", rules, err)
	}
	if _, _, err := gh.Repositories.GetSignaturesProtectedBranch(ctx, "octo", "hello", "main"); statusOf(t, err) != http.StatusForbidden {
		t.Errorf("protection without administration: %v, want 403", err)
	}
	s.SetAdministration("octo", "hello", true)
	sig, _, err := gh.Repositories.GetSignaturesProtectedBranch(ctx, "octo", "hello", "main")
	if err != nil || !sig.GetEnabled() {
		t.Errorf("required signatures = %+v, %v", sig, err)
	}
	mustGit(t, clone, "checkout", "--quiet", signed.GetSHA())
	mustGit(t, clone, "commit", "--quiet", "--allow-empty", "-m", "unsigned on top")
	if out, err := runGit(t, clone, "-c", extra, "push", "origin", "HEAD:main"); err == nil || !strings.Contains(out, "GH013") {
		t.Errorf("protection's rule let an unsigned commit in: %v\n%s", err, out)
	}
}

// graphQL posts a GraphQL request with an installation token and decodes the answer.
func graphQL(t *testing.T, s *Server, tok, query string, vars map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, s.GraphQLURL(), bytes.NewReader(body))
	req.Header.Set("Authorization", "bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

const createCommitMutation = `mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid url } } }`

// createCommitOnBranch adds and deletes files (base64 contents, binary included) on top of the head the
// caller expects, signed; a stale expectation is refused and changes nothing.
func TestCreateCommitOnBranch(t *testing.T) {
	s, repo := newRepoServer(t)
	tok := s.InstallationToken(repo.InstallationID)
	head := s.Branch("octo", "hello", "main")
	binary := []byte{0xff, 0, 0xfe, 1}
	input := map[string]any{
		"branch":  map[string]any{"repositoryNameWithOwner": "octo/hello", "branchName": "main"},
		"message": map[string]any{"headline": "akira: 2 files", "body": "Akira-Run: r1\nAkira-Task: 2"},
		"fileChanges": map[string]any{
			"additions": []any{
				map[string]any{"path": "data/blob.bin", "contents": base64.StdEncoding.EncodeToString(binary)},
				map[string]any{"path": "README.md", "contents": base64.StdEncoding.EncodeToString([]byte("# changed\n"))},
			},
			"deletions": []any{map[string]any{"path": "docs/guide/a.txt"}},
		},
		"expectedHeadOid": head,
	}
	out := graphQL(t, s, tok, createCommitMutation, map[string]any{"input": input})
	commit, _ := out["data"].(map[string]any)["createCommitOnBranch"].(map[string]any)["commit"].(map[string]any)
	sha, _ := commit["oid"].(string)
	if sha == "" || s.Branch("octo", "hello", "main") != sha || !s.Verified("octo", "hello", sha) {
		t.Fatalf("answer %v; main = %s", out, s.Branch("octo", "hello", "main"))
	}
	log := s.Log("octo", "hello", "main")[0]
	if log.Subject != "akira: 2 files" || log.Trailers["Akira-Task"] != "2" || !slices.Equal(log.Parents, []string{head}) {
		t.Errorf("commit = %+v", log)
	}
	if got, _ := s.FileAt("octo", "hello", "main", "data/blob.bin"); got != string(binary) {
		t.Errorf("binary = %q", got)
	}
	if _, ok := s.FileAt("octo", "hello", "main", "docs/guide/a.txt"); ok {
		t.Error("the deletion was not applied")
	}

	out = graphQL(t, s, tok, createCommitMutation, map[string]any{"input": input}) // head is stale now
	errs, _ := out["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["type"] != "STALE_DATA" || s.Branch("octo", "hello", "main") != sha {
		t.Errorf("stale expectedHeadOid: %v; main = %s", out, s.Branch("octo", "hello", "main"))
	}
	delete(input, "expectedHeadOid")
	if out := graphQL(t, s, tok, createCommitMutation, map[string]any{"input": input}); out["errors"] == nil {
		t.Errorf("no expectedHeadOid: %v, want an error", out)
	}

	// No file changes: an empty commit (a run's start commit), signed, on the same tree.
	out = graphQL(t, s, tok, createCommitMutation, map[string]any{"input": map[string]any{
		"branch":          map[string]any{"repositoryNameWithOwner": "octo/hello", "branchName": "main"},
		"message":         map[string]any{"headline": "akira: start run r1", "body": "Akira-Run: r1"},
		"fileChanges":     map[string]any{},
		"expectedHeadOid": sha,
	}})
	commit, _ = out["data"].(map[string]any)["createCommitOnBranch"].(map[string]any)["commit"].(map[string]any)
	empty, _ := commit["oid"].(string)
	if empty == "" || !s.Verified("octo", "hello", empty) || s.Branch("octo", "hello", "main") != empty {
		t.Fatalf("empty commit: %v", out)
	}
	dir := "--git-dir=" + s.GitDir("octo", "hello")
	if got, want := mustGit(t, "", dir, "rev-parse", empty+"^{tree}"), mustGit(t, "", dir, "rev-parse", sha+"^{tree}"); got != want {
		t.Errorf("the empty commit's tree is %s, its parent's %s", got, want)
	}
}

// mergeState reads a pull request through the API twice (GitHub answers unknown until it computed),
// returning the first and the second answer.
func mergeState(t *testing.T, gh *github.Client, number int) (first, second *github.PullRequest) {
	t.Helper()
	ctx := context.Background()
	first, _, err := gh.PullRequests.Get(ctx, "octo", "hello", number)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err = gh.PullRequests.Get(ctx, "octo", "hello", number)
	if err != nil {
		t.Fatal(err)
	}
	return first, second
}

// mergeable and mergeable_state follow the test merge (git merge-tree), the base's rules and the head's
// checks; the first read after the head or the base moved is unknown.
func TestMergeableState(t *testing.T) {
	s, repo := newRepoServer(t)
	gh, _ := installationClient(t, s, repo.InstallationID)
	s.PushCommit("octo", "hello", Push{Branch: "feature", Files: map[string]string{"README.md": "# feature\n"}})
	pr := s.AddPullRequest("octo", "hello", PullRequest{Title: "f", Head: "feature", Draft: true})
	state := func(want string, mergeable bool) {
		t.Helper()
		first, second := mergeState(t, gh, pr.Number)
		if first.Mergeable != nil || first.GetMergeableState() != "unknown" {
			t.Errorf("first read: mergeable %v state %q, want null and unknown", first.Mergeable, first.GetMergeableState())
		}
		if second.Mergeable == nil || second.GetMergeable() != mergeable || second.GetMergeableState() != want {
			t.Errorf("second read: mergeable %v state %q, want %v %q", second.Mergeable, second.GetMergeableState(), mergeable, want)
		}
	}
	state("draft", true)
	s.mu.Lock()
	s.repos[repoKey("octo", "hello")].issues[pr.Number].pr.draft = false
	s.mu.Unlock()
	if _, second := mergeState(t, gh, pr.Number); second.GetMergeableState() != "clean" || second.GetMergeCommitSHA() == "" {
		t.Errorf("ready, nothing in the way: %q (merge commit %q), want clean", second.GetMergeableState(), second.GetMergeCommitSHA())
	}

	// The base moves without touching the same lines: still mergeable; behind only under a strict rule.
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"other.txt": "o\n"}})
	state("clean", true)
	s.RequireUpToDate("octo", "hello", "main", true)
	if _, second := mergeState(t, gh, pr.Number); second.GetMergeableState() != "behind" {
		t.Errorf("strict and behind: %q", second.GetMergeableState())
	}
	s.RequireUpToDate("octo", "hello", "main", false)

	head := s.Branch("octo", "hello", "feature")
	s.SetRequiredChecks("octo", "hello", "main", "build")
	if _, second := mergeState(t, gh, pr.Number); second.GetMergeableState() != "blocked" {
		t.Errorf("required check missing: %q, want blocked", second.GetMergeableState())
	}
	s.AddStatus("octo", "hello", Status{SHA: head, Context: "build", State: "success"})
	s.AddStatus("octo", "hello", Status{SHA: head, Context: "lint", State: "failure"})
	if _, second := mergeState(t, gh, pr.Number); second.GetMergeableState() != "unstable" {
		t.Errorf("a check that is not required failed: %q, want unstable", second.GetMergeableState())
	}
	s.RequireSignatures("octo", "hello", "main", SignaturesByRuleset)
	if _, second := mergeState(t, gh, pr.Number); second.GetMergeableState() != "blocked" {
		t.Errorf("unsigned commits under a signature rule: %q, want blocked", second.GetMergeableState())
	}
	s.RequireSignatures("octo", "hello", "main", "")

	// Now the base changes the line the head changed: a conflict.
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"README.md": "# main moved\n"}})
	state("dirty", false)
	if m := s.PullMergeability("octo", "hello", pr.Number); m.State != "dirty" || !slices.Equal(m.Conflicts, []string{"README.md"}) {
		t.Errorf("mergeability = %+v", m)
	}
	if s.Branch("octo", "hello", "refs/pull/"+strconv.Itoa(pr.Number)+"/merge") != "" {
		t.Error("a conflicting pull request kept a merge commit")
	}
}

// The compare API tells a branch left behind by its base (behind_by, ahead_by, diverged, the merge base),
// names renames as GitHub does, and compares a fork's branch with the base across the network.
func TestCompareAfterTheBaseMoved(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	fork := s.Branch("octo", "hello", "main")
	s.PushCommit("octo", "hello", Push{Branch: "feature", Files: map[string]string{"docs/guide/b.txt": "a\n"}, Delete: []string{"docs/guide/a.txt"}})
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"base.txt": "1\n"}})
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"base.txt": "2\n"}})
	cmp, _, err := gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "feature", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.GetStatus() != "diverged" || cmp.GetAheadBy() != 1 || cmp.GetBehindBy() != 2 || cmp.GetMergeBaseCommit().GetSHA() != fork {
		t.Errorf("compare = %s ahead %d behind %d base %s, want diverged 1 2 %s", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), cmp.GetMergeBaseCommit().GetSHA(), fork)
	}
	if len(cmp.Files) != 1 || cmp.Files[0].GetStatus() != "renamed" || cmp.Files[0].GetPreviousFilename() != "docs/guide/a.txt" || cmp.Files[0].GetFilename() != "docs/guide/b.txt" {
		t.Errorf("files = %+v", cmp.Files)
	}
	if v := cmp.Commits[0].GetCommit().GetVerification(); v == nil || v.GetReason() != "unsigned" {
		t.Errorf("a pushed commit's verification = %+v", v)
	}

	s.Fork("octo", "hello", "eve")
	s.PushCommit("eve", "hello", Push{Branch: "spec", From: "main", Files: map[string]string{"specs/x.md": "- [ ] x\n"}})
	cmp, _, err = gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "eve:spec", nil)
	if err != nil || cmp.GetAheadBy() != 1 || len(cmp.Files) != 1 || cmp.Files[0].GetFilename() != "specs/x.md" {
		t.Errorf("compare with a fork = %+v, %v", cmp, err)
	}
}

// A pull request from a fork names the fork as its head repository, and its head is fetchable over
// git by the App, from the fork (public) and from the base's refs/pull/<n>/head.
func TestForkHeadFetchable(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	s.Fork("octo", "hello", "eve")
	head := s.PushCommit("eve", "hello", Push{Branch: "spec", From: "main", Files: map[string]string{"ROADMAP.md": "- [ ] evil\n"}})
	pr := s.AddPullRequest("octo", "hello", PullRequest{Title: "spec", User: "eve", Head: "spec", HeadRepo: "eve/hello"})
	got, _, err := gh.PullRequests.Get(ctx, "octo", "hello", pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.GetHead().GetRepo(); !r.GetFork() || r.GetFullName() != "eve/hello" || got.GetHead().GetSHA() != head {
		t.Errorf("head = %s repo %s fork %v", got.GetHead().GetSHA(), r.GetFullName(), r.GetFork())
	}
	extra := "http.extraheader=" + basicAuthHeader(s.InstallationToken(repo.InstallationID))
	work := t.TempDir()
	mustGit(t, work, "init", "--quiet")
	mustGit(t, work, "-c", extra, "fetch", "--quiet", s.CloneURL("octo", "hello"), "refs/pull/"+strconv.Itoa(pr.Number)+"/head")
	if fetched := mustGit(t, work, "rev-parse", "FETCH_HEAD"); fetched != head {
		t.Errorf("refs/pull/%d/head = %s, want %s", pr.Number, fetched, head)
	}
	mustGit(t, work, "-c", extra, "fetch", "--quiet", s.CloneURL("eve", "hello"), "spec")
	if fetched := mustGit(t, work, "rev-parse", "FETCH_HEAD"); fetched != head {
		t.Errorf("the fork's spec = %s, want %s", fetched, head)
	}
}

// hookRecorder is the app's webhook endpoint in a test: it keeps the push payloads it is sent.
type hookRecorder struct {
	mu     sync.Mutex
	pushes []map[string]any
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-GitHub-Event") == "push" {
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		h.mu.Lock()
		h.pushes = append(h.pushes, p)
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *hookRecorder) all() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.pushes)
}

// With push webhooks on, every move of a branch reaches the app as GitHub's push event: a person's
// push, a push over git and an API ref update alike, before the call that moved it returns.
func TestPushWebhooks(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	rec := &hookRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	s.SetWebhook(srv.URL, "secret")
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"quiet.txt": "q\n"}})
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d pushes delivered while off", n)
	}
	s.DeliverPushes(true)
	before := s.Branch("octo", "hello", "main")
	after := s.PushCommit("octo", "hello", Push{Files: map[string]string{"new.txt": "n\n", "README.md": "# x\n"}, Pusher: "alice"})
	pushes := rec.all()
	if len(pushes) != 1 {
		t.Fatalf("pushes = %d, want 1", len(pushes))
	}
	p := pushes[0]
	commits, _ := p["commits"].([]any)
	if p["ref"] != "refs/heads/main" || p["before"] != before || p["after"] != after || len(commits) != 1 ||
		p["installation"].(map[string]any)["id"] != float64(repo.InstallationID) || p["sender"].(map[string]any)["login"] != "alice" {
		t.Fatalf("push = %v", p)
	}
	c := commits[0].(map[string]any)
	if !slices.Equal(anyStrings(c["added"]), []string{"new.txt"}) || !slices.Equal(anyStrings(c["modified"]), []string{"README.md"}) {
		t.Errorf("commit = %v", c)
	}

	gh, _ := installationClient(t, s, repo.InstallationID)
	if _, _, err := gh.Git.UpdateRef(ctx, "octo", "hello", &github.Reference{Ref: ptr("refs/heads/main"), Object: &github.GitObject{SHA: ptr(before)}}, true); err != nil {
		t.Fatal(err)
	}
	pushes = rec.all()
	if len(pushes) != 2 || pushes[1]["forced"] != true || pushes[1]["after"] != before {
		t.Errorf("forced API update: %v", pushes[len(pushes)-1])
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// jsonKind names a JSON value's type.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "?"
}

// sameShape reports the fields of want missing from got and those whose types differ (nulls in want
// say nothing of the type).
func sameShape(t *testing.T, at string, want, got map[string]any, all bool) {
	t.Helper()
	for k, wv := range want {
		gv, ok := got[k]
		switch {
		case !ok && all:
			t.Errorf("%s.%s: missing", at, k)
		case !ok:
		case wv != nil && gv != nil && jsonKind(wv) != jsonKind(gv):
			t.Errorf("%s.%s: %s, GitHub's is %s", at, k, jsonKind(gv), jsonKind(wv))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && all {
			t.Errorf("%s.%s: GitHub sends no such field", at, k)
		}
	}
}

// The push webhook the fake sends has the fields of GitHub's, with their types (a push's repository
// carries its times as numbers), checked against GitHub's own examples when the shared fixtures are there.
func TestPushPayloadMatchesGitHubs(t *testing.T) {
	spec := specOrSkip(t)
	dir := filepath.Join(filepath.Dir(filepath.Dir(spec)), "webhooks", "push")
	load := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	withInstallation, newBranch := load("with-installation.payload.json"), load("with-new-branch.payload.json")

	s, _ := newRepoServer(t)
	rec := &hookRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	s.SetWebhook(srv.URL, "secret")
	s.DeliverPushes(true)
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"x": "1\n"}, Author: "Octo Cat <5001+octo@users.noreply.github.com>"})
	pushes := rec.all()
	if len(pushes) != 1 {
		t.Fatalf("pushes = %d", len(pushes))
	}
	got := pushes[0]
	sameShape(t, "push", withInstallation, got, true)
	sameShape(t, "push.repository", withInstallation["repository"].(map[string]any), got["repository"].(map[string]any), false)
	sameShape(t, "push.pusher", withInstallation["pusher"].(map[string]any), got["pusher"].(map[string]any), true)
	wantCommit := newBranch["commits"].([]any)[0].(map[string]any)
	sameShape(t, "push.commits[0]", wantCommit, got["commits"].([]any)[0].(map[string]any), true)
	sameShape(t, "push.head_commit", newBranch["head_commit"].(map[string]any), got["head_commit"].(map[string]any), true)
	sameShape(t, "push.commits[0].author", wantCommit["author"].(map[string]any), got["commits"].([]any)[0].(map[string]any)["author"].(map[string]any), true)
}
