package jobs

import (
	"context"
	"testing"

	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/lessons"
)

// TestLessonsAreIsolated: a repository's lessons are its own: another repository of the same
// installation, and the same repository under another installation, see none of them.
func TestLessonsAreIsolated(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	mine := jh.store.Lessons(1, "Octo", "Hello")
	if _, err := mine.Add(ctx, lessons.Lesson{Text: "use the v2 API", Source: "note"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := jh.store.Lessons(1, "octo", "hello").List(ctx); len(got) != 1 {
		t.Errorf("the same repository (other case) sees %d lessons; want 1", len(got))
	}
	for name, other := range map[string]*store.RepoLessons{
		"another repository":   jh.store.Lessons(1, "octo", "other"),
		"another installation": jh.store.Lessons(2, "octo", "hello"),
	} {
		if got, err := other.List(ctx); err != nil || len(got) != 0 {
			t.Errorf("%s sees %v (%v)", name, got, err)
		}
	}
	for range lessons.MaxLessons + 3 {
		if _, err := mine.Add(ctx, lessons.Lesson{Text: "filler"}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := mine.List(ctx); len(got) != lessons.MaxLessons {
		t.Errorf("%d lessons kept; want the cap %d", len(got), lessons.MaxLessons)
	}
}
