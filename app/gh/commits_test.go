package gh_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/runner/workspace"
)

// clone is a run's workspace on the fake's repository, through git smart HTTP with the App's token.
func (e *env) clone(t testing.TB, branch string) *workspace.Workspace {
	t.Helper()
	ctx := context.Background()
	w, err := workspace.Clone(ctx, workspace.Options{Remote: e.srv.CloneURL(owner, repo), WorkDir: t.TempDir(), Auth: e.c.GitAuthHeader})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Checkout(ctx, branch); err != nil {
		t.Fatal(err)
	}
	return w
}

func writeFile(t testing.TB, dir, name string, data []byte, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func checkpoint(t testing.TB, w *workspace.Workspace, task string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := w.Stage(ctx); err != nil {
		t.Fatal(err)
	}
	sha, err := w.Commit(ctx, fmt.Sprintf("akira: %s\n\nVerified by:\n- make test\n\nAkira-Run: r1\nAkira-Task: %s\n", task, task))
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// Checkpoints made through the API come out signed, with the checkpoint's exact tree, message and
// trailers, one commit per task, and the workspace builds the next task on GitHub's commit: a small
// change (GraphQL's createCommitOnBranch) and a big one (binary files, deletions, a rename, an
// executable, a symlink, hundreds of files: the Git database) alike. Where a ruleset requires
// signatures on the branch, git push is refused and the API is not.
func TestSignedCheckpointsThroughTheAPI(t *testing.T) {
	files := map[string]string{"README.md": "# hello\n", "old/name.txt": "moved\n", "gone.txt": "x\n", "tool": "echo\n"}
	e := newEnv(t, files, nil)
	ctx := context.Background()
	w := e.clone(t, "akira/x")
	api := e.c.SignedCommits(owner, repo)

	writeFile(t, w.Dir, "notes.md", []byte("small change\n"), 0o644)
	local := checkpoint(t, w, "1")
	localTree, _ := w.Git(ctx, "rev-parse", local+"^{tree}")
	first, err := w.PushAPI(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	graphql := len(e.requests("POST", "/graphql"))

	binary := []byte{0, 0xff, 0xfe, '\n', 1, 2, 3}
	writeFile(t, w.Dir, "assets/logo.bin", binary, 0o644)
	for i := range 200 {
		writeFile(t, w.Dir, fmt.Sprintf("gen/f%03d.go", i), []byte(fmt.Sprintf("package gen\n\nconst F%d = %d\n", i, i)), 0o644)
	}
	writeFile(t, w.Dir, "new/name.txt", []byte("moved\n"), 0o644)
	for _, p := range []string{"old/name.txt", "gone.txt"} {
		if err := os.Remove(filepath.Join(w.Dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(w.Dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README.md", filepath.Join(w.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	big := checkpoint(t, w, "2")
	bigTree, _ := w.Git(ctx, "rev-parse", big+"^{tree}")
	second, err := w.PushAPI(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	if graphql != 1 || len(e.requests("POST", "/git/trees")) != 1 || len(e.requests("POST", "/git/blobs")) != 1 {
		t.Errorf("graphql %d, trees %d, blobs %d: want the small change through createCommitOnBranch, the big one through one tree and a blob for the binary file",
			graphql, len(e.requests("POST", "/git/trees")), len(e.requests("POST", "/git/blobs")))
	}

	log := e.srv.Log(owner, repo, "akira/x")
	if len(log) < 3 || log[0].SHA != second || log[1].SHA != first || log[0].Parents[0] != first {
		t.Fatalf("branch log = %+v", log[:min(3, len(log))])
	}
	for i, want := range []struct{ sha, tree, task string }{{second, bigTree, "2"}, {first, localTree, "1"}} {
		c := log[i]
		if !e.srv.Verified(owner, repo, c.SHA) {
			t.Errorf("checkpoint %s is not verified", want.task)
		}
		if c.Trailers["Akira-Task"] != want.task || c.Trailers["Akira-Run"] != "r1" || c.Subject != "akira: "+want.task {
			t.Errorf("checkpoint %s = %+v", want.task, c)
		}
		if tree, _ := w.Git(ctx, "rev-parse", c.SHA+"^{tree}"); tree != want.tree {
			t.Errorf("checkpoint %s holds tree %s, the local checkpoint %s", want.task, tree, want.tree)
		}
	}
	if got, ok := e.srv.FileAt(owner, repo, "akira/x", "assets/logo.bin"); !ok || got != string(binary) {
		t.Errorf("binary file = %q", got)
	}
	if w.Head() != second {
		t.Errorf("workspace head = %s, want GitHub's commit %s", w.Head(), second)
	}

	// A ruleset on the branch: git push of an unsigned checkpoint is refused, the API is not.
	e.srv.RequireSignatures(owner, repo, "akira/x", githubtest.SignaturesByRuleset)
	writeFile(t, w.Dir, "notes.md", []byte("third\n"), 0o644)
	checkpoint(t, w, "3")
	if err := w.Push(ctx); err == nil {
		t.Fatal("an unsigned push passed the ruleset")
	}
	third, err := w.PushAPI(ctx, api)
	if err != nil || !e.srv.Verified(owner, repo, third) || e.srv.Branch(owner, repo, "akira/x") != third {
		t.Fatalf("API push under the ruleset: %s, %v", third, err)
	}

	// Someone else moved the branch: the API commit is refused as a moved branch, nothing is overwritten.
	moved := e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/x", Files: map[string]string{"human.txt": "h\n"}})
	writeFile(t, w.Dir, "notes.md", []byte("fourth\n"), 0o644)
	checkpoint(t, w, "4")
	if _, err := w.PushAPI(ctx, api); !errors.Is(err, workspace.ErrPushRejected) {
		t.Errorf("API push onto a moved branch: %v, want ErrPushRejected", err)
	}
	if got := e.srv.Branch(owner, repo, "akira/x"); got != moved {
		t.Errorf("branch = %s, want the person's %s", got, moved)
	}
	if p, ok := githubtest.OpenAPISubsetPath(); ok {
		githubtest.CheckRequestsAgainstOpenAPI(t, p, e.srv.Requests())
	}
}

// The run's start commit changes no file: it goes through the Git database on the parent's tree (no
// tree to create, no createCommitOnBranch, which is not documented to take an empty change), on a
// branch that does not exist yet, signed.
func TestSignedEmptyCommitThroughTheAPI(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "# hello\n"}, nil)
	ctx := context.Background()
	w := e.clone(t, "akira/new")
	api := e.c.SignedCommits(owner, repo)
	parentTree, _ := w.Git(ctx, "rev-parse", "HEAD^{tree}")
	if _, err := w.Commit(ctx, "akira: start run r1\n\nAkira-Run: r1\n"); err != nil {
		t.Fatal(err)
	}
	sha, err := w.PushAPI(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	c := e.srv.Log(owner, repo, "akira/new")[0]
	if c.SHA != sha || c.Trailers["Akira-Run"] != "r1" || !e.srv.Verified(owner, repo, sha) {
		t.Errorf("start commit = %+v (verified %v)", c, e.srv.Verified(owner, repo, sha))
	}
	if tree, _ := w.Git(ctx, "rev-parse", sha+"^{tree}"); tree != parentTree {
		t.Errorf("start commit's tree %s, want its parent's %s", tree, parentTree)
	}
	if n, g, trees := len(e.requests("POST", "/git/commits")), len(e.requests("POST", "/graphql")), len(e.requests("POST", "/git/trees")); n != 1 || g != 0 || trees != 0 {
		t.Errorf("%d Git database commits, %d GraphQL calls, %d trees created; want one commit on the parent's tree", n, g, trees)
	}
	if p, ok := githubtest.OpenAPISubsetPath(); ok {
		githubtest.CheckRequestsAgainstOpenAPI(t, p, e.srv.Requests())
	}
}

// A merge of the base (two parents) goes through the Git database, signed.
func TestSignedMergeThroughTheAPI(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "# hello\n", "app.txt": "a\nb\nc\n"}, nil)
	ctx := context.Background()
	w := e.clone(t, "akira/x")
	api := e.c.SignedCommits(owner, repo)
	writeFile(t, w.Dir, "app.txt", []byte("a\nB\nc\n"), 0o644)
	checkpoint(t, w, "1")
	if _, err := w.PushAPI(ctx, api); err != nil {
		t.Fatal(err)
	}
	base := e.srv.PushCommit(owner, repo, githubtest.Push{Files: map[string]string{"other.txt": "o\n"}})
	s, err := w.MergeBase(ctx)
	if err != nil || s.Base != base {
		t.Fatalf("MergeBase = %+v, %v", s, err)
	}
	if _, err := w.CommitMerge(ctx, s, "akira: bring akira/x up to date with main\n\nAkira-Run: r1\nAkira-Sync: main@"+base+"\n"); err != nil {
		t.Fatal(err)
	}
	sha, err := w.PushAPI(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	c := e.srv.Log(owner, repo, "akira/x")[0]
	if c.SHA != sha || len(c.Parents) != 2 || c.Parents[1] != base || !e.srv.Verified(owner, repo, sha) || c.Trailers["Akira-Sync"] != "main@"+base {
		t.Errorf("merge = %+v (verified %v)", c, e.srv.Verified(owner, repo, sha))
	}
}

// Whether a base requires signatures, from a ruleset or from branch protection (when the App may read
// it); how the branch stands against a base that moved, and a pull request's mergeability.
func TestSignaturesRequiredCompareAndMergeability(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "# hello\n"}, nil)
	ctx := context.Background()
	if req, err := e.c.SignaturesRequired(ctx, owner, repo, "main"); err != nil || req {
		t.Fatalf("no rule: %v, %v", req, err)
	}
	e.srv.RequireSignatures(owner, repo, "main", githubtest.SignaturesByRuleset)
	if req, err := e.c.SignaturesRequired(ctx, owner, repo, "main"); err != nil || !req {
		t.Errorf("ruleset: %v, %v", req, err)
	}
	e.srv.RequireSignatures(owner, repo, "main", githubtest.SignaturesByProtection)
	if req, err := e.c.SignaturesRequired(ctx, owner, repo, "main"); err != nil || req {
		t.Errorf("protection the App cannot read: %v, %v (the rulesets answer: none)", req, err)
	}
	e.srv.SetAdministration(owner, repo, true)
	if req, err := e.c.SignaturesRequired(ctx, owner, repo, "main"); err != nil || !req {
		t.Errorf("protection: %v, %v", req, err)
	}

	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/x", Files: map[string]string{"README.md": "# run\n"}})
	pr := e.srv.AddPullRequest(owner, repo, githubtest.PullRequest{Title: "run", Head: "akira/x", Draft: true})
	base := e.srv.PushCommit(owner, repo, githubtest.Push{Files: map[string]string{"README.md": "# base\n"}})
	cmp, err := e.c.CompareWithBase(ctx, owner, repo, "main", "akira/x")
	if err != nil || !cmp.Behind() || cmp.BehindBy != 1 || cmp.AheadBy != 1 || cmp.Status != "diverged" || cmp.BaseHead != base {
		t.Errorf("compare = %+v, %v", cmp, err)
	}
	m, err := e.c.Mergeability(ctx, owner, repo, pr.Number)
	if err != nil || m.Known || m.State != "unknown" {
		t.Errorf("first read = %+v, %v; want unknown", m, err)
	}
	m, err = e.c.Mergeability(ctx, owner, repo, pr.Number)
	if err != nil || !m.Conflicts() || m.State != "dirty" {
		t.Errorf("second read = %+v, %v; want dirty", m, err)
	}
	if p, ok := githubtest.OpenAPISubsetPath(); ok {
		githubtest.CheckRequestsAgainstOpenAPI(t, p, e.srv.Requests())
	}
}
