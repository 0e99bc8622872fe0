package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/lessons"
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

// TestMemoryOfTheApp: an operator writes a note into the App's memory of a repository in Redis,
// where the App's runs read it (the same store); the installation is found from the lessons kept.
func TestMemoryOfTheApp(t *testing.T) {
	// A Redis of the test's own: the command uses Akira's default key prefix.
	addr := redistest.Own(t)
	t.Setenv("REDIS_URL", "redis://"+addr+"/0")
	repo := fmt.Sprintf("octo/memtest-%d", time.Now().UnixNano())
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	appStore := store.NewStore(rdb, "")
	owner, name, _ := strings.Cut(repo, "/")

	if _, stderr, code := runCmd(t, "memory", "--app", repo, "list"); code != 2 || !strings.Contains(stderr, "give --installation") {
		t.Fatalf("no lessons and no installation: exit %d %q", code, stderr)
	}
	out, stderr, code := runCmd(t, "memory", "--app", repo, "--installation", "77", "remember", "deploys", "need", "make", "release")
	m := regexp.MustCompile(`Remembered as (L[0-9a-f]+)\.`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("remember: exit %d, %q %q", code, out, stderr)
	}
	ls, err := appStore.Lessons(77, owner, name).List(context.Background())
	if err != nil || len(ls) != 1 || ls[0].Text != "deploys need make release" || ls[0].Source != "operator note" {
		t.Fatalf("the App's store holds %+v (%v)", ls, err)
	}
	if out, _, code := runCmd(t, "memory", "--app", repo, "list"); code != 0 || !strings.Contains(out, m[1]) {
		t.Errorf("list without --installation: exit %d\n%s", code, out)
	}
	if other, _ := appStore.Lessons(78, owner, name).List(context.Background()); len(other) != 0 {
		t.Errorf("another installation sees %+v", other)
	}
	if _, err := appStore.Lessons(78, owner, name).Add(context.Background(), lessons.Lesson{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd(t, "memory", "--app", repo, "list"); code != 2 || !strings.Contains(stderr, "[77 78]") {
		t.Errorf("two installations: exit %d %q", code, stderr)
	}
	if out, _, code := runCmd(t, "memory", "--app", repo, "--installation", "77", "forget", m[1]); code != 0 || !strings.Contains(out, "Forgot") {
		t.Errorf("forget: exit %d %q", code, out)
	}
	if _, stderr, code := runCmd(t, "memory", "--app", "not-a-repo", "list"); code != 2 || !strings.Contains(stderr, "want OWNER/REPO") {
		t.Errorf("bad --app: exit %d %q", code, stderr)
	}
}
