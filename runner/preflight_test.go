package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
)

// An agent script committed without its executable bit would fail every attempt with exit 126:
// the run ends before the first one, as a usage error naming the fix, and pushes nothing.
func TestAgentCheckedBeforeFirstAttempt(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks, "agent": "#!/bin/sh\necho hi > hi.txt\n"})
	out, rec, err := f.run(t, Options{Agent: &agent.Exec{Command: "./agent"}})
	if !errors.Is(err, ErrUsage) || !errors.Is(err, agent.ErrUnusable) {
		t.Fatalf("Run = %v, want ErrUsage and agent.ErrUnusable", err)
	}
	if !strings.Contains(err.Error(), "chmod +x agent && git add --chmod=+x agent") {
		t.Errorf("error %q does not name the fix", err)
	}
	if n := len(rec.of(EventAttemptStarted, "")); n != 0 {
		t.Errorf("%d attempts started, want none", n)
	}
	if out.Status != StatusFailed || len(out.Parked) != 0 {
		t.Errorf("outcome = %s, parked %v; want failed, nothing parked", out.Status, out.Parked)
	}
	if _, code := gittest.TryGit(t, f.repo.Remote, "rev-parse", "--verify", "-q", "refs/heads/akira/roadmap"); code == 0 {
		t.Error("the branch was pushed")
	}
}
