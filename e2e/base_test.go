package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// The base branch moves under a run (issue 44): the push webhook of the base marks the run's branch,
// the engine merges the base before its next task (a merge commit with an Akira-Sync trailer, the
// checkpoints before it unchanged), a conflict is the agent's task `sync`, one it cannot resolve is
// an escalation on `sync`, and the pull request never turns ready behind its base. Follow-ups land on
// the same pull request.

// baseRun starts issue #1's run with a first task that waits for the file "release", so that a test
// moves the base while the agent works on it.
func baseRun(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.DeliverPushes(true)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Two things", User: "alice",
		Body: "- [ ] Add one slow thing\n- [ ] Add two\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.1")
	return e
}

// moveBase pushes a commit to main as a person does while the run works, and waits for the intake to
// mark the run's branch (the webhook answers before its intake job runs).
func (e *env) moveBase(files map[string]string) string {
	e.t.Helper()
	sha := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Files: files, Message: "main moves on"})
	e.eventually("the push to mark akira/issue-1", func() bool { return e.baseMark("akira/issue-1") == sha })
	return sha
}

func (e *env) baseMark(branch string) string {
	e.t.Helper()
	m, err := e.store.BaseMark(context.Background(), e.owner, e.repo, branch)
	must(e.t, err)
	return m
}

// merges returns the commits of ref (back to the base) with an Akira-Sync trailer, newest first.
func (e *env) merges(ref string) []githubtest.Commit {
	var out []githubtest.Commit
	for _, c := range e.gh.Log(e.owner, e.repo, ref) {
		if c.Trailers["Akira-Sync"] != "" {
			out = append(out, c)
		}
	}
	return out
}

// checkpointOf returns the commit of ref whose Akira-Task trailer is id.
func (e *env) checkpointOf(ref, id string) githubtest.Commit {
	e.t.Helper()
	for _, c := range e.gh.Log(e.owner, e.repo, ref) {
		if c.Trailers["Akira-Task"] == id {
			return c
		}
	}
	e.t.Fatalf("no checkpoint of %s on %s", id, ref)
	return githubtest.Commit{}
}

// callsPerTask counts the agent's calls per task.
func (e *env) callsPerTask() map[string]int {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.logDir, "calls"))
	must(e.t, err)
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if id, _, ok := strings.Cut(line, " "); ok {
			out[id]++
		}
	}
	return out
}

// TestBaseMovesWithoutConflict: main gains a commit while task 1.1 works. Before task 1.2 the branch
// merges it (no agent call: the merge is clean and verified), as a merge commit with an Akira-Sync
// trailer whose first parent is 1.1's checkpoint; 1.2 builds on the merge; the pull request merges
// cleanly and is marked ready; the summary says which base commit the branch is up to date with.
func TestBaseMovesWithoutConflict(t *testing.T) {
	e := baseRun(t)
	base := e.moveBase(map[string]string{"base.txt": "from main\n"})
	e.touch("release")
	run := e.waitStatus(1, lifecycle.StatusSucceeded)

	merges := e.merges(run.Branch)
	if len(merges) != 1 || merges[0].Trailers["Akira-Sync"] != "main@"+base || merges[0].Trailers["Akira-Run"] != run.ID {
		t.Fatalf("merges of the base = %+v, want one with Akira-Sync: main@%s", merges, base)
	}
	first, second := e.checkpointOf(run.Branch, "1.1"), e.checkpointOf(run.Branch, "1.2")
	if m := merges[0]; !slices.Equal(m.Parents, []string{first.SHA, base}) {
		t.Errorf("merge parents = %v, want the pushed checkpoint %s, then main %s", m.Parents, first.SHA, base)
	}
	if !slices.Equal(second.Parents, []string{merges[0].SHA}) {
		t.Errorf("1.2's checkpoint has parents %v, want the merge %s", second.Parents, merges[0].SHA)
	}
	if calls := e.callsPerTask(); calls["sync"] != 0 || calls["1.1"] != 1 || calls["1.2"] != 1 {
		t.Errorf("agent calls %v, want one per task and none for a clean merge", calls)
	}
	pr := e.onlyPR(run.Branch)
	if pr.Draft {
		t.Error("the pull request is still a draft")
	}
	if m := e.gh.PullMergeability(e.owner, e.repo, pr.Number); !m.Known || !m.Mergeable || m.State == "dirty" {
		t.Errorf("the pull request's mergeability = %+v, want mergeable", m)
	}
	if !slices.Equal(run.Synced, []string{"main@" + base}) {
		t.Errorf("run synced %v", run.Synced)
	}
	if len(e.commentsWith(pr.Number, "brought up to date with `main@"+base[:12]+"`")) != 1 {
		t.Errorf("the summary does not say the branch was brought up to date with main@%s", base[:12])
	}
	if m := e.baseMark(run.Branch); m != "" {
		t.Errorf("the branch is still marked (%q) once up to date", m)
	}
}

