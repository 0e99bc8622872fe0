package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/akira-bot/akira/internal/testnotes"
	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process of a test's own, for tests that stop and restart Redis under a
// running Akira. It needs the redis-server binary: without it the test is skipped, unless
// AKIRA_TEST_REDIS_REQUIRED is set (CI), where it fails.
type Server struct {
	tb   testing.TB
	Addr string
	port int
	dir  string
	// AOF turns on the append-only file, as the compose file and the Helm chart do.
	aof bool
	cmd *exec.Cmd
}

// StartServer starts redis-server on a free loopback port, with its data in a temporary directory, with
// or without the append-only file. It is stopped when the test ends.
func StartServer(tb testing.TB, aof bool) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(EnvRequired) != "" {
			tb.Fatalf("redistest: redis-server is not installed and %s is set: %s", EnvRequired, installHint)
		}
		testnotes.Skip(tb, "Redis restart tests (a redis-server of their own)", installHint)
	}
	// The port is chosen before the server binds it: one taken meanwhile (or another Redis answering
	// there) means another port.
	var errs []error
	for range 3 {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s := &Server{tb: tb, Addr: "127.0.0.1:" + strconv.Itoa(port), port: port, dir: tb.TempDir(), aof: aof}
		if err := s.start(bin); err != nil {
			errs = append(errs, err)
			continue
		}
		tb.Cleanup(s.Stop)
		return s
	}
	tb.Fatal(errors.Join(errs...))
	return nil
}

func (s *Server) start(bin string) error {
	aof := "no"
	if s.aof {
		aof = "yes"
	}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", aof, "--appendfsync", "always", "--dir", s.dir, "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	logFile := filepath.Join(s.dir, "redis.log")
	if err := waitOwnAnswer(s.Addr, s.dir, logFile); err != nil {
		log, _ := os.ReadFile(logFile)
		s.Stop()
		return fmt.Errorf("redistest: redis-server on %s: %w\n%s", s.Addr, err, log)
	}
	return nil
}

// Stop stops the server the way a pod is stopped (SIGTERM, then wait). Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port and data directory: with AOF it comes
// back with its data; without, empty.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.Start()
}

// Start starts a stopped server again, on the same port and data directory.
func (s *Server) Start() {
	s.tb.Helper()
	if s.cmd != nil {
		return
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.tb.Fatal(fmt.Errorf("redistest: %w", err))
	}
	if err := s.start(bin); err != nil {
		s.tb.Fatal(err)
	}
}

// Wipe empties this server (FLUSHALL), as a Redis that lost its data would be. Only a server of the
// test's own may be wiped, which is why this is a method of Server and the only flush tests may use.
func (s *Server) Wipe(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("redistest: wipe %s: %w", s.Addr, err)
	}
	return nil
}
