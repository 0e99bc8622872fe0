package runner

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/internal/testnotes"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/sandbox"
)

const oneTask = "# Roadmap\n\n- [ ] T1: Create one\n  - verify: `test -f T1.txt`\n"

func TestSetupRunsBeforeTheFirstTaskAndItsOutputIsVisible(t *testing.T) {
	f := newFixture(t, map[string]string{
		"ROADMAP.md": oneTask,
		".github/akira.yml": "setup:\n  - echo installing\n  - mkdir -p deps && echo ok > deps/ready\n" +
			"verify:\n  - test -f deps/ready\n",
	})
	out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `test -f deps/ready && touch T1.txt`)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
	setups := rec.of(EventSetupFinished, "")
	if len(setups) != 1 || setups[0].Setup == nil || len(setups[0].Setup.Steps) != 2 {
		t.Fatalf("setup events = %+v, want one with two steps", setups)
	}
	if log := setups[0].Setup.Log; !strings.Contains(log, "$ echo installing\ninstalling\n") {
		t.Errorf("setup log = %q, want each command and its output", log)
	}
	if bases := rec.of(EventBaseChecked, ""); len(bases) != 1 || !bases[0].BaseCheck.Passed {
		t.Errorf("base checks = %+v, want one that passed", bases)
	}
	wantCalls(t, f, "T1:1")
	// What setup installed is the environment, not the task's work: the checkpoint holds T1.txt only.
	if got := gittest.Git(t, f.repo.Remote, "show", "--name-only", "--format=", out.Branch); got != "ROADMAP.md\nT1.txt" {
		t.Errorf("the checkpoint changed %q, want the roadmap's tick and T1.txt", got)
	}
}

func TestSetupFailureStopsTheRunBeforeAnyAgentCall(t *testing.T) {
	tests := []struct {
		name, config, wantCmd, wantLimit, wantTail string
	}{
		{"exit code", "setup:\n  - echo first\n  - echo 'npm ERR! no such package' >&2; exit 3\n  - echo never\n",
			"echo 'npm ERR! no such package' >&2; exit 3", "", "npm ERR! no such package"},
		{"timeout", "setup:\n  commands: [\"echo slow; sleep 30\"]\n  timeout: 1s\n",
			"echo slow; sleep 30", "timeout of 1s", "slow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"ROADMAP.md": oneTask, ".github/akira.yml": tt.config})
			out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `touch T1.txt`)})
			if !errors.Is(err, ErrSetupFailed) {
				t.Fatalf("err = %v, want ErrSetupFailed", err)
			}
			if out.Status != StatusFailed {
				t.Errorf("status = %s, want failed", out.Status)
			}
			wantCalls(t, f)
			ev := rec.of(EventSetupFinished, "")
			if len(ev) != 1 {
				t.Fatalf("setup events = %d, want 1", len(ev))
			}
			failed := ev[0].Setup.Failed()
			if failed == nil || failed.Command != tt.wantCmd || failed.Limit != tt.wantLimit || !strings.Contains(failed.Tail, tt.wantTail) {
				t.Fatalf("failed step = %+v, want command %q, limit %q, tail with %q", failed, tt.wantCmd, tt.wantLimit, tt.wantTail)
			}
			if strings.Contains(ev[0].Setup.Log, "never") {
				t.Errorf("a command after the failing one ran: %q", ev[0].Setup.Log)
			}
		})
	}
}

func TestRedBaseStopsTheRunBeforeAnyAgentCall(t *testing.T) {
	files := map[string]string{
		"ROADMAP.md":        oneTask,
		"check.sh":          "echo 'FAIL: TestSum (want 3, got 4)'; exit 1\n",
		".github/akira.yml": "verify:\n  - sh check.sh\n",
	}
	t.Run("stops", func(t *testing.T) {
		f := newFixture(t, files)
		out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `touch T1.txt`)})
		if !errors.Is(err, ErrRedBase) {
			t.Fatalf("err = %v, want ErrRedBase", err)
		}
		want := "the base branch fails `sh check.sh` before any change: FAIL: TestSum (want 3, got 4)"
		if !strings.Contains(out.Error, want) {
			t.Errorf("error = %q, want it to say %q", out.Error, want)
		}
		wantCalls(t, f)
		if ev := rec.of(EventBaseChecked, ""); len(ev) != 1 || ev[0].BaseCheck.Passed || ev[0].Commit == "" {
			t.Errorf("base checks = %+v, want one red with the base commit", ev)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		f := newFixture(t, files)
		// The first task fixes the build.
		out, _, err := f.run(t, Options{Limits: Limits{AllowRedBase: true}, Agent: f.agent(logCall + `echo 'exit 0' > check.sh; touch T1.txt`)})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
		wantCalls(t, f, "T1:1")
	})
}

