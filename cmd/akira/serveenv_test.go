package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/audit"
)

// TestLoadServeEnv: the worker's settings from its environment: defaults, each variable read, and
// every bad value named in one error.
func TestLoadServeEnv(t *testing.T) {
	dir := t.TempDir()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	e, err := loadServeEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.Concurrency != 2 || e.AdminAddr != "127.0.0.1:9090" || e.ShutdownTimeout != 5*time.Minute || e.MetricsOpen || e.Pprof ||
		e.CacheDir != filepath.Join(os.TempDir(), "akira-cache") || e.CacheMax != DefaultCacheMax || e.LogLevel != slog.LevelInfo {
		t.Errorf("defaults = %+v", e)
	}

	e, err = loadServeEnv(env(map[string]string{
		"REDIS_URL": "redis://r:6380/2", "REDIS_PASSWORD": "pw", "AKIRA_CONCURRENCY": "8", "AKIRA_WORKDIR": dir,
		"AKIRA_CACHE_DIR": "off", "AKIRA_CACHE_MAX": "1GiB", "AKIRA_CONFIG": "/etc/akira.yaml", "AKIRA_SHUTDOWN_TIMEOUT": "30s",
		"AKIRA_ADMIN_ADDR": "off", "AKIRA_PUBLIC_URL": "https://akira.example.com/", "AKIRA_LOG_RETENTION": "24h", "AKIRA_LOG_LEVEL": "debug",
		"AKIRA_METRICS": "open", "AKIRA_PPROF": "on",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := serveEnv{RedisURL: "redis://r:6380/2", RedisPassword: "pw", Concurrency: 8, WorkDir: dir, CacheDir: "", CacheMax: 1 << 30,
		ConfigFile: "/etc/akira.yaml", ShutdownTimeout: 30 * time.Second, AdminAddr: "", PublicURL: "https://akira.example.com",
		LogRetention: 24 * time.Hour, LogLevel: slog.LevelDebug, MetricsOpen: true, Pprof: true,
		Audit: audit.Config{MaxSize: audit.DefaultFileMax, Keep: audit.DefaultFileKeep}}
	if e != want {
		t.Errorf("loadServeEnv =\n%+v\nwant\n%+v", e, want)
	}

	_, err = loadServeEnv(env(map[string]string{
		"AKIRA_CONCURRENCY": "0", "AKIRA_WORKDIR": filepath.Join(dir, "missing"), "AKIRA_CACHE_MAX": "lots",
		"AKIRA_SHUTDOWN_TIMEOUT": "soon", "AKIRA_PUBLIC_URL": "ftp://x", "AKIRA_LOG_RETENTION": "-1h", "AKIRA_LOG_LEVEL": "loud",
		"AKIRA_METRICS": "public", "AKIRA_PPROF": "yes", "AKIRA_AUDIT_SINK": "syslog://siem", "AKIRA_AUDIT_FILE_KEEP": "none",
	}))
	for _, name := range []string{"AKIRA_CONCURRENCY", "AKIRA_WORKDIR", "AKIRA_CACHE_MAX", "AKIRA_SHUTDOWN_TIMEOUT", "AKIRA_PUBLIC_URL", "AKIRA_LOG_RETENTION", "AKIRA_LOG_LEVEL",
		"AKIRA_METRICS", "AKIRA_PPROF", "AKIRA_AUDIT_SINK", "AKIRA_AUDIT_FILE_KEEP"} {
		if err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("the error %v does not name %s", err, name)
		}
	}
}

// TestReadEnvFile: the file `akira setup` writes is read back, quotes and `export` included; a line
// that is not KEY=VALUE is refused with its file and line.
func TestReadEnvFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "akira.env")
	mustWrite(t, path, "# written by akira setup\n\nGITHUB_APP_ID=123\nexport GITHUB_WEBHOOK_SECRET=\"s3\\\"cret\"\nGITHUB_CLIENT_SECRET='single quoted'\nEMPTY=\n")
	got, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GITHUB_APP_ID": "123", "GITHUB_WEBHOOK_SECRET": `s3"cret`, "GITHUB_CLIENT_SECRET": "single quoted", "EMPTY": ""}
	if len(got) != len(want) {
		t.Fatalf("readEnvFile = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for content, wantErr := range map[string]string{
		"A=1\nnot a pair\n":      "line 2: want KEY=VALUE",
		"BAD KEY=1\n":            "line 1: want KEY=VALUE",
		"Q=\"unterminated\\\"\n": "line 1: Q: bad double-quoted value",
	} {
		mustWrite(t, path, content)
		if _, err := readEnvFile(path); err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), path) {
			t.Errorf("readEnvFile(%q) = %v, want an error naming %s and %q", content, err, path, wantErr)
		}
	}
	if _, err := readEnvFile(filepath.Join(dir, "missing.env")); err == nil || !strings.Contains(err.Error(), "--env-file:") {
		t.Errorf("a missing file = %v", err)
	}
}
