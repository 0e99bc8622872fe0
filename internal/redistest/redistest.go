// Package redistest is the one way tests get a Redis, and it never uses one it did not start unless
// told to. In order:
//   - AKIRA_TEST_REDIS=host:port: that server, named explicitly (CI names its own); the tests write
//     there under key prefixes of their own;
//   - AKIRA_TEST_REDIS=embedded: an embedded Redis-compatible server (miniredis);
//   - otherwise a throwaway redis-server on a free loopback port, started once per test binary and
//     stopped when the binary exits, however it exits;
//   - without the redis-server binary, the embedded server, so that `make test` works on a machine
//     with only Go and git.
//
// A Redis already running on this machine (127.0.0.1:6379, say) is never dialled unless
// AKIRA_TEST_REDIS names it. CI sets AKIRA_TEST_REDIS_REQUIRED=1: there a real server is insisted
// on and the embedded fallback is an error. Which Redis a test binary used is noted for the end of
// `make test` (internal/testnotes).
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/loopback"
	"github.com/akira-bot/akira/internal/testnotes"
)

// Variables the tests read.
const (
	EnvAddr     = "AKIRA_TEST_REDIS"
	EnvRequired = "AKIRA_TEST_REDIS_REQUIRED"
	embedded    = "embedded"
	// installHint is what to do when redis-server is missing.
	installHint = "install redis-server (Debian/Ubuntu: apt-get install redis-server)"
)

// developerAddr is where a developer's own Redis usually answers. It is only ever named in messages,
// never dialled; a test points it at a sentinel server to prove that.
var developerAddr = "127.0.0.1:6379"

var (
	ownOnce  sync.Once
	once     sync.Once
	addr     string
	setupErr error
)

