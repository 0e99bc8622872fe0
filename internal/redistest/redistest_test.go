package redistest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/testnotes"
)

// sentinel is a Redis standing in for a developer's own: keys in each of its 16 databases, read and
// counted over one connection, so that any connection anyone else makes shows in its statistics.
type sentinel struct {
	addr string
	conn *redis.Conn
	rdb  *redis.Client
	want map[int]map[string]string
}

func newSentinel(t *testing.T) *sentinel {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testnotes.Skip(t, "the test that the tests leave a developer's Redis alone", installHint)
	}
	srv := StartServer(t, false)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1})
	conn := rdb.Conn()
	t.Cleanup(func() { conn.Close(); rdb.Close() })
	s := &sentinel{addr: srv.Addr, conn: conn, rdb: rdb, want: map[int]map[string]string{}}
	ctx := context.Background()
	for db := range 16 {
		if err := conn.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		s.want[db] = map[string]string{}
		for i := range 3 {
			k, v := fmt.Sprintf("developer:db%d:key%d", db, i), fmt.Sprintf("value %d/%d", db, i)
			if err := conn.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			s.want[db][k] = v
		}
	}
	return s
}

// connections is how many connections the sentinel has accepted so far.
func (s *sentinel) connections(t *testing.T) int {
	t.Helper()
	info, err := s.conn.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`total_connections_received:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no total_connections_received in INFO stats:\n%s", info)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// intact fails t unless every database holds exactly the keys and values it was given.
func (s *sentinel) intact(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for db, want := range s.want {
		if err := s.conn.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := s.conn.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != len(want) {
			t.Errorf("database %d holds %d keys %v, want the developer's %d", db, len(keys), keys, len(want))
		}
		for k, v := range want {
			if got, err := s.conn.Get(ctx, k).Result(); err != nil || got != v {
				t.Errorf("database %d key %s = %q (%v), want %q", db, k, got, err, v)
			}
		}
	}
}

// flushAll does to addr the worst a test could: it empties every database.
func flushAll(t *testing.T, addr string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatalf("flush %s: %v", addr, err)
	}
}

// TestHelpersLeaveTheDevelopersRedisAlone: with a Redis where a developer's usually is, holding keys
// in databases 0 to 15, the helpers resolve, start and hand out servers of their own; flushing
// everything they hand out leaves the developer's keys as they were, and the developer's server
// never even sees a connection.
func TestHelpersLeaveTheDevelopersRedisAlone(t *testing.T) {
	// resolve is called afresh here: its notes are about these tests' servers, not the package's.
	t.Setenv(testnotes.Env, "")
	dev := newSentinel(t)
	old := developerAddr
	developerAddr = dev.addr
	t.Cleanup(func() { developerAddr = old })
	t.Setenv(EnvAddr, "")
	before := dev.connections(t)

	got, err := resolve()
	if err != nil {
		t.Fatal(err)
	}
	own := Own(t)
	for _, a := range []string{got, own} {
		if a == dev.addr {
			t.Fatalf("a helper handed out the developer's Redis %s", a)
		}
		flushAll(t, a)
	}
	if after := dev.connections(t); after != before {
		t.Errorf("the developer's Redis accepted %d connections while the helpers ran", after-before)
	}
	dev.intact(t)
}

// TestNamedRedisIsUsed: AKIRA_TEST_REDIS names the server to share, and one that does not answer is
// an error naming the variable.
func TestNamedRedisIsUsed(t *testing.T) {
	// resolve is called afresh here: its notes are about these tests' servers, not the package's.
	t.Setenv(testnotes.Env, "")
	srv := StartServer(t, false)
	t.Setenv(EnvAddr, srv.Addr)
	if got, err := resolve(); err != nil || got != srv.Addr {
		t.Fatalf("resolve() = %q, %v; want the named %s", got, err, srv.Addr)
	}
	srv.Stop()
	if _, err := resolve(); err == nil || !strings.Contains(err.Error(), EnvAddr+"="+srv.Addr) {
		t.Fatalf("resolve() with the named server down = %v; want an error naming %s", err, EnvAddr)
	}
}

// TestOwnIsEmptyAndPrivate: two tests' own servers are different and start empty.
func TestOwnIsEmptyAndPrivate(t *testing.T) {
	a, b := Own(t), Own(t)
	if a == b {
		t.Fatalf("two Own servers share %s", a)
	}
	rdb := redis.NewClient(&redis.Options{Addr: a})
	defer rdb.Close()
	if n, err := rdb.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Fatalf("a new Own server holds %d keys (%v)", n, err)
	}
}

// flushPattern finds what would empty a shared Redis in a test file; only this package, which
// flushes servers it started, may.
var flushPattern = regexp.MustCompile(`(?i)flushdb|flushall|["/]127\.0\.0\.1:6379\b|localhost:6379`)

// TestNoTestFlushesOrDialsASharedRedis: no test of the module flushes a database or names a
// developer's Redis by address: tests get Redis from this package, under key prefixes of their own
// or from Own. (app/handlers_test.go quotes a dial error, which names no server to dial.)
func TestNoTestFlushesOrDialsASharedRedis(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	here, _ := os.Getwd()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == here || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := flushPattern.FindString(line); m != "" && !strings.Contains(line, "dial tcp") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %q: a test must not flush or dial a Redis it did not start; use redistest.Addr with a key prefix, or redistest.Own", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestThrowawayIsItsOwn: a throwaway redis-server is only taken for started when the Redis answering
// on its port is the one started in its directory; another's, or a port taken before it bound it,
// means another port.
func TestThrowawayIsItsOwn(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	other := StartServer(t, false)
	if err := waitOwnAnswer(other.Addr, other.dir, filepath.Join(other.dir, "redis.log")); err != nil {
		t.Fatalf("its own server: %v", err)
	}
	elsewhere := t.TempDir()
	if err := waitOwnAnswer(other.Addr, elsewhere, filepath.Join(elsewhere, "redis.log")); err == nil || !strings.Contains(err.Error(), "another Redis answers there") {
		t.Fatalf("a server started elsewhere answering on the port: %v", err)
	}
	taken := t.TempDir()
	log := filepath.Join(taken, "redis.log")
	if err := os.WriteFile(log, []byte("# Warning: Could not create server TCP listening socket 127.0.0.1:20001: bind: Address already in use\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := waitOwnAnswer("127.0.0.1:1", taken, log); err == nil || !strings.Contains(err.Error(), "port was taken") {
		t.Fatalf("a server that could not bind: %v", err)
	}
}
