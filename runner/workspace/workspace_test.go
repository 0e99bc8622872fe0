package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

func open(t *testing.T, remote, branch string) *Workspace {
	t.Helper()
	w, err := Clone(context.Background(), Options{Remote: remote, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Checkout(context.Background(), branch); err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	return w
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	gittest.WriteFiles(t, dir, map[string]string{name: content})
}

func commit(t *testing.T, w *Workspace, msg string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := w.Stage(ctx); err != nil {
		t.Fatal(err)
	}
	sha, err := w.Commit(ctx, msg)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return sha
}

func TestCheckpointPushesBranchAndLeavesUserCloneAlone(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	write(t, repo.Work, "dirty.txt", "user's uncommitted work\n")
	before := gittest.Snapshot(t, repo.Work)

	// The user's clone itself is the remote here, as with `akira run` and no --repo.
	w := open(t, repo.Work, "akira/roadmap")
	if !w.Created || w.Base != "main" {
		t.Fatalf("Created=%v Base=%q, want a new branch from main", w.Created, w.Base)
	}
	write(t, w.Dir, "a.txt", "a\n")
	sha := commit(t, w, "akira: t1 first\n\nAkira-Task: t1\n")
	if err := w.Push(context.Background()); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got := gittest.Git(t, repo.Work, "rev-parse", "refs/heads/akira/roadmap"); got != sha {
		t.Fatalf("branch in user repo = %s, want %s", got, sha)
	}
	if got := gittest.Git(t, repo.Work, "show", "akira/roadmap:a.txt"); got != "a" {
		t.Fatalf("a.txt = %q", got)
	}
	if got := gittest.Git(t, repo.Work, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "akira/roadmap"); got != "Akira <akira@users.noreply.github.com>|Akira <akira@users.noreply.github.com>" {
		t.Fatalf("identity = %q", got)
	}
	if after := gittest.Snapshot(t, repo.Work); after != before {
		t.Fatalf("user clone changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	dir := w.root
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("workspace %s not removed: %v", dir, err)
	}
}

func TestCheckoutContinuesExistingBranchAndReadsTrailers(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w := open(t, repo.Remote, "akira/x")
	write(t, w.Dir, "a.txt", "a\n")
	first := commit(t, w, "one\n\nAkira-Run: r1\nAkira-Task: t1\n")
	write(t, w.Dir, "b.txt", "b\n")
	commit(t, w, "plain commit without trailers\n")
	write(t, w.Dir, "c.txt", "c\n")
	third := commit(t, w, "three\n\nAkira-Task: t2\nAkira-Task: t3\n")
	if err := w.Push(context.Background()); err != nil {
		t.Fatal(err)
	}

	w2 := open(t, repo.Remote, "akira/x")
	if w2.Created || w2.Head() != third {
		t.Fatalf("Created=%v Head=%s, want to continue at %s", w2.Created, w2.Head(), third)
	}
	got, err := w2.Trailers(context.Background(), "Akira-Task")
	if err != nil {
		t.Fatal(err)
	}
	want := []Commit{{SHA: first, Values: []string{"t1"}}, {SHA: third, Values: []string{"t2", "t3"}}}
	if len(got) != len(want) {
		t.Fatalf("Trailers = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].SHA != want[i].SHA || !slices.Equal(got[i].Values, want[i].Values) {
			t.Fatalf("Trailers = %+v, want %+v", got, want)
		}
	}
}

func TestTrailersIgnoreBaseHistory(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	// A checkpoint of an earlier run that was merged into main must not count on a new branch.
	write(t, repo.Work, "old.txt", "x\n")
	gittest.Git(t, repo.Work, "add", "old.txt")
	gittest.Git(t, repo.Work, "commit", "-q", "-m", "old\n\nAkira-Task: t1")
	gittest.Git(t, repo.Work, "push", "-q", "origin", "main")
	w := open(t, repo.Remote, "akira/new")
	got, err := w.Trailers(context.Background(), "Akira-Task")
	if err != nil || len(got) != 0 {
		t.Fatalf("Trailers = %+v, %v; want none", got, err)
	}
}

func TestResetDropsEverythingSinceCheckpoint(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n", ".gitignore": "cache/\n"})
	w := open(t, repo.Remote, "akira/x")
	ctx := context.Background()
	head := w.Head()
	// What a misbehaving agent might do: edit, add, commit, switch branch, leave junk.
	write(t, w.Dir, "README.md", "changed\n")
	write(t, w.Dir, "new/file.txt", "new\n")
	write(t, w.Dir, "cache/keep.bin", "ignored\n")
	agentGit(t, w, "add", "--all")
	agentGit(t, w, "commit", "-q", "-m", "agent commit")
	agentGit(t, w, "checkout", "-q", "-b", "elsewhere")
	write(t, w.Dir, "untracked.txt", "junk\n")

	if err := w.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if got := agentGit(t, w, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD = %s, want %s", got, head)
	}
	if got := agentGit(t, w, "symbolic-ref", "HEAD"); got != "refs/heads/akira/x" {
		t.Fatalf("HEAD ref = %s", got)
	}
	if got := agentGit(t, w, "status", "--porcelain"); got != "" {
		t.Fatalf("status after reset: %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, "cache/keep.bin")); err != nil {
		t.Fatalf("ignored cache should survive a reset: %v", err)
	}
}

func TestCommitFoldsAgentCommitsAndBranchSwitches(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w := open(t, repo.Remote, "akira/x")
	start := w.Head()
	write(t, w.Dir, "a.txt", "a\n")
	agentGit(t, w, "checkout", "-q", "-b", "agent-branch")
	agentGit(t, w, "add", "a.txt")
	agentGit(t, w, "commit", "-q", "-m", "agent's own commit")
	write(t, w.Dir, "b.txt", "b\n")
	ctx := context.Background()
	changed, err := w.Stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"a.txt", "b.txt"}) {
		t.Fatalf("Stage = %v", changed)
	}
	sha, err := w.Commit(ctx, "checkpoint\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := agentGit(t, w, "rev-parse", sha+"^"); got != start {
		t.Fatalf("parent = %s, want the previous checkpoint %s", got, start)
	}
	if got := agentGit(t, w, "symbolic-ref", "HEAD"); got != "refs/heads/akira/x" {
		t.Fatalf("HEAD ref = %s", got)
	}
	if got := agentGit(t, w, "status", "--porcelain"); got != "" {
		t.Fatalf("status after commit: %q", got)
	}
}

func TestEmptyCheckpointIsStillACommit(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w := open(t, repo.Remote, "akira/x")
	start := w.Head()
	sha := commit(t, w, "nothing changed\n")
	if sha == start || agentGit(t, w, "rev-parse", sha+"^") != start {
		t.Fatalf("want a new empty commit on top of %s, got %s", start, sha)
	}
}

// TestPushNeverRecreatesADeletedBranch: a person deletes the run's branch while the run works; the
// next push is rejected instead of bringing the branch back, and a new branch cannot be pushed over
// one someone else created meanwhile.
func TestPushNeverRecreatesADeletedBranch(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w := open(t, repo.Remote, "akira/x")
	write(t, w.Dir, "a.txt", "a\n")
	commit(t, w, "one\n")
	if err := w.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "update-ref", "-d", "refs/heads/akira/x")
	write(t, w.Dir, "b.txt", "b\n")
	commit(t, w, "two\n")
	if err := w.Push(context.Background()); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("push after the branch was deleted = %v, want ErrPushRejected", err)
	}
	if out := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "branch", "--list", "akira/x"); out != "" {
		t.Fatalf("the deleted branch is back: %q", out)
	}

	fresh := open(t, repo.Remote, "akira/y")
	other := open(t, repo.Remote, "akira/y")
	commit(t, other, "theirs\n")
	if err := other.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	commit(t, fresh, "ours\n")
	if err := fresh.Push(context.Background()); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("push of a new branch someone created meanwhile = %v, want ErrPushRejected", err)
	}
}

