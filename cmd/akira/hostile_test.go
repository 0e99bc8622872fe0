package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/akira-bot/akira/internal/githubtest"
)

// TestServeHostileAgent runs the hostile agent of the runner's tests (runner/testdata/hostile-agent.sh)
// as the agent of the real `akira serve`, in the bubblewrap sandbox with network access (what a
// coding-agent CLI gets), against a Redis that requires a password. Where the runner's test imitates
// the worker, here the worker is the real process: its secrets were read once and dropped, and it is
// not dumpable. The agent commits whatever it found; the test reads the pushed branch.
func TestServeHostileAgent(t *testing.T) {
	const redisPassword = "redispw-serve-hostile"
	rds := miniredis.NewMiniRedis()
	rds.RequireAuth(redisPassword)
	if err := rds.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rds.Close)
	_, port, _ := strings.Cut(rds.Addr(), ":")

	script, err := filepath.Abs(filepath.Join("..", "..", "runner", "testdata", "hostile-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	outside, workDir := t.TempDir(), t.TempDir()
	keyPath := filepath.Join(t.TempDir(), "private-key.pem")
	const otherRun = "another-runs-workspace-secret"
	other := filepath.Join(workDir, "akira-ws-other", "repo")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(other, "secret.txt"), otherRun+"\n")

	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Do it", User: "alice", Body: "- [ ] Do the task\n"})
	base, _, logs := startServeWith(t, fake, serveSetup{
		operator: "default_agent: hostile\nagents:\n  hostile:\n    kind: exec\n    command: bash " + script + "\n" +
			"    env: [KEY_PATH, OUTSIDE, REDIS_PORT, WORKDIR]\n    network: allow\n" +
			"sandbox:\n  mode: bubblewrap\n  read_only: [" + filepath.Dir(script) + "]\nci:\n  watch: off\n",
		redisURL: "redis://:" + redisPassword + "@" + rds.Addr() + "/0",
		keyPath:  keyPath, workDir: workDir,
		env: []string{"KEY_PATH=" + keyPath, "OUTSIDE=" + outside, "REDIS_PORT=" + port, "WORKDIR=" + workDir},
	})

	deliver(t, fake, base, "issue_comment", "hostile-1", commentPayload(fake, issue, "alice", "/akira run"))
	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the hostile agent's work to be checkpointed", func() bool {
		got, ok := fake.FileAt("octo", "svc", branch, "loot.txt")
		return ok && strings.Contains(got, "== done")
	})
	loot, _ := fake.FileAt("octo", "svc", branch, "loot.txt")
	t.Logf("%d bytes of loot", len(loot))

	key := strings.TrimSpace(string(fake.PrivateKeyPEM()))
	keyBody := strings.Split(key, "\n")[1] // a line of the key's base64, in case the agent found only part
	mustNot := map[string]string{
		"the App's private key":                keyBody,
		"the webhook secret":                   "serve-secret",
		"the Redis password":                   redisPassword,
		"an installation token":                "ghs_",
		"another run's workspace":              otherRun,
		"Redis answering without the password": "+PONG",
	}
	for what, s := range mustNot {
		if strings.Contains(loot, s) {
			t.Errorf("the agent obtained %s:\n%s", what, loot)
		}
	}
	if !strings.Contains(loot, "== sandbox: bubblewrap") {
		t.Errorf("the agent did not run in the sandbox:\n%s", loot)
	}
	// With network: allow Redis is reachable; it must refuse a client without the password.
	if !strings.Contains(loot, "redis said: -NOAUTH") {
		t.Errorf("Redis did not refuse the agent (want NOAUTH):\n%s", loot)
	}
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		t.Errorf("a file appeared outside the work tree: %s", e.Name())
	}
	if strings.Contains(logs.String(), redisPassword) {
		t.Error("the Redis password appears in akira serve's log")
	}
}
