package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// TestGitRunsNothingTheWorkspaceWrote: an agent with the sandbox off knows where the git directory
// is and plants every door git has for running code or sending a push elsewhere, in the git
// directory, in the work tree and in a committed .gitattributes. Akira's stage, commit, push, park and
// reset run none of it, and the push reaches the remote Akira was given, not the agent's.
func TestGitRunsNothingTheWorkspaceWrote(t *testing.T) {
	repo := gittest.New(t, map[string]string{"README.md": "hello\n"})
	evil := gittest.New(t, map[string]string{"x": "x\n"})
	w := open(t, repo.Remote, "akira/x")
	ctx := context.Background()

	marks := t.TempDir()
	mark := func(name string) string { return "touch " + filepath.Join(marks, name) }
	hook := "#!/bin/sh\n" + mark("hook-$(basename $0)") + "\n"
	hooks := t.TempDir()
	for _, name := range []string{"pre-commit", "pre-push", "post-checkout", "reference-transaction", "post-index-change", "fsmonitor-watchman"} {
		for _, dir := range []string{filepath.Join(w.GitDir(), "hooks"), hooks} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := filepath.Join(w.GitDir(), "config")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(strings.Join([]string{
		`[core]`,
		`	hooksPath = ` + hooks,
		`	fsmonitor = "` + mark("fsmonitor") + `"`,
		`	sshCommand = "` + mark("ssh") + `"`,
		`[remote "origin"]`,
		`	pushurl = ` + evil.Remote,
		`[url "` + evil.Remote + `"]`,
		`	insteadOf = ` + repo.Remote,
		`	pushInsteadOf = ` + repo.Remote,
		`[credential]`,
		`	helper = "!` + mark("credential") + `"`,
		`[filter "evil"]`,
		`	clean = "` + mark("clean") + `"`,
		`	smudge = "` + mark("smudge") + `"`,
		`	process = "` + mark("process") + `"`,
		`[diff "evil"]`,
		`	textconv = "` + mark("textconv") + `"`,
		`[alias]`,
		`	add = "!` + mark("alias") + `"`,
		``,
	}, "\n"))
	_ = f.Close()
	if err := os.WriteFile(filepath.Join(w.GitDir(), "info", "attributes"), []byte("* filter=evil diff=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, w.Dir, ".gitattributes", "* filter=evil diff=evil\n")
	write(t, w.Dir, "work.txt", "the agent's work\n")
	// A .git of the agent's own in the work tree, and a nested repository further down.
	write(t, w.Dir, ".git/config", "[core]\n\thooksPath = "+hooks+"\n")
	write(t, w.Dir, "vendor/lib/a.go", "package lib\n")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "init", "-q")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "add", "a.go")
	gittest.Git(t, filepath.Join(w.Dir, "vendor/lib"), "commit", "-q", "-m", "nested")

	paths, err := w.Stage(ctx)
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	for _, p := range paths {
		if p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git") {
			t.Errorf("staged %q: git metadata from the work tree must never be committed", p)
		}
	}
	if _, err := w.Commit(ctx, "task 1\n"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := w.Push(ctx); err != nil {
		t.Fatalf("Push: %v", err)
	}
	write(t, w.Dir, "more.txt", "parked\n")
	if _, err := w.PushParked(ctx, "1", "parked\n"); err != nil {
		t.Fatalf("PushParked: %v", err)
	}
	if err := w.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}

	if ran, _ := os.ReadDir(marks); len(ran) > 0 {
		var names []string
		for _, e := range ran {
			names = append(names, e.Name())
		}
		t.Errorf("Akira's git ran the workspace's commands: %v", names)
	}
	if got := gittest.Git(t, repo.Remote, "rev-parse", "refs/heads/akira/x"); got != w.Head() {
		t.Errorf("the real remote's branch = %s, want %s", got, w.Head())
	}
	if out, code := gittest.TryGit(t, evil.Remote, "rev-parse", "--verify", "--quiet", "refs/heads/akira/x"); code == 0 {
		t.Errorf("the agent's remote received the push: %s", out)
	}
	if got := gittest.Git(t, repo.Remote, "ls-tree", "refs/heads/akira/x", "vendor/lib/a.go"); !strings.HasPrefix(got, "100644 blob ") {
		t.Errorf("a nested repository's files must be committed as files, not as a gitlink: ls-tree says %q", got)
	}
	if got := gittest.Git(t, repo.Remote, "show", "refs/heads/akira/x:work.txt"); got != "the agent's work" {
		t.Errorf("committed work.txt = %q, want the file as the work tree has it (no filter)", got)
	}
	if cur, _ := os.ReadFile(cfg); strings.Contains(string(cur), "evil") || strings.Contains(string(cur), "hooksPath") {
		t.Errorf("the git config still holds the agent's settings:\n%s", cur)
	}
}
