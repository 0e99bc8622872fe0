package runner

import "testing"

// TestPriorityOrdersReadyTasks: among tasks whose dependencies are done, high priority goes first and
// low last; a dependency still comes before its dependent whatever their priorities.
func TestPriorityOrdersReadyTasks(t *testing.T) {
	plan := "- [ ] T1: Normal\n- [ ] T2: Low\n  - priority: low\n- [ ] T3: High\n  - priority: high\n- [ ] T4: High too, after T1\n  - priority: high\n  - depends: T1\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": plan})
	out, _, err := f.run(t, Options{Agent: f.agent(logCall + `touch "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusSucceeded {
		t.Fatalf("status = %s", out.Status)
	}
	wantCalls(t, f, "T3:1", "T1:1", "T4:1", "T2:1")
}
