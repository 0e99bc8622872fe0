package workspace

import (
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

const spyToken = "ghs_spyInstallationToken0123456789"

// spiedWorkflow drives every workspace operation that runs git — clones with and without the
// repository cache, checkouts of a new and an existing branch, stage, commit (on the branch and after
// the agent detached HEAD), push, park, apply and drop parked work, reset, exclusions, revert, combine
// with a neighbour's push, sync, diffs, reads — against a smart-HTTP remote that requires the token,
// with gittest.Spy recording every git process. It returns the spy and the calls.
func spiedWorkflow(t *testing.T) (*gittest.Spy, []gittest.GitCall, *gittest.AuthServer, string) {
	t.Helper()
	repo := gittest.New(t, map[string]string{"README.md": "hello\n", "ROADMAP.md": "- [ ] 1 one\n- [ ] 2 two\n"})
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+spyToken))
	srv := gittest.ServeWithAuth(t, repo.Remote, header)
	cache, err := NewCache(filepath.Join(t.TempDir(), "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	spy := gittest.NewSpy(t)
	spy.Record(t, true)
	ctx := context.Background()
	auth := func(context.Context) (string, error) { return header, nil }
	clone := func(c *Cache) *Workspace {
		t.Helper()
		w, err := Clone(ctx, Options{Remote: srv.URL, WorkDir: t.TempDir(), Auth: auth, Cache: c})
		if err != nil {
			t.Fatalf("Clone: %v", err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	checkpoint := func(w *Workspace, file, msg string) string {
		t.Helper()
		write(t, w.Dir, file, file+"\n")
		_, err := w.Stage(ctx)
		must("Stage", err)
		_, err = w.StagedDiff(ctx)
		must("StagedDiff", err)
		sha, err := w.Commit(ctx, msg)
		must("Commit", err)
		return sha
	}

	w := clone(nil)
	must("Checkout", w.Checkout(ctx, "akira/x"))
	_, _, err = w.ReadBase(ctx, "ROADMAP.md")
	must("ReadBase", err)
	write(t, w.Dir, "ROADMAP.md", "- [x] 1 one\n- [ ] 2 two\n")
	first := checkpoint(w, "a.txt", "one\n\nAkira-Task: 1\n")
	must("Push", w.Push(ctx))
	_, err = w.Trailers(ctx, "Akira-Task")
	must("Trailers", err)
	_, err = w.Checkpoints(ctx, "Akira-Task", "Akira-Undone")
	must("Checkpoints", err)
	_, err = w.Diff(ctx)
	must("Diff", err)

	write(t, w.Dir, "b.txt", "parked\n")
	_, err = w.PushParked(ctx, "2", "parked\n")
	must("PushParked", err)
	must("Reset", w.Reset(ctx))
	must("ApplyParked", w.ApplyParked(ctx, "2"))
	must("Reset", w.Reset(ctx))
	must("DropParked", w.DropParked(ctx, "2"))

	// A repository the agent nested in the work tree is committed as files.
	spy.Record(t, false)
	write(t, w.Dir, "vendor/lib/a.go", "package lib\n")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "init", "-q")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "add", "a.go")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "commit", "-q", "-m", "nested")
	spy.Record(t, true)
	checkpoint(w, "f.txt", "nested\n")

	write(t, w.Dir, "node_modules/x/index.js", "x\n")
	_, err = w.ExcludeUntracked(ctx)
	must("ExcludeUntracked", err)
	_, err = w.Revert(ctx, first, "undo one\n\nAkira-Undone: 1\n", "ROADMAP.md", nil)
	must("Revert", err)
	must("Push", w.Push(ctx))

	// The agent left HEAD detached: the checkpoint is made with write-tree, commit-tree and update-ref.
	must("detach", os.WriteFile(filepath.Join(w.GitDir(), "HEAD"), []byte(w.Head()+"\n"), 0o644))
	checkpoint(w, "c.txt", "three\n")
	must("Push", w.Push(ctx))

	// A neighbour working from the cache pushes to the branch; this workspace combines its own work
	// on top, then the neighbour syncs.
	n := clone(cache)
	must("Checkout", n.Checkout(ctx, "akira/x"))
	checkpoint(n, "d.txt", "four\n")
	must("Push", n.Push(ctx))
	checkpoint(w, "e.txt", "five\n")
	moved, conflicts, err := w.Combine(ctx, "ROADMAP.md")
	if err != nil || !moved || len(conflicts) > 0 {
		t.Fatalf("Combine = %v, %v, %v", moved, conflicts, err)
	}
	_, err = w.Commit(ctx, "five again\n")
	must("Commit", err)
	must("Push", w.Push(ctx))
	must("Sync", n.Sync(ctx))
	_, err = n.Git(ctx, "status", "--porcelain")
	must("Git", err)
	// A second workspace from the cache fetches into the existing mirror.
	must("Checkout", clone(cache).Checkout(ctx, "akira/y"))

	spy.Record(t, false)
	return spy, spy.Calls(t), srv, w.GitDir()
}

// TestGitCallsAkiraMakes watches every git process of the workflow above.
func TestGitCallsAkiraMakes(t *testing.T) {
	spy, calls, srv, gitDir := spiedWorkflow(t)
	t.Logf("%d git processes watched", len(calls))
	t.Run("no hook runs", func(t *testing.T) { everyGitCallRunsNoHook(t, spy, calls, gitDir) })
	t.Run("token never on the command line", func(t *testing.T) { tokenNeverOnGitsCommandLine(t, calls, srv) })
}

// everyGitCallRunsNoHook: whatever hook an attacker writes between two of Akira's git commands
// (into the workspace's git directory or the shared repository cache), no git command Akira runs
// runs it: every one of them, not a sample, resolves core.hooksPath to /dev/null. The same hooks do
// run for a git without Akira's settings, so the test would see one that did.
func everyGitCallRunsNoHook(t *testing.T, spy *gittest.Spy, calls []gittest.GitCall, gitDir string) {
	if ran := spy.HooksRun(t); len(ran) > 0 {
		t.Errorf("Akira's git ran hooks planted between its commands:\n%s", strings.Join(ran, "\n"))
	}
	seen := map[string]bool{}
	for _, c := range calls {
		seen[c.Subcommand()] = true
		if c.HooksPath != os.DevNull {
			t.Errorf("git %s (in %s) runs with core.hooksPath %q, want %s", strings.Join(c.Args, " "), c.Dir, c.HooksPath, os.DevNull)
		}
	}
	// The workflow reaches every kind of command that runs hooks, so a command left without the
	// setting would have run one.
	for _, sub := range []string{"clone", "init", "fetch", "checkout", "add", "commit", "commit-tree", "update-ref", "symbolic-ref",
		"push", "cherry-pick", "revert", "apply", "reset", "clean", "rm", "config", "rev-parse", "rev-list", "diff", "log", "status",
		"ls-files", "ls-remote", "for-each-ref", "cat-file", "merge-base", "write-tree"} {
		if !seen[sub] {
			t.Errorf("the workflow ran no git %s: the test no longer covers it (saw %v)", sub, sortedKeys(seen))
		}
	}

	// Control: a git that does not carry Akira's settings runs what was planted.
	spy.Record(t, true)
	out, code := gittest.TryGit(t, filepath.Dir(gitDir), "--git-dir="+gitDir, "--work-tree="+filepath.Join(filepath.Dir(gitDir), "repo"),
		"commit", "--quiet", "--allow-empty", "-m", "control")
	spy.Record(t, false)
	if ran := spy.HooksRun(t); code != 0 || !slices.ContainsFunc(ran, func(l string) bool { return strings.HasPrefix(l, "pre-commit") }) {
		t.Fatalf("a plain git commit ran no planted hook (exit %d, %s; ran %v): the spy plants nothing", code, out, ran)
	}
}

// tokenNeverOnGitsCommandLine: the installation token reaches git only through the environment
// (GIT_CONFIG_COUNT/KEY/VALUE http.extraheader) of the commands that talk to the remote: no argument
// of any git process Akira starts holds it, in any spelling, and no URL carries credentials; the
// remote, which refuses requests without the token, served every one.
func tokenNeverOnGitsCommandLine(t *testing.T, calls []gittest.GitCall, srv *gittest.AuthServer) {
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+spyToken))
	secrets := []string{spyToken, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + spyToken)), "x-access-token", "extraheader"}
	remote := 0
	for _, c := range calls {
		for _, a := range c.Args {
			for _, s := range secrets {
				if strings.Contains(strings.ToLower(a), strings.ToLower(s)) {
					t.Errorf("git %s: an argument holds %q", c.Subcommand(), s)
				}
			}
			if u, err := url.Parse(a); err == nil && u.User != nil {
				t.Errorf("git %s: the URL %q carries credentials", c.Subcommand(), a)
			}
		}
		talks := slices.Contains([]string{"clone", "fetch", "push", "ls-remote"}, c.Subcommand()) && slices.Contains(c.Args, srv.URL)
		if got := extraHeader(t, c); talks && got != header {
			t.Errorf("git %s talks to the remote with http.extraheader %q in its environment, want the token's", c.Subcommand(), got)
		} else if !talks && got != "" {
			t.Errorf("git %s does not talk to the remote but holds the token in its environment", c.Subcommand())
		}
		if talks {
			remote++
		}
	}
	t.Logf("%d of them talked to the remote, which served %d requests", remote, srv.Served.Load())
	if remote < 5 || srv.Served.Load() == 0 || srv.Refused.Load() != 0 {
		t.Errorf("%d git commands talked to the remote; it served %d requests and refused %d", remote, srv.Served.Load(), srv.Refused.Load())
	}
}

// extraHeader is the http.extraheader a git process got through GIT_CONFIG_COUNT/KEY/VALUE.
func extraHeader(t *testing.T, c gittest.GitCall) string {
	t.Helper()
	n, _ := strconv.Atoi(c.Getenv("GIT_CONFIG_COUNT"))
	value := ""
	for i := range n {
		if strings.EqualFold(c.Getenv("GIT_CONFIG_KEY_"+strconv.Itoa(i)), "http.extraheader") {
			value = c.Getenv("GIT_CONFIG_VALUE_" + strconv.Itoa(i))
		}
	}
	return value
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
