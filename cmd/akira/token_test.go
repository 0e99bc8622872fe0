package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/store"
)

// TestTokenCommands: create prints a token once (only its hash is kept), list shows names and
// scopes, revoke ends it; bad names, scopes and duplicates are refused.
func TestTokenCommands(t *testing.T) {
	// A Redis of the test's own: the command uses Akira's default key prefix, and the test reads
	// every key.
	addr := redistest.Own(t)
	t.Setenv("REDIS_URL", "redis://"+addr+"/0")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	name := fmt.Sprintf("ci-%d", time.Now().UnixNano()%100000)

	out, stderr, code := runCmd(t, "token", "create", name, "--scope", "control")
	secret := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(secret, "akira_") || !strings.Contains(stderr, "shown only now") {
		t.Fatalf("create: exit %d %q %q", code, out, stderr)
	}
	st := store.NewStore(rdb, "")
	if tok, err := st.TokenFor(context.Background(), secret); err != nil || tok.Name != name || !tok.CanControl() {
		t.Fatalf("the token does not work: %+v %v", tok, err)
	}
	if keys, _ := rdb.Keys(context.Background(), "*").Result(); strings.Contains(fmt.Sprint(keys), secret) {
		t.Error("the token itself is in Redis")
	}
	if vals, _ := rdb.HGetAll(context.Background(), "akira:tokens").Result(); strings.Contains(fmt.Sprint(vals), secret) {
		t.Error("the token itself is stored")
	}
	if out, _, _ := runCmd(t, "token", "list"); !strings.Contains(out, name) || !strings.Contains(out, "control") {
		t.Errorf("list:\n%s", out)
	}
	for _, args := range [][]string{{"token", "create", name}, {"token", "create", "x", "--scope", "admin"}, {"token", "create", "bad name!"}} {
		if _, stderr, code := runCmd(t, args...); code == 0 {
			t.Errorf("%v was accepted: %s", args, stderr)
		}
	}
	if out, _, code := runCmd(t, "token", "revoke", name); code != 0 || !strings.Contains(out, "Revoked") {
		t.Errorf("revoke: %d %q", code, out)
	}
	if _, err := st.TokenFor(context.Background(), secret); err == nil {
		t.Error("a revoked token still works")
	}
	// Both changes are in the audit, as done by this machine's user at the command line.
	log, err := st.AuditLog(context.Background(), 10)
	if err != nil || len(log) != 2 {
		t.Fatalf("audit = %+v, %v; want the creation and the revocation", log, err)
	}
	host, _ := os.Hostname()
	for i, action := range []string{store.ActionTokenRevoke, store.ActionTokenCreate} {
		if e := log[i]; e.Action != action || e.Target != "token:"+name || e.Via != store.ViaCLI || !strings.HasSuffix(e.Actor, "@"+host) {
			t.Errorf("audit entry %d = %+v; want %s of token:%s by someone@%s via cli", i, e, action, name, host)
		}
	}
}
