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
	out, rec, err := f.run(t, Options{Limits: Limits{Budget: Budget{CostUSD: 1}}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskParked})
	wantCalls(t, f, "T1:1", "T2:1")
	esc := rec.of(EventTaskEscalated, "T3")
	if len(esc) != 1 || esc[0].Escalation.Reason != ReasonBudget || !strings.Contains(esc[0].Escalation.Summary, "spent $1.20 of the $1.00") {
		t.Fatalf("T3 escalation = %+v", esc)
	}

	out, _, err = f.run(t, Options{Limits: Limits{Budget: Budget{CostUSD: 5}}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
}

// TestParallelWaveWithinBudget: tasks run at once are not stopped by the budget, so a wave starts
// only as many tasks as the remaining budget covers at the cost per task seen so far: with $1.00 and
// $0.30 per task, the first lone task leaves $0.70, enough for two of the three [P] tasks; the $0.10
// then left covers none, and the third parks on the budget, saying so, before it starts.
func TestParallelWaveWithinBudget(t *testing.T) {
	plan := "# Roadmap\n\n- [ ] T0 First, alone\n- [ ] T1 [P] One (depends: T0)\n- [ ] T2 [P] Two (depends: T0)\n- [ ] T3 [P] Three (depends: T0)\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": plan})
	script := logCall + `touch "$AKIRA_TASK_ID.txt"; printf '{"cost_usd": 0.3}' > "$AKIRA_USAGE_FILE"`
	out, _, err := f.run(t, Options{Limits: Limits{Budget: Budget{CostUSD: 1}, MaxParallel: 3}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	calls := f.calls(t)
	if len(calls) != 3 {
		t.Fatalf("agent calls = %v, want T0 and two of the [P] tasks (a third would overrun the budget)", calls)
	}
	var spent float64
	for _, r := range out.Tasks {
		spent += r.Usage.CostUSD
	}
	if spent > 1.0+1e-9 {
		t.Errorf("spent $%.2f of a $1.00 budget", spent)
	}
	if out.Status != StatusParked || len(out.Parked) != 1 || out.Parked[0].Reason != ReasonBudget ||
		!strings.Contains(out.Parked[0].Summary, "$0.10 is left, less than the $0.30 a task has cost so far") {
		t.Errorf("status = %s, parked %+v; want the last task parked on the budget", out.Status, out.Parked)
	}
}
