package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
)

// The tests here run `akira serve` in the test process (the binary's tests in serve_test.go run it
// as a process), so that its configuration checks and its wiring count toward the coverage of this
// package.

// serveVars are every variable `akira serve` reads; a test sets or unsets each, so that nothing of
// the developer's environment leaks in.
var serveVars = []string{
	"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "GITHUB_API_URL",
	"AKIRA_ADDR", "AKIRA_BOT_LOGIN", "REDIS_URL", "REDIS_PASSWORD", "AKIRA_CONCURRENCY", "AKIRA_WORKDIR",
	"AKIRA_CACHE_DIR", "AKIRA_CACHE_MAX", "AKIRA_CONFIG", "AKIRA_SHUTDOWN_TIMEOUT", "AKIRA_LOG_LEVEL",
	"AKIRA_ADMIN_ADDR", "AKIRA_PUBLIC_URL", "AKIRA_LOG_RETENTION", "AKIRA_METRICS", "AKIRA_PPROF",
	"AKIRA_AUDIT_SINK", "AKIRA_AUDIT_SECRET", "AKIRA_AUDIT_FILE_MAX", "AKIRA_AUDIT_FILE_KEEP",
}

// serveEnvOf is a working environment for an in-process `akira serve` against the fake GitHub and a
// Redis of the test's own, with the operator's configuration operator.
func serveEnvOf(t *testing.T, fake *githubtest.Server, operator string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	key, op := filepath.Join(dir, "key.pem"), filepath.Join(dir, "akira.yaml")
	mustWrite(t, key, string(fake.PrivateKeyPEM()))
	mustWrite(t, op, operator)
	return map[string]string{
		"GITHUB_APP_ID": fmt.Sprint(fake.AppID()), "GITHUB_PRIVATE_KEY_PATH": key, "GITHUB_WEBHOOK_SECRET": "serve-secret",
		"GITHUB_API_URL": fake.URL(), "AKIRA_ADDR": freeAddr(t), "REDIS_URL": "redis://" + redistest.Own(t) + "/0",
		"AKIRA_CONFIG": op, "AKIRA_WORKDIR": t.TempDir(), "AKIRA_CACHE_DIR": filepath.Join(t.TempDir(), "cache"),
		"AKIRA_SHUTDOWN_TIMEOUT": "5s", "AKIRA_ADMIN_ADDR": freeAddr(t),
	}
}

// setServeEnv puts env into the process's environment for the rest of the test. It also undoes what
// serve does to the process: it removes its secrets from the environment (t.Setenv restores them,
// REDIS_URL included, which TestMain points at a port that refuses) and replaces the default logger.
func setServeEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range serveVars {
		t.Setenv(k, env[k]) // restored when the test ends
		if env[k] == "" {
			// Unset, not empty: a variable that is set, even empty, wins over the env file's.
			os.Unsetenv(k)
		}
	}
	logger := slog.Default()
	t.Cleanup(func() { slog.SetDefault(logger) })
}

// serveInProcess runs `akira serve args...` until ctx ends; the channel gets its exit code and what
// it would print.
func serveInProcess(ctx context.Context, args ...string) <-chan serveResult {
	done := make(chan serveResult, 1)
	go func() {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(append([]string{"serve"}, args...))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.ExecuteContext(ctx)
		res := serveResult{err: err}
		var ee *exitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res.code = ee.code
		default:
			res.code = 1
		}
		done <- res
	}()
	return done
}

type serveResult struct {
	code int
	err  error
}

func (r serveResult) message() string {
	if r.err == nil {
		return ""
	}
	return r.err.Error()
}

