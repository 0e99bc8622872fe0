package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestRunsPages walks 450 runs (more than one batch of the index) three at a time and then in pages of
// 100, and finds each run once, newest first, with runs created in the same microsecond (ordered
// by id) split across pages; a filtered walk skips what the filter refuses before counting.
func TestRunsPages(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 450
	var want []string
	for i := range n {
		// Pairs of runs share their creation time.
		now := base.Add(time.Duration(i/2) * time.Second)
		s.Now = func() time.Time { return now }
		r := newRun(fmt.Sprintf("run-%03d", i), fmt.Sprintf("akira/b-%d", i))
		if i%3 == 0 {
			r.Repo = "other"
		}
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r.ID)
	}
	// Newest first: later seconds first, and within a second the higher id first.
	newestFirst := make([]string, 0, n)
	for i := n - 1; i >= 0; i-- {
		newestFirst = append(newestFirst, want[i])
	}
	walk := func(f RunFilter) ([]string, int) {
		t.Helper()
		var ids []string
		pages := 0
		for {
			p, err := s.RunsPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, r := range p.Runs {
				ids = append(ids, r.ID)
			}
			if p.Next == "" {
				return ids, pages
			}
			if len(p.Runs) != f.Limit {
				t.Fatalf("page %d has %d runs and a next cursor", pages, len(p.Runs))
			}
			f.Cursor = p.Next
			if pages > n {
				t.Fatal("the pages never end")
			}
		}
	}
	for _, limit := range []int{3, 100} {
		ids, pages := walk(RunFilter{Limit: limit})
		if strings.Join(ids, ",") != strings.Join(newestFirst, ",") {
			t.Fatalf("limit %d: walked %d runs in %d pages, not every run once newest first:\n%v", limit, len(ids), pages, ids)
		}
		if wantPages := (n + limit - 1) / limit; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	ids, _ := walk(RunFilter{Limit: 7, Repo: "octo/OTHER"})
	if len(ids) != n/3 {
		t.Errorf("filtered walk found %d runs, want %d", len(ids), n/3)
	}
	ids, _ = walk(RunFilter{Limit: 10, Allow: func(repo string) bool { return repo == "Octo/Hello" }})
	if len(ids) != n-n/3 {
		t.Errorf("allowed walk found %d runs, want %d", len(ids), n-n/3)
	}
	if _, err := s.RunsPage(ctx, RunFilter{Cursor: "not a cursor"}); !errors.Is(err, ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

// TestRunsIndexFollowsRedis: a run whose state expired leaves the index when a listing meets it, and
// runs stored before the index existed (no index, no mark) are found, once, by the first listing.
func TestRunsIndexFollowsRedis(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	for _, id := range []string{"old-1", "old-2", "gone"} {
		if _, _, err := s.Create(ctx, newRun(id, "akira/"+id)); err != nil {
			t.Fatal(err)
		}
	}
	// As an older Akira left them: runs, no index.
	if err := rdb.Del(ctx, s.runsIndexKey(), s.runsIndexedKey()).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Runs(ctx, RunFilter{})
	if err != nil || len(got) != 3 {
		t.Fatalf("Runs after an upgrade = %d runs, %v; want 3", len(got), err)
	}
	if n, _ := rdb.ZCard(ctx, s.runsIndexKey()).Result(); n != 3 {
		t.Fatalf("index holds %d runs, want 3", n)
	}
	// The backfill runs once: a run the index lacks now stays out (it would join at its next write).
	if err := rdb.ZRem(ctx, s.runsIndexKey(), "old-2").Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Runs(ctx, RunFilter{}); len(got) != 2 {
		t.Fatalf("Runs = %d runs, want 2 (no second scan)", len(got))
	}
	if _, err := s.Update(ctx, "old-2", func(r *lifecycle.Run) error { r.Source = "touched"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Runs(ctx, RunFilter{}); len(got) != 3 {
		t.Fatalf("Runs after an update = %d runs, want 3", len(got))
	}
	// Expired state: the listing skips it and drops it from the index.
	if err := rdb.Del(ctx, s.runKey("gone")).Err(); err != nil {
		t.Fatal(err)
	}
	got, err = s.Runs(ctx, RunFilter{})
	if err != nil || len(got) != 2 {
		t.Fatalf("Runs = %d runs, %v; want 2", len(got), err)
	}
	if _, err := rdb.ZScore(ctx, s.runsIndexKey(), "gone").Result(); err == nil {
		t.Error("the expired run is still in the index")
	}
}
