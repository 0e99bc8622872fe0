package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/internal/testnotes"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/gittest"
)

// envExample is one of the repository-environment examples, examples/env-<name>: repo/ is the
// repository, registry/ what its package server serves, agent.sh its scripted agent.
type envExample struct {
	name string
	// serve starts the example's package server and checks that the repository's lock file pins
	// what it serves; it returns the server and the variables (the operator's) that point the
	// package manager at it.
	serve func(t *testing.T, dir string, repo map[string]string) (*registry, []string)
	// fetched is a request the first run's setup must have made (the package itself).
	fetched *regexp.Regexp
}

var envExamples = []envExample{
	{
		name: "go",
		serve: func(t *testing.T, dir string, _ map[string]string) (*registry, []string) {
			// go.sum pins the module's hash: a zip whose files differ fails `go mod download`.
			r := goModuleProxy(t, filepath.Join(dir, "registry", "greetings"), "v1.0.0")
			return r, []string{"GOPROXY=" + r.url, "GONOSUMDB=example.com/greetings"}
		},
		fetched: regexp.MustCompile(`^GET /example.com/greetings/@v/v1.0.0.zip$`),
	},
	{
		name: "node",
		serve: func(t *testing.T, dir string, repo map[string]string) (*registry, []string) {
			r, tgz := npmRegistry(t, filepath.Join(dir, "registry", "akira-example-pad"))
			if want := npmIntegrity(tgz); !strings.Contains(repo["package-lock.json"], want) {
				t.Fatalf("examples/env-node/repo/package-lock.json does not pin the tarball the registry serves: want integrity %s", want)
			}
			return r, []string{"npm_config_registry=" + r.url + "/"}
		},
		fetched: regexp.MustCompile(`^GET /akira-example-pad/-/akira-example-pad-1.0.0.tgz$`),
	},
	{
		name: "python",
		serve: func(t *testing.T, dir string, repo map[string]string) (*registry, []string) {
			r, whl := packageIndex(t, filepath.Join(dir, "registry", "akira-example-slug"))
			if want := "sha256:" + sha256Hex(whl); !strings.Contains(repo["requirements.txt"], want) {
				t.Fatalf("examples/env-python/repo/requirements.txt does not pin the wheel the index serves: want --hash=%s", want)
			}
			host, _, _ := strings.Cut(r.addr, ":")
			// A plain-HTTP index is one pip must be told to trust, as a team's internal index would be.
			return r, []string{"PIP_INDEX_URL=" + r.url + "/simple/", "PIP_TRUSTED_HOST=" + host, "PIP_DISABLE_PIP_VERSION_CHECK=1"}
		},
		fetched: regexp.MustCompile(`^GET /files/akira_example_slug-1.0.0-py3-none-any.whl$`),
	},
}