func TestBaseCheckRunsOncePerBaseCommit(t *testing.T) {
	f := newFixture(t, map[string]string{
		"ROADMAP.md":        oneTask,
		".github/akira.yml": "verify:\n  - echo checked >> \"$BASELOG\"\n",
	})
	mem := &env.MemoryBase{}
	t.Setenv("BASELOG", f.logs+"/base")
	for i, branch := range []string{"akira/one", "akira/two"} {
		_, rec, err := f.run(t, Options{
			Inputs: Inputs{
				Branch: branch,
			},
			BaseMemory: mem,
			Env:        []string{"BASELOG"},
			Agent:      f.agent(logCall + `touch T1.txt`),
		})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if ev := rec.of(EventBaseChecked, ""); len(ev) != 1 || !ev[0].BaseCheck.Passed {
			t.Errorf("run %d: base checks = %+v, want one green", i, ev)
		}
	}
	// The base check ran once for both runs (the task has verify lines of its own).
	wantCalls(t, f, "T1:1", "T1:1")
	if got := strings.Count(readFile(t, f.logs+"/base"), "checked"); got != 1 {
		t.Errorf("the base check ran %d times, want once for one base commit", got)
	}
}

func TestSetupNetworkIsNeverMoreThanVerification(t *testing.T) {
	tests := []struct {
		asked  string
		verify sandbox.Network
		want   sandbox.Network
	}{
		{"", sandbox.NetAllowlist, sandbox.NetAllowlist},
		{"none", sandbox.NetAllowlist, sandbox.NetNone},
		{"allow", sandbox.NetAllowlist, sandbox.NetAllowlist},
		{"allow", sandbox.NetNone, sandbox.NetNone},
		{"allowlist", sandbox.NetAllow, sandbox.NetAllowlist},
	}
	for _, tt := range tests {
		if got := setupNetwork(tt.asked, tt.verify); got != tt.want {
			t.Errorf("setupNetwork(%q, %s) = %s, want %s", tt.asked, tt.verify, got, tt.want)
		}
	}
}

func TestAutoSetupRunsTheDetectedInstallOnlyWhenAllowed(t *testing.T) {
	files := map[string]string{"ROADMAP.md": oneTask, "Makefile": "all:\n\techo built > built.txt\n"}
	for _, auto := range []bool{false, true} {
		f := newFixture(t, files)
		_, rec, err := f.run(t, Options{AutoSetup: auto, Agent: f.agent(logCall + `touch T1.txt`)})
		if err != nil {
			t.Fatalf("auto %v: %v", auto, err)
		}
		ev := rec.of(EventSetupFinished, "")
		if !auto {
			if len(ev) != 1 || len(ev[0].Setup.Steps) != 0 || ev[0].Setup.Proposed != "make" || !strings.Contains(ev[0].Message, "auto_setup") {
				t.Errorf("auto-setup off: setup events = %+v, want only the proposal of make", ev)
			}
			continue
		}
		if len(ev) != 1 || ev[0].Setup.Detected != "Makefile" || ev[0].Setup.Steps[0].Command != "make" {
			t.Errorf("auto-setup on: setup events = %+v, want make detected from Makefile", ev)
		}
	}
}

