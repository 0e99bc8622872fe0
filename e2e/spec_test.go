package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

const (
	loginSpec  = "# Tasks: login\n\n## Phase 1\n\n- [ ] T001 Add the login form\n- [ ] T002 Add logout\n"
	searchSpec = "# Tasks: search\n\n## Phase 1\n\n- [ ] T001 Add the search box\n"
)

// pullRequestEvent delivers a pull_request webhook for the pull request as it is on GitHub now.
func (e *env) pullRequestEvent(action string, pr githubtest.PullRequest, delivery string) {
	e.t.Helper()
	repo := e.repository()
	e.deliver("pull_request", delivery, map[string]any{
		"action": action, "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user("alice"),
		"pull_request": map[string]any{"number": pr.Number, "user": user("alice"),
			"head": map[string]any{"ref": pr.Head, "sha": e.gh.Branch(e.owner, e.repo, pr.Head), "repo": repo},
			"base": map[string]any{"ref": pr.Base, "sha": e.gh.Branch(e.owner, e.repo, pr.Base), "repo": repo}},
	}, http.StatusAccepted)
}

// queueIdle waits until the env's queue holds no task waiting, running or due for a retry.
func (e *env) queueIdle() {
	e.t.Helper()
	in := asynq.NewInspectorFromRedisClient(e.rdb)
	e.eventually("the queue to be idle", func() bool {
		qi, err := in.GetQueueInfo(e.spec.Queue)
		return err == nil && qi.Pending+qi.Active+qi.Scheduled+qi.Retry == 0
	})
}

// TestSpecPullRequest: a same-repository pull request that changes two spec files (no roadmap) runs the
// unchecked tasks of both, on its own branch, one file after the other in path order, ticking the boxes
// in those files; both files number their tasks from T001. A later push that adds a task runs only it;
// a push that ticks a box by hand and changes code runs nothing.
func TestSpecPullRequest(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "spec", From: "main", Message: "Specs for login and search",
		Files: map[string]string{"specs/search/tasks.md": searchSpec, "specs/login/tasks.md": loginSpec}})
	pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "Login and search", User: "alice", Head: "spec", Base: "main"})
	e.pullRequestEvent("opened", pr, "pr-open")

	run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if run.Branch != "spec" || strings.Join(run.Plans, ",") != "specs/login/tasks.md,specs/search/tasks.md" {
		t.Fatalf("run on %s over %v", run.Branch, run.Plans)
	}
	want := map[string]int{"specs/login/tasks.md#T001": 1, "specs/login/tasks.md#T002": 1, "specs/search/tasks.md#T001": 1}
	if got := e.taskCommits("spec"); !sameCounts(got, want) {
		t.Errorf("checkpoints on the pull request's branch = %v, want %v", got, want)
	}
	login, _ := e.gh.FileAt(e.owner, e.repo, "spec", "specs/login/tasks.md")
	search, _ := e.gh.FileAt(e.owner, e.repo, "spec", "specs/search/tasks.md")
	if login != strings.ReplaceAll(loginSpec, "- [ ]", "- [x]") || search != strings.ReplaceAll(searchSpec, "- [ ]", "- [x]") {
		t.Errorf("specs on the branch:\n%s\n%s", login, search)
	}
	names := e.latestCheckRuns()
	for _, n := range []string{"akira: specs/login/tasks.md#T001 Add the login form", "akira: specs/search/tasks.md#T001 Add the search box"} {
		if cr, ok := names[n]; !ok || cr.Conclusion != "success" {
			t.Errorf("check run %q = %+v (have %v)", n, cr, keys(names))
		}
	}
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 1 {
		t.Errorf("%d pull requests, want only the author's", n)
	}
	if got := e.gh.PullRequests(e.owner, e.repo)[0]; got.Draft != pr.Draft {
		t.Errorf("Akira changed the author's pull request draft state to %v", got.Draft)
	}

	// A push that adds a task: a new run does only that task.
	done, _ := e.gh.FileAt(e.owner, e.repo, "spec", "specs/login/tasks.md")
	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "spec", Message: "One more",
		Files: map[string]string{"specs/login/tasks.md": done + "- [ ] T003 Add remember-me\n"}})
	e.pullRequestEvent("synchronize", pr, "pr-sync-1")
	e.eventually("the new task's checkpoint", func() bool { return e.taskCommits("spec")["specs/login/tasks.md#T003"] == 1 })
	second := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if second.ID == run.ID || strings.Join(second.Plans, ",") != "specs/login/tasks.md" {
		t.Errorf("the second run %s runs %v, want the login spec alone", second.ID, second.Plans)
	}
	for _, ts := range second.Tasks {
		if worked := ts.Attempts > 0; worked != (ts.ID == "specs/login/tasks.md#T003") {
			t.Errorf("second run: task %s had %d attempts; only T003 was left to do", ts.ID, ts.Attempts)
		}
	}

	// A push that ticks a box by hand and changes code: nothing runs.
	done, _ = e.gh.FileAt(e.owner, e.repo, "spec", "specs/login/tasks.md")
	before := len(e.gh.Log(e.owner, e.repo, "spec"))
	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "spec", Message: "Did one by hand",
		Files: map[string]string{"specs/login/tasks.md": done + "- [x] T004 Write the docs\n", "main.go": "package main\n"}})
	e.pullRequestEvent("synchronize", pr, "pr-sync-2")
	time.Sleep(200 * time.Millisecond) // the intake enqueues the run job, which must find nothing to do
	e.queueIdle()
	if got := e.runOf(pr.Number); got.ID != second.ID {
		t.Errorf("a push with nothing to do started run %s", got.ID)
	}
	if n := len(e.gh.Log(e.owner, e.repo, "spec")); n != before+1 {
		t.Errorf("%d commits after the hand-ticked push, want only the person's", n-before)
	}
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