// TestServeInProcessConfigurationErrors: each mistake an operator can make in the environment, the
// env file or the operator's file stops serve with the exit code of a usage error (2) and a message
// naming the variable and what is wrong; one that shows only when serve binds or calls GitHub says
// what to do.
func TestServeInProcessConfigurationErrors(t *testing.T) {
	fake := githubtest.New(t)
	const operator = "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh agent.sh\nsandbox:\n  mode: none\nci:\n  watch: off\n"
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	envFile := filepath.Join(dir, "akira.env")
	// The env file asks for a concurrency that is no number and a log level that is none; the
	// environment's own log level wins over the file's.
	mustWrite(t, envFile, "AKIRA_CONCURRENCY=lots\nAKIRA_LOG_LEVEL=loud\n")
	badYAML := filepath.Join(dir, "bad.yaml")
	mustWrite(t, badYAML, "agents: [this is not a map\n")
	missingProgram := filepath.Join(dir, "missing.yaml")
	mustWrite(t, missingProgram, "default_agent: claude\nagents:\n  claude:\n    kind: exec\n    command: no-such-agent-cli -p\nsandbox:\n  mode: none\n")
	aFile := filepath.Join(dir, "a-file")
	mustWrite(t, aFile, "not a directory\n")

	tests := []struct {
		name   string
		args   []string
		change map[string]string
		code   int
		want   []string
		absent []string
	}{
		{name: "both roles excluded", args: []string{"--web-only", "--worker-only"}, code: 2, want: []string{"--web-only and --worker-only exclude each other"}},
		{name: "env file missing", args: []string{"--env-file", filepath.Join(dir, "nope.env")}, code: 2, want: []string{"nope.env"}},
		{name: "env file values checked, environment wins", args: []string{"--env-file", envFile},
			change: map[string]string{"AKIRA_CONCURRENCY": "", "AKIRA_LOG_LEVEL": "info"}, code: 2,
			want: []string{"configuration:", `AKIRA_CONCURRENCY: "lots" is not a positive integer`}, absent: []string{"AKIRA_LOG_LEVEL"}},
		{name: "no App", change: map[string]string{"GITHUB_APP_ID": "", "GITHUB_PRIVATE_KEY_PATH": "", "AKIRA_PUBLIC_URL": "ftp://x"}, code: 2,
			want: []string{"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", `AKIRA_PUBLIC_URL: "ftp://x" is not an http(s) URL`}},
		{name: "operator file unreadable", change: map[string]string{"AKIRA_CONFIG": badYAML}, code: 2, want: []string{"AKIRA_CONFIG:"}},
		{name: "agent program missing", change: map[string]string{"AKIRA_CONFIG": missingProgram}, code: 2,
			want: []string{`AKIRA_CONFIG: agent "claude": no-such-agent-cli is not installed`}},
		{name: "redis URL", args: []string{"--web-only"}, change: map[string]string{"REDIS_URL": "mysql://db.example/0"}, code: 2, want: []string{"REDIS_URL:"}},
		{name: "admin address taken", args: []string{"--web-only"}, change: map[string]string{"AKIRA_ADMIN_ADDR": busy.Addr().String(), "AKIRA_BOT_LOGIN": "akira[bot]"},
			code: 2, want: []string{"AKIRA_ADMIN_ADDR:", busy.Addr().String()}},
		{name: "cache directory is a file", args: []string{"--worker-only"}, change: map[string]string{"AKIRA_CACHE_DIR": filepath.Join(aFile, "cache")},
			code: 2, want: []string{"AKIRA_CACHE_DIR:"}},
		{name: "GitHub unreachable for the bot login", args: []string{"--web-only"}, change: map[string]string{"GITHUB_API_URL": "http://" + freeAddr(t) + "/", "AKIRA_ADMIN_ADDR": "off"},
			code: 1, want: []string{"ask GitHub for the app's bot login (or set AKIRA_BOT_LOGIN)"}},
		{name: "webhook address taken", args: []string{"--web-only"}, change: map[string]string{"AKIRA_ADDR": busy.Addr().String(), "AKIRA_BOT_LOGIN": "akira[bot]", "AKIRA_ADMIN_ADDR": "off"},
			code: 2, want: []string{"AKIRA_ADDR:", busy.Addr().String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := serveEnvOf(t, fake, operator)
			maps.Copy(env, tt.change)
			setServeEnv(t, env)
			// A mistake serve missed would serve until the deadline and then exit 0, failing the test.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res := <-serveInProcess(ctx, tt.args...)
			if res.code != tt.code {
				t.Fatalf("exit %d (%v), want %d", res.code, res.err, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.message(), w) {
					t.Errorf("the error does not name %q:\n%s", w, res.message())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(res.message(), a) {
					t.Errorf("the error names %q:\n%s", a, res.message())
				}
			}
		})
	}
}

// TestServeInProcess: one process with both roles takes a /akira run comment to a ready pull
// request with one checkpoint per task, counts it on /metrics of the admin address, keeps the
// webhook port free of the admin routes, and stops cleanly (exit 0) when its context ends, with its
// secrets gone from the environment.
func TestServeInProcess(t *testing.T) {
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Add a file", User: "alice",
		Body: "Please:\n\n- [ ] Write the file\n"})
	scripts := t.TempDir()
	agent := filepath.Join(scripts, "agent.sh")
	mustWrite(t, agent, "#!/bin/sh\necho \"$AKIRA_TASK_TITLE\" > \"task-$AKIRA_TASK_ID.txt\"\n")
	env := serveEnvOf(t, fake, "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh "+agent+"\n"+
		"    network: allow\nsandbox:\n  mode: none\nci:\n  watch: off\n")
	env["AKIRA_PUBLIC_URL"] = "https://akira.example.test/"
	env["AKIRA_CONCURRENCY"] = "1"
	env["AKIRA_METRICS"] = "open" // as for a scraper without a token
	setServeEnv(t, env)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := serveInProcess(ctx)
	base, admin := "http://"+env["AKIRA_ADDR"], "http://"+env["AKIRA_ADMIN_ADDR"]
	waitFor(t, "akira serve to be ready", func() bool {
		select {
		case res := <-done:
			t.Fatalf("serve ended early: exit %d: %v", res.code, res.err)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if v, ok := os.LookupEnv("GITHUB_WEBHOOK_SECRET"); ok {
		t.Errorf("serve left GITHUB_WEBHOOK_SECRET=%q in its environment, where a process it starts would inherit it", v)
	}

	deliver(t, fake, base, "issue_comment", "inprocess-1", commentPayload(fake, issue, "alice", "/akira run"))
	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the pull request to be marked ready", func() bool {
		return slices.ContainsFunc(fake.PullRequests("octo", "svc"), func(pr githubtest.PullRequest) bool { return pr.Head == branch && !pr.Draft })
	})
	if got, _ := fake.FileAt("octo", "svc", branch, "task-1.1.txt"); strings.TrimSpace(got) != "Write the file" {
		t.Errorf("task-1.1.txt on %s = %q", branch, got)
	}
	if code, _ := httpGet(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("the webhook port serves /metrics (%d)", code)
	}
	if code, _ := httpGet(t, admin+"/metrics"); code != http.StatusOK {
		t.Fatalf("admin /metrics = %d", code)
	}
	waitForMetrics(t, admin+"/metrics", `akira_webhooks_total{event="issue_comment",result="accepted"} 1`, `akira_jobs_total{result="succeeded",type="akira:run"} 1`)
	if code, _ := httpGet(t, admin+"/api/v1/runs"); code != http.StatusUnauthorized {
		t.Errorf("the API without a token answered %d, want 401", code)
	}
	// The workers keep a mirror of the repository in AKIRA_CACHE_DIR.
	if entries, err := os.ReadDir(env["AKIRA_CACHE_DIR"]); err != nil || len(entries) == 0 {
		t.Errorf("AKIRA_CACHE_DIR holds %v (%v); want the repository's mirror", entries, err)
	}

	cancel()
	if res := <-done; res.code != 0 || res.err != nil {
		t.Fatalf("serve after its context ended: exit %d: %v", res.code, res.err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the webhook port still answers after serve returned")
	}
}
