package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestAuditListAndStream: every entry lands in the list the API reads and in the stream the relay
// delivers, the same JSON in both; an entry written before Actor existed reads with its token as
// the actor.
func TestAuditListAndStream(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	e := AuditEntry{Time: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), Token: "ops", Via: ViaAPI, Action: "stop", Result: "stop requested",
		InstallationID: 42, Repo: "octo/app", RunID: "r1", TaskID: "1.2", Attempt: 2, DeliveryID: "d-1"}
	if err := s.Audit(ctx, e); err != nil {
		t.Fatal(err)
	}
	// As the first version wrote them: no actor.
	if err := rdb.LPush(ctx, s.auditKey(), `{"time":"2026-01-01T00:00:00Z","token":"old","via":"dashboard","action":"abort","run_id":"r0","result":"aborted"}`).Err(); err != nil {
		t.Fatal(err)
	}
	log, err := s.AuditLog(ctx, 10)
	if err != nil || len(log) != 2 {
		t.Fatalf("AuditLog = %+v, %v", log, err)
	}
	if log[0].Actor != "old" || log[0].Action != "abort" || log[0].RunID != "r0" {
		t.Errorf("an old entry reads %+v; want actor old, action abort, run r0", log[0])
	}
	want := e
	want.Actor = "ops"
	if log[1] != want {
		t.Errorf("list entry = %+v\nwant %+v", log[1], want)
	}
	if err := s.AuditGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadAudit(ctx, "g", "c1", 10, 0)
	if err != nil || len(recs) != 1 || recs[0].Entry != want || recs[0].ID == "" {
		t.Fatalf("stream = %+v, %v; want the one entry", recs, err)
	}
}

// TestAuditStreamBounded: the stream is trimmed near its bound, never far beyond it.
func TestAuditStreamBounded(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	s.AuditTrail.StreamMax = 200
	ctx := context.Background()
	for i := range 2000 {
		if err := s.Audit(ctx, AuditEntry{Token: "ops", Action: "stop", RunID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rdb.XLen(ctx, s.AuditStreamKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// "~" trims whole nodes of 100 entries: the length stays within a node of the bound.
	if n < 200 || n > 400 {
		t.Errorf("stream length %d after 2000 entries with a bound of 200", n)
	}
}

// TestAuditPendingFirst: entries read and never acknowledged come back, to another consumer too,
// before new ones, in order; acknowledged ones never.
func TestAuditPendingFirst(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	for i := range 4 {
		if err := s.Audit(ctx, AuditEntry{Token: "ops", Action: "stop", RunID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.AuditBacklog(ctx, "g"); err != nil || n != 4 {
		t.Errorf("backlog before the group exists = %d, %v; want the whole stream, 4", n, err)
	}
	if err := s.AuditGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	first, err := s.ReadAudit(ctx, "g", "dead", 3, 0)
	if err != nil || len(first) != 3 {
		t.Fatalf("first read = %+v, %v", first, err)
	}
	if err := s.AckAudit(ctx, "g", first[0].ID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.AuditBacklog(ctx, "g"); err != nil || n != 3 {
		t.Errorf("backlog = %d, %v; want 3 (two pending, one unread)", n, err)
	}
	var runs []string
	for range 3 {
		recs, err := s.ReadAudit(ctx, "g", "next", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			runs = append(runs, r.Entry.RunID)
			if err := s.AckAudit(ctx, "g", r.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(runs) != "[1 2 3]" {
		t.Errorf("after a consumer died: read %v; want [1 2 3]", runs)
	}
	if n, err := s.AuditBacklog(ctx, "g"); err != nil || n != 0 {
		t.Errorf("backlog = %d, %v; want 0", n, err)
	}
}

// TestTokenChangesAudited: creating and revoking a token are audit entries naming who and the token.
func TestTokenChangesAudited(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	if _, err := s.CreateTokenBy(ctx, Actor{Name: "alice@ops-1", Via: ViaCLI}, "ci", ScopeStart, []string{"octo/app"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RevokeTokenBy(ctx, Actor{Name: "bob@ops-2", Via: ViaCLI}, "ci"); err != nil || !ok {
		t.Fatalf("revoke = %v, %v", ok, err)
	}
	if _, err := s.CreateToken(ctx, "plain", ScopeRead); err != nil {
		t.Fatal(err)
	}
	log, err := s.AuditLog(ctx, 10)
	if err != nil || len(log) != 3 {
		t.Fatalf("AuditLog = %+v, %v", log, err)
	}
	tests := []struct {
		got                             AuditEntry
		actor, via, action, target, res string
	}{
		{log[2], "alice@ops-1", ViaCLI, ActionTokenCreate, "token:ci", "created (start, octo/app)"},
		{log[1], "bob@ops-2", ViaCLI, ActionTokenRevoke, "token:ci", "revoked"},
		{log[0], "operator", ViaCLI, ActionTokenCreate, "token:plain", "created (read, every repository)"},
	}
	for _, tc := range tests {
		if e := tc.got; e.Actor != tc.actor || e.Via != tc.via || e.Action != tc.action || e.Target != tc.target || e.Result != tc.res || e.Time.IsZero() {
			t.Errorf("entry %+v; want %s via %s: %s %s → %s", e, tc.actor, tc.via, tc.action, tc.target, tc.res)
		}
	}
}

// BenchmarkAudit: what the stream costs an audited action, against the list alone (the entry's
// writes before the stream existed), on the test Redis.
func BenchmarkAudit(b *testing.B) {
	rdb, prefix := testRedis(b)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	e := AuditEntry{Token: "ops", Via: ViaAPI, Action: "stop", Result: "stop requested", Repo: "octo/app", RunID: "r1"}
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				s.complete(&e)
				data, _ := json.Marshal(e)
				p.LPush(ctx, s.auditKey(), data)
				p.LTrim(ctx, s.auditKey(), 0, maxAudit-1)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list+stream", func(b *testing.B) {
		for b.Loop() {
			if err := s.Audit(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
