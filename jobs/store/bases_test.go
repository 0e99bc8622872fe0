package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A push to a base marks the branches on that base (of that repository, in any case of its name) and
// no other; a mark is cleared only while it is the one its reader saw; a branch no run worked on for
// the retention is forgotten.
func TestBaseMarks(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.conn.Now = func() time.Time { return now }
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.WatchBase(ctx, "Octo", "demo", "main", "akira/issue-1"))
	must(s.WatchBase(ctx, "octo", "demo", "main", "akira/issue-2"))
	must(s.WatchBase(ctx, "octo", "demo", "release", "akira/pr-3"))
	must(s.WatchBase(ctx, "octo", "other", "main", "akira/issue-1"))

	marked, err := s.BaseMoved(ctx, "octo", "DEMO", "main", "sha-1")
	must(err)
	if !slices.Equal(marked, []string{"akira/issue-1", "akira/issue-2"}) {
		t.Fatalf("marked %v, want the two branches on octo/demo's main", marked)
	}
	for _, tc := range []struct {
		repo, branch, want string
	}{
		{"demo", "akira/issue-1", "sha-1"},
		{"demo", "akira/issue-2", "sha-1"},
		{"demo", "akira/pr-3", ""},
		{"other", "akira/issue-1", ""},
	} {
		if got, err := s.BaseMark(ctx, "octo", tc.repo, tc.branch); err != nil || got != tc.want {
			t.Errorf("mark of %s %s = %q, %v; want %q", tc.repo, tc.branch, got, err, tc.want)
		}
	}

	// A newer push lands between a reader's look and its clear: its mark stays.
	seen, err := s.BaseMark(ctx, "octo", "demo", "akira/issue-1")
	must(err)
	_, err = s.BaseMoved(ctx, "octo", "demo", "main", "sha-2")
	must(err)
	must(s.ClearBaseMark(ctx, "octo", "demo", "akira/issue-1", seen))
	if got, _ := s.BaseMark(ctx, "octo", "demo", "akira/issue-1"); got != "sha-2" {
		t.Fatalf("after a stale clear the mark is %q, want sha-2", got)
	}
	must(s.ClearBaseMark(ctx, "octo", "demo", "akira/issue-1", "sha-2"))
	if got, _ := s.BaseMark(ctx, "octo", "demo", "akira/issue-1"); got != "" {
		t.Fatalf("after its clear the mark is %q", got)
	}
	must(s.MarkBaseMoved(ctx, "octo", "demo", "akira/pr-3", "mergeable_state dirty"))
	if got, _ := s.BaseMark(ctx, "octo", "demo", "akira/pr-3"); got != "mergeable_state dirty" {
		t.Fatalf("mark of akira/pr-3 = %q", got)
	}

	// issue-2 is watched again later; issue-1 is not, and falls out once the retention is over.
	now = now.Add(DefaultStateRetention - time.Hour)
	must(s.WatchBase(ctx, "octo", "demo", "main", "akira/issue-2"))
	now = now.Add(2 * time.Hour)
	marked, err = s.BaseMoved(ctx, "octo", "demo", "main", "sha-3")
	must(err)
	if !slices.Equal(marked, []string{"akira/issue-2"}) {
		t.Fatalf("marked %v after the retention, want akira/issue-2 alone", marked)
	}
}
