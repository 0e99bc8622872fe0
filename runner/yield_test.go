package runner

import (
	"context"
	"testing"
)

// yieldAfter lets n tasks (or waves) start, then asks the engine to stop before the next.
func yieldAfter(n int) func(context.Context) bool {
	asked := 0
	return func(context.Context) bool {
		asked++
		return asked > n
	}
}

// TestYieldLeavesTheRestPending: a run told to yield after one task checkpoints that task, leaves the
// others pending (not blocked) and says yielded; the next run of the same plan on the same branch
// starts where it stopped, and the last one succeeds without being asked to yield at the end.
func TestYieldLeavesTheRestPending(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	ag := f.agent(logCall + `echo done > "$AKIRA_TASK_ID.txt"`)
	var statusesSeen []RunStatus
	for range 3 {
		out, rec, err := f.run(t, Options{Inputs: Inputs{Branch: "akira/yield"}, Hooks: Hooks{Yield: yieldAfter(1)}, Agent: ag})
		if err != nil {
			t.Fatal(err)
		}
		statusesSeen = append(statusesSeen, out.Status)
		if n := len(rec.of(EventTaskBlocked, "")); n != 0 {
			t.Errorf("a yielded run blocked %d tasks", n)
		}
	}
	want := []RunStatus{StatusYielded, StatusYielded, StatusSucceeded}
	if len(statusesSeen) != 3 || statusesSeen[0] != want[0] || statusesSeen[1] != want[1] || statusesSeen[2] != want[2] {
		t.Errorf("statuses = %v, want %v", statusesSeen, want)
	}
	wantCalls(t, f, "T1:1", "T2:1", "T3:1")
	if got := f.log(t, "akira/yield"); len(got) != 3 {
		t.Errorf("checkpoints = %v, want one per task", got)
	}
}

// TestYieldBetweenWaves: with tasks in parallel, the engine asks before each wave.
func TestYieldBetweenWaves(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeParallel})
	out, _, err := f.run(t, Options{Limits: Limits{MaxParallel: 3}, Hooks: Hooks{Yield: yieldAfter(1)}, Agent: f.agent(logCall + `echo x > "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusYielded {
		t.Fatalf("status = %s, want yielded", out.Status)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone, "T4": TaskPending})
}
