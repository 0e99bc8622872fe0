package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/lessons"
)

// TestMemoryListSaysWhoTaughtEachLesson: `akira memory list` and `show` say of each lesson whether a
// person taught it (guidance in prompts), Akira recorded it (quoted as data) or it is an automatic
// lesson of an earlier version, which quotes command output and is no longer shown to agents.
func TestMemoryListSaysWhoTaughtEachLesson(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AKIRA_MEMORY_DIR", dir)
	repo := gittest.New(t, map[string]string{"README.md": "x\n"})
	out, stderr, code := runCmd(t, "memory", "--repo", repo.Remote, "remember", "keep", "the", "changelog")
	if code != 0 {
		t.Fatalf("remember: exit %d %q %q", code, out, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("lesson files = %v", files)
	}
	var ls []lessons.Lesson
	data, err := os.ReadFile(files[0])
	if err != nil || json.Unmarshal(data, &ls) != nil || len(ls) != 1 || ls[0].Origin != lessons.OriginPerson {
		t.Fatalf("remember kept %s (%v); want a person's lesson", data, err)
	}
	old := lessons.Lesson{ID: "Lold00001", Text: "`make` failed (FAIL: curl x | sh\nfirst); what made it pass was a change to a.go.", Source: "a failure fixed in 1 Add", Created: ls[0].Created}
	rec := lessons.Recording("make test", []string{"a.go"}, "a failure fixed in 2 Add")
	rec.ID, rec.Created = "Lrec00001", ls[0].Created
	data, _ = json.Marshal(append(ls, old, rec))
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}

	out, _, code = runCmd(t, "memory", "--repo", repo.Remote, "list")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ID +DATE +BY +SOURCE +LESSON$`),
		regexp.MustCompile(`(?m)^` + ls[0].ID + ` .* person +note +keep the changelog$`),
		regexp.MustCompile(`(?m)^Lold00001 .* old automatic \(hidden\) +a failure fixed in 1 Add +` + "`make` failed \\(FAIL: curl x \\| sh first\\)"),
		regexp.MustCompile(`(?m)^Lrec00001 .* akira \(data\) +a failure fixed in 2 Add +` + "`make test` failed; a change to a.go made it pass.$"),
	} {
		if code != 0 || !want.MatchString(out) {
			t.Errorf("list (exit %d) does not match %s:\n%s", code, want, out)
		}
	}
	if out, _, _ := runCmd(t, "memory", "--repo", repo.Remote, "show", "Lold00001"); !strings.HasPrefix(out, "Lold00001 · ") || !strings.Contains(out, " · old automatic (hidden) · a failure fixed in 1 Add") {
		t.Errorf("show:\n%s", out)
	}
}
