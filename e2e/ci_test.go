package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
)

// ciOperator watches CI with a short grace period; the tests play the CI.
const ciOperator = "ci:\n  watch: last\n  timeout: 10m\n  grace: 5m\n  max_fix_rounds: 1\n"

// A repository has a CI when GitHub Actions has a workflow to run, or another CI reported on its
// base: without either, a run does not wait for checks that cannot come (TestNoCIAtAll). actionsRepo
// is a repository with a GitHub Actions workflow.
var actionsRepo = map[string]string{"README.md": "# demo\n",
	".github/workflows/ci.yml": "on: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{run: make test}]\n"}

// jenkinsOnBase gives the repository another app's CI: Jenkins reported on the default branch's head.
func (e *env) jenkinsOnBase() {
	e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: e.gh.Branch(e.owner, e.repo, "main"), Context: "ci/jenkins", State: "success"})
}

// circleOnBase gives the repository another app's CI: a CircleCI check run on the default branch's head.
func (e *env) circleOnBase() {
	e.gh.AddForeignCheckRun(e.owner, e.repo, githubtest.ForeignCheckRun{App: githubtest.CIApp{ID: 77, Slug: "circleci", Name: "CircleCI"},
		Name: "build", HeadSHA: e.gh.Branch(e.owner, e.repo, "main"), HeadBranch: "main", Conclusion: "success"})
}

// waitCI waits until the run of number waits for the CI of a commit other than old, and returns it.
func (e *env) waitCI(number int, old string) *lifecycle.Run {
	e.t.Helper()
	var run *lifecycle.Run
	e.eventually("the run to wait for CI on a new head", func() bool {
		run = e.runOf(number)
		return run != nil && run.Status == lifecycle.StatusWaitingCI && run.CI != nil && run.CI.Head != old
	})
	return run
}

// ciReport delivers what a CI reports about head on branch: a check suite completed.
func (e *env) ciReport(event, branch, head, conclusion string) {
	e.t.Helper()
	body := map[string]any{"head_sha": head, "head_branch": branch, "conclusion": conclusion, "status": "completed",
		"app": map[string]any{"id": 15368, "slug": "github-actions"}}
	payload := map[string]any{"action": "completed", "installation": e.installation(), "repository": e.repository(),
		"sender": user("github-actions[bot]")}
	switch event {
	case queue.EventCheckSuite:
		payload["check_suite"] = body
	case queue.EventWorkflowRun:
		body["name"] = "CI"
		payload["workflow_run"] = body
	case queue.EventStatus:
		payload = map[string]any{"sha": head, "state": conclusion, "context": "ci/jenkins", "installation": e.installation(),
			"repository": e.repository(), "sender": user("jenkins[bot]"), "branches": []any{map[string]any{"name": branch}}}
	}
	e.deliver(event, event+"-"+randomHex(e.t, 4), payload, http.StatusAccepted)
}

