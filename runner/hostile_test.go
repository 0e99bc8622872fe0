package runner

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/sandbox"
)

// Secrets of the hostile test: none may reach the agent in bubblewrap mode.
const (
	hostileKey      = "-----BEGIN RSA PRIVATE KEY----- hostile-test-key-material"
	hostileWebhook  = "whsec-hostile-test"
	hostileRedisPW  = "redispw-hostile-test"
	hostileToken    = "ghs_hostileTestInstallationToken"
	hostileOtherRun = "another-runs-workspace-secret"
)

// TestHostileAgent runs testdata/hostile-agent.sh as the agent of a real run — real git over smart
// HTTP with an installation token, a worker-like process holding the App's secrets in its
// environment, a password-protected Redis, another run's workspace — and reads what it managed to
// commit. In bubblewrap mode it obtains nothing and Akira's git runs nothing it wrote. In mode none
// (the operator's explicit, warned opt-out) the test documents what remains possible: reading the
// worker's environment and files of the same user, writing outside the work tree. Akira's git holds
// in both modes.
func TestHostileAgent(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.Bubblewrap, sandbox.None} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == sandbox.Bubblewrap {
				sandboxtest.Require(t)
			}
			loot, outside := runHostile(t, mode)
			mustNot := map[string]string{
				"the installation token":               hostileToken,
				"Redis answering without the password": "+PONG",
			}
			if mode == sandbox.Bubblewrap {
				mustNot["the App's private key"] = hostileKey
				mustNot["the webhook secret"] = hostileWebhook
				mustNot["the Redis password"] = hostileRedisPW
				mustNot["another run's workspace"] = hostileOtherRun
			}
			for what, s := range mustNot {
				if strings.Contains(loot, s) {
					t.Errorf("the agent obtained %s:\n%s", what, loot)
				}
			}
			var hooks []string
			for _, name := range outside {
				if strings.Contains(name, "env") {
					hooks = append(hooks, name)
				}
			}
			if len(hooks) > 0 {
				t.Errorf("Akira's git ran commands the agent wrote (they left %v)", hooks)
			}
			switch mode {
			case sandbox.Bubblewrap:
				if len(outside) > 0 {
					t.Errorf("the agent wrote outside the work tree: %v", outside)
				}
				if !strings.Contains(loot, "== sandbox: bubblewrap") || !strings.Contains(loot, "redis unreachable") {
					t.Errorf("the agent did not run inside the sandbox, cut from the network:\n%s", loot)
				}
			case sandbox.None:
				// What the opt-out leaves open, written down so that a change here is noticed.
				for what, s := range map[string]string{"the key file": hostileKey, "the worker's environment": hostileWebhook, "another run's workspace": hostileOtherRun} {
					if !strings.Contains(loot, s) {
						t.Errorf("with sandbox: none the agent is expected to reach %s, and did not: has the model changed? update the README's security model", what)
					}
				}
				if len(outside) == 0 {
					t.Error("with sandbox: none the agent is expected to write outside the work tree")
				}
			}
		})
	}
}