// TestBaseMovesWithAConflictTheAgentResolves: main adds the file task 1.1 writes. The merge before 1.2
// conflicts: the agent gets the file with both sides quoted, resolves it, and the resolution is
// pushed as the merge; 1.2 follows and the pull request is mergeable and ready.
func TestBaseMovesWithAConflictTheAgentResolves(t *testing.T) {
	e := baseRun(t)
	base := e.moveBase(map[string]string{"out-1.1.txt": "from main\n"})
	e.touch("release")
	run := e.waitStatus(1, lifecycle.StatusSucceeded)

	merges := e.merges(run.Branch)
	if len(merges) != 1 || merges[0].Trailers["Akira-Sync"] != "main@"+base || !strings.Contains(merges[0].Body, `"out-1.1.txt"`) {
		t.Fatalf("merges = %+v, want one naming the conflict it resolved", merges)
	}
	if second := e.checkpointOf(run.Branch, "1.2"); !slices.Equal(second.Parents, []string{merges[0].SHA}) {
		t.Errorf("1.2's checkpoint has parents %v, want the merge %s (the base is merged before the next task)", second.Parents, merges[0].SHA)
	}
	if got, _ := e.gh.FileAt(e.owner, e.repo, run.Branch, "out-1.1.txt"); !strings.Contains(got, "slow") || !strings.Contains(got, "from main") || strings.Contains(got, "<<<<<<<") {
		t.Errorf("out-1.1.txt on the branch = %q, want both sides and no conflict markers", got)
	}
	prompt := e.promptOf("sync")
	for _, want := range []string{`"out-1.1.txt"`, "from main", "slow"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the sync task's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if calls := e.callsPerTask(); calls["sync"] != 1 || calls["1.2"] != 1 {
		t.Errorf("agent calls %v, want one for the sync and one for 1.2", calls)
	}
	pr := e.onlyPR(run.Branch)
	if m := e.gh.PullMergeability(e.owner, e.repo, pr.Number); pr.Draft || !m.Mergeable {
		t.Errorf("pull request draft %v, mergeability %+v; want ready and mergeable", pr.Draft, m)
	}
	if cr, ok := e.latestCheckRuns()["akira: sync Bring akira/issue-1 up to date with main"]; !ok || cr.Conclusion != "success" {
		t.Errorf("the sync task's check run = %+v, want success", cr)
	}
}