func TestPushRejectedWhenRemoteMoved(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w1 := open(t, repo.Remote, "akira/x")
	write(t, w1.Dir, "a.txt", "a\n")
	commit(t, w1, "one\n")
	if err := w1.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	w2 := open(t, repo.Remote, "akira/x")
	write(t, w2.Dir, "b.txt", "b\n")
	commit(t, w2, "two\n")
	if err := w2.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, w1.Dir, "c.txt", "c\n")
	commit(t, w1, "three\n")
	err := w1.Push(context.Background())
	if !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push = %v, want ErrPushRejected", err)
	}
}

func TestParkedWorkRoundTrip(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	ctx := context.Background()
	w1 := open(t, repo.Remote, "akira/x")
	if err := w1.Push(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, w1.Dir, "failed.txt", "work that did not verify\n")
	parked, err := w1.PushParked(ctx, "2.1", "akira: parked 2.1\n")
	if err != nil {
		t.Fatalf("PushParked: %v", err)
	}
	if err := w1.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	// Another checkpoint lands after the park, as when independent tasks continue.
	write(t, w1.Dir, "other.txt", "independent\n")
	commit(t, w1, "independent\n")
	if err := w1.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, repo.Remote, "rev-parse", "refs/akira/parked/akira/x/2.1"); got != parked {
		t.Fatalf("parked ref = %s, want %s", got, parked)
	}

	w2 := open(t, repo.Remote, "akira/x")
	if w2.Parked("2.1") != parked {
		t.Fatalf("Parked = %q, want %s", w2.Parked("2.1"), parked)
	}
	if err := w2.ApplyParked(ctx, "2.1"); err != nil {
		t.Fatalf("ApplyParked: %v", err)
	}
	for _, f := range []string{"failed.txt", "other.txt"} {
		if _, err := os.Stat(filepath.Join(w2.Dir, f)); err != nil {
			t.Fatalf("%s missing after applying parked work: %v", f, err)
		}
	}
	if err := w2.DropParked(ctx, "2.1"); err != nil {
		t.Fatal(err)
	}
	if _, code := gittest.TryGit(t, repo.Remote, "rev-parse", "--verify", "-q", "refs/akira/parked/akira/x/2.1"); code == 0 {
		t.Fatal("parked ref still on the remote after DropParked")
	}
	if err := w2.ApplyParked(ctx, "2.1"); err == nil {
		t.Fatal("ApplyParked without parked work: want an error")
	}
}

