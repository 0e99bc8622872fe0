package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/loopback"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/jobs/store"
)

// freeAddr is a loopback address nothing listens on now, for a test that must name the address
// before a process binds it; prefer AKIRA_ADDR=127.0.0.1:0 and the "akira serving" line.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startServe starts the real `akira serve` binary against the fake GitHub and returns its base URL.
func startServe(t *testing.T, fake *githubtest.Server, extraEnv []string, args ...string) (string, *exec.Cmd, *lockedLog) {
	t.Helper()
	// The agent's script lives apart from the key: the sandbox shows its directory, never the key's.
	scripts := t.TempDir()
	agentScript := filepath.Join(scripts, "agent.sh")
	mustWrite(t, agentScript, "#!/bin/sh\necho \"$AKIRA_TASK_TITLE\" > \"task-$AKIRA_TASK_ID.txt\"\n")
	return startServeWith(t, fake, serveSetup{
		operator: "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh " + agentScript + "\n" +
			"sandbox:\n  mode: bubblewrap\n  read_only: [" + scripts + "]\n" +
			// The fake repository has no CI of its own: its pull requests are ready when the tasks are.
			"ci:\n  watch: off\n",
		env: extraEnv, args: args,
	})
}

// serveSetup is what a test chooses of an `akira serve` process.
type serveSetup struct {
	operator string // the operator's YAML (AKIRA_CONFIG)
	// redisURL is the Redis the process uses; empty: a Redis of the test's own (redistest.Own), since
	// the real binary uses Akira's default key prefix and queue.
	redisURL string
	keyPath  string // where the App's key is written; empty: a file in a temporary directory
	workDir  string // AKIRA_WORKDIR; empty: a temporary directory
	env      []string
	args     []string
}

// lockedLog collects a process's log lines from one goroutine while the test reads them.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// adminBases maps a serve process's webhook base URL to its admin address's.
var adminBases sync.Map

// adminBase is the admin address (API, dashboard, /metrics, pprof) of the process at base.
func adminBase(t *testing.T, base string) string {
	t.Helper()
	v, ok := adminBases.Load(base)
	if !ok {
		t.Fatalf("no admin address for %s", base)
	}
	return v.(string)
}

func startServeWith(t testing.TB, fake *githubtest.Server, s serveSetup) (string, *exec.Cmd, *lockedLog) {
	t.Helper()
	sandboxtest.Require(t)
	if s.redisURL == "" {
		s.redisURL = "redis://" + redistest.Own(t) + "/0"
	}
	dir := t.TempDir()
	if s.keyPath == "" {
		s.keyPath = filepath.Join(dir, "key.pem")
	}
	if s.workDir == "" {
		s.workDir = t.TempDir()
	}
	opFile := filepath.Join(dir, "akira.yaml")
	mustWrite(t, s.keyPath, string(fake.PrivateKeyPEM()))
	mustWrite(t, opFile, s.operator)
	cmd := exec.Command(akiraBin, append([]string{"serve"}, s.args...)...)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("GITHUB_APP_ID=%d", fake.AppID()), "GITHUB_PRIVATE_KEY_PATH="+s.keyPath, "GITHUB_WEBHOOK_SECRET=serve-secret",
		"GITHUB_API_URL="+fake.URL(), "REDIS_URL="+s.redisURL,
		// Port 0: the process binds ports nobody holds and names them in its "akira serving" line. A
		// port picked free here and bound there later can be taken by another test in between.
		"AKIRA_ADDR=127.0.0.1:0", "AKIRA_ADMIN_ADDR=127.0.0.1:0",
		"AKIRA_CONFIG="+opFile, "AKIRA_WORKDIR="+s.workDir, "AKIRA_SHUTDOWN_TIMEOUT=5s")
	cmd.Env = append(cmd.Env, s.env...)
	logs := &lockedLog{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-logDone
		if t.Failed() {
			t.Logf("akira serve log:\n%s", logs.String())
		}
	})
	var addr, adminAddr string
	waitFor(t, `akira serve's "akira serving" line`, func() bool {
		if addr, adminAddr = servingAddrs(logs.String()); addr != "" {
			return true
		}
		select {
		case <-logDone:
			t.Fatalf("akira serve ended before it served")
		default:
		}
		return false
	})
	base := "http://" + addr
	adminBases.Store(base, "http://"+adminAddr)
	waitFor(t, "akira serve to answer /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, cmd, logs
}