// TestBaseMovesWithAConflictTheAgentCannotResolve: the merge conflicts in a way the agent leaves
// alone. After its attempts the run escalates on task `sync`, naming the file, with nothing pushed
// and 1.2 not started; the pull request stays a draft. Then the answers work as for any task: retry
// with guidance resolves it, skip leaves the branch behind its base and goes on, abort ends the run.
func TestBaseMovesWithAConflictTheAgentCannotResolve(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   lifecycle.RunStatus
		merged bool // the base is merged in the end
		second bool // 1.2 is done in the end
	}{
		{"/akira retry keep both sides, MAGIC-WORD", lifecycle.StatusSucceeded, true, true},
		{"/akira skip", lifecycle.StatusSucceeded, false, true},
		{"/akira abort", lifecycle.StatusAborted, false, false},
	} {
		t.Run(strings.Fields(tc.answer)[1], func(t *testing.T) {
			e := baseRun(t)
			base := e.moveBase(map[string]string{"out-1.1.txt": "UNRESOLVABLE from main\n"})
			e.touch("release")
			parked := e.waitStatus(1, lifecycle.StatusParked)
			if len(parked.Parked) != 1 || parked.Parked[0].TaskID != "sync" || !strings.Contains(parked.Parked[0].Summary, "conflicts in out-1.1.txt") {
				t.Fatalf("parked = %+v, want the sync task naming out-1.1.txt", parked.Parked)
			}
			if n := len(e.merges(parked.Branch)); n != 0 {
				t.Fatalf("%d merges pushed while the sync waits for a decision", n)
			}
			if calls := e.callsPerTask(); calls["sync"] != 2 || calls["1.2"] != 0 {
				t.Fatalf("agent calls %v, want the sync's two attempts and no 1.2", calls)
			}
			pr := e.onlyPR(parked.Branch)
			if !pr.Draft {
				t.Error("the pull request turned ready while its branch cannot take its base")
			}
			if len(e.commentsWith(pr.Number, "out-1.1.txt")) == 0 {
				t.Error("no comment on the pull request names the conflicting file")
			}
			if cr := e.latestCheckRuns()["akira: sync Bring akira/issue-1 up to date with main"]; cr.Conclusion != "action_required" {
				t.Errorf("the sync task's check run = %+v, want action_required", cr)
			}

			e.comment(pr.Number, "alice", tc.answer, true, http.StatusAccepted)
			run := e.waitStatus(1, tc.want)
			merges := e.merges(run.Branch)
			if tc.merged != (len(merges) == 1) || (tc.merged && merges[0].Trailers["Akira-Sync"] != "main@"+base) {
				t.Errorf("merges %+v, want merged %v", merges, tc.merged)
			}
			if done := e.taskCommits(run.Branch)["1.2"] == 1; done != tc.second {
				t.Errorf("1.2 checkpointed %v, want %v", done, tc.second)
			}
			if counts := e.taskCommits(run.Branch); counts["1.1"] != 1 {
				t.Errorf("checkpoints %v, want 1.1 once", counts)
			}
			want := map[string]string{"/akira retry": lifecycle.TaskStatusPassed, "/akira skip": lifecycle.TaskStatusSkipped,
				"/akira abort": lifecycle.TaskStatusAborted}[strings.Join(strings.Fields(tc.answer)[:2], " ")]
			if got := run.Task("sync"); got == nil || got.Status != want {
				t.Errorf("the sync task = %+v, want %s", got, want)
			}
			if pr := e.onlyPR(run.Branch); pr.Draft == (tc.want == lifecycle.StatusSucceeded) {
				t.Errorf("pull request draft %v with the run %s", pr.Draft, tc.want)
			}
		})
	}
}

// TestBaseMovedByABotBeforeReady: the base moves by a push whose webhook Akira ignores (a bot's, as a
// merge queue's), so nothing marks the branch and the engine finishes on the old base. Before the
// pull request turns ready the compare API finds the branch behind: it stays a draft, and a job with
// no task left merges the base (setup first, as for a task), then readies it.
func TestBaseMovedByABotBeforeReady(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.DeliverPushes(true)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "One thing", User: "alice", Body: "- [ ] Add one slow thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.1")
	base := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Files: map[string]string{"base.txt": "from the queue\n"},
		Message: "Merge pull request #9", Pusher: "merge-queue[bot]"})
	e.touch("release")
	run := e.waitStatus(1, lifecycle.StatusSucceeded)

	merges := e.merges(run.Branch)
	if len(merges) != 1 || merges[0].Trailers["Akira-Sync"] != "main@"+base {
		t.Fatalf("merges = %+v, want main@%s merged", merges, base)
	}
	if first := e.checkpointOf(run.Branch, "1.1"); !slices.Equal(merges[0].Parents, []string{first.SHA, base}) {
		t.Errorf("merge parents %v, want the checkpoint %s and the base %s", merges[0].Parents, first.SHA, base)
	}
	pr := e.onlyPR(run.Branch)
	if m := e.gh.PullMergeability(e.owner, e.repo, pr.Number); pr.Draft || !m.Mergeable {
		t.Errorf("pull request draft %v, mergeability %+v", pr.Draft, m)
	}
	if run.Jobs < 2 {
		t.Errorf("the run had %d job(s), want a second one for the merge", run.Jobs)
	}
}

