package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// TestFilesStayInsideTheWorkTree: reading, listing and writing the work tree's files works on its
// own files and refuses, naming the path, a symlink that leads out of it, a special file, and a
// missing file.
func TestFilesStayInsideTheWorkTree(t *testing.T) {
	repo := gittest.New(t, map[string]string{"ROADMAP.md": "- [ ] 1.1 one\n", "docs/a.md": "a\n", "docs/b.md": "bb\n"})
	w := open(t, repo.Remote, "akira/x")
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(w.Dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(w.Dir, "outside")); err != nil {
		t.Fatal(err)
	}

	if data, err := w.ReadFile("ROADMAP.md"); err != nil || string(data) != "- [ ] 1.1 one\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	for _, path := range []string{"link.md", "outside/secret.txt"} {
		if data, err := w.ReadFile(path); err == nil || !strings.Contains(err.Error(), "read "+path+": it leads outside the repository") {
			t.Errorf("ReadFile(%s) = %q, %v; want a refusal naming the path", path, data, err)
		}
		if _, _, err := w.ReadHead(path, 10); err == nil || !strings.Contains(err.Error(), "leads outside the repository") {
			t.Errorf("ReadHead(%s) = %v; want a refusal", path, err)
		}
	}
	if _, err := w.ReadFile("missing.md"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want ErrNotExist", err)
	}

	if data, more, err := w.ReadHead("docs/b.md", 1); err != nil || string(data) != "b" || !more {
		t.Errorf("ReadHead(b.md, 1) = %q more=%v %v; want the first byte and more", data, more, err)
	}
	if data, more, err := w.ReadHead("docs/b.md", 10); err != nil || string(data) != "bb\n" || more {
		t.Errorf("ReadHead(b.md, 10) = %q more=%v %v; want all of it", data, more, err)
	}
	if _, _, err := w.ReadHead("docs", 10); err == nil || !strings.Contains(err.Error(), "read docs: not a regular file") {
		t.Errorf("ReadHead(a directory) = %v", err)
	}

	if got, err := w.Glob("docs/*.md"); err != nil || !slices.Equal(got, []string{"docs/a.md", "docs/b.md"}) {
		t.Errorf("Glob = %v, %v", got, err)
	}

	if err := w.WriteFile("docs/a.md", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(w.Dir, "docs", "a.md")); string(got) != "new\n" {
		t.Errorf("docs/a.md = %q after WriteFile", got)
	}
	if err := w.WriteFile("link.md", []byte("overwritten\n")); err == nil || !strings.Contains(err.Error(), "write link.md: not a regular file") {
		t.Errorf("WriteFile through a symlink = %v", err)
	}
	if err := w.WriteFile("outside/secret.txt", []byte("overwritten\n")); err == nil || !strings.Contains(err.Error(), "leads outside the repository") {
		t.Errorf("WriteFile through a symlinked directory = %v", err)
	}
	if got, _ := os.ReadFile(secret); string(got) != "host secret\n" {
		t.Fatalf("a file of the host was written: %q", got)
	}
	if err := w.WriteFile("new.md", []byte("x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteFile of a missing file = %v, want ErrNotExist (it replaces files, never creates)", err)
	}
}

// TestScratchDirectories: scratch directories live outside the work tree, under names that cannot
// reach the clone's own directories, and go with the workspace.
func TestScratchDirectories(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "x\n"})
	w := open(t, repo.Remote, "akira/x")
	dir, err := w.Scratch("agent-home")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || strings.HasPrefix(dir, w.Dir+string(filepath.Separator)) {
		t.Fatalf("Scratch = %s (%v): want a directory outside the work tree %s", dir, err, w.Dir)
	}
	if again, err := w.Scratch("agent-home"); err != nil || again != dir {
		t.Errorf("Scratch twice = %s, %v; want the same directory", again, err)
	}
	for _, name := range []string{"", "a/b", `a\b`, "repo", "git", ".hidden"} {
		if _, err := w.Scratch(name); err == nil || !strings.Contains(err.Error(), "is not a scratch directory name") {
			t.Errorf("Scratch(%q) = %v, want a refusal", name, err)
		}
	}
	// A tool that leaves a read-only directory (Go's module cache) does not keep the workspace alive.
	ro := filepath.Join(dir, "pkg", "mod")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, ro, "f.go", "package f\n")
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("scratch directory left after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestDiffs: Diff is the branch against its base, StagedDiff the staged change against the last
// checkpoint; each starts with the files' summary.
func TestDiffs(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w := open(t, repo.Remote, "akira/x")
	write(t, w.Dir, "a.txt", "first\n")
	commit(t, w, "one\n")
	write(t, w.Dir, "b.txt", "second\n")
	if _, err := w.Stage(ctx); err != nil {
		t.Fatal(err)
	}
	staged, err := w.StagedDiff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(staged, "b.txt | 1 +") || !strings.Contains(staged, "+second") || strings.Contains(staged, "a.txt") {
		t.Errorf("StagedDiff shows more or less than the staged change:\n%s", staged)
	}
	commit(t, w, "two\n")
	diff, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 files changed", "a.txt", "+first", "b.txt", "+second"} {
		if !strings.Contains(diff, want) {
			t.Errorf("Diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "README.md") {
		t.Errorf("Diff shows the base's own file:\n%s", diff)
	}
}

func TestIdentityString(t *testing.T) {
	if got := (Identity{Name: "Akira", Email: "akira@example.com"}).String(); got != "Akira <akira@example.com>" {
		t.Fatalf("String = %q", got)
	}
	id, err := ParseIdentity(DefaultAuthor.String())
	if err != nil || id != DefaultAuthor {
		t.Fatalf("ParseIdentity(String()) = %+v, %v; want the default author back", id, err)
	}
}

// TestDryRunKeepsParkedWorkLocal: in a dry run nothing reaches the remote, not even parked work,
// and dropping it forgets it locally.
func TestDryRunKeepsParkedWorkLocal(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w, err := Clone(ctx, Options{Remote: repo.Remote, WorkDir: t.TempDir(), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Checkout(ctx, "akira/x"); err != nil {
		t.Fatal(err)
	}
	write(t, w.Dir, "a.txt", "a\n")
	commit(t, w, "one\n")
	if err := w.Push(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, w.Dir, "failed.txt", "did not verify\n")
	sha, err := w.PushParked(ctx, "1.2", "akira: parked 1.2\n")
	if err != nil || w.Parked("1.2") != sha {
		t.Fatalf("PushParked = %s, %v; Parked = %q", sha, err, w.Parked("1.2"))
	}
	if refs := gittest.Git(t, repo.Remote, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Fatalf("a dry run changed the remote's refs: %q", refs)
	}
	if err := w.DropParked(ctx, "1.2"); err != nil || w.Parked("1.2") != "" {
		t.Fatalf("DropParked = %v; Parked = %q", err, w.Parked("1.2"))
	}
	if err := w.DropParked(ctx, "never-parked"); err != nil {
		t.Fatalf("DropParked of a task never parked = %v", err)
	}
}
