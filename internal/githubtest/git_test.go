package githubtest

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

func TestContents(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	s.PushCommit("octo", "hello", Push{Branch: "feature/x", Files: map[string]string{
		"ROADMAP.md": "# Roadmap\n\n- [ ] changed\n", "dir with space/f.txt": strings.Repeat("long line ", 20),
	}})

	tests := []struct {
		name, path, ref, want string
	}{
		{"default branch", "ROADMAP.md", "", "# Roadmap\n\n- [ ] first task\n"},
		{"branch with a slash", "ROADMAP.md", "feature/x", "# Roadmap\n\n- [ ] changed\n"},
		{"nested path", "docs/guide/a.txt", "main", "a\n"},
		{"escaped path, multi-line base64", "dir with space/f.txt", "feature/x", strings.Repeat("long line ", 20)},
		{"sha ref", "README.md", s.Branch("octo", "hello", "main"), "# hello\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", tc.path, &github.RepositoryContentGetOptions{Ref: tc.ref})
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.GetContent()
			if err != nil || got != tc.want || f.GetPath() != tc.path || f.GetType() != "file" || f.GetSize() != len(tc.want) {
				t.Errorf("content = %q (%v) path %q type %q size %d", got, err, f.GetPath(), f.GetType(), f.GetSize())
			}
			if tc.ref != "" {
				if local, ok := s.FileAt("octo", "hello", tc.ref, tc.path); !ok || local != tc.want {
					t.Errorf("FileAt = %q %v", local, ok)
				}
			}
		})
	}

	_, dir, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", "docs", nil)
	if err != nil || len(dir) != 1 || dir[0].GetName() != "guide" || dir[0].GetType() != "dir" || dir[0].GetPath() != "docs/guide" {
		t.Errorf("dir listing: %v %v", err, dir)
	}
	_, root, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", "", nil)
	if err != nil || len(root) != 3 {
		t.Errorf("root listing: %v %d entries", err, len(root))
	}
	if _, _, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", "missing.md", nil); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("missing file: %v, want 404", err)
	}
	if _, _, _, err := gh.Repositories.GetContents(ctx, "octo", "hello", "README.md", &github.RepositoryContentGetOptions{Ref: "nope"}); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("missing ref: %v, want 404", err)
	}
	if _, ok := s.FileAt("octo", "hello", "main", "nope"); ok {
		t.Error("FileAt found a missing file")
	}
}

