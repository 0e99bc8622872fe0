package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/gittest"
)

// TestSpecPullRequestRunsEachChangedPlan: a pull request changing two spec-kit task files, which share
// the id T001, runs both in path order on its branch, with their tasks named within their file; a
// later push that leaves nothing to do starts nothing.
func TestSpecPullRequestRunsEachChangedPlan(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"README.md": "hi\n"})
	// Two plans' tasks write files named by title: same ids, different work.
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nset -eu\necho x > \"done-$(printf %s \"$AKIRA_TASK_TITLE\" | tr -c 'A-Za-z0-9' '-').txt\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AKIRA_TEST_AGENT", script)
	specs := map[string]string{
		"specs/alpha/tasks.md": "# Tasks\n\n- [ ] T001 Alpha setup\n- [ ] T002 Alpha finish\n",
		"specs/beta/tasks.md":  "# Tasks\n\n- [ ] T001 Beta setup\n",
	}
	gittest.Git(t, repo.Work, "checkout", "-q", "-b", "feature")
	gittest.WriteFiles(t, repo.Work, specs)
	gittest.Git(t, repo.Work, "add", "--all")
	gittest.Git(t, repo.Work, "commit", "-q", "-m", "specs")
	gittest.Git(t, repo.Work, "push", "-q", "origin", "feature")
	for path, content := range specs {
		jh.gh.Files["feature:"+path] = content
	}
	jh.gh.Pulls[6] = &ports.PullRequest{Number: 6, HeadRef: "feature", BaseRef: "main", HeadRepo: "o/r", URL: "https://example.invalid/o/r/pull/6"}
	jh.gh.PullFiles[6] = []string{"specs/beta/tasks.md", "specs/alpha/tasks.md", "README.md"}
	ctx := context.Background()

	push := func(delivery string) queue.RunPayload {
		return queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: delivery, InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, Trigger: lifecycle.TriggerPullRequest, Number: 6, Branch: "feature"}
	}
	if err := jh.runJob(push("d-pr")); err != nil {
		t.Fatalf("run job: %v", err)
	}
	run, err := jh.store.Get(ctx, queue.RunIDFor("d-pr"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusSucceeded || strings.Join(run.Plans, ",") != "specs/alpha/tasks.md,specs/beta/tasks.md" {
		t.Fatalf("run = %s plans %v, want both plans, succeeded", run.Status, run.Plans)
	}
	var ids []string
	for _, task := range run.Tasks {
		ids = append(ids, task.ID)
	}
	if got := strings.Join(ids, ","); got != "specs/alpha/tasks.md#T001,specs/alpha/tasks.md#T002,specs/beta/tasks.md#T001" {
		t.Errorf("task ids = %s, want each named within its plan", got)
	}
	// Each task's checkpoint on the branch names it within its plan.
	trailers := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "log", "--format=%(trailers:key=Akira-Task,valueonly)", "feature")
	for _, id := range ids {
		if !strings.Contains(trailers, id) {
			t.Errorf("branch trailers %q lack %s", trailers, id)
		}
	}
	// A push that leaves nothing to do (every task is checkpointed) starts no run.
	if err := jh.runJob(push("d-pr-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := jh.store.Get(ctx, queue.RunIDFor("d-pr-2")); err == nil {
		t.Error("a push with nothing left to do started a run")
	}
}