// A remote that declines the parked ref for what it holds (GitHub refusing a workflow file from an App
// without the workflows permission; here a hidden ref) is ErrRefused, with the parked commit made in
// the workspace, and nothing parked on the remote; a push that fails otherwise is not.
func TestParkedWorkRefusedByTheRemote(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	ctx := context.Background()
	w := open(t, repo.Remote, "akira/x")
	if err := w.Push(ctx); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo.Remote, "config", "receive.hideRefs", "refs/akira/parked")
	write(t, w.Dir, "failed.txt", "work the remote will not hold\n")
	sha, err := w.PushParked(ctx, "1", "akira: parked 1\n")
	if !errors.Is(err, ErrRefused) || sha == "" {
		t.Fatalf("PushParked = %q, %v; want the local commit and ErrRefused", sha, err)
	}
	if got, err := w.Git(ctx, "show", sha+":failed.txt"); err != nil || got != "work the remote will not hold" {
		t.Errorf("the parked commit holds %q, %v", got, err)
	}
	if w.Parked("1") != "" {
		t.Errorf("Parked = %q after the remote refused it", w.Parked("1"))
	}

	w.opts.Remote = filepath.Join(t.TempDir(), "gone.git")
	if _, err := w.PushParked(ctx, "1", "akira: parked 1\n"); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("a push to a remote that is not there = %v; want an error that is not ErrRefused", err)
	}
}

