package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/gittest"
)

// The base moved while a run was parked, by a push no webhook told Akira of; when the run's job starts
// again, the pull request's mergeable_state says its merge conflicts. The base is merged before the
// decided task, in that job: the run ends with the merge on its branch and needs no further job.
func TestRunJobMergesTheBaseThePullRequestSaysMoved(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatalf("run job: %v", err)
	}
	ctx := context.Background()
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusParked || run.PR == 0 {
		t.Fatalf("run = %s, pull request #%d; want parked on its pull request", run.Status, run.PR)
	}

	gittest.WriteFiles(t, repo.Work, map[string]string{"base.txt": "from main\n"})
	gittest.Git(t, repo.Work, "add", "--all")
	gittest.Git(t, repo.Work, "commit", "--quiet", "-m", "main moves")
	gittest.Git(t, repo.Work, "push", "--quiet", "origin", "main")
	base := gittest.Git(t, repo.Work, "rev-parse", "HEAD")
	jh.gh.Mu.Lock()
	jh.gh.Pulls[run.PR].MergeableState = ports.MergeStateDirty
	jh.gh.Mu.Unlock()

	jh.gh.Refs["heads/akira/issue-4"] = run.Head
	if err := jh.resumeJob(queue.ResumePayload{TaskHeader: queue.TaskHeader{InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, CommentID: 900, Number: run.PR,
		Decision: runner.DecisionSkip}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	conts := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(conts) != 1 {
		t.Fatalf("continuations = %+v", conts)
	}
	if err := jh.runJob(conts[0]); err != nil {
		t.Fatalf("continued run: %v", err)
	}
	run, _ = jh.store.Get(ctx, run.ID)
	if run.Status != lifecycle.StatusSucceeded || !slices.Equal(run.Synced, []string{"main@" + base}) {
		t.Fatalf("run = %s, synced %v; want succeeded with main@%s merged", run.Status, run.Synced, base)
	}
	if n := len(queued[queue.RunPayload](jh, queue.TypeRun)); n != 1 {
		t.Errorf("%d run jobs queued, want no job after the continuation (the merge came before the task)", n)
	}
	log := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "log", "--format=%s", "main..akira/issue-4")
	if first := strings.Split(log, "\n")[0]; first != "akira: bring akira/issue-4 up to date with main" {
		t.Errorf("branch head = %q, want the merge of main (log %q)", first, log)
	}
	if m, _ := jh.store.BaseMark(ctx, "o", "r", "akira/issue-4"); m != "" {
		t.Errorf("the branch is still marked (%q) once up to date", m)
	}
}
