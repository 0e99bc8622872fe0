// Package e2e drives Akira end to end: the real webhook server (app), real asynq workers (jobs) on a real
// Redis, and internal/githubtest as GitHub (REST, app JWT, installation tokens, git over smart HTTP). The coding
// agent is a shell script run by the exec agent, as an operator would configure it.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs"
	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/workspace"
)

const webhookSecret = "e2e-secret"

// workerEnv is the environment variable that turns the test binary into a worker process (see TestMain);
// its value is the worker's configuration as JSON.
const workerEnv = "AKIRA_E2E_WORKER"

// readyEnv names the file a worker process creates once it takes tasks and reaps.
const readyEnv = "AKIRA_E2E_READY"

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(workerProcess(spec))
	}
	os.Exit(m.Run())
}

// workerProcess runs a worker until SIGTERM or SIGINT: the body of the separate worker process.
func workerProcess(spec string) int {
	var ws workerSpec
	if err := json.Unmarshal([]byte(spec), &ws); err != nil {
		fmt.Fprintln(os.Stderr, "worker spec:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := runWorker(ctx, ws, log); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// workerSpec is everything a worker needs, serialisable so that a worker can be a separate process.
type workerSpec struct {
	RedisAddr    string
	Prefix       string
	Queue        string
	APIURL       string
	AppID        int64
	KeyPEM       []byte
	OperatorFile string
	WorkDir      string
	LockTTL      time.Duration
	Concurrency  int
	// Clock judges installation tokens' expiry (nil: time.Now); an in-process worker's only.
	Clock func() time.Time `json:"-"`
	// PublicURL is the dashboard's address the worker links to (AKIRA_PUBLIC_URL); none when empty.
	PublicURL string
}

// runWorker is the worker side of `akira serve`, wired the way cmd/akira wires it.
func runWorker(ctx context.Context, ws workerSpec, log *slog.Logger) error {
	rdb := redis.NewClient(&redis.Options{Addr: ws.RedisAddr})
	defer rdb.Close()
	var fg *fair.Gate // made once the operator's file is read, before any job runs
	ghApp, err := gh.NewApp(gh.AppConfig{AppID: ws.AppID, PrivateKeyPEM: ws.KeyPEM, BaseURL: ws.APIURL, Logger: log, Clock: ws.Clock,
		OnRateLimit: func(id int64, wait time.Duration) { _ = fg.Pause(context.Background(), id, time.Now().Add(wait)) }})
	if err != nil {
		return err
	}
	op, err := config.LoadOperator(ws.OperatorFile)
	if err != nil {
		return err
	}
	client := asynq.NewClientFromRedisClient(rdb)
	defer client.Close()
	locker := store.NewLocker(rdb, ws.Prefix)
	locker.TTL, locker.Logger = ws.LockTTL, log
	// Every worker of a test shares one repository cache, as the workers of one machine do.
	cache, err := workspace.NewCache(filepath.Join(ws.WorkDir, "akira-cache"), 0)
	if err != nil {
		return err
	}
	cache.Logger = log
	semantic, err := profiles.NewSemantic(op.Memory, profiles.Options{Logger: log})
	if err != nil {
		return err
	}
	sinks, err := notify.Sinks(op.Notify, os.Getenv)
	if err != nil {
		return err
	}
	// The fair gate, as serve wires it: this worker's slots count, and its rate limits pause only
	// the installation that met them.
	fg = fair.New(rdb, ws.Prefix, op.Fair, ws.Concurrency)
	fg.TaskQueue = ws.Queue
	go fg.Heartbeat(ctx)
	deps := flow.Deps{
		Store: store.NewStore(rdb, ws.Prefix), Locker: locker, Fair: fg,
		Enqueuer: queue.NewEnqueuer(client, queue.TaskOptions{Queue: ws.Queue}).WithFair(fg),
		GitHub:   ghApp.Installations(),
		Operator: op, WorkDir: ws.WorkDir, Cache: cache, Semantic: semantic, Sinks: sinks, Logger: log, Repositories: ghApp,
		PublicURL: ws.PublicURL, Deliveries: ghApp,
	}
	if judge, err := profiles.NewJudge(op.Judge, profiles.Options{Logger: log}); err != nil {
		return err
	} else if judge != nil {
		deps.Judge = judge
	}
	h, err := jobs.NewHandler(deps)
	if err != nil {
		return err
	}
	srv := jobs.NewWorker(rdb, jobs.WorkerConfig{
		Queue: ws.Queue, Concurrency: ws.Concurrency, Logger: log, ShutdownTimeout: 2 * time.Second,
		RetryDelay: func(int, error, *asynq.Task) time.Duration { return time.Second },
	})
	if err := srv.Start(jobs.NewServeMux(h)); err != nil {
		return err
	}
	reaped := make(chan struct{})
	go func() { defer close(reaped); h.RunReaper(ctx, 0) }()
	if ready := os.Getenv(readyEnv); ready != "" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return err
		}
	}
	<-ctx.Done()
	<-reaped
	srv.Shutdown()
	return nil
}

// env is one end-to-end setup: a fake GitHub, the webhook server, a Redis namespace and a queue of its own.
type env struct {
	t      *testing.T
	gh     *githubtest.Server
	rdb    *redis.Client
	store  *store.Store
	web    *httptest.Server
	spec   workerSpec
	logDir string
	owner  string
	repo   string
}

// redisAddr is the Redis the tests share (see internal/redistest); tb fails when there is none.
func redisAddr(tb testing.TB) string {
	tb.Helper()
	return redistest.Addr(tb)
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// agentScript is the coding agent of the tests. It logs every call and its prompt, then:
//   - a task titled "... flaky ..." fails unless the prompt holds the word MAGIC-WORD (human guidance);
//   - a task titled "... slow ..." signals that it started and waits for the file "release" (the crash test
//     kills its worker meanwhile);
//   - a task titled "... patient ..." needs MAGIC-WORD like a flaky one, then behaves like a slow one;
//   - a task titled "... breaking ..." changes two files, which fail a check.sh unless MAGIC-WORD;
//   - the sync task (the merge of a base that moved) resolves each conflicted file by keeping every
//     side, unless the file holds UNRESOLVABLE and the prompt no MAGIC-WORD;
//   - any other task writes one file named after the task.
const agentScript = `#!/bin/sh
set -e
log="$E2E_LOG"
n=$(ls "$log" | grep -c '^prompt-' || true)
cp "$AKIRA_PROMPT_FILE" "$log/prompt-$AKIRA_TASK_ID-$n.md"
echo "$AKIRA_TASK_ID $AKIRA_ATTEMPT" >> "$log/calls"
if [ "$AKIRA_TASK_ID" = normalize ]; then
	printf 'My reading.\n\n~~~markdown\n- [ ] 1 Add the form\n  - source: 1\n- [ ] 2 Add the handler (depends: 1)\n  - source: 2\n~~~\n'
	exit 0
fi
if [ "$AKIRA_TASK_ID" = plan ]; then
	if grep -q UNPARSABLE "$AKIRA_PROMPT_FILE"; then
		echo "I read the code but I would rather not say."
	else
		printf 'Here is the plan.\n\n~~~markdown\n## Phase 1\n\n- [ ] 1 Add the form\n- [ ] 2 Add the handler\n  - depends: 1\n  - verify: test -f out-1.txt\n~~~\n'
	fi
	exit 0
fi
if [ "$AKIRA_TASK_ID" = sync ]; then
	for f in $(grep -rl '^<<<<<<< ' --exclude-dir=.git . || true); do
		if grep -q UNRESOLVABLE "$f" && ! grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE"; then continue; fi
		grep -v -e '^<<<<<<< ' -e '^||||||| ' -e '^=======$' -e '^>>>>>>> ' "$f" > "$f.resolved" || true
		mv "$f.resolved" "$f"
	done
	exit 0
fi
case "$AKIRA_TASK_TITLE" in
*costly*) printf '{"cost_usd": 0.6, "input_tokens": 1000}' > "$AKIRA_USAGE_FILE" ;;
esac
case "$AKIRA_TASK_TITLE" in
*patient*)
	grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE" || { echo "I cannot do this without the magic word" >&2; exit 3; }
	echo $$ > "$log/pid-$AKIRA_TASK_ID"
	touch "$log/started-$AKIRA_TASK_ID"
	while [ ! -f "$log/release" ]; do sleep 0.1; done
	echo "patient" > "out-$AKIRA_TASK_ID.txt" ;;
*flaky*)
	if grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE"; then
		echo "fixed" > "out-$AKIRA_TASK_ID.txt"
	else
		echo "I cannot do this without the magic word" >&2
		exit 3
	fi ;;
*breaking*)
	# changes two files; fails the repository's check.sh unless a person's guidance holds MAGIC-WORD
	if grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE"; then echo fixed > "out-$AKIRA_TASK_ID.txt"; else echo broken > "out-$AKIRA_TASK_ID.txt"; fi
	echo "notes of $AKIRA_ATTEMPT" > "notes-$AKIRA_TASK_ID.txt" ;;
*paced*)
	# an agent that takes a second, as a model call takes some (the fair-share test and its figures)
	sleep 1
	echo "$AKIRA_TASK_TITLE" > "out-$AKIRA_TASK_ID.txt" ;;
*slow*)
	echo $$ > "$log/pid-$AKIRA_TASK_ID"
	touch "$log/started-$AKIRA_TASK_ID"
	while [ ! -f "$log/release" ]; do sleep 0.1; done
	echo "slow" > "out-$AKIRA_TASK_ID.txt" ;;
*)
	echo "$AKIRA_TASK_TITLE" > "out-$AKIRA_TASK_ID.txt" ;;
esac
`

// newEnv starts GitHub, the webhook server and, unless external, an in-process worker.
func newEnv(t *testing.T, external bool) *env {
	t.Helper()
	return newEnvOn(t, external, redisAddr(t))
}

// newEnvOn is newEnv on the Redis at addr (a test's own, which it may stop and restart).
func newEnvOn(t *testing.T, external bool, addr string) *env {
	t.Helper()
	return newEnvWith(t, external, addr, "")
}

// newEnvWith is newEnvOn with more of the operator's configuration (YAML appended to the file) and
// of the fake GitHub's.
func newEnvWith(t *testing.T, external bool, addr, operatorYAML string, ghOpts ...githubtest.Option) *env {
	t.Helper()
	e := &env{t: t, gh: githubtest.New(t, ghOpts...), owner: "octo", repo: "demo", logDir: t.TempDir()}
	e.rdb = redis.NewClient(&redis.Options{Addr: addr})
	if err := e.rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	id := randomHex(t, 6)
	prefix, qname := "akira-e2e:"+id+":", "akira-e2e-"+id
	t.Cleanup(func() {
		ctx := context.Background()
		_ = asynq.NewInspectorFromRedisClient(e.rdb).DeleteQueue(qname, true)
		iter := e.rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			e.rdb.Del(ctx, iter.Val())
		}
		_ = e.rdb.Close()
	})
	e.store = store.NewStore(e.rdb, prefix)

	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	must(t, os.WriteFile(script, []byte(agentScript), 0o755))
	op := fmt.Sprintf("default_agent: script\nmax_attempts: 2\nagents:\n  script:\n    kind: exec\n    command: sh %s\n    env: [E2E_LOG]\n    timeout: 10m\n", script) + operatorYAML
	if !strings.Contains(operatorYAML, "ci:") {
		// The fake repositories have no CI of their own unless a test plays one (ci_test.go).
		op += "ci:\n  watch: off\n"
	}
	opFile := filepath.Join(dir, "akira.yml")
	must(t, os.WriteFile(opFile, []byte(op), 0o644))
	t.Setenv("E2E_LOG", e.logDir)

	e.spec = workerSpec{RedisAddr: addr, Prefix: prefix, Queue: qname, APIURL: e.gh.URL(), AppID: e.gh.AppID(),
		KeyPEM: e.gh.PrivateKeyPEM(), OperatorFile: opFile, WorkDir: t.TempDir(), LockTTL: 3 * time.Second, Concurrency: 2}

	enq := queue.NewEnqueuer(asynq.NewClientFromRedisClient(e.rdb), queue.TaskOptions{Queue: qname})
	handler, err := app.NewServer(
		app.ServerConfig{AppID: e.gh.AppID(), WebhookSecret: []byte(webhookSecret), BotLogin: e.gh.BotLogin()},
		app.Deps{Enqueuer: enq, Logger: testLogger(t)})
	must(t, err)
	e.web = httptest.NewServer(handler)
	t.Cleanup(e.web.Close)
	// The fake GitHub delivers the tests' webhooks and keeps them, so the app may ask for them again.
	e.gh.SetWebhook(e.web.URL+"/webhook", webhookSecret)

	if !external {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runWorker(ctx, e.spec, testLogger(t)) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	return e
}

// sub is e for a subtest: its failures belong to t.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// testLogger writes to the test log, and only while the test runs.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a late log line after the test ended must not panic
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// createRepo creates octo/demo with files and gives alice write and mallory read access.
func (e *env) createRepo(files map[string]string) {
	e.gh.CreateRepo(e.owner, e.repo, files)
	e.gh.SetPermission(e.owner, e.repo, "alice", "write")
	e.gh.SetPermission(e.owner, e.repo, "mallory", "read")
}

// deliver posts a signed webhook and checks the answer's status.
func (e *env) deliver(event, delivery string, payload any, wantStatus int) string {
	e.t.Helper()
	status, body, err := e.gh.Deliver(event, delivery, payload)
	must(e.t, err)
	if status != wantStatus {
		e.t.Fatalf("%s delivery %s: status %d, want %d: %s", event, delivery, status, wantStatus, body)
	}
	return string(body)
}

func (e *env) repository() map[string]any {
	r, _ := e.gh.Repo(e.owner, e.repo)
	return map[string]any{"id": r.ID, "name": e.repo, "full_name": e.owner + "/" + e.repo,
		"owner": map[string]any{"login": e.owner, "type": "User"}, "default_branch": r.DefaultBranch}
}

func (e *env) installation() map[string]any {
	return map[string]any{"id": e.gh.InstallationID(e.owner, e.repo)}
}

func user(login string) map[string]any {
	return map[string]any{"login": login, "id": 1000 + len(login), "type": "User"}
}

// comment posts a comment on GitHub as login and delivers its issue_comment webhook.
func (e *env) comment(number int, login, body string, isPR bool, wantStatus int) githubtest.Comment {
	e.t.Helper()
	c := e.gh.AddComment(e.owner, e.repo, number, login, body)
	e.deliverComment(c, isPR, wantStatus)
	return c
}

// deliverComment sends the issue_comment webhook of c, a comment the fake GitHub holds.
func (e *env) deliverComment(c githubtest.Comment, isPR bool, wantStatus int) {
	e.t.Helper()
	issue := map[string]any{"number": c.IssueNumber}
	if isPR {
		issue["pull_request"] = map[string]any{"url": "x"}
	}
	e.deliver("issue_comment", "comment-"+randomHex(e.t, 4), map[string]any{
		"action": "created", "installation": e.installation(), "repository": e.repository(), "sender": user(c.User),
		"issue": issue, "comment": map[string]any{"id": c.ID, "body": c.Body, "user": user(c.User),
			"created_at": c.CreatedAt.UTC().Format(time.RFC3339)},
	}, wantStatus)
}

// eventuallyLimit bounds one wait: far above what any step takes on a loaded machine under -race.
const eventuallyLimit = 4 * time.Minute

// eventually polls cond until it holds, failing the test with what when eventuallyLimit or the
// test's deadline comes first. It waits for work to happen; it asserts nothing about how long that takes.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	// A wait that never ends would hold the whole suite until its timeout and hide every other result.
	deadline := time.Now().Add(eventuallyLimit)
	if d, ok := e.t.Deadline(); ok && d.Add(-10*time.Second).Before(deadline) {
		deadline = d.Add(-10 * time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runOf returns the run of an issue or pull request, nil when there is none yet.
func (e *env) runOf(number int) *lifecycle.Run {
	r, err := e.store.ByNumber(context.Background(), e.owner, e.repo, number)
	if err != nil {
		return nil
	}
	return r
}

// waitStatus waits until the run of issue number has one of the statuses want and GitHub shows it.
func (e *env) waitStatus(number int, want ...lifecycle.RunStatus) *lifecycle.Run {
	e.t.Helper()
	var run *lifecycle.Run
	e.eventually(fmt.Sprintf("the run of #%d to be %v", number, want), func() bool {
		run = e.runOf(number)
		if run == nil {
			return false
		}
		// The state changes first and its effects on GitHub (check runs, the summary) follow, from the
		// run's outbox: a test reads GitHub once they are performed.
		for _, w := range want {
			if run.Status == w {
				return len(run.Outbox) == 0
			}
		}
		return false
	})
	return run
}

// taskCommits counts, per task id, the commits on ref (back to the base) with an Akira-Task trailer.
func (e *env) taskCommits(ref string) map[string]int {
	out := map[string]int{}
	for _, c := range e.gh.Log(e.owner, e.repo, ref) {
		if id := c.Trailers["Akira-Task"]; id != "" {
			out[id]++
		}
	}
	return out
}

// commentsWith returns the comments on number whose body contains s.
func (e *env) commentsWith(number int, s string) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range e.gh.Comments(e.owner, e.repo, number) {
		if strings.Contains(c.Body, s) {
			out = append(out, c)
		}
	}
	return out
}

// latestCheckRuns returns the newest check run of each name.
func (e *env) latestCheckRuns() map[string]githubtest.CheckRun {
	out := map[string]githubtest.CheckRun{}
	for _, cr := range e.gh.CheckRuns(e.owner, e.repo) {
		if old, ok := out[cr.Name]; !ok || cr.ID > old.ID {
			out[cr.Name] = cr
		}
	}
	return out
}
