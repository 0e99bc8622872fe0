package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/templates"
)

// TestGates: a task gated before waits for approval before its agent runs; a task gated after waits
// with its verified work, which approval makes the checkpoint without running the agent again.
func TestGates(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Careful", User: "alice",
		Body: "- [ ] Drop the old table\n  - gate: before\n- [ ] Rotate the keys\n  - gate: after\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked)
	if len(run.Parked) != 2 || e.agentCalls("1.1") != 0 || e.agentCalls("1.2") != 1 {
		t.Fatalf("parked %+v; agent calls: 1.1 %d, 1.2 %d", run.Parked, e.agentCalls("1.1"), e.agentCalls("1.2"))
	}
	pr := e.onlyPR(run.Branch)
	before := e.commentsWith(pr.Number, templates.EscalationMarker(run.ID, "1.1"))
	after := e.commentsWith(pr.Number, templates.EscalationMarker(run.ID, "1.2"))
	if len(before) != 1 || !strings.Contains(before[0].Body, "gate before this task") ||
		len(after) != 1 || !strings.Contains(after[0].Body, "passed verification and waits") {
		t.Fatalf("escalations: %+v %+v", before, after)
	}

	e.comment(pr.Number, "alice", "/akira approve", true, http.StatusAccepted) // the first parked: 1.1
	e.eventually("task 1.1's checkpoint", func() bool { return e.taskCommits(run.Branch)["1.1"] == 1 })
	e.waitStatus(1, lifecycle.StatusParked)
	e.comment(pr.Number, "alice", "/akira approve", true, http.StatusAccepted) // now 1.2
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	if got := e.taskCommits(done.Branch); got["1.1"] != 1 || got["1.2"] != 1 {
		t.Errorf("checkpoints = %v", got)
	}
	if n := e.agentCalls("1.2"); n != 1 {
		t.Errorf("the agent ran the gated-after task %d times; approval should take its verified work", n)
	}
	if e.agentCalls("1.1") != 1 {
		t.Errorf("the agent ran the gated-before task %d times, want once after approval", e.agentCalls("1.1"))
	}
}