func TestRefsAndCompare(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	mainSHA := s.Branch("octo", "hello", "main")

	ref, _, err := gh.Git.GetRef(ctx, "octo", "hello", "refs/heads/main")
	if err != nil || ref.GetRef() != "refs/heads/main" || ref.GetObject().GetSHA() != mainSHA || ref.GetObject().GetType() != "commit" {
		t.Fatalf("get ref: %v %+v", err, ref)
	}
	if _, _, err := gh.Git.GetRef(ctx, "octo", "hello", "heads/mai"); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("prefix of a ref: %v, want 404", err)
	}

	created, resp, err := gh.Git.CreateRef(ctx, "octo", "hello", &github.Reference{
		Ref: ptr("refs/heads/akira/roadmap"), Object: &github.GitObject{SHA: ptr(mainSHA)}})
	if err != nil || resp.StatusCode != http.StatusCreated || created.GetRef() != "refs/heads/akira/roadmap" {
		t.Fatalf("create ref: %v %+v", err, created)
	}
	if got, _, err := gh.Git.GetRef(ctx, "octo", "hello", "heads/akira/roadmap"); err != nil || got.GetObject().GetSHA() != mainSHA {
		t.Errorf("get created ref with a slash: %v %+v", err, got)
	}
	for name, r := range map[string]*github.Reference{
		"exists":    {Ref: ptr("refs/heads/akira/roadmap"), Object: &github.GitObject{SHA: ptr(mainSHA)}},
		"one slash": {Ref: ptr("refs/x"), Object: &github.GitObject{SHA: ptr(mainSHA)}},
		"bad name":  {Ref: ptr("refs/heads/a..b"), Object: &github.GitObject{SHA: ptr(mainSHA)}},
		"no object": {Ref: ptr("refs/heads/y"), Object: &github.GitObject{SHA: ptr(strings.Repeat("b", 40))}},
	} {
		if _, _, err := gh.Git.CreateRef(ctx, "octo", "hello", r); statusOf(t, err) != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v, want 422", name, err)
		}
	}

	first := s.PushCommit("octo", "hello", Push{Branch: "akira/roadmap", Message: "Task one\n\nAkira-Run: r1\nAkira-Task: T1",
		Files: map[string]string{"one.txt": "1\n"}})
	s.PushCommit("octo", "hello", Push{Branch: "akira/roadmap", Message: "Task two\n\nAkira-Run: r1\nAkira-Task: T2",
		Files: map[string]string{"two.txt": "2\n"}})
	cmp, _, err := gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "akira/roadmap", nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs, files []string
	for _, c := range cmp.Commits {
		msgs = append(msgs, c.GetCommit().GetMessage())
	}
	for _, f := range cmp.Files {
		files = append(files, f.GetFilename())
	}
	if cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 2 || cmp.GetBehindBy() != 0 || cmp.GetTotalCommits() != 2 ||
		!slices.Equal(msgs, []string{"Task one\n\nAkira-Run: r1\nAkira-Task: T1", "Task two\n\nAkira-Run: r1\nAkira-Task: T2"}) ||
		!slices.Equal(files, []string{"one.txt", "two.txt"}) || cmp.GetMergeBaseCommit().GetSHA() != mainSHA ||
		cmp.Commits[0].GetSHA() != first || cmp.Commits[0].GetCommit().GetAuthor().GetName() != humanName {
		t.Errorf("compare = %q ahead %d behind %d msgs %q files %v", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), msgs, files)
	}
	s.PushCommit("octo", "hello", Push{Files: map[string]string{"main.txt": "m\n"}})
	cmp, _, err = gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "akira/roadmap", nil)
	if err != nil || cmp.GetStatus() != "diverged" || cmp.GetBehindBy() != 1 || cmp.GetBaseCommit().GetSHA() != s.Branch("octo", "hello", "main") {
		t.Errorf("diverged compare: %v %q behind %d", err, cmp.GetStatus(), cmp.GetBehindBy())
	}
	cmp, _, err = gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "main", nil)
	if err != nil || cmp.GetStatus() != "identical" {
		t.Errorf("identical: %v %q", err, cmp.GetStatus())
	}
	if _, _, err := gh.Repositories.CompareCommits(ctx, "octo", "hello", "main", "nope", nil); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("compare with a missing ref: %v, want 404", err)
	}

	log := s.Log("octo", "hello", "akira/roadmap")
	if len(log) != 3 || log[0].Subject != "Task two" || log[0].Trailers["Akira-Task"] != "T2" || log[1].Trailers["Akira-Run"] != "r1" ||
		log[2].Subject != "Initial commit" || log[0].Parents[0] != first {
		t.Errorf("log = %+v", log)
	}
	if s.Log("octo", "hello", "nope") != nil || s.Branch("octo", "hello", "nope") != "" {
		t.Error("missing branch has a log or a sha")
	}
	if got := s.Branches("octo", "hello"); !slices.Equal(got, []string{"akira/roadmap", "main"}) {
		t.Errorf("branches = %v", got)
	}
}

