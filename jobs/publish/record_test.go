package publish

import (
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner"
)

// TestRecordFinishedKeepsLateDecisions: a decision taken while the job ran (on a task the job parked)
// outlives the job's end; those the job handed to the engine are done.
func TestRecordFinishedKeepsLateDecisions(t *testing.T) {
	retry := func(key string) lifecycle.Decision {
		return lifecycle.Decision{Key: key, TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: key}}
	}
	parkedOut := runner.Outcome{Status: runner.StatusParked, Parked: []runner.Escalation{{TaskID: "1.2"}}}
	tests := []struct {
		name          string
		start         lifecycle.RunStatus
		decisions     map[string]lifecycle.Decision
		handed        map[string]lifecycle.Decision
		status        lifecycle.RunStatus
		out           runner.Outcome
		wantStatus    lifecycle.RunStatus
		wantParked    int
		wantDecisions int
	}{
		{"no decisions: parked", lifecycle.StatusRunning, nil, nil, lifecycle.StatusParked, parkedOut, lifecycle.StatusParked, 1, 0},
		{"decision handed to the engine is done", lifecycle.StatusRunning, map[string]lifecycle.Decision{"1.2": retry("a")}, map[string]lifecycle.Decision{"1.2": retry("a")}, lifecycle.StatusParked, parkedOut, lifecycle.StatusParked, 1, 0},
		{"decision taken during the job queues the run", lifecycle.StatusRunning, map[string]lifecycle.Decision{"1.2": retry("b")}, nil, lifecycle.StatusParked, parkedOut, lifecycle.StatusQueued, 0, 1},
		{"a newer decision than the one handed", lifecycle.StatusRunning, map[string]lifecycle.Decision{"1.2": retry("c")}, map[string]lifecycle.Decision{"1.2": retry("a")}, lifecycle.StatusParked, parkedOut, lifecycle.StatusQueued, 0, 1},
		{"aborted during the job stays aborted", lifecycle.StatusAborted, nil, nil, lifecycle.StatusSucceeded, runner.Outcome{Status: runner.StatusSucceeded}, lifecycle.StatusAborted, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &lifecycle.Run{Status: tt.start, Decisions: tt.decisions, Parked: []lifecycle.Parked{{TaskID: "1.2"}}}
			if _, err := lifecycle.Apply(run, lifecycle.EngineFinished{Status: tt.status, Outcome: tt.out, Handed: tt.handed}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if run.Status != tt.wantStatus || len(run.Parked) != tt.wantParked || len(run.Decisions) != tt.wantDecisions {
				t.Fatalf("status %s parked %+v decisions %+v; want %s, %d parked, %d decisions",
					run.Status, run.Parked, run.Decisions, tt.wantStatus, tt.wantParked, tt.wantDecisions)
			}
		})
	}
}