// TestCIThroughGitHub: the run's tasks are done and its pull request's own CI fails — an Actions job,
// another app's check run, a commit status. Each time Akira reads the evidence, runs a fix task whose
// prompt quotes the failing line (a token in the log masked), pushes it with an Akira-Fix-For trailer,
// waits again, and marks the pull request ready once the CI is green. A delivery about an old head
// and the same delivery twice change nothing.
func TestCIThroughGitHub(t *testing.T) {
	token := "ghp_" + strings.Repeat("Zz9", 12)
	cases := []struct {
		name, event string
		files       map[string]string
		ci          func(e *env) // the repository's CI beside GitHub Actions, on its base
		fail        func(e *env, branch, head string)
		pass        func(e *env, branch, head string)
		quote       string
	}{
		{name: "actions", event: queue.EventCheckSuite, files: actionsRepo,
			fail: func(e *env, branch, head string) {
				e.gh.AddWorkflowRun(e.owner, e.repo, githubtest.WorkflowRun{Name: "CI", HeadSHA: head, HeadBranch: branch, Jobs: []githubtest.WorkflowJob{
					{Name: "lint", Conclusion: "success", Log: "ok\n"},
					{Name: "test", Conclusion: "failure", Log: "##[group]Run go test ./...\nexport GH_TOKEN=" + token + "\n--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\nFAIL\n##[error]Process completed with exit code 1.\n"}}})
			},
			pass: func(e *env, branch, head string) {
				e.gh.AddWorkflowRun(e.owner, e.repo, githubtest.WorkflowRun{Name: "CI", HeadSHA: head, HeadBranch: branch,
					Jobs: []githubtest.WorkflowJob{{Name: "lint", Conclusion: "success"}, {Name: "test", Conclusion: "success"}}})
			},
			quote: "add_test.go:9: got 3, want 4"},
		{name: "third-party check run", event: queue.EventCheckSuite, ci: (*env).circleOnBase,
			fail: func(e *env, branch, head string) {
				e.gh.AddForeignCheckRun(e.owner, e.repo, githubtest.ForeignCheckRun{App: githubtest.CIApp{ID: 77, Slug: "circleci", Name: "CircleCI"},
					Name: "build", HeadSHA: head, HeadBranch: branch, Conclusion: "failure", Title: "Build failed", Summary: "make: *** [all] Error 2",
					Annotations: []githubtest.Annotation{{Path: "main.go", StartLine: 3, EndLine: 3, AnnotationLevel: "failure", Message: "undefined: frobnicate"}}})
			},
			pass: func(e *env, branch, head string) {
				e.gh.AddForeignCheckRun(e.owner, e.repo, githubtest.ForeignCheckRun{App: githubtest.CIApp{ID: 77, Slug: "circleci", Name: "CircleCI"},
					Name: "build", HeadSHA: head, HeadBranch: branch, Conclusion: "success"})
			},
			quote: "main.go:3: failure: undefined: frobnicate"},
		{name: "commit status", event: queue.EventStatus, ci: (*env).jenkinsOnBase,
			fail: func(e *env, _, head string) {
				e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: head, Context: "ci/jenkins", State: "failure", Description: "2 tests failed in suite payments"})
			},
			pass: func(e *env, _, head string) {
				e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: head, Context: "ci/jenkins", State: "success", Description: "all green"})
			},
			quote: "2 tests failed in suite payments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, false, redisAddr(t), ciOperator)
			if tc.files == nil {
				tc.files = map[string]string{"README.md": "# demo\n"}
			}
			e.createRepo(tc.files)
			if tc.ci != nil {
				tc.ci(e)
			}
			e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "CI", User: "alice", Body: "- [ ] Add one\n"})
			e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
			run := e.waitCI(1, "")
			head, branch := run.CI.Head, run.Branch
			if pr := e.onlyPR(branch); !pr.Draft {
				t.Fatal("the pull request is ready before its CI is green")
			}

			// A report about another commit changes nothing; the red one starts one fix round.
			e.ciReport(tc.event, branch, strings.Repeat("0", 40), "failure")
			tc.fail(e, branch, head)
			conclusion := "failure"
			e.ciReport(tc.event, branch, head, conclusion)
			e.ciReport(tc.event, branch, head, conclusion)
			run = e.waitCI(1, head)
			if run.CI.Round != 1 {
				t.Fatalf("fix rounds = %d, want 1", run.CI.Round)
			}
			prompt := e.promptOf("fix")
			if !strings.Contains(prompt, tc.quote) {
				t.Fatalf("the fix task's prompt does not quote %q:\n%s", tc.quote, prompt)
			}
			if strings.Contains(prompt, token) {
				t.Fatal("a token from the CI log reached the agent's prompt")
			}
			var fixed bool
			for _, c := range e.gh.Log(e.owner, e.repo, branch) {
				if c.Trailers["Akira-Fix-For"] != "" && c.Trailers["Akira-Task"] == lifecycle.CIScope(1)+"#fix" {
					fixed = true
				}
			}
			if !fixed {
				t.Fatal("no checkpoint with an Akira-Fix-For trailer on the branch")
			}

			tc.pass(e, branch, run.CI.Head)
			e.ciReport(tc.event, branch, run.CI.Head, "success")
			run = e.waitStatus(1, lifecycle.StatusSucceeded)
			e.eventually("the pull request to be ready", func() bool { return !e.onlyPR(branch).Draft })
			for _, c := range e.gh.Comments(e.owner, e.repo, e.onlyPR(branch).Number) {
				if strings.Contains(c.Body, token) {
					t.Fatal("a token from the CI log reached a comment")
				}
			}
			if n := e.taskCommits(branch)[lifecycle.CIScope(1)+"#fix"]; n != 1 {
				t.Errorf("%d fix checkpoints, want 1", n)
			}
		})
	}
}

