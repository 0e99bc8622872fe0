package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

const cacheTestHeader = "Authorization: Basic bWlycm9yLXNlY3JldC10b2tlbg=="

// cacheFixture is a repository served over git's smart HTTP with credentials, and a cache.
type cacheFixture struct {
	repo  gittest.Repo
	srv   *gittest.AuthServer
	cache *Cache
	logs  *bytes.Buffer
}

func newCacheFixture(t *testing.T, maxBytes int64) *cacheFixture {
	t.Helper()
	repo := gittest.New(t, map[string]string{"README.md": "hello\n", "go.mod": "module x\n"})
	c, err := NewCache(filepath.Join(t.TempDir(), "cache"), maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, nil))
	return &cacheFixture{repo: repo, srv: gittest.ServeWithAuth(t, repo.Remote, cacheTestHeader), cache: c, logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (f *cacheFixture) clone(t *testing.T, url string) *Workspace {
	t.Helper()
	w, err := Clone(context.Background(), Options{Remote: url, WorkDir: t.TempDir(), Cache: f.cache,
		Auth: func(context.Context) (string, error) { return cacheTestHeader, nil }})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// upstream commits a change to the remote's main branch from the user's clone.
func (f *cacheFixture) upstream(t *testing.T, name, content string) string {
	t.Helper()
	gittest.WriteFiles(t, f.repo.Work, map[string]string{name: content})
	gittest.Git(t, f.repo.Work, "add", "--all")
	gittest.Git(t, f.repo.Work, "commit", "--quiet", "-m", "upstream "+name)
	gittest.Git(t, f.repo.Work, "push", "--quiet", "--force", "origin", "HEAD:main")
	return gittest.Git(t, f.repo.Work, "rev-parse", "HEAD")
}

func (f *cacheFixture) mirrors(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(f.cache.Dir, "*.git"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// treeDigest hashes every file under dir (path, mode, content).
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %x\n", strings.TrimPrefix(p, dir), info.Mode(), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestCacheable(t *testing.T) {
	for remote, want := range map[string]bool{
		"https://github.com/octo/hello.git":    true,
		"http://127.0.0.1:8080/octo/hello.git": true,
		"ssh://git@github.com/octo/hello.git":  true,
		"git@github.com:octo/hello.git":        true,
		"/srv/git/hello.git":                   false,
		"file:///srv/git/hello.git":            false,
		"../hello.git":                         false,
		"C:/repos/hello":                       true, // scp-like to git as well; not a path Akira is given
	} {
		if got := Cacheable(remote); got != want {
			t.Errorf("Cacheable(%q) = %v; want %v", remote, got, want)
		}
	}
	if key("https://a.example/o/r.git") == key("https://b.example/o/r.git") {
		t.Error("two hosts' o/r share a mirror")
	}
}

// TestCacheReusedAcrossRuns: the first workspace makes the mirror, the next fetches only what is
// new into it; both see the remote's current branch, the workspaces share the mirror's object files
// (hard links), and the credential is in no file of the cache nor in its log.
func TestCacheReusedAcrossRuns(t *testing.T) {
	f := newCacheFixture(t, 0)
	w1 := f.clone(t, f.srv.URL)
	if err := w1.Checkout(context.Background(), "akira/one"); err != nil {
		t.Fatal(err)
	}
	if got := f.mirrors(t); len(got) != 1 {
		t.Fatalf("mirrors = %v; want one", got)
	}
	head := f.upstream(t, "new.txt", "new\n")
	w2 := f.clone(t, f.srv.URL)
	if got, _ := w2.Git(context.Background(), "rev-parse", "refs/remotes/origin/main"); got != head {
		t.Errorf("second workspace's origin/main = %s; want the new upstream head %s", got, head)
	}
	if err := w2.Checkout(context.Background(), "akira/two"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(w2.Dir, "new.txt")); err != nil || string(data) != "new\n" {
		t.Errorf("new.txt = %q, %v", data, err)
	}
	if url, _ := w2.Git(context.Background(), "config", "remote.origin.url"); url != f.srv.URL {
		t.Errorf("workspace origin = %q; want the remote, not the mirror", url)
	}
	if got := f.mirrors(t); len(got) != 1 {
		t.Fatalf("mirrors = %v; want still one", got)
	}
	// The object files are links to the mirror's, not copies.
	linked := 0
	_ = filepath.WalkDir(filepath.Join(w2.GitDir(), "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					linked++
				}
			}
		}
		return nil
	})
	if linked == 0 {
		t.Error("no object file of the workspace is shared with the mirror")
	}
	// Pushing still goes to the remote.
	write(t, w2.Dir, "task.txt", "done\n")
	commit(t, w2, "task\n")
	if err := w2.Push(context.Background()); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got := gittest.Git(t, f.repo.Remote, "rev-parse", "refs/heads/akira/two"); got != w2.Head() {
		t.Errorf("remote akira/two = %s; want %s", got, w2.Head())
	}
	secret := strings.TrimPrefix(cacheTestHeader, "Authorization: Basic ")
	_ = filepath.WalkDir(f.cache.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, err := os.ReadFile(p); err == nil && (bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte("extraheader"))) {
				t.Errorf("%s holds the credential", strings.TrimPrefix(p, f.cache.Dir))
			}
		}
		return nil
	})
	if strings.Contains(f.logs.String(), secret) {
		t.Error("the cache's log holds the credential")
	}
}