// Addr returns the address of the Redis this test binary's tests share, starting it if need be; it
// fails tb when there is none it may use. Tests share it: each writes under a key prefix of its own
// and deletes only its own keys. A test that needs a whole server (its own database, KEYS *, the
// default key prefix of the real binary) takes Own instead.
func Addr(tb testing.TB) string {
	tb.Helper()
	a, err := Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// Resolve is Addr for code without a testing.TB (a TestMain, a worker subprocess's parent).
func Resolve() (string, error) {
	once.Do(func() { addr, setupErr = resolve() })
	return addr, setupErr
}

func resolve() (string, error) {
	switch want := os.Getenv(EnvAddr); want {
	case "":
	case embedded:
		return startEmbedded(embedded + " requested by " + EnvAddr)
	default:
		if !answers(want) {
			return "", fmt.Errorf("redistest: no Redis answers at %s=%s", EnvAddr, want)
		}
		note(fmt.Sprintf("the Redis %s names (%s), under key prefixes of the tests' own", EnvAddr, want))
		return want, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err == nil {
		a, err := startThrowaway(bin)
		if err != nil {
			return "", err
		}
		note(fmt.Sprintf("a throwaway redis-server of its own on a free port (%s is never used unless %s names it)", developerAddr, EnvAddr))
		return a, nil
	}
	if os.Getenv(EnvRequired) != "" {
		return "", fmt.Errorf("redistest: redis-server is not installed and %s is set: %s, or set %s=host:port",
			EnvRequired, installHint, EnvAddr)
	}
	return startEmbedded("redis-server is not installed; " + installHint + " to test against the real server")
}

// note says once per test binary which Redis its tests use: on stderr (seen with -v or on failure)
// and in the notes printed at the end of `make test`.
func note(what string) {
	fmt.Fprintf(os.Stderr, "redistest: %s: %s\n", testnotes.Package(), what)
	testnotes.Note(testnotes.KindRedis, what)
}

// startEmbedded runs miniredis on a free loopback port for the rest of the process: subprocesses (the
// akira binary, out-of-process workers) reach it over TCP like a real Redis.
func startEmbedded(why string) (string, error) {
	addr, _, err := Embedded("")
	if err != nil {
		return "", err
	}
	note("an embedded Redis-compatible server (miniredis): " + why)
	return addr, nil
}

// Embedded starts an embedded Redis-compatible server (miniredis) on a free loopback port, whose keys
// expire on the wall clock, for code that is not a test (make demo-app) as well as for tests. A
// password, when given, is required of every connection: the port is open to every local user.
// stop closes the server.
func Embedded(password string) (addr string, stop func(), err error) {
	m := miniredis.NewMiniRedis()
	if password != "" {
		m.RequireAuth(password)
	}
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return "", nil, fmt.Errorf("redistest: start the embedded Redis: %w", err)
	}
	done := make(chan struct{})
	go passTime(m, done)
	var once sync.Once
	return m.Addr(), func() {
		once.Do(func() {
			close(done)
			m.Close()
		})
	}, nil
}

// watchdog runs redis-server ($2…) and stops it, removing its directory ($1), when its standard input
// reaches end of file: the test binary holds the only writer, and the kernel closes it when the
// binary exits, even on SIGKILL or a test timeout, so no server outlives its tests.
const watchdog = `dir=$1; shift
"$@" </dev/null >/dev/null 2>&1 &
pid=$!
read -r _ || :
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -rf "$dir"
`

// lifelines holds the write ends of the watchdogs' stdin for the life of the process; an os.File that
// is garbage-collected closes itself, which would stop its server early.
var (
	lifelinesMu sync.Mutex
	lifelines   []*os.File
)

// startThrowaway starts redis-server on a free loopback port, without persistence, for the rest of
// the process. The port is chosen before the server binds it, so another process may take it in
// between (another test binary's throwaway server, even): a server that cannot bind it, or a Redis
// answering there that is not this one, makes it try another port.
func startThrowaway(bin string) (string, error) {
	var errs []error
	for range 3 {
		addr, err := startThrowawayOnce(bin)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

func startThrowawayOnce(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "akira-redistest-")
	if err != nil {
		return "", fmt.Errorf("redistest: %w", err)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("redistest: %w", err)
	}
	logFile := filepath.Join(dir, "redis.log")
	cmd := exec.Command("sh", "-c", watchdog, "sh", dir, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", logFile)
	cmd.Stdin = r
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		os.RemoveAll(dir)
		return "", fmt.Errorf("redistest: start redis-server: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	lifelinesMu.Lock()
	lifelines = append(lifelines, w)
	lifelinesMu.Unlock()
	a := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitOwnAnswer(a, dir, logFile); err != nil {
		log, _ := os.ReadFile(logFile)
		w.Close()
		return "", fmt.Errorf("redistest: redis-server on %s: %w\n%s", a, err, log)
	}
	return a, nil
}

// waitOwnAnswer polls addr until the redis-server started in dir answers there. A Redis that answers
// with another directory is not this one; a log that says the port was taken ends the wait at once.
func waitOwnAnswer(addr, dir, logFile string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if answers(addr) {
			if got := configDir(addr); !sameDir(got, dir) {
				return fmt.Errorf("another Redis answers there (its dir %q)", got)
			}
			return nil
		}
		if log, _ := os.ReadFile(logFile); strings.Contains(string(log), "Address already in use") {
			return errors.New("the port was taken before redis-server bound it")
		}
		if time.Now().After(deadline) {
			return errors.New("no answer to PING within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// configDir is the working directory of the Redis at addr (CONFIG GET dir), empty when it will not say.
func configDir(addr string) string {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := rdb.ConfigGet(ctx, "dir").Result()
	if err != nil {
		return ""
	}
	return got["dir"]
}

// sameDir says whether a and b name one directory (a temporary directory may be reached by a link).
func sameDir(a, b string) bool {
	if a == "" {
		return false
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return a == b || (errA == nil && errB == nil && ra == rb)
}

// Own returns the address of a Redis of tb alone, empty, stopped when tb ends: a throwaway
// redis-server, or an embedded server where redis-server is not installed. It never is the server
// AKIRA_TEST_REDIS names, because the test may do anything to it (the real binary's default key
// prefix, KEYS *, FLUSHDB).
func Own(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err == nil {
		ownOnce.Do(func() { note("a throwaway redis-server of each test's own, for tests that need a whole server") })
		return StartServer(tb, false).Addr
	}
	if os.Getenv(EnvRequired) != "" {
		tb.Fatalf("redistest: redis-server is not installed and %s is set: %s", EnvRequired, installHint)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		tb.Fatalf("redistest: start an embedded Redis: %v", err)
	}
	ownOnce.Do(func() {
		note("an embedded Redis-compatible server of each test's own: redis-server is not installed; " + installHint)
	})
	stop := make(chan struct{})
	go passTime(m, stop)
	tb.Cleanup(func() {
		close(stop)
		m.Close()
	})
	return m.Addr()
}

// passTime lets keys expire on the wall clock until stop is closed: miniredis only ages TTLs when
// told to, and the lock and lease tests wait for real expiry.
func passTime(m *miniredis.Miniredis, stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// freePort is a port for a redis-server, which must be told its port before it binds it.
func freePort() (int, error) {
	port, err := loopback.FreePort()
	if err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	return port, nil
}

// answers reports whether a Redis answers PING at addr.
func answers(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := conn.Read(buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// Prefixed connects to the test Redis (Addr) and returns a key prefix no other test uses; every key
// under the prefix is deleted, and the client closed, when the test ends.
func Prefixed(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	addr := Addr(tb)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("redis at %s: %v", addr, err)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	prefix := "akira-test:" + hex.EncodeToString(b) + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}