// runHostile runs the hostile agent once in mode and returns what it committed and the names of the
// files that appeared outside the work tree.
func runHostile(t *testing.T, mode sandbox.Mode) (string, []string) {
	t.Helper()
	secrets, outside := t.TempDir(), t.TempDir()
	keyPath := filepath.Join(secrets, "private-key.pem")
	if err := os.WriteFile(keyPath, []byte(hostileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	redis := miniredis.NewMiniRedis()
	redis.RequireAuth(hostileRedisPW)
	if err := redis.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(redis.Close)

	// The worker: a process of the same user whose environment holds the App's secrets.
	worker := exec.Command("sleep", "300")
	worker.Env = []string{"GITHUB_PRIVATE_KEY=" + hostileKey, "GITHUB_WEBHOOK_SECRET=" + hostileWebhook,
		"REDIS_URL=redis://:" + hostileRedisPW + "@" + redis.Addr() + "/0"}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })

	roadmap := "# R\n\n- [ ] T1: Do the task\n  - verify: `test -f loot.txt`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": roadmap, "README.md": "hello\n"})
	other := filepath.Join(f.workDir, "akira-ws-other", "repo")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte(hostileOtherRun+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(f.workDir, "akira-ws-other")) })

	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+hostileToken))
	srv := gittest.ServeWithAuth(t, f.repo.Remote, header)
	script, err := filepath.Abs(filepath.Join("testdata", "hostile-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(redis.Addr(), ":")
	ag := &agent.Exec{Command: "bash " + script, Env: []string{
		"KEY_PATH=" + keyPath, "OUTSIDE=" + outside, "REDIS_PORT=" + port, "WORKDIR=" + f.workDir,
	}}
	cfg := sandbox.Config{Mode: mode, VerifyNetwork: sandbox.NetNone, ReadOnly: []string{filepath.Dir(script)},
		Limits: sandbox.Limits{CPU: 60e9, Memory: 1 << 30, FileSize: 64 << 20}, Disk: 64 << 20}
	out, err := Run(context.Background(), Options{
		Inputs: Inputs{
			Repo: srv.URL,
		},
		Hooks: Hooks{
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
		Agent:        ag,
		WorkDir:      f.workDir,
		Sandbox:      cfg,
		AgentNetwork: sandbox.NetNone,
		GitAuth:      func(context.Context) (string, error) { return header, nil },
	})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run = %v, %v; want the agent's work checkpointed", out.Status, err)
	}
	loot := gittest.Git(t, f.repo.Remote, "show", "refs/heads/akira/roadmap:loot.txt")
	if !strings.Contains(loot, "== done") {
		t.Fatalf("the hostile agent did not finish:\n%s", loot)
	}
	if srv.Refused.Load() != 0 {
		t.Errorf("%d git requests reached the server without the token: something pushed elsewhere first", srv.Refused.Load())
	}
	entries, _ := os.ReadDir(outside)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// pre-push is the agent's own file, planted as a would-be hooksPath; what counts is what ran.
	names = without(names, "pre-push")
	t.Logf("%s: %d bytes of loot; files outside the work tree: %v; worker pid %s", mode, len(loot), names, strconv.Itoa(worker.Process.Pid))
	return loot, names
}

func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// TestWorkspaceDiskLimit: an attempt that leaves the work tree larger than the operator's disk limit
// fails with a reason that names the limit, and its work is not checkpointed.
func TestWorkspaceDiskLimit(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] T1: Fill the disk\n  - verify: `true`\n"})
	out, _, err := f.run(t, Options{
		Limits: Limits{
			MaxAttempts: 1,
		},
		Agent:   f.agent("head -c 3145728 /dev/zero > big.bin"),
		Sandbox: sandbox.Config{Mode: sandbox.None, Disk: 1 << 20},
	})
	if err != nil || out.Status != StatusParked || len(out.Parked) != 1 {
		t.Fatalf("run = %+v, %v; want the task parked", out, err)
	}
	if s := out.Parked[0].Summary; !strings.Contains(s, "workspace disk limit of 1MiB exceeded") {
		t.Errorf("summary = %q, want the disk limit named", s)
	}
	if got := f.log(t, "akira/roadmap"); len(got) != 0 {
		t.Errorf("commits on the branch: %v, want none", got)
	}
}

// TestSymlinkedPlans: a repository whose plan is a symlink to a file of the host (or lies under a
// symlinked directory) is refused with an error naming the path, and the host file's content reaches
// nothing; a plan that is a symlink inside the repository is read, but ticking never writes through it.
func TestSymlinkedPlans(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host-secret.md")
	if err := os.WriteFile(host, []byte("# Host\n\n- [ ] H1: host-file-content-must-not-leak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, map[string]string{"docs/real.md": "# R\n\n- [ ] T1: Real task\n  - verify: `true`\n", "README.md": "x\n"})
	for link, target := range map[string]string{"plan.md": host, "hostdir": filepath.Dir(host), "inside.md": "docs/real.md"} {
		if err := os.Symlink(target, filepath.Join(f.repo.Work, link)); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, f.repo.Work, "add", "plan.md", "hostdir", "inside.md")
	gittest.Git(t, f.repo.Work, "commit", "-q", "-m", "symlinks")
	gittest.Git(t, f.repo.Work, "push", "-q", "origin", "HEAD:main")
	f.snapshot = gittest.Snapshot(t, f.repo.Work)

	for _, path := range []string{"plan.md", "hostdir/host-secret.md"} {
		out, rec, err := f.run(t, Options{Inputs: Inputs{Roadmap: path, Branch: "akira/" + strings.ReplaceAll(path, "/", "-")}, Agent: f.agent("true")})
		if err == nil || !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "outside the repository") {
			t.Errorf("roadmap %s: err = %v; want an invalid plan naming the path and why", path, err)
		}
		if all := fmt.Sprintf("%v %+v %+v", err, out, rec.events); strings.Contains(all, "host-file-content-must-not-leak") {
			t.Errorf("roadmap %s: the host file's content leaked into the run", path)
		}
	}
	before, _ := os.ReadFile(host)

	out, _, err := f.run(t, Options{Inputs: Inputs{Roadmap: "inside.md", Branch: "akira/inside"}, Limits: Limits{MaxAttempts: 1}, Agent: f.agent("true")})
	if err != nil || out.Status != StatusParked || len(out.Parked) != 1 || !strings.Contains(out.Parked[0].Summary, "never written through") {
		t.Errorf("a roadmap symlinked inside the repository: %+v, %v; want the task parked because ticking would write through the link", out, err)
	}
	if after, _ := os.ReadFile(host); string(after) != string(before) {
		t.Error("the host file changed")
	}
}
