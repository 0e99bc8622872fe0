package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/sandbox"
)

// captureOutput runs fn with os.Stdout and os.Stderr going to pipes and returns what fn wrote
// to each.
func captureOutput(t *testing.T, fn func()) (stdout, stderr string) {
	t.Helper()
	pipe := func(f **os.File) (restore func() string) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		saved := *f
		*f = w
		got := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); got <- string(b) }()
		return func() string { *f = saved; w.Close(); return <-got }
	}
	out, errOut := pipe(&os.Stdout), pipe(&os.Stderr)
	fn()
	return out(), errOut()
}

// TestExecuteExitCodes: the process's exit code and its one line on stderr are what main gives a
// script: 0 on success, 2 for a usage error (with the command's help named), the command's own code
// without a message when it has nothing to say (status: tasks pending).
func TestExecuteExitCodes(t *testing.T) {
	f := newRunFixture(t, "")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"success", []string{"version"}, 0, "akira ", ""},
		{"unknown flag", []string{"plan", "--bogus"}, 2, "", "akira: unknown flag: --bogus\nsee 'akira plan --help'\n"},
		{"unknown command", []string{"frobnicate"}, 2, "", `akira: unknown command "frobnicate" for "akira"`},
		{"code without message", []string{"status", "--repo", f.repo.Work, "--work-dir", f.workDir}, 4, "0 done · 0 need a decision · 3 pending", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var code int
			stdout, stderr := captureOutput(t, func() { code = execute(context.Background(), tt.args) })
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout = %q, want %q", stdout, tt.stdout)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if tt.stderr == "" && stderr != "" || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr = %q, want %q", stderr, tt.stderr)
			}
		})
	}
	if got := withExit(3, nil).Error(); got != "exit status 3" {
		t.Errorf("an exit without a message reads %q", got)
	}
}

// TestRedisClientURLs: every REDIS_URL form serve, token and memory accept makes a client of that
// server and database, REDIS_PASSWORD replaces the URL's password (the URL may sit in plain
// configuration), and a URL of another scheme is refused naming REDIS_URL.
func TestRedisClientURLs(t *testing.T) {
	tests := []struct {
		raw, password string
		addr          string
		db            int
		wantPassword  string
	}{
		{"redis://127.0.0.1:6390/3", "", "127.0.0.1:6390", 3, ""},
		{"redis://:in-url@127.0.0.1:6390/0", "", "127.0.0.1:6390", 0, "in-url"},
		{"redis://:in-url@127.0.0.1:6390/0", "from-secret", "127.0.0.1:6390", 0, "from-secret"},
		{"rediss://cache.example:6380/1", "from-secret", "cache.example:6380", 1, "from-secret"},
	}
	for _, tt := range tests {
		rdb, err := redisClient(tt.raw, tt.password)
		if err != nil {
			t.Errorf("%s: %v", tt.raw, err)
			continue
		}
		c, ok := rdb.(*redis.Client)
		if !ok {
			t.Errorf("%s: a %T, want a single-server client", tt.raw, rdb)
			continue
		}
		o := c.Options()
		if o.Addr != tt.addr || o.DB != tt.db || o.Password != tt.wantPassword {
			t.Errorf("%s with password %q: addr %s db %d password %q; want %s %d %q", tt.raw, tt.password, o.Addr, o.DB, o.Password, tt.addr, tt.db, tt.wantPassword)
		}
		if strings.HasPrefix(tt.raw, "rediss://") && o.TLSConfig == nil {
			t.Errorf("%s: no TLS", tt.raw)
		}
		rdb.Close()
	}

	// Sentinel: the password given is the master's (the URL's is the sentinels').
	rdb, err := redisClient("redis-sentinel://:in-url@127.0.0.1:26390,127.0.0.1:26391/0?master=main", "from-secret")
	if err != nil {
		t.Fatalf("sentinel URL: %v", err)
	}
	defer rdb.Close()
	if c, ok := rdb.(*redis.Client); !ok || !strings.Contains(c.String(), "FailoverClient") || c.Options().Password != "from-secret" {
		t.Errorf("sentinel client %T %v; want a failover client with the master's password from REDIS_PASSWORD", rdb, rdb)
	}
	// Without REDIS_PASSWORD the URL's password is the master's too, and its /db is kept.
	withDB, err := redisClient("redis-sentinel://:in-url@127.0.0.1:26390/3?master=main", "")
	if err != nil {
		t.Fatalf("sentinel URL with a database: %v", err)
	}
	defer withDB.Close()
	if c, ok := withDB.(*redis.Client); !ok || c.Options().DB != 3 || c.Options().Password != "in-url" {
		t.Errorf("sentinel client %T: want database 3 and the URL's password", withDB)
	}
	if _, err := redisClient("redis-sentinel://127.0.0.1:26390/x?master=main", ""); err == nil || !strings.Contains(err.Error(), "REDIS_URL: database") {
		t.Errorf("a sentinel URL with a bad database: %v", err)
	}

	for _, bad := range []string{"mysql://db.example/0", "redis://127.0.0.1:6390/notanumber"} {
		if _, err := redisClient(bad, ""); err == nil || !strings.HasPrefix(err.Error(), "REDIS_URL: ") {
			t.Errorf("%s: %v; want an error naming REDIS_URL", bad, err)
		}
	}
}