// servingAddrs reads the webhook and admin addresses from a serve log's "akira serving" line; empty
// before the line.
func servingAddrs(log string) (addr, admin string) {
	for _, line := range strings.Split(log, "\n") {
		var entry struct {
			Msg       string `json:"msg"`
			Addr      string `json:"addr"`
			AdminAddr string `json:"admin_addr"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "akira serving" {
			return entry.Addr, entry.AdminAddr
		}
	}
	return "", ""
}

// commentPayload is the issue_comment webhook of login commenting body on issue of octo/svc; the
// comment is added to the fake GitHub too.
func commentPayload(fake *githubtest.Server, issue githubtest.Issue, login, body string) map[string]any {
	c := fake.AddComment("octo", "svc", issue.Number, login, body)
	user := map[string]any{"login": login, "id": 7, "type": "User"}
	return map[string]any{
		"action": "created", "installation": map[string]any{"id": fake.InstallationID("octo", "svc")},
		"repository": map[string]any{"name": "svc", "full_name": "octo/svc", "default_branch": "main",
			"owner": map[string]any{"login": "octo", "type": "User"}},
		"sender": user, "issue": map[string]any{"number": issue.Number, "title": issue.Title, "user": user},
		"comment": map[string]any{"id": c.ID, "body": body, "user": user},
	}
}

// deliver sends a signed webhook to akira serve, wants it accepted and returns the answer's reason.
func deliver(t testing.TB, fake *githubtest.Server, base, event, delivery string, payload any) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(fake.SignedWebhook(base+"/webhook", "serve-secret", event, delivery, payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook answer %d (%v), want 202", resp.StatusCode, err)
	}
	return answer.Reason
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// waitLimit bounds every waitFor: a condition that never holds (a broken dedupe making two runs of
// one delivery) fails its test with what it waited for, instead of holding the whole suite until its
// timeout and hiding every other result. It is a guard against a hang, far above the seconds these
// waits take, not a measure of time.
const waitLimit = 4 * time.Minute

// waitFor polls cond until it holds, or fails the test after waitLimit (or near its deadline).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, waitLimit, what, cond)
}

// waitWithin is waitFor with a limit of its own, for a benchmark's long wait.
func waitWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	// A benchmark (testing.B) has no deadline of its own.
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dl.Deadline(); ok && d.Add(-15*time.Second).Before(deadline) {
			deadline = d.Add(-15 * time.Second)
		}
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, time.Since(start).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServeEndToEnd runs the real binary as one process (web + worker): a /akira run comment on an issue
// becomes a draft PR whose branch gets one checkpoint per task of the issue's checklist, the PR is marked
// ready, /metrics counts it all, and SIGTERM stops the process cleanly.
func TestServeEndToEnd(t *testing.T) {
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Add two files", User: "alice",
		Body: "Please:\n\n- [ ] Write the first file\n- [ ] Write the second file (depends: 1.1)\n"})
	// /metrics left open, as for a scraper without a token.
	base, cmd, _ := startServe(t, fake, []string{"AKIRA_METRICS=open"})

	if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	payload := commentPayload(fake, issue, "alice", "/akira run")
	// A redelivery of the same delivery id runs once: its intake is not queued again.
	for i, want := range []string{"intake enqueued", "already enqueued"} {
		if got := deliver(t, fake, base, "issue_comment", "serve-delivery-1", payload); got != want {
			t.Fatalf("delivery %d answered %q, want %q", i+1, got, want)
		}
	}

	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the PR to be marked ready", func() bool {
		for _, pr := range fake.PullRequests("octo", "svc") {
			if pr.Head == branch && !pr.Draft {
				return true
			}
		}
		return false
	})
	var tasks []string
	for _, commit := range fake.Log("octo", "svc", branch) {
		if id := commit.Trailers["Akira-Task"]; id != "" {
			tasks = append(tasks, id)
		}
	}
	if strings.Join(tasks, ",") != "1.2,1.1" {
		t.Fatalf("checkpoints on %s (newest first) = %v, want 1.2,1.1", branch, tasks)
	}
	if got, _ := fake.FileAt("octo", "svc", branch, "task-1.2.txt"); strings.TrimSpace(got) != "Write the second file" {
		t.Fatalf("task-1.2.txt = %q", got)
	}
	if code, _ := httpGet(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("the webhook port serves /metrics (%d)", code)
	}
	waitForMetrics(t, adminBase(t, base)+"/metrics",
		`akira_webhooks_total{event="issue_comment",result="accepted"} 2`,
		`akira_webhook_ack_seconds_count{event="issue_comment",result="accepted"} 2`,
		`akira_jobs_total{result="succeeded",type="akira:run"} 1`)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("akira serve after SIGTERM: %v", err)
	}

	// Everything Akira sent GitHub during the run must be what GitHub's published API accepts.
	if spec, ok := githubtest.OpenAPISubsetPath(); ok {
		reqs := fake.Requests()
		if len(reqs) < 10 {
			t.Fatalf("only %d requests recorded", len(reqs))
		}
		githubtest.CheckRequestsAgainstOpenAPI(t, spec, reqs)
	} else {
		t.Log("../shared/fixtures/github not found: requests not checked against the OpenAPI subset")
	}
}

func TestServeConfigurationErrors(t *testing.T) {
	cmd := exec.Command(akiraBin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "AKIRA_CONCURRENCY=lots", "GITHUB_API_URL=not a url"}
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, out)
	}
	for _, name := range []string{"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "GITHUB_PRIVATE_KEY", "GITHUB_API_URL", "AKIRA_CONCURRENCY"} {
		if !strings.Contains(string(out), name) {
			t.Errorf("the error does not name %s:\n%s", name, out)
		}
	}
}

func TestServeWorkerOnlyHealth(t *testing.T) {
	fake := githubtest.New(t)
	base, _, _ := startServe(t, fake, nil, "--worker-only")
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK || !strings.Contains(body, "ready") {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	// The admin address answers (/metrics wants a token by default).
	waitFor(t, "the admin address", func() bool {
		code, _ := httpGet(t, adminBase(t, base)+"/metrics")
		return code == http.StatusUnauthorized
	})
	resp, err := http.Post(base+"/webhook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a worker-only process answered /webhook with %d", resp.StatusCode)
	}
}

// TestServeAdminOnlyOnItsInternalAddress: profiles (with AKIRA_PPROF=on), the API, the dashboard and
// /metrics are served on AKIRA_ADMIN_ADDR, never on the webhook port, and only to an operator's token.
func TestServeAdminOnlyOnItsInternalAddress(t *testing.T) {
	fake := githubtest.New(t)
	redisAddr := redistest.Own(t)
	base, _, _ := startServeWith(t, fake, serveSetup{operator: "sandbox:\n  mode: none\n", redisURL: "redis://" + redisAddr + "/0",
		env: []string{"AKIRA_PPROF=on"}, args: []string{"--web-only"}})
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	ops, err := store.NewStore(rdb, "").CreateToken(context.Background(), "ops", store.ScopeControl)
	if err != nil {
		t.Fatal(err)
	}
	admin := adminBase(t, base)
	getWith := func(path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "pprof to answer", func() bool { return getWith("/debug/pprof/", ops) == http.StatusOK })
	for path, want := range map[string]int{"/debug/pprof/heap?debug=1": http.StatusOK, "/metrics": http.StatusOK} {
		if code := getWith(path, ops); code != want {
			t.Errorf("%s with a control token = %d, want %d", path, code, want)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/metrics", "/api/v1/runs"} {
		if code := getWith(path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a token = %d, want 401", path, code)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/api/v1/runs", "/api/v1/openapi.json", "/ui/", "/ui/login", "/metrics"} {
		if code, _ := httpGet(t, base+path); code != http.StatusNotFound {
			t.Errorf("the webhook port answers %s with %d", path, code)
		}
	}
}

// TestServeMissingAgentProgram: a worker whose operator profile names a program that is not
// installed refuses to start, naming the profile and the program, instead of failing every task.
func TestServeMissingAgentProgram(t *testing.T) {
	fake := githubtest.New(t)
	dir := t.TempDir()
	key, op := filepath.Join(dir, "key.pem"), filepath.Join(dir, "akira.yaml")
	mustWrite(t, key, string(fake.PrivateKeyPEM()))
	mustWrite(t, op, "default_agent: claude\nagents:\n  claude:\n    kind: exec\n    command: no-such-agent-cli -p --permission-mode acceptEdits\n  shell:\n    kind: exec\n    command: sh agent.sh\nsandbox:\n  mode: none\n")
	cmd := exec.Command(akiraBin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, fmt.Sprintf("GITHUB_APP_ID=%d", fake.AppID()),
		"GITHUB_PRIVATE_KEY_PATH=" + key, "GITHUB_WEBHOOK_SECRET=s", "GITHUB_API_URL=" + fake.URL(), "AKIRA_CONFIG=" + op,
		"AKIRA_ADDR=127.0.0.1:0", "REDIS_URL=redis://" + redistest.Own(t) + "/0"}
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `agent "claude": no-such-agent-cli is not installed`) {
		t.Fatalf("exit %d: %s; want exit 2 naming the profile and its program", code, out)
	}
	if strings.Contains(string(out), `agent "shell"`) {
		t.Errorf("an installed program was reported: %s", out)
	}
}
