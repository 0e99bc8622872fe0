package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// TestMemoryCommands: remember, list, show and forget a repository's lessons; another repository
// sees none of them.
func TestMemoryCommands(t *testing.T) {
	t.Setenv("AKIRA_MEMORY_DIR", t.TempDir())
	repo := gittest.New(t, map[string]string{"README.md": "x\n"})
	other := gittest.New(t, map[string]string{"README.md": "y\n"})
	out, stderr, code := runCmd(t, "memory", "--repo", repo.Remote, "remember", "run", "migrations", "with", "make", "migrate")
	m := regexp.MustCompile(`Remembered as (L[0-9a-f]+)\.`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("remember: exit %d, %q %q", code, out, stderr)
	}
	id := m[1]
	if out, _, _ := runCmd(t, "memory", "--repo", repo.Remote, "list"); !strings.Contains(out, id) || !strings.Contains(out, "run migrations with make migrate") {
		t.Errorf("list:\n%s", out)
	}
	if out, _, _ := runCmd(t, "memory", "--repo", repo.Remote, "show", id); !strings.Contains(out, "note") {
		t.Errorf("show:\n%s", out)
	}
	if out, _, _ := runCmd(t, "memory", "--repo", other.Remote, "list"); !strings.Contains(out, "No lessons yet.") {
		t.Errorf("another repository sees lessons:\n%s", out)
	}
	if out, _, code := runCmd(t, "memory", "--repo", repo.Remote, "forget", id); code != 0 || !strings.Contains(out, "Forgot "+id) {
		t.Errorf("forget: exit %d %q", code, out)
	}
	if _, stderr, code := runCmd(t, "memory", "--repo", repo.Remote, "forget", id); code != 1 || !strings.Contains(stderr, "no lesson") {
		t.Errorf("forget again: exit %d %q", code, stderr)
	}
	if _, stderr, code := runCmd(t, "memory", "--repo", repo.Remote, "frobnicate"); code != 2 || !strings.Contains(stderr, "usage") {
		t.Errorf("unknown verb: exit %d %q", code, stderr)
	}
}