// TestEgressCollector: /metrics shows what the worker's egress proxy let through and refused, by
// destination, as counters that grow with each request.
func TestEgressCollector(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	p := egress.New(egress.Config{Resolver: fixedNames{"ok.example": "127.0.0.1"}})
	s, err := p.Open(egress.SessionConfig{TCP: true, Allow: egress.MustAllowlist("ok.example:"+port, "127.0.0.1:"+port)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	proxyURL, _ := url.Parse("http://" + s.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	for _, u := range []string{"http://ok.example:" + port + "/", "http://ok.example:" + port + "/again", "http://unlisted.example/"} {
		if resp, err := client.Get(u); err == nil {
			resp.Body.Close()
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(egressCollector{p})
	want := `
# HELP akira_egress_requests_total Connections and requests of sandboxed commands through the egress proxy, by destination host (a wildcard's pattern) and result.
# TYPE akira_egress_requests_total counter
akira_egress_requests_total{host="ok.example",result="allowed"} 2
akira_egress_requests_total{host="unlisted.example",result="refused"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "akira_egress_requests_total"); err != nil {
		t.Error(err)
	}
}

// fixedNames resolves the names it holds, and no other.
type fixedNames map[string]string

func (r fixedNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestServeNetworkWarnings: serve warns at start when an agent profile or verification shares the
// host's network, and says nothing when everything goes through the allowlist.
func TestServeNetworkWarnings(t *testing.T) {
	fenced := config.Operator{Agents: map[string]config.AgentProfile{"a": {Kind: "exec", Command: "x"}}}
	if got := serveNetworkWarnings(fenced, sandbox.Config{VerifyNetwork: sandbox.NetAllowlist}); len(got) != 0 {
		t.Errorf("fenced: %q", got)
	}
	open := config.Operator{Agents: map[string]config.AgentProfile{"a": {Kind: "exec", Command: "x"}, "b": {Kind: "exec", Command: "y", Network: "allow"}}}
	if got := serveNetworkWarnings(open, sandbox.Config{VerifyNetwork: sandbox.NetAllowlist}); !slices.Equal(got, []string{sandbox.AllowWarning}) {
		t.Errorf("a profile with network allow: %q", got)
	}
	if got := serveNetworkWarnings(fenced, sandbox.Config{VerifyNetwork: sandbox.NetAllow}); !slices.Equal(got, []string{sandbox.AllowWarning}) {
		t.Errorf("verification with network allow: %q", got)
	}
}

// TestKnownSecrets: the log masker gets the value of every secret the App holds, of every model key
// (the providers' variables, and those the operator's file names: agents, judge, embeddings) and of
// the notification sinks' variables, and nothing for names that are unset.
func TestKnownSecrets(t *testing.T) {
	op := config.Operator{
		Agents: map[string]config.AgentProfile{"claude": {Kind: "anthropic", APIKeyEnv: "CLAUDE_KEY"}, "script": {Kind: "exec"},
			"cli": {Kind: "exec", API: "openai", AgentKeyEnv: "CLI_KEY"}},
		Judge:  &config.JudgeProfile{APIKeyEnv: "JUDGE_KEY"},
		Memory: config.Memory{Embeddings: &config.EmbeddingsProfile{APIKeyEnv: "EMBED_KEY"}},
		Notify: config.Notify{Sinks: map[string]config.NotifySink{"team": {Kind: "webhook", URLEnv: "HOOK_URL", SecretEnv: "HOOK_SECRET"}}},
	}
	env := map[string]string{
		"GITHUB_WEBHOOK_SECRET": "s-webhook", "REDIS_URL": "redis://:s-redis@r:6379/0", "CLAUDE_KEY": "s-claude",
		"JUDGE_KEY": "s-judge", "EMBED_KEY": "s-embed", "HOOK_URL": "https://hooks.example/s-hook", "HOOK_SECRET": "s-hook-secret",
		"OPENAI_API_KEY": "s-openai", "CODEX_API_KEY": "s-codex", "CLI_KEY": "s-cli", "UNRELATED": "not-a-secret",
	}
	got := knownSecrets(op, func(k string) string { return env[k] })
	slices.Sort(got)
	want := []string{"https://hooks.example/s-hook", "redis://:s-redis@r:6379/0", "s-claude", "s-cli", "s-codex", "s-embed", "s-hook-secret",
		"s-judge", "s-openai", "s-webhook"}
	if !slices.Equal(got, want) {
		t.Errorf("knownSecrets = %q\nwant %q", got, want)
	}
}

// TestTokenCommandErrors: a wrong verb, an unknown token or a Redis that does not answer each get an
// exit code and a message saying what is wrong.
func TestTokenCommandErrors(t *testing.T) {
	// TestMain points REDIS_URL at a port that refuses.
	if _, stderr, code := runCmd(t, "token", "list"); code != 2 || !strings.Contains(stderr, "127.0.0.1:1") || !strings.Contains(stderr, "start Redis or set REDIS_URL") {
		t.Errorf("Redis down: exit %d, %q; want exit 2 naming the address and the fix", code, stderr)
	}
	t.Setenv("REDIS_URL", "mysql://db.example/0")
	if _, stderr, code := runCmd(t, "token", "list"); code != 2 || !strings.Contains(stderr, "REDIS_URL") {
		t.Errorf("bad REDIS_URL: exit %d, %q", code, stderr)
	}
	t.Setenv("REDIS_URL", "redis://"+redistest.Own(t)+"/0")
	for _, args := range [][]string{{"token", "frobnicate"}, {"token", "create"}, {"token", "list", "extra"}} {
		if _, stderr, code := runCmd(t, args...); code != 2 || !strings.Contains(stderr, "usage: akira token create NAME") {
			t.Errorf("%v: exit %d, %q; want exit 2 and the usage", args, code, stderr)
		}
	}
	if _, stderr, code := runCmd(t, "token", "revoke", "nobody"); code != 1 || !strings.Contains(stderr, "no token nobody") {
		t.Errorf("revoke of an unknown token: exit %d, %q", code, stderr)
	}
	if out, _, code := runCmd(t, "token", "list"); code != 0 || strings.TrimSpace(out) != "NAME  SCOPE  CREATED  REPOSITORIES" {
		t.Errorf("list of none: exit %d, %q; want only the header", code, out)
	}
}

// TestLocalCacheAndMemory: akira run keeps its repository mirrors and its lessons where
// AKIRA_CACHE_DIR and AKIRA_MEMORY_DIR say, else under the user's cache and configuration
// directories; off turns each off, and a cache that cannot be made is no cache rather than an error.
func TestLocalCacheAndMemory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))

	t.Setenv("AKIRA_CACHE_DIR", "")
	t.Setenv("AKIRA_CACHE_MAX", "1GiB")
	c := localCache()
	if c == nil || c.Dir != filepath.Join(home, "cache", "akira", "mirrors") || c.MaxBytes != 1<<30 {
		t.Fatalf("default cache = %+v", c)
	}
	if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
		t.Errorf("the cache directory was not made: %v", err)
	}
	t.Setenv("AKIRA_CACHE_MAX", "lots")
	if c := localCache(); c == nil || c.MaxBytes != DefaultCacheMax {
		t.Errorf("an unreadable AKIRA_CACHE_MAX: %+v; want the default cap", c)
	}
	t.Setenv("AKIRA_CACHE_DIR", "off")
	if c := localCache(); c != nil {
		t.Errorf("AKIRA_CACHE_DIR=off gave %+v", c)
	}
	aFile := filepath.Join(home, "a-file")
	mustWrite(t, aFile, "x")
	t.Setenv("AKIRA_CACHE_DIR", filepath.Join(aFile, "mirrors"))
	if c := localCache(); c != nil {
		t.Errorf("a cache under a file gave %+v; want none", c)
	}

	const repo = "https://github.example/octo/svc.git"
	t.Setenv("AKIRA_MEMORY_DIR", "")
	fs, ok := localLessons(repo).(*lessons.FileStore)
	if !ok || fs.Path != lessons.FileFor(filepath.Join(home, "config", "akira", "lessons"), repo) {
		t.Errorf("default memory = %+v", localLessons(repo))
	}
	t.Setenv("AKIRA_MEMORY_DIR", "off")
	if s := localLessons(repo); s != nil {
		t.Errorf("AKIRA_MEMORY_DIR=off gave %+v", s)
	}
}

// TestVersionUnstamped: a build without release stamps or VCS information says so instead of
// printing empty fields.
func TestVersionUnstamped(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "dev", "", "unknown"
	out, _, code := runCmd(t, "version")
	// A test binary carries no VCS stamp.
	if code != 0 || !strings.HasPrefix(out, "akira dev (commit unknown commit, built unknown date, go") {
		t.Errorf("akira version = %q (exit %d)", out, code)
	}
}
