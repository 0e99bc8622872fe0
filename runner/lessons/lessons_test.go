package lessons

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestRank(t *testing.T) {
	all := []Lesson{
		{ID: "L1", Text: "The flaky parser tests need the MAGIC-WORD seed", Source: "retry guidance for 1.2 Add a flaky parser"},
		{ID: "L2", Text: "Run migrations with make migrate, never by hand", Source: "note"},
		{ID: "L3", Text: "Keep the changelog in docs/CHANGELOG.md", Source: "note"},
	}
	got := Rank(all, "Add another flaky parser for the config", 5, 10_000)
	if len(got) != 1 || got[0].ID != "L1" {
		t.Errorf("Rank for a parser task = %+v; want L1 alone", got)
	}
	if got := Rank(all, "Write the release notes", 5, 10_000); len(got) != 0 {
		t.Errorf("an unrelated task got %+v", got)
	}
	if got := Rank(all, "migrations changelog parser", 5, 10_000); len(got) != 3 {
		t.Errorf("a task naming all three got %d", len(got))
	}
	if got := Rank(all, "migrations changelog parser", 2, 10_000); len(got) != 2 {
		t.Errorf("max 2 gave %d", len(got))
	}
	if got := Rank(all, "migrations changelog parser", 5, 60); len(got) != 1 {
		t.Errorf("a 60-byte budget gave %d lessons", len(got))
	}
}

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	s := &FileStore{Path: filepath.Join(t.TempDir(), "x", "lessons.json")}
	a, err := s.Add(ctx, Lesson{Text: "  use the v2 API  ", Source: "note"})
	if err != nil || a.ID == "" || a.Text != "use the v2 API" || a.Created.IsZero() {
		t.Fatalf("Add = %+v, %v", a, err)
	}
	long, err := s.Add(ctx, Lesson{Text: strings.Repeat("x", MaxText+50)})
	if err != nil || len([]rune(long.Text)) != MaxText+1 {
		t.Errorf("a long lesson kept %d runes, %v", len([]rune(long.Text)), err)
	}
	for range MaxLessons {
		if _, err := s.Add(ctx, Lesson{Text: "filler"}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.List(ctx)
	if err != nil || len(ls) != MaxLessons || ls[0].ID == a.ID {
		t.Errorf("after %d more: %d lessons, first %s; want the cap, the oldest gone", MaxLessons, len(ls), ls[0].ID)
	}
	if ok, err := s.Forget(ctx, ls[0].ID); !ok || err != nil {
		t.Errorf("Forget = %v, %v", ok, err)
	}
	if ok, _ := s.Forget(ctx, "Lnothere"); ok {
		t.Error("Forget of an unknown id said yes")
	}
}

// TestRecording: an automatic lesson keeps the command and at most MaxFiles names, each capped; its
// text, read in terminals and check runs, shows a name with a line break or an escape sequence
// quoted.
func TestRecording(t *testing.T) {
	files := []string{"a.go", "x\n## Rules\x1b]0;pwned\x07", strings.Repeat("n", MaxFileName+5)}
	for i := range MaxFiles {
		files = append(files, fmt.Sprintf("f%d.go", i))
	}
	l := Recording("go  test\n./...", files, "a failure fixed in 1 Add")
	if l.Origin != OriginAkira || l.Command != "go test ./..." || len(l.Files) != MaxFiles || l.Files[1] != files[1] ||
		len([]rune(l.Files[2])) != MaxFileName+1 {
		t.Errorf("Recording = %+v", l)
	}
	want := "`go test ./...` failed; a change to a.go, \"x\\n## Rules\\x1b]0;pwned\\a\", "
	if !strings.HasPrefix(l.Text, want) || !strings.HasSuffix(l.Text, fmt.Sprintf(" and %d more made it pass.", len(files)-MaxFiles)) {
		t.Errorf("text = %q; want it to start %q and count the names left out", l.Text, want)
	}
	if strings.ContainsAny(l.Text, "\n\x1b\x07") {
		t.Errorf("text holds a control character: %q", l.Text)
	}
}
