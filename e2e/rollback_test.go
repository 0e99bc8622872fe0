package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

// TestRollbackThroughGitHub: on a finished run, a read-only user's `/akira rollback` does nothing; a
// writer's reverts the task's checkpoint with a revert commit (the history kept), concludes its
// check run as rolled back, stops the run with the task pending and says so; `/akira run` does the
// task again in the same run; `/akira rollback <task> --retry <guidance>` reverts and reruns at once,
// with the guidance in the agent's prompt.
func TestRollbackThroughGitHub(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Three", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add two\n- [ ] Add three\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	before := len(e.gh.Log(e.owner, e.repo, run.Branch))

	e.comment(1, "mallory", "/akira rollback 1.2", false, http.StatusAccepted)
	e.eventually("the refusal", func() bool { return len(e.commentsWith(1, "Sorry @mallory")) == 1 })
	if got := len(e.gh.Log(e.owner, e.repo, run.Branch)); got != before {
		t.Fatalf("a read-only user's rollback changed the branch: %d commits, was %d", got, before)
	}

	pr := e.onlyPR(run.Branch)
	e.comment(pr.Number, "alice", "/akira rollback 1.2", true, http.StatusAccepted)
	e.eventually("the rollback's reply", func() bool { return len(e.commentsWith(pr.Number, "rolled back on")) == 1 })
	log := e.gh.Log(e.owner, e.repo, run.Branch)
	if len(log) != before+1 {
		t.Fatalf("branch has %d commits; want %d plus one revert", len(log), before)
	}
	last := log[0] // newest first
	if last.Trailers["Akira-Revert"] != "1.2" || !strings.HasPrefix(last.Subject, "akira: revert 1.2 Add two") {
		t.Errorf("the newest commit is not the revert of 1.2: %q %v", last.Subject, last.Trailers)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, run.Branch, "out-1.2.txt"); ok {
		t.Error("out-1.2.txt is still on the branch")
	}
	stopped := e.waitStatus(1, lifecycle.StatusStopped)
	if tk := stopped.Task("1.2"); tk.Status != lifecycle.TaskStatusPending || tk.Checkpoint != "" {
		t.Errorf("task 1.2 after the rollback: %+v", tk)
	}
	if cr := e.latestCheckRuns()["akira: 1.2 Add two"]; cr.Conclusion != "neutral" || !strings.Contains(cr.Title, "Rolled back") {
		t.Errorf("check run of the rolled-back task: %+v", cr)
	}

	e.comment(pr.Number, "alice", "/akira run", true, http.StatusAccepted)
	again := e.waitStatus(1, lifecycle.StatusSucceeded)
	if again.ID != run.ID {
		t.Errorf("/akira run after the rollback made run %s beside %s", again.ID, run.ID)
	}
	if got := e.taskCommits(run.Branch); got["1.2"] != 2 || got["1.1"] != 1 || got["1.3"] != 1 {
		t.Errorf("checkpoints = %v; want 1.2 twice (before and after the rollback), the others once", got)
	}

	e.comment(pr.Number, "alice", "/akira rollback 1.3 --retry write it in capitals", true, http.StatusAccepted)
	e.eventually("1.3 done again", func() bool { return e.taskCommits(run.Branch)["1.3"] == 2 })
	e.waitStatus(1, lifecycle.StatusSucceeded)
	prompts, _ := filepath.Glob(filepath.Join(e.logDir, "prompt-1.3-*"))
	guided := false
	for _, p := range prompts {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "write it in capitals") {
			guided = true
		}
	}
	if !guided {
		t.Error("the --retry guidance did not reach the agent's prompt")
	}
	if sum := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID)); len(sum) != 1 {
		t.Errorf("%d summary comments; want the one, kept current", len(sum))
	}
}
