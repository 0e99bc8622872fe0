package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalStopsPlan: `akira plan` busy reading a plan it cannot finish (a pipe whose writer keeps
// it open, as a plan of 100,000 tasks keeps the parser busy for minutes) ends at SIGTERM or SIGINT,
// saying so, with exit status 130, instead of ignoring the signal until its work is done.
func TestSignalStopsPlan(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		says string
	}{
		{syscall.SIGTERM, "akira: plan: interrupted (terminated signal received)"},
		{syscall.SIGINT, "akira: plan: interrupted (interrupt signal received)"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "ROADMAP.md")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(akiraBin, "plan", fifo)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			// Opening the pipe's writing end returns once akira has opened it to read: the command is
			// then at work, its signal handling in place.
			opened := make(chan *os.File, 1)
			go func() {
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					opened <- w
				}
			}()
			var w *os.File
			select {
			case w = <-opened:
			case err := <-exited:
				t.Fatalf("akira plan ended before reading its plan: %v\n%s", err, stderr.String())
			}
			defer w.Close()
			if _, err := w.WriteString("# Big\n\n## Phase 1\n\n- [ ] 1.1 The first of many tasks\n"); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			// A guard against a process that ignores the signal, not a measure of how fast it stops.
			select {
			case <-exited:
			case <-time.After(time.Minute):
				t.Fatalf("akira plan still runs a minute after %v; stderr:\n%s", tc.sig, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit status %d, want %d", code, exitInterrupted)
			}
			if got := strings.TrimSpace(stderr.String()); got != tc.says {
				t.Errorf("stderr %q, want %q", got, tc.says)
			}
			if stdout.Len() != 0 {
				t.Errorf("an interrupted plan printed %q", stdout.String())
			}
		})
	}
}

// TestUntilStopped: once its context ends, a command that stops by itself is waited for and says
// what it says; one that never looks at its context is left after the grace with errStopped.
func TestUntilStopped(t *testing.T) {
	ownErr := withExit(exitInterrupted, errors.New("run: interrupted: the workspace is removed"))
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		command func(ctx context.Context, never <-chan struct{}) error
		want    string
	}{
		{"stops at its context", time.Hour, func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return ownErr }, ownErr.Error()},
		{"never looks at its context", time.Millisecond, func(_ context.Context, never <-chan struct{}) error { <-never; return nil },
			"plan: interrupted (context canceled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			never := make(chan struct{})
			defer close(never)
			started := make(chan struct{})
			result := make(chan error, 1)
			go func() {
				result <- untilStopped(ctx, tc.grace, "plan", func() error { close(started); return tc.command(ctx, never) })
			}()
			<-started
			cancel()
			err := <-result
			var ee *exitError
			if err == nil || err.Error() != tc.want || !errors.As(err, &ee) || ee.code != exitInterrupted {
				t.Errorf("untilStopped = %v, want %q with exit status %d", err, tc.want, exitInterrupted)
			}
		})
	}
	if err := untilStopped(context.Background(), 0, "plan", func() error { return nil }); err != nil {
		t.Errorf("a command done without a signal: %v", err)
	}
}
