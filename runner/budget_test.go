package runner

import (
	"strings"
	"testing"
)

// TestBudget: once the agents' reported cost reaches the budget, the next task is parked before its
// agent runs, with what was spent, and no further task starts; a later run with more budget goes on.
func TestBudget(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	script := logCall + `touch "$AKIRA_TASK_ID.txt"; printf '{"cost_usd": 0.6}' > "$AKIRA_USAGE_FILE"`
	out, rec, err := f.run(t, Options{Agent: f.agent(script), Budget: Budget{CostUSD: 1}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskParked})
	wantCalls(t, f, "T1:1", "T2:1")
	esc := rec.of(EventTaskEscalated, "T3")
	if len(esc) != 1 || esc[0].Escalation.Reason != ReasonBudget || !strings.Contains(esc[0].Escalation.Summary, "spent $1.20 of the $1.00") {
		t.Fatalf("T3 escalation = %+v", esc)
	}

	out, _, err = f.run(t, Options{Agent: f.agent(script), Budget: Budget{CostUSD: 5}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
}