func TestInvalidBranchAndMissingBase(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	w, err := Clone(context.Background(), Options{Remote: repo.Remote, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, b := range []string{"", "a..b", "has space", "-x", "x.lock", "a:b"} {
		if err := w.Checkout(context.Background(), b); err == nil {
			t.Errorf("Checkout(%q): want an error", b)
		}
	}
	if _, err := Clone(context.Background(), Options{Remote: repo.Remote, Base: "nope", WorkDir: t.TempDir()}); err == nil {
		t.Fatal("Clone with a missing base: want an error")
	}
}

func TestReadBase(t *testing.T) {
	repo := gittest.New(t, map[string]string{".github/akira.yml": "roadmap: docs/PLAN.md\n"})
	w := open(t, repo.Remote, "akira/x")
	data, ok, err := w.ReadBase(context.Background(), ".github/akira.yml")
	if err != nil || !ok || string(data) != "roadmap: docs/PLAN.md\n" {
		t.Fatalf("ReadBase = %q %v %v", data, ok, err)
	}
	if _, ok, err := w.ReadBase(context.Background(), "missing.txt"); ok || err != nil {
		t.Fatalf("ReadBase(missing) = %v %v", ok, err)
	}
}

// The token must reach git's HTTP requests (so it works against GitHub) through the environment only:
// every clone, fetch and push asks Auth again, and no trace of it stays in the clone.
func TestAuthHeaderOnlyThroughEnvironment(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	const header = "Authorization: Basic c2VjcmV0LXRva2VuLXZhbHVl"
	srv := gittest.ServeWithAuth(t, repo.Remote, header)
	url := srv.URL

	var calls atomic.Int32
	ctx := context.Background()
	w, err := Clone(ctx, Options{Remote: url, WorkDir: t.TempDir(), Auth: func(context.Context) (string, error) {
		calls.Add(1)
		return header, nil
	}})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	defer w.Close()
	if err := w.Checkout(ctx, "akira/x"); err != nil {
		t.Fatal(err)
	}
	write(t, w.Dir, "a.txt", "a\n")
	commit(t, w, "one\n")
	if err := w.Push(ctx); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if calls.Load() != 3 { // clone, fetch of parked refs, push
		t.Fatalf("Auth called %d times, want 3", calls.Load())
	}
	if srv.Served.Load() == 0 || srv.Refused.Load() != 0 {
		t.Fatalf("served=%d refused=%d", srv.Served.Load(), srv.Refused.Load())
	}
	if got := gittest.Git(t, repo.Remote, "rev-parse", "refs/heads/akira/x"); got != w.Head() {
		t.Fatalf("remote branch = %s, want %s", got, w.Head())
	}
	cfg, err := os.ReadFile(filepath.Join(w.GitDir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "c2VjcmV0") || strings.Contains(string(cfg), "extraheader") {
		t.Fatalf(".git/config holds the credential:\n%s", cfg)
	}

	// Without the header the same server refuses, so the test above really depended on it.
	_, err = Clone(ctx, Options{Remote: url, WorkDir: t.TempDir()})
	if err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("Clone without auth = %v, want a refusal", err)
	}
}

func TestParseIdentity(t *testing.T) {
	tests := []struct {
		in      string
		want    Identity
		wantErr bool
	}{
		{"Akira <akira@users.noreply.github.com>", Identity{"Akira", "akira@users.noreply.github.com"}, false},
		{"  Jane Q. Doe <jane@example.com> ", Identity{"Jane Q. Doe", "jane@example.com"}, false},
		{"no email", Identity{}, true},
		{"<x@y>", Identity{}, true},
	}
	for _, tt := range tests {
		got, err := ParseIdentity(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseIdentity(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestRefSafe(t *testing.T) {
	tests := map[string]string{"2.1": "2.1", "T-3": "T-3", "a b/c": "a-b-c", "..x": "x", "x.lock": "task-x.lock", "": "task-"}
	for in, want := range tests {
		if got := refSafe(in); got != want {
			t.Errorf("refSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// agentGit runs git on the workspace's repository the way an agent could when the operator turned
// the sandbox off: it knows where the git directory is and uses it directly.
func agentGit(t *testing.T, w *Workspace, args ...string) string {
	t.Helper()
	return gittest.Git(t, w.Dir, append([]string{"--git-dir=" + w.GitDir(), "--work-tree=" + w.Dir}, args...)...)
}
