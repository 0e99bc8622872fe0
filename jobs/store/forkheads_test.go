package store

import (
	"context"
	"testing"
	"time"
)

// A head's first sighting is the earliest time any webhook or command showed it: a late webhook of an
// earlier push moves it back, a later sighting never forward; heads of other pull requests and
// repositories are apart.
func TestForkHeadsKeepTheEarliestSighting(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.ForkHeadSeen(ctx, "octo", "svc", 4, "aaa"); ok || err != nil {
		t.Fatalf("a head never seen: ok %v, %v", ok, err)
	}
	must(s.SawForkHead(ctx, "octo", "svc", 4, "aaa", t0.Add(time.Minute)))
	must(s.SawForkHead(ctx, "Octo", "SVC", 4, "aaa", t0))                    // an earlier push's webhook, late
	must(s.SawForkHead(ctx, "octo", "svc", 4, "aaa", t0.Add(time.Hour)))     // a later sighting
	must(s.SawForkHead(ctx, "octo", "svc", 4, "bbb", t0.Add(2*time.Minute))) // the next push
	must(s.SawForkHead(ctx, "octo", "svc", 5, "ccc", t0))
	must(s.SawForkHead(ctx, "octo", "svc", 4, "", t0))             // no head: nothing
	must(s.SawForkHead(ctx, "octo", "svc", 4, "ddd", time.Time{})) // no time: nothing
	for _, tc := range []struct {
		number int
		sha    string
		want   time.Time
		ok     bool
	}{
		{4, "aaa", t0, true},
		{4, "bbb", t0.Add(2 * time.Minute), true},
		{4, "ccc", time.Time{}, false},
		{5, "ccc", t0, true},
		{4, "ddd", time.Time{}, false},
	} {
		got, ok, err := s.ForkHeadSeen(ctx, "octo", "svc", tc.number, tc.sha)
		if err != nil || ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("#%d %s: %v, %v, %v; want %v, %v", tc.number, tc.sha, got, ok, err, tc.want, tc.ok)
		}
	}
	if ttl := rdb.TTL(ctx, s.ForkHeads.key("octo", "svc", 4)).Val(); ttl <= 0 || ttl > DefaultStateRetention {
		t.Errorf("the heads' TTL is %v, want up to %v", ttl, DefaultStateRetention)
	}
}
