// Package testproc checks, in tests, that a process a command started is gone after a kill.
package testproc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// WaitGoneFromFile reads a pid written by a test command into pidFile and fails the test unless that
// process exits soon. The wait is a generous bound on the kernel delivering SIGKILL, not a timing
// assertion.
func WaitGoneFromFile(t testing.TB, pidFile string) {
	t.Helper()
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("parse pid %q: %v", raw, err)
	}
	WaitGone(t, pid)
}

// WaitGone fails the test unless process pid exits (or is a zombie) within 10 seconds.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A zombie still answers kill(0) but is dead.
		if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && zombie(st) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("process %d still alive after the kill", pid)
}

func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
