package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
)

// serveOnce runs the akira binary with args and env until it exits (a minute at most: one that
// serves instead of failing is killed then and fails the test) and returns its stderr and exit code.
func serveOnce(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, akiraBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("akira %s did not exit:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stderr.String(), cmd.ProcessState.ExitCode()
}

// appEnv is a GitHub App's environment against the fake GitHub, for a process that stops before
// it would need one that works.
func appEnv(t *testing.T, fake *githubtest.Server) []string {
	t.Helper()
	dir := t.TempDir()
	key, op := filepath.Join(dir, "key.pem"), filepath.Join(dir, "akira.yaml")
	mustWrite(t, key, string(fake.PrivateKeyPEM()))
	mustWrite(t, op, "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh agent.sh\nsandbox:\n  mode: none\nci:\n  watch: off\n")
	return []string{fmt.Sprintf("GITHUB_APP_ID=%d", fake.AppID()), "GITHUB_PRIVATE_KEY_PATH=" + key, "GITHUB_WEBHOOK_SECRET=s",
		"GITHUB_API_URL=" + fake.URL(), "AKIRA_CONFIG=" + op, "AKIRA_WORKDIR=" + t.TempDir(), "AKIRA_BOT_LOGIN=akira[bot]",
		"AKIRA_ADDR=127.0.0.1:0", "AKIRA_ADMIN_ADDR=127.0.0.1:0"}
}

// TestServeBinaryWithoutRedis: akira serve with no Redis at REDIS_URL exits 2 at once, naming the
// address it tried and the fix, and neither says it serves nor prints go-redis's pool lines.
func TestServeBinaryWithoutRedis(t *testing.T) {
	fake := githubtest.New(t)
	nobody := freeAddr(t) // nothing listens there
	for _, args := range [][]string{{"serve"}, {"serve", "--worker-only"}, {"serve", "--web-only"}, {"token", "create", "ci"}, {"token", "list"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, code := serveOnce(t, append(appEnv(t, fake), "REDIS_URL=redis://:hunter2@"+nobody+"/0"), args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			for _, want := range []string{"no answer at " + nobody, "start Redis or set REDIS_URL"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"akira serving", "pool.go", "connection pool", "workers started", "hunter2"} {
				if strings.Contains(out, bad) {
					t.Errorf("output says %q:\n%s", bad, out)
				}
			}
		})
	}
}

// TestServeBinaryBadAuditSink: an AKIRA_AUDIT_SINK Akira cannot use, or an HTTP sink without its
// secret, ends serve at start with exit 2, naming the variable and what to write instead.
func TestServeBinaryBadAuditSink(t *testing.T) {
	fake := githubtest.New(t)
	tests := []struct {
		env  []string
		want []string
	}{
		{[]string{"AKIRA_AUDIT_SINK=syslog://siem"}, []string{"AKIRA_AUDIT_SINK", "file:/var/log/akira/audit.jsonl or https://"}},
		{[]string{"AKIRA_AUDIT_SINK=https://siem.example.com/akira"}, []string{"AKIRA_AUDIT_SECRET", "set a secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.env[0], func(t *testing.T) {
			out, code := serveOnce(t, append(appEnv(t, fake), tc.env...), "serve")
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "akira serving") {
				t.Errorf("serve started:\n%s", out)
			}
		})
	}
}

// TestServeBinarySecondOnTakenPort: a second akira serve on the first one's ports exits 2 with the
// address in use and the variable to change, without a panic and without saying it serves.
func TestServeBinarySecondOnTakenPort(t *testing.T) {
	fake := githubtest.New(t)
	base, first, _ := startServe(t, fake, nil)
	admin := strings.TrimPrefix(adminBase(t, base), "http://")
	env := append(appEnv(t, fake), "AKIRA_ADDR="+strings.TrimPrefix(base, "http://"), "AKIRA_ADMIN_ADDR="+admin,
		"REDIS_URL="+envOf(first, "REDIS_URL"))
	out, code := serveOnce(t, env, "serve")
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{"AKIRA_ADDR: ", "address already in use", "set AKIRA_ADDR"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"panic", "akira serving", "workers started", "goroutine "} {
		if strings.Contains(out, bad) {
			t.Errorf("output says %q:\n%s", bad, out)
		}
	}
	// The admin address alone taken: named as such.
	env = append(env, "AKIRA_ADDR=127.0.0.1:0")
	out, code = serveOnce(t, env, "serve")
	if code != 2 || !strings.Contains(out, "AKIRA_ADMIN_ADDR: ") || !strings.Contains(out, "address already in use") || strings.Contains(out, "akira serving") {
		t.Fatalf("admin address taken: exit %d:\n%s", code, out)
	}
}

// TestServeBinaryRedisLostAndBack: a server whose Redis goes away says so once, holds back the
// errors of what polls Redis meanwhile, and says once that Redis is back.
func TestServeBinaryRedisLostAndBack(t *testing.T) {
	rs := redistest.StartServer(t, false)
	fake := githubtest.New(t)
	_, _, logs := startServeWith(t, fake, serveSetup{
		operator: "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh agent.sh\nsandbox:\n  mode: none\nci:\n  watch: off\n",
		redisURL: "redis://" + rs.Addr + "/0",
	})
	rs.Stop()
	waitFor(t, "the lost line", func() bool { return strings.Contains(logs.String(), "redis: connection lost") })
	// Several polls of asynq, the reaper and the fair gate's heartbeat.
	time.Sleep(6 * time.Second)
	rs.Start()
	waitFor(t, "the back line", func() bool { return strings.Contains(logs.String(), "redis: back") })
	out := logs.String()
	if n := strings.Count(out, "redis: connection lost"); n != 1 {
		t.Errorf("%d lost lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "redis: back"); n != 1 {
		t.Errorf("%d back lines, want 1:\n%s", n, out)
	}
	// Between the two, no poller repeats the connection error (a Redis that comes back empty is
	// said by the recovery, which is another matter).
	lost := out[strings.Index(out, "redis: connection lost"):strings.Index(out, "redis: back")]
	if _, rest, _ := strings.Cut(lost, "\n"); strings.Contains(rest, "connection refused") || strings.Contains(rest, "pool") {
		t.Errorf("connection errors between the lost and back lines:\n%s", rest)
	}
}

// envOf is the value of a variable cmd was started with.
func envOf(cmd *exec.Cmd, name string) string {
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestTokenWithoutRedis: akira token, which keeps tokens in Redis, says which Redis it tried and
// what to do, with the exit code of a usage error.
func TestTokenWithoutRedis(t *testing.T) {
	nobody := freeAddr(t)
	t.Setenv("REDIS_URL", "redis://"+nobody+"/0")
	_, stderr, code := runCmd(t, "token", "create", "ci")
	if code != 2 || !strings.Contains(stderr, "redis: no answer at "+nobody+" (REDIS_URL)") || !strings.Contains(stderr, "start Redis or set REDIS_URL") {
		t.Fatalf("exit %d, want 2 naming the address and the fix:\n%s", code, stderr)
	}
}
