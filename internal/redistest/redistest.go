// Package redistest gives tests a Redis: the one AKIRA_TEST_REDIS names (host:port), else the one on
// 127.0.0.1:6379 when it answers, else an embedded Redis-compatible server (miniredis) started once per
// test process, so that `make test` works on a machine with only Go and git. CI sets
// AKIRA_TEST_REDIS_REQUIRED=1: there a missing Redis fails the tests instead of falling back, so the
// real server is what they run against. AKIRA_TEST_REDIS=embedded forces the embedded server.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Variables the tests read.
const (
	EnvAddr     = "AKIRA_TEST_REDIS"
	EnvRequired = "AKIRA_TEST_REDIS_REQUIRED"
	localAddr   = "127.0.0.1:6379"
	embedded    = "embedded"
)

var (
	once     sync.Once
	addr     string
	setupErr error
)

// Addr returns the address of the Redis the tests use, starting the embedded one if need be; it fails
// tb when there is none it may use.
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
		if answers(localAddr) {
			return localAddr, nil
		}
	case embedded:
		return start()
	default:
		if !answers(want) {
			return "", fmt.Errorf("redistest: no Redis answers at %s=%s", EnvAddr, want)
		}
		return want, nil
	}
	if os.Getenv(EnvRequired) != "" {
		return "", fmt.Errorf("redistest: no Redis answers on %s and %s is set: start one, or set %s=host:port",
			localAddr, EnvRequired, EnvAddr)
	}
	return start()
}

// start runs miniredis on a free loopback port for the rest of the process: subprocesses (the akira
// binary, out-of-process workers) reach it over TCP like a real Redis.
func start() (string, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return "", fmt.Errorf("redistest: start the embedded Redis: %w", err)
	}
	go passTime(m)
	fmt.Fprintf(os.Stderr, "redistest: no Redis answered on %s; these tests use an embedded Redis-compatible server (miniredis) at %s\n", localAddr, m.Addr())
	return m.Addr(), nil
}

// passTime lets keys expire on the wall clock: miniredis only ages TTLs when told to, and the lock
// and lease tests wait for real expiry.
func passTime(m *miniredis.Miniredis) {
	last := time.Now()
	for range time.Tick(10 * time.Millisecond) {
		now := time.Now()
		m.FastForward(now.Sub(last))
		last = now
	}
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