// depEntries are the dependency caches of caches, without the setup snapshots.
func depEntries(t *testing.T, caches *env.Caches) []env.Entry {
	t.Helper()
	all, err := caches.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []env.Entry
	for _, e := range all {
		if e.Kind == env.KindDependencies {
			out = append(out, e)
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A second run with the same lock file finds what the first run's setup put in the cache; another
// lock file is another cache; verification is pointed at it.
func TestDependencyCacheIsKeptAcrossRunsByLockFile(t *testing.T) {
	files := map[string]string{
		"ROADMAP.md": oneTask, "package-lock.json": `{"v":1}`,
		// No setup snapshot: every run's setup runs, to show what it finds in the cache.
		".github/akira.yml": "setup:\n  snapshot: off\n  commands:\n  - \"if [ -f \\\"$npm_config_cache/pkg\\\" ]; then echo HIT; else echo MISS; echo pkg > \\\"$npm_config_cache/pkg\\\"; fi\"\n" +
			"verify:\n  - test -f \"$npm_config_cache/pkg\"\n",
	}
	caches := &env.Caches{Root: t.TempDir()}
	setupLog := func(f *fixture, branch string) string {
		t.Helper()
		_, rec, err := f.run(t, Options{
			Inputs: Inputs{
				Branch: branch,
			},
			DepCaches:  caches,
			CacheScope: "inst-1--o--r",
			Agent:      f.agent(`touch T1.txt; echo "$npm_config_cache" > "$LOG/agent-cache"`),
		})
		if err != nil {
			t.Fatalf("run on %s: %v", branch, err)
		}
		ev := rec.of(EventSetupFinished, "")
		if len(ev) != 1 {
			t.Fatalf("setup events = %d", len(ev))
		}
		return ev[0].Setup.Log
	}
	f := newFixture(t, files)
	if log := setupLog(f, "akira/one"); !strings.Contains(log, "MISS") {
		t.Fatalf("first run's setup = %q, want a cold cache", log)
	}
	// The agent's commands are pointed at the same cache as setup's and verification's.
	if got, err := os.ReadFile(filepath.Join(f.logs, "agent-cache")); err != nil || !strings.HasPrefix(strings.TrimSpace(string(got)), caches.Root) {
		t.Errorf("the agent's npm_config_cache = %q (%v), want a directory under %s", got, err, caches.Root)
	}
	if log := setupLog(f, "akira/two"); !strings.Contains(log, "HIT") {
		t.Fatalf("second run's setup = %q, want the cache the first one filled", log)
	}
	files["package-lock.json"] = `{"v":2}`
	g := newFixture(t, files)
	if log := setupLog(g, "akira/three"); !strings.Contains(log, "MISS") {
		t.Fatalf("setup with another lock file = %q, want a cache of its own", log)
	}
	entries, err := caches.List()
	if err != nil || len(entries) != 2 || entries[0].Scope != "inst-1--o--r" {
		t.Fatalf("caches = %+v, %v; want two keys in the one scope", entries, err)
	}
}

// Under bubblewrap a run sees its own installation's cache only, and its verification cannot change it.
func TestDependencyCacheIsolation(t *testing.T) {
	sandboxtest.Require(t)
	caches := &env.Caches{Root: t.TempDir()}
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone}
	files := map[string]string{"ROADMAP.md": oneTask, "go.sum": "x\n",
		".github/akira.yml": "setup:\n  - \"echo secret-of-a > \\\"$GOMODCACHE/secret\\\"\"\n"}
	a := newFixture(t, files)
	if _, _, err := a.run(t, Options{DepCaches: caches, CacheScope: "inst-1--o--a", Sandbox: box, AgentNetwork: sandbox.NetNone,
		Agent: a.agent(`touch T1.txt`)}); err != nil {
		t.Fatal(err)
	}
	entries := depEntries(t, caches)
	if len(entries) != 1 {
		t.Fatalf("caches = %+v", entries)
	}
	secret := filepath.Join(caches.Root, entries[0].Scope, entries[0].Key, "go/mod/secret")
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("setup did not write its cache: %v", err)
	}
	files[".github/akira.yml"] = "setup:\n  - \"cat " + secret + " || echo unreadable\"\n" +
		// Passes only when the cache is there and cannot be written.
		"verify:\n  - \"test -d \\\"$GOMODCACHE\\\" && ! touch \\\"$GOMODCACHE/mine\\\"\"\n"
	b := newFixture(t, files)
	_, rec, err := b.run(t, Options{DepCaches: caches, CacheScope: "inst-2--o--b", Sandbox: box, AgentNetwork: sandbox.NetNone,
		Agent: b.agent(`touch T1.txt`)})
	if err != nil {
		t.Fatal(err)
	}
	if log := rec.of(EventSetupFinished, "")[0].Setup.Log; strings.Contains(log, "secret-of-a") || !strings.Contains(log, "unreadable") {
		t.Errorf("another installation's setup read the cache: %q", log)
	}
	if v := rec.of(EventBaseChecked, ""); len(v) != 1 || !v[0].BaseCheck.Passed {
		t.Fatalf("base check = %+v, want verification to find its cache read-only", v)
	}
}

// The shipped Redis example, with the real server: started once for the run, reached by the agent and
// by verification at $REDIS_HOST:$REDIS_PORT, in a sandbox or without one, and stopped at the end.
func TestServicesServeTheRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testnotes.Skip(t, "service examples (redis-server)", "apt install redis-server")
	}
	example, err := os.ReadFile("../examples/services/redis.akira.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(example), "  - go test ./...   # your tests read REDIS_HOST and REDIS_PORT\n",
		"  - redis-cli -h \"$REDIS_HOST\" -p \"$REDIS_PORT\" ping | grep PONG\n", 1)
	if cfg == string(example) {
		t.Fatal("the example's verify line changed: update this test")
	}
	for _, mode := range []sandbox.Mode{sandbox.None, sandbox.Bubblewrap} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == sandbox.Bubblewrap {
				sandboxtest.Require(t)
			}
			// The agent's write must reach the service for its task's check to pass.
			roadmap := "# Roadmap\n\n- [ ] T1: Create one\n  - verify: `redis-cli -h \"$REDIS_HOST\" -p \"$REDIS_PORT\" get made-by | grep -x agent`\n"
			f := newFixture(t, map[string]string{"ROADMAP.md": roadmap, ".github/akira.yml": cfg})
			box := sandbox.Config{Mode: mode, VerifyNetwork: sandbox.NetNone, ReadWrite: []string{f.logs}}
			out, rec, err := f.run(t, Options{Sandbox: box, AgentNetwork: sandbox.NetNone,
				Agent: f.agent(`echo "$REDIS_PORT" > "$LOG/port"; redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" set made-by agent && touch T1.txt`)})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
			setups := rec.of(EventSetupFinished, "")
			if len(setups) != 1 || len(setups[0].Setup.Steps) != 1 || !strings.HasPrefix(setups[0].Setup.Steps[0].Command, "service redis: ") {
				t.Fatalf("setup events = %+v, want one with the service's step", setups)
			}
			port := strings.TrimSpace(readFile(t, filepath.Join(f.logs, "port")))
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
				c.Close()
				t.Errorf("the service still answers on port %s after the run", port)
			}
		})
	}
}