// TestFollowUpsOnTheSamePullRequest: an issue's run ended; each follow-up continues its branch and
// pull request and never runs a done task again: new checklist items (/akira run), a plan file the
// base gained since (the base is merged first, the file's tasks named within its path), and a
// hand-off through the API that names the issue.
func TestFollowUpsOnTheSamePullRequest(t *testing.T) {
	e := newEnv(t, false)
	api := e.adminServer()
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.DeliverPushes(true)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Things", User: "alice", Body: "- [ ] Add one\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	first := e.waitStatus(1, lifecycle.StatusSucceeded)
	pr := e.onlyPR(first.Branch)
	if pr.Draft {
		t.Fatal("the first run's pull request is still a draft")
	}
	// next waits for a run of the issue other than those seen, to end as want.
	seen := map[string]bool{first.ID: true}
	next := func(want lifecycle.RunStatus) *lifecycle.Run {
		t.Helper()
		var run *lifecycle.Run
		e.eventually("the follow-up run of #1", func() bool {
			run = e.runOf(1)
			if run == nil || seen[run.ID] {
				return false
			}
			if run.Status.Terminal() && run.Status != want {
				t.Fatalf("the follow-up run %s ended %s: %s", run.ID, run.Status, run.Error)
			}
			return run.Status == want && len(run.Outbox) == 0
		})
		seen[run.ID] = true
		return run
	}
	samePR := func(what string, run *lifecycle.Run) {
		t.Helper()
		if run.Branch != first.Branch || run.PR != pr.Number {
			t.Errorf("%s: run on %s, pull request #%d; want %s and #%d", what, run.Branch, run.PR, first.Branch, pr.Number)
		}
		if got := e.onlyPR(first.Branch); got.Number != pr.Number || got.Draft {
			t.Errorf("%s: pull request #%d (draft %v), want #%d ready", what, got.Number, got.Draft, pr.Number)
		}
		if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 1 {
			t.Errorf("%s: %d pull requests, want the one", what, n)
		}
	}

	// 1. New checklist items (the done one left unticked: its checkpoint says it is done).
	e.gh.EditIssue(e.owner, e.repo, 1, "- [ ] Add one\n- [ ] Add two\n")
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	samePR("new checklist items", next(lifecycle.StatusSucceeded))

	// 2. The base gains a plan file meanwhile (its push marks the branch); a follow-up runs it.
	base := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Files: map[string]string{"plans/more.md": "# More\n\n- [ ] Add three\n"},
		Message: "Plan more"})
	e.eventually("the push to mark the branch", func() bool { return e.baseMark(first.Branch) == base })
	e.comment(1, "alice", "/akira run plans/more.md", false, http.StatusAccepted)
	third := next(lifecycle.StatusSucceeded)
	samePR("a plan file the base gained", third)
	if merges := e.merges(first.Branch); len(merges) != 1 || merges[0].Trailers["Akira-Sync"] != "main@"+base {
		t.Errorf("merges %+v, want main@%s merged before the plan's task", merges, base)
	}
	if got, _ := e.gh.FileAt(e.owner, e.repo, first.Branch, "plans/more.md"); !strings.Contains(got, "- [x] Add three") {
		t.Errorf("plans/more.md on the branch = %q, want its task ticked", got)
	}

	// 3. A hand-off through the API that names the issue.
	editor, err := e.store.CreateTokenFor(context.Background(), "editor", store.ScopeStart, []string{e.owner + "/" + e.repo})
	must(t, err)
	code, out := startRun(t, api.URL, editor, "", `{"repository":"octo/demo","issue":1,"plan":"- [ ] Add four\n"}`)
	if code != http.StatusAccepted || out["branch"] != first.Branch {
		t.Fatalf("hand-off: %d %v, want the issue's branch", code, out)
	}
	handed := next(lifecycle.StatusSucceeded)
	samePR("a hand-off naming the issue", handed)
	if handed.ID != out["id"] {
		t.Errorf("the hand-off's run is %s, the API answered %v", handed.ID, out["id"])
	}

	// 4. A hand-off naming the issue and another base: the issue's pull request is open into main,
	// so it is refused, with what to do, and no second pull request is opened.
	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "release", From: "main", Files: map[string]string{"RELEASE": "1\n"}})
	code, other := startRun(t, api.URL, editor, "", `{"repository":"octo/demo","issue":1,"base":"release","plan":"- [ ] Add five\n"}`)
	if code != http.StatusAccepted {
		t.Fatalf("hand-off into release: %d %v", code, other)
	}
	var refused map[string]any
	e.eventually("the hand-off into release to be refused", func() bool {
		refused = apiRun(t, api.URL, editor, other["id"].(string))
		return refused["status"] == string(lifecycle.StatusFailed)
	})
	if msg, _ := refused["error"].(string); !strings.Contains(msg, fmt.Sprintf("pull request #%d is open into main", pr.Number)) || !strings.Contains(msg, "leave base out") {
		t.Errorf("hand-off into another base: %v", refused)
	}
	if n := len(e.gh.PullRequests(e.owner, e.repo)); n != 1 {
		t.Errorf("%d pull requests after a hand-off into another base, want the one", n)
	}

	want := map[string]int{"1.1": 1, "1.2": 1, "plans/more.md#1.1": 1, "handoff-" + handed.ID + "#1.1": 1}
	if got := e.taskCommits(first.Branch); !maps.Equal(got, want) {
		t.Errorf("checkpoints on the branch %v, want %v (each task once)", got, want)
	}
	// The agent's calls: each task once, though every plan numbers its first task 1.1 (the issue's,
	// the plan file's, the hand-off's); the merge of the base was clean.
	if calls := e.callsPerTask(); calls["1.1"] != 3 || calls["1.2"] != 1 || calls["sync"] != 0 {
		t.Errorf("agent calls %v, want 1.1 of three plans and 1.2, once each", calls)
	}

	// 5. A plan pasted under /akira run: its 1.1 is not the checklist's 1.1, done long ago.
	e.comment(1, "alice", "/akira run\n\n- [ ] Add six\n", false, http.StatusAccepted)
	pasted := next(lifecycle.StatusSucceeded)
	samePR("a pasted plan", pasted)
	scoped := "comment-" + pasted.ID + "#1.1"
	if got := e.taskCommits(first.Branch); got[scoped] != 1 || got["1.1"] != 1 {
		t.Fatalf("checkpoints on the branch %v, want %s once (and the checklist's 1.1 still once)", got, scoped)
	}
	if calls := e.callsPerTask(); calls["1.1"] != 4 {
		t.Errorf("agent calls %v, want the pasted plan's task done too", calls)
	}

	// 6. Its task rolled back by the name the summary shows (the plan's own, 1.1): the revert is of
	// the pasted plan's checkpoint, not the checklist's.
	e.comment(pr.Number, "alice", "/akira rollback 1.1", true, http.StatusAccepted)
	e.eventually("the rollback's reply", func() bool { return len(e.commentsWith(pr.Number, "rolled back on")) == 1 })
	if last := e.gh.Log(e.owner, e.repo, first.Branch)[0]; last.Trailers["Akira-Revert"] != scoped {
		t.Errorf("the newest commit %q (trailers %v): want the revert of %s", last.Subject, last.Trailers, scoped)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, first.Branch, "out-1.1.txt"); !ok {
		t.Error("the checklist's 1.1 was undone too")
	}
}

