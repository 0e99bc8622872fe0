package jobs

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/gittest"
)

// An operator's profile whose CLI is not installed fails the run at once, before any attempt, with
// the fix on a failed check run and in the summary: no escalation, no retry of the job.
func TestRunJobAgentUnusableFailsAtOnce(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 One\n"})
	op, err := config.ParseOperator([]byte("agents:\n  claude:\n    kind: exec\n    command: claude -p --permission-mode acceptEdits\n" +
		"default_agent: claude\nci:\n  watch: off\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := exec.LookPath("claude"); err == nil {
		t.Skipf("claude is installed here (%s)", p)
	}
	jh.h.d.Operator = op
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	err = jh.runJob(roadmapRun(4))
	if !errors.Is(err, asynq.SkipRetry) || !errors.Is(err, runner.ErrUsage) {
		t.Fatalf("run job = %v, want a final usage error", err)
	}
	run, _ := jh.store.ByNumber(context.Background(), "o", "r", 4)
	const fix = "install claude: npm i -g @anthropic-ai/claude-code"
	if run.Status != lifecycle.StatusFailed || len(run.Parked) != 0 || !strings.Contains(run.Error, fix) {
		t.Fatalf("run = %s, parked %v, error %q; want failed with the fix", run.Status, run.Parked, run.Error)
	}
	cr := jh.gh.CheckRunNamed(publish.AgentCheckRunName)
	if cr == nil || cr.Conclusion != ports.ConclusionFailure || !strings.Contains(cr.Summary, fix) || cr.HeadSHA == "" {
		t.Fatalf("%s check run = %+v", publish.AgentCheckRunName, cr)
	}
	// On the run's own branch, the pull request's head: never a red check on the base branch.
	if base := gittest.Git(t, repo.Work, "rev-parse", "HEAD"); cr.HeadSHA == base {
		t.Errorf("the check run is on the base branch's head %s", base)
	}
	// The summary on the draft pull request says it; nothing to review there, so it is closed.
	if summary := jh.gh.CommentsOn(run.PR); run.PR == 0 || len(summary) != 1 || !strings.Contains(summary[0], fix) {
		t.Fatalf("comments on pull request #%d = %q, want the failed summary with the fix", run.PR, summary)
	}
	if !run.PRClosed {
		t.Errorf("the empty draft pull request #%d is open", run.PR)
	}
}