// TestPostgresExampleServesTheRun: the shipped PostgreSQL example, as it is, serves a run in the
// sandbox: initdb and postgres run as an unprivileged user inside the service's sandbox (PostgreSQL
// refuses root, and the tests' worker is root), the agent creates a table and the task's check reads it.
func TestPostgresExampleServesTheRun(t *testing.T) {
	sandboxtest.Require(t)
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if p, err := exec.LookPath("initdb"); err == nil {
		bins = append(bins, p)
	}
	if len(bins) == 0 {
		testnotes.Skip(t, "the PostgreSQL service example (initdb)", "apt install postgresql")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		testnotes.Skip(t, "the PostgreSQL service example (psql)", "apt install postgresql-client")
	}
	t.Setenv("PATH", filepath.Dir(bins[len(bins)-1])+string(os.PathListSeparator)+os.Getenv("PATH"))
	example, err := os.ReadFile("../examples/services/postgres.akira.yml")
	if err != nil {
		t.Fatal(err)
	}
	const psql = `psql -h "$POSTGRES_HOST" -p "$POSTGRES_PORT" -U postgres -v ON_ERROR_STOP=1 -tA`
	cfg := strings.Replace(string(example), "  - go test ./...   # your tests read POSTGRES_HOST and POSTGRES_PORT\n",
		"  - "+psql+" -c 'select 6*7' | grep -x 42\n", 1)
	if cfg == string(example) {
		t.Fatal("the example's verify line changed: update this test")
	}
	roadmap := "# Roadmap\n\n- [ ] T1: Create one\n  - verify: `" + psql + " -c 'select who from made' | grep -x agent`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": roadmap, ".github/akira.yml": cfg})
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, ReadWrite: []string{f.logs}}
	out, rec, err := f.run(t, Options{Sandbox: box, AgentNetwork: sandbox.NetNone,
		Agent: f.agent(psql + ` -c "create table made(who text); insert into made values ('agent')" && touch T1.txt`)})
	if err != nil {
		for _, ev := range rec.of(EventSetupFinished, "") {
			t.Logf("setup: %+v", ev.Setup)
		}
		t.Fatalf("run: %v", err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
	if setups := rec.of(EventSetupFinished, ""); len(setups) != 1 || len(setups[0].Setup.Steps) != 1 ||
		!strings.HasPrefix(setups[0].Setup.Steps[0].Command, "service postgres: ") {
		t.Fatalf("setup events = %+v, want one with the service's step", setups)
	}
}

func TestServiceFailureStopsTheRunBeforeAnyAgentCall(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": oneTask,
		".github/akira.yml": "services:\n  db:\n    command: \"echo 'FATAL: data directory missing'; exit 1\"\n"})
	out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `touch T1.txt`)})
	if !errors.Is(err, ErrSetupFailed) || out.Status != StatusFailed {
		t.Fatalf("err = %v, status %s, want ErrSetupFailed", err, out.Status)
	}
	wantCalls(t, f)
	ev := rec.of(EventSetupFinished, "")
	if len(ev) != 1 {
		t.Fatalf("setup events = %d, want 1", len(ev))
	}
	if failed := ev[0].Setup.Failed(); failed == nil || failed.Command != "service db: echo 'FATAL: data directory missing'; exit 1" ||
		failed.ExitCode != 1 || !strings.Contains(failed.Tail, "FATAL: data directory missing") {
		t.Fatalf("failed step = %+v", failed)
	}
	if !strings.Contains(err.Error(), "`service db: echo 'FATAL: data directory missing'; exit 1` failed (exit code 1)") {
		t.Errorf("err = %v, want the service and its exit code named", err)
	}
}