// TestWorkspaceNeverWritesIntoTheMirror: commits, a gc and even an overwrite of an object file's
// path in the workspace leave the mirror's files as they were.
func TestWorkspaceNeverWritesIntoTheMirror(t *testing.T) {
	f := newCacheFixture(t, 0)
	w := f.clone(t, f.srv.URL)
	mirror := f.mirrors(t)[0]
	before := treeDigest(t, filepath.Join(mirror, "objects"))
	ctx := context.Background()
	if err := w.Checkout(ctx, "akira/x"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		write(t, w.Dir, fmt.Sprintf("f%d.txt", i), strings.Repeat("x", 1000*i)+"\n")
		commit(t, w, fmt.Sprintf("c%d\n", i))
	}
	if _, err := w.Git(ctx, "gc", "--quiet", "--prune=now", "--aggressive"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if after := treeDigest(t, filepath.Join(mirror, "objects")); after != before {
		t.Error("the mirror's objects changed while a workspace made from it worked")
	}
	gittest.Git(t, mirror, "fsck", "--connectivity-only")
}

// TestConcurrentWorkspacesShareOneMirror: jobs on one repository at once wait for each other's
// fetch and all get a correct workspace from one mirror.
func TestConcurrentWorkspacesShareOneMirror(t *testing.T) {
	f := newCacheFixture(t, 0)
	head := gittest.Git(t, f.repo.Remote, "rev-parse", "refs/heads/main")
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := Clone(context.Background(), Options{Remote: f.srv.URL, WorkDir: t.TempDir(), Cache: f.cache,
				Auth: func(context.Context) (string, error) { return cacheTestHeader, nil }})
			if err != nil {
				errs <- err
				return
			}
			defer w.Close()
			if err := w.Checkout(context.Background(), fmt.Sprintf("akira/c%d", i)); err != nil {
				errs <- err
				return
			}
			if w.Head() != head {
				errs <- fmt.Errorf("workspace %d at %s; want %s", i, w.Head(), head)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := f.mirrors(t); len(got) != 1 {
		t.Errorf("mirrors = %v; want one", got)
	}
}

// TestCacheEvictsLeastRecentlyUsed: over its cap, the cache removes the mirrors used longest ago,
// never the one just used and never one in use.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	f := newCacheFixture(t, 1) // any mirror is over the cap
	other := gittest.New(t, map[string]string{"b.txt": "b\n"})
	otherSrv := gittest.ServeWithAuth(t, other.Remote, cacheTestHeader)
	f.clone(t, f.srv.URL)
	first := f.mirrors(t)
	// The first mirror is in use (locked) while the second is made: it must survive.
	m, err := f.cache.open(context.Background(), f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f.clone(t, otherSrv.URL)
	if got := f.mirrors(t); len(got) != 2 {
		t.Errorf("mirrors while the first is in use = %v; want both", got)
	}
	m.close()
	f.clone(t, otherSrv.URL)
	got := f.mirrors(t)
	if len(got) != 1 || got[0] == first[0] {
		t.Errorf("mirrors = %v; want only the most recently used (not %v)", got, first)
	}
	if !strings.Contains(f.logs.String(), "evicted") {
		t.Errorf("no eviction logged:\n%s", f.logs)
	}
}

// TestCorruptMirrorIsRebuilt: lost objects are fetched again; a mirror git cannot even read is
// found out by its check, dropped and made again; the workspace is correct either way.
func TestCorruptMirrorIsRebuilt(t *testing.T) {
	f := newCacheFixture(t, 0)
	f.clone(t, f.srv.URL)
	mirror := f.mirrors(t)[0]
	// Lose every object but keep the refs, as a disk failure or a half-copied cache would.
	if err := os.RemoveAll(filepath.Join(mirror, "objects", "pack")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(mirror, "objects"))
	for _, e := range entries {
		if len(e.Name()) == 2 {
			_ = os.RemoveAll(filepath.Join(mirror, "objects", e.Name()))
		}
	}
	if _, code := gittest.TryGit(t, mirror, "fsck", "--connectivity-only"); code == 0 {
		t.Fatal("the test did not corrupt the mirror")
	}
	checkReadme := func(w *Workspace) {
		t.Helper()
		if err := w.Checkout(context.Background(), "akira/after"); err != nil {
			t.Fatalf("Checkout: %v", err)
		}
		if data, err := os.ReadFile(filepath.Join(w.Dir, "README.md")); err != nil || string(data) != "hello\n" {
			t.Errorf("README.md = %q, %v", data, err)
		}
	}
	checkReadme(f.clone(t, f.srv.URL))
	gittest.Git(t, mirror, "fsck", "--connectivity-only")

	// A mirror whose configuration is garbage fails every command: it is rebuilt.
	if err := os.WriteFile(filepath.Join(mirror, "config"), []byte("[core\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkReadme(f.clone(t, f.srv.URL))
	gittest.Git(t, mirror, "fsck", "--connectivity-only")
	if !strings.Contains(f.logs.String(), "corrupt") {
		t.Errorf("the rebuild was not logged:\n%s", f.logs)
	}
}

// TestDamagedBlobFoundAtCheckout: a blob that is there but unreadable passes the fetch and the
// connectivity check; the checkout that fails to read it drops the mirror, so that the next
// workspace rebuilds it.
func TestDamagedBlobFoundAtCheckout(t *testing.T) {
	f := newCacheFixture(t, 0)
	ctx := context.Background()
	gittest.Git(t, f.repo.Work, "checkout", "--quiet", "-b", "feature")
	gittest.WriteFiles(t, f.repo.Work, map[string]string{"only-here.txt": "unique blob content\n"})
	gittest.Git(t, f.repo.Work, "add", "--all")
	gittest.Git(t, f.repo.Work, "commit", "--quiet", "-m", "feature")
	gittest.Git(t, f.repo.Work, "push", "--quiet", "origin", "feature")
	blob := gittest.Git(t, f.repo.Work, "rev-parse", "feature:only-here.txt")
	f.clone(t, f.srv.URL)
	mirror := f.mirrors(t)[0]
	// Unpack the mirror's packs into loose objects, then damage the blob's file.
	packs, _ := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.pack"))
	for _, p := range packs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			_ = os.Remove(strings.TrimSuffix(p, ".pack") + ext)
		}
		if out, code := tryGitStdin(t, mirror, data, "unpack-objects", "-q"); code != 0 {
			t.Fatalf("unpack: %s", out)
		}
	}
	loose := filepath.Join(mirror, "objects", blob[:2], blob[2:])
	if err := os.Remove(loose); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, []byte("not zlib at all"), 0o444); err != nil {
		t.Fatal(err)
	}
	w := f.clone(t, f.srv.URL)
	err := w.Checkout(ctx, "feature")
	if !errors.Is(err, ErrCorruptMirror) {
		t.Fatalf("Checkout = %v; want ErrCorruptMirror", err)
	}
	if got := f.mirrors(t); len(got) != 0 {
		t.Fatalf("the corrupt mirror was kept: %v", got)
	}
	w2 := f.clone(t, f.srv.URL)
	if err := w2.Checkout(ctx, "feature"); err != nil {
		t.Fatalf("Checkout after the rebuild: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(w2.Dir, "only-here.txt")); err != nil || string(data) != "unique blob content\n" {
		t.Errorf("only-here.txt = %q, %v", data, err)
	}
}

// TestCacheFollowsForcePushesAndDeletions: a force-pushed branch is seen at its new head, and a
// branch deleted upstream is gone from the next workspace (a run starts it afresh).
func TestCacheFollowsForcePushesAndDeletions(t *testing.T) {
	f := newCacheFixture(t, 0)
	ctx := context.Background()
	gittest.Git(t, f.repo.Work, "push", "--quiet", "origin", "HEAD:refs/heads/akira/gone")
	w := f.clone(t, f.srv.URL)
	if err := w.Checkout(ctx, "akira/gone"); err != nil || w.Created {
		t.Fatalf("Checkout akira/gone = %v, created %v; want the existing branch", err, w.Created)
	}
	// Rewrite main's history and delete the branch.
	gittest.Git(t, f.repo.Work, "commit", "--quiet", "--amend", "-m", "rewritten")
	rewritten := gittest.Git(t, f.repo.Work, "rev-parse", "HEAD")
	gittest.Git(t, f.repo.Work, "push", "--quiet", "--force", "origin", "HEAD:main")
	gittest.Git(t, f.repo.Work, "push", "--quiet", "origin", ":refs/heads/akira/gone")
	w2 := f.clone(t, f.srv.URL)
	if got, _ := w2.Git(ctx, "rev-parse", "refs/remotes/origin/main"); got != rewritten {
		t.Errorf("origin/main after a force push = %s; want %s", got, rewritten)
	}
	if err := w2.Checkout(ctx, "akira/gone"); err != nil || !w2.Created {
		t.Errorf("Checkout of a branch deleted upstream = %v, created %v; want a new branch", err, w2.Created)
	}
	if w2.Head() != rewritten {
		t.Errorf("new branch starts at %s; want the rewritten main %s", w2.Head(), rewritten)
	}
}

// tryGitStdin runs git in dir with stdin and returns its output and exit code.
func tryGitStdin(t *testing.T, dir string, stdin []byte, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestCachedWorkspaceSeesParkedWork: work parked by one workspace comes to the next through the
// mirror, and is gone from it once dropped.
func TestCachedWorkspaceSeesParkedWork(t *testing.T) {
	f := newCacheFixture(t, 0)
	ctx := context.Background()
	w1 := f.clone(t, f.srv.URL)
	if err := w1.Checkout(ctx, "akira/p"); err != nil {
		t.Fatal(err)
	}
	write(t, w1.Dir, "failed.txt", "work that did not verify\n")
	parked, err := w1.PushParked(ctx, "1.2", "akira: parked 1.2\n")
	if err != nil {
		t.Fatalf("PushParked: %v", err)
	}
	w2 := f.clone(t, f.srv.URL)
	if err := w2.Checkout(ctx, "akira/p"); err != nil {
		t.Fatal(err)
	}
	if w2.Parked("1.2") != parked {
		t.Fatalf("Parked = %q; want %s", w2.Parked("1.2"), parked)
	}
	if err := w2.DropParked(ctx, "1.2"); err != nil {
		t.Fatal(err)
	}
	w3 := f.clone(t, f.srv.URL)
	if err := w3.Checkout(ctx, "akira/p"); err != nil {
		t.Fatal(err)
	}
	if w3.Parked("1.2") != "" {
		t.Errorf("dropped parked work still comes through the mirror: %s", w3.Parked("1.2"))
	}
}

// TestKeptWorkTreeIsReused: with KeepWorkTrees, a closed workspace's tree is the next workspace's,
// and that workspace is exactly what a fresh clone would be: upstream's new commit checked out, every
// file the last run changed, added or left ignored undone, its branch and scratch directory gone,
// its hooks and configuration changes cleared; only files that did not change keep their inode.
// Without KeepWorkTrees, or once the cache holds as many trees as it keeps, Close removes the tree.
func TestKeptWorkTreeIsReused(t *testing.T) {
	ctx := context.Background()
	f := newCacheFixture(t, 0)
	gittest.WriteFiles(t, f.repo.Work, map[string]string{".gitignore": "build/\n"})
	f.upstream(t, "keep.txt", "unchanged\n")
	f.cache.KeepWorkTrees = 1
	w1 := f.clone(t, f.srv.URL)
	if err := w1.Checkout(ctx, "akira/one"); err != nil {
		t.Fatal(err)
	}
	keepInode := inode(t, filepath.Join(w1.Dir, "keep.txt"))
	// What a run leaves: a change, a new file, an ignored file, a commit on its branch, a scratch
	// HOME, a hook and a configuration change in the git directory.
	write(t, w1.Dir, "README.md", "changed by the last run\n")
	write(t, w1.Dir, "new.txt", "added by the last run\n")
	write(t, w1.Dir, "build/out.bin", "ignored\n")
	if _, err := w1.Scratch("home"); err != nil {
		t.Fatal(err)
	}
	commit(t, w1, "last run\n")
	write(t, w1.Dir, "README.md", "changed again, not committed\n")
	write(t, w1.GitDir(), "hooks/post-checkout", "#!/bin/sh\ntouch /nonexistent\n")
	root := filepath.Dir(w1.Dir)
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "home")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the kept tree's scratch directory is still there: %v", err)
	}
	head := f.upstream(t, "upstream.txt", "new upstream\n")

	w2 := f.clone(t, f.srv.URL)
	if filepath.Dir(w2.Dir) != root {
		t.Fatalf("the second workspace is in %s, not the kept tree %s", filepath.Dir(w2.Dir), root)
	}
	if err := w2.Checkout(ctx, "akira/two"); err != nil {
		t.Fatal(err)
	}
	if w2.Head() != head {
		t.Errorf("akira/two starts at %s, want upstream's %s", w2.Head(), head)
	}
	fresh := f.clone(t, f.srv.URL) // the cache keeps one tree, given to w2: this one is a fresh clone
	if filepath.Dir(fresh.Dir) == root {
		t.Fatal("one kept tree given to two workspaces")
	}
	if err := fresh.Checkout(ctx, "akira/two"); err != nil {
		t.Fatal(err)
	}
	if got, want := treeDigest(t, w2.Dir), treeDigest(t, fresh.Dir); got != want {
		t.Errorf("the reused tree differs from a fresh clone's")
	}
	if out, _ := w2.Git(ctx, "status", "--porcelain", "--ignored"); out != "" {
		t.Errorf("the reused tree is not clean:\n%s", out)
	}
	if out, _ := w2.Git(ctx, "for-each-ref", "--format=%(refname)", "refs/heads/"); out != "refs/heads/akira/two" {
		t.Errorf("local branches of the reused tree: %q, want akira/two alone", out)
	}
	if _, err := os.Stat(filepath.Join(w2.GitDir(), "hooks")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the last run's hooks are still in the git directory: %v", err)
	}
	if got := inode(t, filepath.Join(w2.Dir, "keep.txt")); got != keepInode {
		t.Error("an unchanged file was written again: the tree was not reused")
	}

	// One tree is kept: closing both keeps w2's, removes the other.
	freshRoot := filepath.Dir(fresh.Dir)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(freshRoot); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a tree beyond KeepWorkTrees was kept: %v", err)
	}
	f.cache.DropWorkTrees()
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DropWorkTrees left the kept tree: %v", err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}