func TestGitSmartHTTP(t *testing.T) {
	s, repo := newRepoServer(t)
	tok := s.InstallationToken(repo.InstallationID)
	work := t.TempDir()
	clone := filepath.Join(work, "clone")

	// Without credentials git is told to authenticate and, with prompts off, gives up.
	out, err := runGit(t, work, "clone", s.CloneURL("octo", "hello"), filepath.Join(work, "anon"))
	if err == nil || !strings.Contains(out, "could not read Username") {
		t.Errorf("anonymous clone: %v\n%s", err, out)
	}
	if _, err := runGit(t, work, "-c", basicAuthHeader("ghs_wrong"), "clone", s.CloneURL("octo", "hello"), filepath.Join(work, "bad")); err == nil {
		t.Error("clone with a wrong token succeeded")
	}

	extra := "http.extraheader=" + basicAuthHeader(tok)
	mustGit(t, work, "-c", extra, "clone", "--quiet", s.CloneURL("octo", "hello"), clone)
	if b, err := os.ReadFile(filepath.Join(clone, "ROADMAP.md")); err != nil || !strings.Contains(string(b), "first task") {
		t.Fatalf("cloned roadmap: %v %q", err, b)
	}
	mustGit(t, clone, "checkout", "--quiet", "-b", "akira/roadmap")
	if err := os.WriteFile(filepath.Join(clone, "ROADMAP.md"), []byte("# Roadmap\n\n- [x] first task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "commit", "--quiet", "-am", "Tick first task\n\nAkira-Run: r9\nAkira-Task: first")
	// Bearer through http.extraheader, the other form Akira may use.
	mustGit(t, clone, "-c", "http.extraheader=Authorization: Bearer "+tok, "push", "--quiet", "origin", "akira/roadmap")

	head := mustGit(t, clone, "rev-parse", "HEAD")
	if got := s.Branch("octo", "hello", "akira/roadmap"); got != head {
		t.Errorf("pushed branch = %q, want %s", got, head)
	}
	log := s.Log("octo", "hello", "akira/roadmap")
	if log[0].Trailers["Akira-Task"] != "first" || log[0].Author != "Agent <agent@example.com>" {
		t.Errorf("pushed commit = %+v", log[0])
	}

	// A push large enough for git to stream it chunked.
	big := make([]byte, 5<<18) // over http.postBuffer (1 MiB), incompressible
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, clone, "add", "big.bin")
	mustGit(t, clone, "commit", "--quiet", "-m", "big")
	mustGit(t, clone, "-c", extra, "push", "--quiet", "origin", "akira/roadmap")
	if got, ok := s.FileAt("octo", "hello", "akira/roadmap", "big.bin"); !ok || len(got) != len(big) {
		t.Errorf("big file after push: %v %d bytes", ok, len(got))
	}

	// A human push shows up in the next fetch.
	human := s.PushCommit("octo", "hello", Push{Branch: "akira/roadmap", Message: "Human fix", Files: map[string]string{"fix.txt": "x\n"}})
	mustGit(t, clone, "-c", extra, "fetch", "--quiet", "origin")
	if got := mustGit(t, clone, "rev-parse", "origin/akira/roadmap"); got != human {
		t.Errorf("fetched %s, want %s", got, human)
	}

	// A private repository takes a token that covers it; a public one can be fetched by anyone (a
	// fork a pull request comes from, say), never pushed to; expired tokens stop working.
	other := s.CreateRepo("someone", "else", nil)
	s.CreateRepo("octo", "secret", nil, Private())
	otherTok := "http.extraheader=" + basicAuthHeader(s.InstallationToken(other.InstallationID))
	if _, err := runGit(t, work, "-c", otherTok, "ls-remote", s.CloneURL("octo", "secret")); err == nil {
		t.Error("token of another installation listed a private repository")
	}
	if out, err := runGit(t, work, "-c", otherTok, "ls-remote", s.CloneURL("octo", "hello")); err != nil {
		t.Errorf("token of another installation could not list a public repository: %v\n%s", err, out)
	}
	if _, err := runGit(t, clone, "-c", otherTok, "push", s.CloneURL("octo", "hello"), "HEAD:refs/heads/intruder"); err == nil {
		t.Error("token of another installation pushed to a public repository")
	}
	s.ExpireTokens()
	if _, err := runGit(t, clone, "-c", extra, "fetch", "origin"); err == nil {
		t.Error("fetch with an expired token succeeded")
	}
	var gitReqs int
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, "/octo/hello.git/") {
			gitReqs++
		}
	}
	if gitReqs == 0 {
		t.Error("git requests were not recorded")
	}
}
