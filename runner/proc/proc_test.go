package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunExitCodesAndOutput(t *testing.T) {
	tests := []struct {
		name     string
		cmd      Cmd
		wantCode int
		wantOut  string
	}{
		{"success", Cmd{Shell: "echo hello"}, 0, "hello\n"},
		{"failure code", Cmd{Shell: "echo oops >&2; exit 7"}, 7, "oops\n"},
		{"argv", Cmd{Args: []string{"printf", "%s-%s", "a", "b"}}, 0, "a-b"},
		{"stdin", Cmd{Shell: "cat", Stdin: strings.NewReader("from stdin")}, 0, "from stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cmd.Env = Environ(nil)
			res, err := Run(context.Background(), tt.cmd)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantCode || string(res.Output) != tt.wantOut {
				t.Fatalf("got code %d output %q, want %d %q", res.ExitCode, res.Output, tt.wantCode, tt.wantOut)
			}
		})
	}
}

func TestRunStartFailure(t *testing.T) {
	_, err := Run(context.Background(), Cmd{Args: []string{"/nonexistent/binary"}})
	if err == nil {
		t.Fatal("want an error for a binary that does not exist")
	}
}

// A timeout must kill grandchildren too: the shell's background sleep would otherwise keep running.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	res, err := Run(context.Background(), Cmd{
		Shell:   "sleep 30 & echo $! > " + pidFile + "; wait",
		Env:     Environ(nil),
		Timeout: 300 * time.Millisecond,
	})
	if !errors.Is(err, ErrTimeout) || !res.TimedOut {
		t.Fatalf("want timeout, got err=%v res=%+v", err, res)
	}
	raw, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("read pid: %v", rerr)
	}
	var pid int
	if _, serr := fmt.Sscan(strings.TrimSpace(string(raw)), &pid); serr != nil {
		t.Fatalf("parse pid %q: %v", raw, serr)
	}
	waitGone(t, pid)
}

func TestContextCancelKills(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, err := Run(ctx, Cmd{Shell: "sleep 30", Env: Environ(nil)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// Background children that outlive a successful command are killed as well.
func TestBackgroundChildKilledAfterExit(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	res, err := Run(context.Background(), Cmd{Shell: "(sleep 30 >/dev/null 2>&1 & echo $! > " + pidFile + ")", Env: Environ(nil)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	raw, _ := os.ReadFile(pidFile)
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &pid); err != nil {
		t.Fatalf("parse pid %q: %v", raw, err)
	}
	waitGone(t, pid)
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A zombie still answers kill(0); it is dead once it is not in state R/S.
		if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && zombie(st) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

// zombie reports whether a /proc/<pid>/stat line says the process has exited but is not reaped.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	res, err := Run(context.Background(), Cmd{
		Shell:     "echo START; i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo END",
		Env:       Environ(nil),
		OutputCap: 200,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	if !res.Truncated || !strings.HasPrefix(out, "START\n") || !strings.HasSuffix(out, "END\n") || !strings.Contains(out, "elided") {
		t.Fatalf("truncated=%v output:\n%s", res.Truncated, out)
	}
	if len(out) > 300 {
		t.Fatalf("output %d bytes exceeds cap plus marker", len(out))
	}
}

func TestCappedBufferExact(t *testing.T) {
	b := newCappedBuffer(10)
	for _, s := range []string{"abc", "defgh", "ijklmnop", "qrstuvwxyz"} {
		b.Write([]byte(s))
	}
	got := b.Bytes()
	if !bytes.HasPrefix(got, []byte("abcde")) || !bytes.HasSuffix(got, []byte("vwxyz")) || !b.Truncated() {
		t.Fatalf("got %q", got)
	}
	small := newCappedBuffer(10)
	small.Write([]byte("short"))
	if string(small.Bytes()) != "short" || small.Truncated() {
		t.Fatalf("got %q", small.Bytes())
	}
}

func TestScrubEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=secret", "AKIRA_GITHUB_TOKEN=s2", "OPENAI_API_KEY=k", "LANG=C"}
	got := ScrubEnv(environ, []string{"PATH", "HOME", "LANG", "OPENAI_API_KEY"}, "HOME=/override", "AKIRA_TASK_ID=1")
	want := []string{"PATH=/bin", "OPENAI_API_KEY=k", "LANG=C", "HOME=/override", "AKIRA_TASK_ID=1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestEnvironNeverLeaksSecrets(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_leak")
	t.Setenv("AKIRA_GITHUB_TOKEN", "ghs_leak2")
	res, err := Run(context.Background(), Cmd{Shell: "env", Env: Environ(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Output), "ghs_leak") {
		t.Fatalf("secret reached the subprocess:\n%s", res.Output)
	}
}