// TestBaseMovesWhileWaitingForCI: with ci.watch, the tasks are done and the run waits for the pull
// request's CI when main moves. The CI's green on the old head does not ready the pull request: the
// run merges the base, and its CI is judged again on the merge, whose green readies it.
func TestBaseMovesWhileWaitingForCI(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), ciOperator)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.DeliverPushes(true)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "CI", User: "alice", Body: "- [ ] Add one\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitCI(1, "")
	head, branch := run.CI.Head, run.Branch
	base := e.moveBase(map[string]string{"base.txt": "from main\n"})

	green := func(sha string) {
		e.gh.AddStatus(e.owner, e.repo, githubtest.Status{SHA: sha, Context: "ci/jenkins", State: "success", Description: "all green"})
		e.ciReport(queue.EventStatus, branch, sha, "success")
	}
	green(head)
	run = e.waitCI(1, head)
	merges := e.merges(branch)
	if len(merges) != 1 || merges[0].SHA != run.CI.Head || merges[0].Trailers["Akira-Sync"] != "main@"+base {
		t.Fatalf("the run waits for CI on %s; merges %+v: want the merge of main@%s", run.CI.Head, merges, base)
	}
	if !e.onlyPR(branch).Draft {
		t.Fatal("the pull request turned ready on the CI of a head behind its base")
	}
	green(run.CI.Head)
	run = e.waitStatus(1, lifecycle.StatusSucceeded)
	if pr := e.onlyPR(branch); pr.Draft {
		t.Error("the pull request is still a draft after the merge's CI passed")
	}
	if run.CI.Head != merges[0].SHA {
		t.Errorf("the CI judged %s, want the merge %s", run.CI.Head, merges[0].SHA)
	}
}
