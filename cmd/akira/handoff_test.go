package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/store"
)

// handoffServer starts `akira serve` with an admin address on a Redis of the test's own, and
// returns the admin address and a token of scope for octo/svc.
func handoffServer(t *testing.T, fake *githubtest.Server, scope string) (adminURL, token string) {
	t.Helper()
	addr := redistest.Own(t)
	scripts := t.TempDir()
	agentScript := filepath.Join(scripts, "agent.sh")
	mustWrite(t, agentScript, "#!/bin/sh\necho \"$AKIRA_TASK_TITLE\" > \"task-$AKIRA_TASK_ID.txt\"\n")
	base, _, _ := startServeWith(t, fake, serveSetup{
		operator: "default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh " + agentScript + "\n" +
			"sandbox:\n  mode: bubblewrap\n  read_only: [" + scripts + "]\n" + "ci:\n  watch: off\n",
		redisURL: "redis://" + addr + "/0",
	})
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	token, err := store.NewStore(rdb, "").CreateTokenFor(context.Background(), "laptop", scope, []string{"octo/svc"})
	if err != nil {
		t.Fatal(err)
	}
	return adminBase(t, base), token
}

// checkout clones octo/svc from the fake's git directory and makes a branch with a commit GitHub
// does not have yet.
func checkout(t *testing.T, fake *githubtest.Server, branch string) string {
	t.Helper()
	dir := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("clone", "-q", fake.GitDir("octo", "svc"), ".")
	gitIn("checkout", "-q", "-b", branch)
	mustWrite(t, filepath.Join(dir, "NOTES.md"), "what we decided\n")
	gitIn("add", "NOTES.md")
	gitIn("commit", "-q", "-m", "Notes")
	return dir
}

func headOf(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestHandoffFollow: `akira handoff --follow` from a checkout pushes the branch, starts the run on
// the server, prints its progress until the run ends and exits 0; handing off the same plan again
// starts nothing new; `akira status --server` reads the run.
func TestHandoffFollow(t *testing.T) {
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	adminURL, token := handoffServer(t, fake, store.ScopeStart)
	dir := checkout(t, fake, "feature")
	plan := filepath.Join(dir, "plan.md")
	mustWrite(t, plan, "- [ ] Write the first file\n- [ ] Write the second file\n")
	t.Setenv("AKIRA_SERVER", adminURL)
	t.Setenv("AKIRA_TOKEN", token)

	stdout, stderr, code := runCmd(t, "handoff", plan, "--dir", dir, "--repo", "octo/svc", "--reference", "chat-9", "--follow", "--interval", "200ms")
	if code != 0 {
		t.Fatalf("handoff --follow: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`/ui/runs/([0-9a-f]+)\n`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no run URL in:\n%s", stdout)
	}
	id := m[1]
	t.Logf("akira handoff --follow printed:\n%s", stdout)
	for _, want := range []string{"pushing feature to origin"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"started: Write the first file", "checkpoint", "started: Write the second file", "run " + id + ": succeeded"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("progress lacks %q:\n%s", want, stdout)
		}
	}
	if got := fake.Branch("octo", "svc", "feature"); got != headOf(t, dir) {
		t.Errorf("feature on GitHub is %s, want the checkout's %s", got, headOf(t, dir))
	}
	var pr *githubtest.PullRequest
	for _, p := range fake.PullRequests("octo", "svc") {
		if p.Head == "akira/handoff-"+id {
			pr = &p
		}
	}
	if pr == nil || pr.Draft || pr.Base != "feature" || !strings.Contains(pr.Title, "chat-9") {
		t.Fatalf("pull request of the run: %+v", pr)
	}
	if got, _ := fake.FileAt("octo", "svc", pr.Head, "NOTES.md"); got != "what we decided\n" {
		t.Errorf("the run did not start from the pushed branch: NOTES.md = %q", got)
	}

	// The same plan on the same commit: the same run.
	stdout, stderr, code = runCmd(t, "handoff", plan, "--dir", dir, "--repo", "octo/svc", "--reference", "chat-9")
	if code != 0 || !strings.Contains(stdout, "/ui/runs/"+id) || !strings.Contains(stderr, "already started") {
		t.Errorf("second handoff: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := len(fake.PullRequests("octo", "svc")); n != 1 {
		t.Errorf("%d pull requests, want 1", n)
	}
	// Another budget for the same plan and commit is another request: another run, not a refusal.
	stdout, stderr, code = runCmd(t, "handoff", plan, "--dir", dir, "--repo", "octo/svc", "--reference", "chat-9", "--budget", "3")
	if code != 0 || strings.Contains(stdout, "/ui/runs/"+id) || strings.Contains(stderr, "already started") {
		t.Errorf("handoff with another budget: exit %d\n%s\n%s", code, stdout, stderr)
	}

	stdout, _, code = runCmd(t, "status", "--server", "--run", id)
	if code != 0 || !strings.Contains(stdout, "succeeded") || !strings.Contains(stdout, "reference chat-9") {
		t.Errorf("status --server: exit %d\n%s", code, stdout)
	}
	// A plan that cannot be read is refused by the server, with the line, and exit status 4.
	bad := filepath.Join(dir, "bad.md")
	mustWrite(t, bad, "- [ ] 1 One\n- [ ] 1 Again\n")
	_, stderr, code = runCmd(t, "handoff", bad, "--dir", dir, "--repo", "octo/svc", "--no-push")
	if code != exitRefused || !strings.Contains(stderr, "plan:2") {
		t.Errorf("bad plan: exit %d, stderr:\n%s", code, stderr)
	}
	// A plan file of another format runs from the branch, so it must be committed there.
	yml := filepath.Join(dir, "tasks.yml")
	mustWrite(t, yml, "tasks:\n  - id: \"1\"\n    title: Write the YAML file\n")
	if _, stderr, code := runCmd(t, "handoff", yml, "--dir", dir, "--repo", "octo/svc"); code != exitUsage || !strings.Contains(stderr, "not committed") {
		t.Errorf("uncommitted YAML plan: exit %d, stderr:\n%s", code, stderr)
	}
	for _, args := range [][]string{{"add", "tasks.yml"}, {"commit", "-q", "-m", "Plan"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	stdout, stderr, code = runCmd(t, "handoff", yml, "--dir", dir, "--repo", "octo/svc", "--follow", "--interval", "200ms")
	if code != 0 || !strings.Contains(stderr, "pushing feature") {
		t.Fatalf("committed YAML plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	yid := regexp.MustCompile(`/ui/runs/([0-9a-f]+)\n`).FindStringSubmatch(stdout)[1]
	if got, _ := fake.FileAt("octo", "svc", "akira/handoff-"+yid, "task-1.txt"); strings.TrimSpace(got) != "Write the YAML file" {
		t.Errorf("the YAML plan's task wrote %q", got)
	}

	os.Unsetenv("AKIRA_TOKEN")
	if _, _, code := runCmd(t, "handoff", plan, "--dir", dir); code != exitUsage {
		t.Errorf("without a token: exit %d, want %d", code, exitUsage)
	}
}