// TestEnvExamples runs `akira run` twice on each repository-environment example, in the bubblewrap
// sandbox, with its package server on this machine reachable only through the egress allowlist:
//   - the first run (cold dependency cache) installs through the repository's setup, from the server;
//     the base check and the task's verification pass, and the scripted agent, whose profile has no
//     network at all, runs the project's tests itself;
//   - the server is then stopped, and a second run on a new branch (a new clone, a new home) restores
//     the setup snapshot the first run saved (what setup added to the work tree) instead of running
//     setup, checks the base, lets the agent test and verifies: nothing in it needed the network;
//   - the snapshot is then removed, and a third run runs setup again on the warm dependency cache
//     alone: everything it installs comes from the cache the first run filled.
//
// Each run's setup time goes to `make bench` (akira-bench lines): the servers answer as fast as this
// machine does, with no latency added, so the cold figure is the package manager's own work.
func TestEnvExamples(t *testing.T) {
	sandboxtest.Require(t)
	for _, ex := range envExamples {
		t.Run(ex.name, func(t *testing.T) {
			tool := map[string]string{"go": "go", "node": "npm", "python": "python3"}[ex.name]
			if _, err := exec.LookPath(tool); err != nil {
				testnotes.Skip(t, "repository-environment example env-"+ex.name, "install "+tool+" (with pip for python3) to run it")
			}
			dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "env-"+ex.name))
			if err != nil {
				t.Fatal(err)
			}
			files := readTree(t, filepath.Join(dir, "repo"))
			reg, vars := ex.serve(t, dir, files)
			repo := gittest.New(t, files)
			cacheRoot, workDir := t.TempDir(), t.TempDir()
			op := filepath.Join(t.TempDir(), "operator.yml")
			mustWrite(t, op, "default_agent: scripted\nagents:\n  scripted:\n    kind: exec\n    command: sh "+filepath.Join(dir, "agent.sh")+
				"\n    network: none\n"+
				"sandbox:\n  mode: bubblewrap\n  network: allowlist\n  egress:\n    allow: [\""+reg.addr+"\"]\n  read_only: ["+dir+"]\n")

			run := func(branch string, restored bool) envRun {
				t.Helper()
				// --verbose streams the commands' output to stderr, shown when the run fails.
				args := []string{"run", "--config", op, "--json", "--verbose", "--non-interactive", "--work-dir", workDir, "--branch", branch}
				for _, kv := range vars {
					name, _, _ := strings.Cut(kv, "=")
					args = append(args, "--env", name)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, akiraBin, args...)
				cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
				cmd.WaitDelay = 30 * time.Second
				cmd.Dir = repo.Work
				cmd.Env = append(append(os.Environ(), "AKIRA_DEPS_CACHE_DIR="+cacheRoot), vars...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
				r := parseEnvRun(t, stdout.Bytes())
				if code := cmd.ProcessState.ExitCode(); code != 0 {
					t.Fatalf("akira run (branch %s): exit %d\nsetup log:\n%s\nstderr:\n%s", branch, code, r.setupTail(), stderr.String())
				}
				r.check(t, branch, restored)
				if got := gittest.Git(t, repo.Work, "log", "--format=%(trailers:key=Akira-Task,valueonly)", "main.."+branch); strings.TrimSpace(got) != "1.1" {
					t.Fatalf("branch %s has checkpoints for %q, want one for task 1.1", branch, got)
				}
				return r
			}

			cold := run("akira/cold", false)
			var fetched bool
			for _, req := range reg.Requests() {
				fetched = fetched || ex.fetched.MatchString(req)
			}
			if !fetched {
				t.Fatalf("the first run's setup did not fetch the package from the local server; it served %q", reg.Requests())
			}
			caches := &env.Caches{Root: cacheRoot}
			entries, snapshots := cacheEntries(t, caches)
			if len(entries) != 1 || entries[0].Size == 0 || len(snapshots) != 1 {
				t.Fatalf("caches after the first run = %+v and snapshots %+v, want one filled dependency cache and one setup snapshot", entries, snapshots)
			}

			// Nothing can be fetched any more: the second run lives on the snapshot and the cache.
			reg.Close()
			served := len(reg.Requests())
			warm := run("akira/warm", true)
			if len(reg.Requests()) != served {
				t.Fatalf("the stopped server answered: %q", reg.Requests()[served:])
			}
			after, afterSnaps := cacheEntries(t, caches)
			if len(after) != 1 || after[0].Key != entries[0].Key || len(afterSnaps) != 1 || afterSnaps[0].Key != snapshots[0].Key {
				t.Fatalf("caches after the second run = %+v and %+v, want the first run's %s and %s only", after, afterSnaps, entries[0].Key, snapshots[0].Key)
			}
			// Without the snapshot, setup runs again on the warm dependency cache alone.
			if err := os.RemoveAll(filepath.Join(cacheRoot, snapshots[0].Scope, snapshots[0].Key)); err != nil {
				t.Fatal(err)
			}
			cached := run("akira/cached", false)
			if len(reg.Requests()) != served {
				t.Fatalf("the stopped server answered: %q", reg.Requests()[served:])
			}
			t.Logf("setup %s: cold %s, snapshot restored %s (%.1f×), warm dependency cache alone %s (%.1f×)", ex.name,
				cold.setup.Duration, warm.setup.Duration, cold.setup.Duration.Seconds()/warm.setup.Duration.Seconds(),
				cached.setup.Duration, cold.setup.Duration.Seconds()/cached.setup.Duration.Seconds())
			t.Logf("akira-bench: env.%s.cold.seconds %.3f", ex.name, cold.setup.Duration.Seconds())
			t.Logf("akira-bench: env.%s.warm.seconds %.3f", ex.name, warm.setup.Duration.Seconds())
			t.Logf("akira-bench: env.%s.cache.seconds %.3f", ex.name, cached.setup.Duration.Seconds())
		})
	}
}

// cacheEntries are the dependency caches and the setup snapshots under caches.
func cacheEntries(t *testing.T, caches *env.Caches) (deps, snapshots []env.Entry) {
	t.Helper()
	all, err := caches.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Kind == env.KindSnapshot {
			snapshots = append(snapshots, e)
		} else {
			deps = append(deps, e)
		}
	}
	return deps, snapshots
}

// envRun is what a run's JSON events say about its environment.
type envRun struct {
	setup  env.Result
	base   *env.BaseResult
	events []runner.Event
}

func parseEnvRun(t *testing.T, out []byte) envRun {
	t.Helper()
	var r envRun
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev runner.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("akira run --json wrote a line that is not an event: %v\n%s", err, sc.Text())
		}
		r.events = append(r.events, ev)
		switch ev.Type {
		case runner.EventSetupFinished:
			if ev.Setup != nil {
				r.setup = *ev.Setup
			}
		case runner.EventBaseChecked:
			r.base = ev.BaseCheck
		}
	}
	return r
}

func (r envRun) setupTail() string {
	if f := r.setup.Failed(); f != nil {
		return "$ " + f.Command + "\n" + f.Tail
	}
	return "(setup passed)"
}

// check asserts that setup ran every command and passed, and saved its snapshot, or that it was
// restored from the snapshot (restored), and that the base branch passed its verification.
func (r envRun) check(t *testing.T, branch string, restored bool) {
	t.Helper()
	snap := r.setup.Snapshot
	switch {
	case restored && (snap == nil || !snap.Restored || len(r.setup.Steps) != 0 || r.setup.Duration <= 0):
		t.Fatalf("run on %s: setup = %+v, want it restored from the first run's snapshot", branch, r.setup)
	case !restored && (len(r.setup.Steps) == 0 || r.setup.Failed() != nil || r.setup.Duration <= 0 || snap == nil || snap.Restored):
		t.Fatalf("run on %s: setup = %+v, want every command run and passed, and its snapshot saved", branch, r.setup)
	}
	if r.base == nil || !r.base.Passed {
		t.Fatalf("run on %s: base check = %+v, want the base branch's verification to pass", branch, r.base)
	}
}
