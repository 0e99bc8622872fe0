package runner

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

const gatedTasks = `- [ ] T1: Prepare
  - verify: ` + "`test -f T1.txt`" + `
- [ ] T2: Drop the old table
  - gate: before
  - verify: ` + "`test -f T2.txt`" + `
- [ ] T3: Rotate keys
  - gate: after
  - verify: ` + "`test -f T3.txt`" + `
`

// TestGates: a gate before a task parks it before its agent runs; a gate after parks its verified
// work; approving (in a later run, as a person's reply does) starts the first and makes the second
// the checkpoint without running its agent again.
func TestGates(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": gatedTasks})
	script := logCall + `touch "$AKIRA_TASK_ID.txt"`
	out, rec, err := f.run(t, Options{Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskParked, "T3": TaskParked})
	wantCalls(t, f, "T1:1", "T3:1")
	if esc := rec.of(EventTaskEscalated, "T2"); len(esc) != 1 || esc[0].Escalation.Reason != ReasonGateBefore {
		t.Fatalf("T2 escalation = %+v", esc)
	}
	if esc := rec.of(EventTaskEscalated, "T3"); len(esc) != 1 || esc[0].Escalation.Reason != ReasonGateAfter ||
		!strings.Contains(esc[0].Escalation.Summary, "T3.txt") {
		t.Fatalf("T3 escalation = %+v", esc)
	}

	approve := map[string]Decision{"T2": {Kind: DecisionApprove}, "T3": {Kind: DecisionApprove}}
	out, _, err = f.run(t, Options{Inputs: Inputs{Decisions: approve}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T3:1", "T2:1")
	msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", "akira/roadmap")
	if !strings.Contains(msg, "akira: T3 Rotate keys") || !strings.Contains(msg, "approved by a person at the task's gate") {
		t.Errorf("checkpoint of the gated task:\n%s", msg)
	}
}