// A hostile repository's service lasts the whole run beside the agent's attempts: it may read the work
// tree but must never change what verification judges.
func TestServiceCannotChangeTheWorkTree(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testnotes.Skip(t, "service examples (redis-server)", "apt install redis-server")
	}
	f := newFixture(t, map[string]string{"ROADMAP.md": oneTask, ".github/akira.yml": "services:\n" +
		"  sneaky:\n    command: (echo forged > \"$AKIRA_WORK_TREE/T1.txt\") 2>/dev/null; cat \"$AKIRA_WORK_TREE/ROADMAP.md\" >/dev/null && exec redis-server --bind 127.0.0.1 --port \"$PORT\" --save '' --appendonly no --dir \"$AKIRA_SERVICE_DIR\"\n"})
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone}
	out, _, err := f.run(t, Options{Sandbox: box, AgentNetwork: sandbox.NetNone, Agent: f.agent(`test ! -e T1.txt && echo honest > T1.txt`)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
	if got := gittest.Git(t, f.repo.Remote, "show", out.Branch+":T1.txt"); got != "honest" {
		t.Errorf("T1.txt on the branch = %q, want the agent's", got)
	}
}

// The tasks of a parallel wave work in clones of their own but share the run's services: one Redis
// for the run, not one per clone.
func TestParallelTasksShareTheRunsServices(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testnotes.Skip(t, "service examples (redis-server)", "apt install redis-server")
	}
	cli := `redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT"`
	f := newFixture(t, map[string]string{
		"ROADMAP.md": "# Roadmap\n\n- [ ] T1 [P] First\n- [ ] T2 [P] Second\n",
		".github/akira.yml": "services:\n  redis: redis-server --bind 127.0.0.1 --port \"$PORT\" --save '' --appendonly no --dir \"$AKIRA_SERVICE_DIR\"\n" +
			"verify:\n  - " + cli + " ping | grep -q PONG\n",
	})
	out, rec, err := f.run(t, Options{
		Limits: Limits{
			MaxParallel: 2,
		},
		Agent: f.agent(cli + ` incr tasks > /dev/null && ` + cli + ` rpush ports "$REDIS_PORT" > /dev/null && touch "$AKIRA_TASK_ID.txt" && ` +
			cli + ` lrange ports 0 -1 > "$LOG/ports-$AKIRA_TASK_ID"`),
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone})
	var steps int
	for _, ev := range rec.of(EventSetupFinished, "") {
		for _, st := range ev.Setup.Steps {
			if strings.HasPrefix(st.Command, "service ") {
				steps++
			}
		}
	}
	if steps != 1 {
		t.Errorf("services started %d times, want once for the run", steps)
	}
	// Whichever task wrote last saw both writes, on the one port.
	a, b := readFile(t, filepath.Join(f.logs, "ports-T1")), readFile(t, filepath.Join(f.logs, "ports-T2"))
	last := a
	if len(b) > len(a) {
		last = b
	}
	if lines := strings.Fields(last); len(lines) != 2 || lines[0] != lines[1] {
		t.Errorf("ports seen by the tasks = %q, want one service seen by both", lines)
	}
}