// TestCIStaysRed: a check that stays red after the last fix round escalates once, with the evidence;
// `/akira retry <guidance>` starts another round, whose prompt has the guidance, and green ends it.
func TestCIStaysRed(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), ciOperator)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.jenkinsOnBase()
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "CI", User: "alice", Body: "- [ ] Add one\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitCI(1, "")
	branch := run.Branch
	red := func(head string) {
		e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: head, Context: "ci/jenkins", State: "failure", Description: "payments suite: 2 failed"})
		e.ciReport(queue.EventStatus, branch, head, "failure")
	}
	red(run.CI.Head)
	run = e.waitCI(1, run.CI.Head)
	red(run.CI.Head)
	red(run.CI.Head) // delivered twice
	run = e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(branch)
	e.eventually("the escalation comment", func() bool { return len(e.commentsWith(pr.Number, "escalation-round")) > 0 })
	escalations := e.commentsWith(pr.Number, "escalation-round")
	if len(escalations) != 1 || !strings.Contains(escalations[0].Body, "payments suite: 2 failed") {
		t.Fatalf("escalations = %+v", escalations)
	}
	e.comment(pr.Number, "alice", "/akira retry the test data is stale; MAGIC-WORD", true, http.StatusAccepted)
	run = e.waitCI(1, run.CI.Head)
	if prompt := e.promptOf("fix"); !strings.Contains(prompt, "MAGIC-WORD") {
		t.Fatalf("the retried round's prompt has no guidance:\n%s", prompt)
	}
	e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: run.CI.Head, Context: "ci/jenkins", State: "success"})
	e.ciReport(queue.EventStatus, branch, run.CI.Head, "success")
	e.waitStatus(1, lifecycle.StatusSucceeded)
	e.eventually("the pull request to be ready", func() bool { return !e.onlyPR(branch).Draft })
}

// TestCIWatchEach: with `ci.watch: each` the run waits for its pull request's CI after every
// checkpoint: the second task starts only once the first one's checks are green, a red check is fixed
// before the next task, and the pull request turns ready after the last task's CI.
func TestCIWatchEach(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), strings.Replace(ciOperator, "watch: last", "watch: each", 1))
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.jenkinsOnBase()
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Each", User: "alice", Body: "- [ ] Add one\n- [ ] Add two\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitCI(1, "")
	branch := run.Branch
	if got := e.taskCommits(branch); len(got) != 1 || !run.CI.More {
		t.Fatalf("after the first checkpoint: tasks %v, more %v; want one task and more to come", got, run.CI.More)
	}
	status := func(head, state string) {
		e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: head, Context: "ci/jenkins", State: state, Description: "suite " + state})
		e.ciReport(queue.EventStatus, branch, head, state)
	}

	status(run.CI.Head, "failure") // fixed before the second task starts
	run = e.waitCI(1, run.CI.Head)
	if got := e.taskCommits(branch); len(got) != 2 || got[lifecycle.CIScope(1)+"#fix"] != 1 || !run.CI.More {
		t.Fatalf("after the fix round: tasks %v, more %v", got, run.CI.More)
	}
	status(run.CI.Head, "success")
	run = e.waitCI(1, run.CI.Head)
	if got := e.taskCommits(branch); len(got) != 3 || run.CI.More {
		t.Fatalf("after the second task: tasks %v, more %v; want both tasks and the fix, nothing more", got, run.CI.More)
	}
	if !e.onlyPR(branch).Draft {
		t.Fatal("the pull request is ready before the last task's CI is green")
	}
	status(run.CI.Head, "success")
	e.waitStatus(1, lifecycle.StatusSucceeded)
	e.eventually("the pull request to be ready", func() bool { return !e.onlyPR(branch).Draft })
}

// TestNoCIAtAll: a repository with no workflow and no other app's check or status on its base has no
// CI that could report: the run does not wait the grace period (an hour here) for one, and marks its
// pull request ready as soon as its tasks are done, saying so in the summary.
func TestNoCIAtAll(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), "ci:\n  watch: last\n  timeout: 2h\n  grace: 1h\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "No CI", User: "alice", Body: "- [ ] Add one\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusParked, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded || run.CI == nil || !run.CI.None {
		t.Fatalf("run is %s, CI %+v; want it done without waiting for a CI there is not", run.Status, run.CI)
	}
	pr := e.onlyPR(run.Branch)
	if pr.Draft {
		t.Error("the pull request is still a draft")
	}
	if len(e.commentsWith(pr.Number, "No CI reported a check")) != 1 {
		t.Error("the summary does not say that there was no CI")
	}
	// The CI was read as the run began to wait for it, not at the next poll.
	done, err := asynq.NewInspectorFromRedisClient(e.rdb).ListCompletedTasks(e.spec.Queue)
	must(t, err)
	var readAtOnce bool
	for _, ti := range done {
		var p queue.CIPayload
		if ti.Type == queue.TypeCI && json.Unmarshal(ti.Payload, &p) == nil && p.Key == "waiting" && p.Head == run.CI.Head {
			readAtOnce = true
		}
	}
	if !readAtOnce {
		t.Error("no CI reading was queued when the run began to wait for its CI")
	}
}
