package queue

import (
	"errors"

	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
)

// EventCheckRun is a button pressed on one of Akira's check runs, or "Re-run".
const EventCheckRun = "check_run"

// CheckRunEvent registers the check run body (see IntakeEvents).
var CheckRunEvent = IntakeEvent{Events: []string{EventCheckRun}, Key: "check_run",
	New: func() IntakeBody { return new(CheckRunIntake) }}

// CheckRunIntake is a button pressed on one of Akira's task check runs, or "Re-run".
type CheckRunIntake struct {
	ID int64 `json:"id"`
	// RunID and TaskID come from the check run's external_id (CheckRunExternalID).
	RunID    string              `json:"run_id"`
	TaskID   string              `json:"task_id"`
	Decision runner.DecisionKind `json:"decision"`
	// Number is the pull request the check run belongs to, 0 when GitHub named none.
	Number int `json:"number,omitempty"`
	// Rerequested says the decision is a "Re-run" rather than a button.
	Rerequested bool `json:"rerequested,omitempty"`
}

func (cr *CheckRunIntake) check() error {
	if cr.RunID == "" || cr.TaskID == "" || cr.Decision == "" {
		return errors.New("check run without a run, a task and a decision")
	}
	return nil
}

// answer: a button other than Stop answers an escalation, which a recovery replays.
func (cr *CheckRunIntake) Answer() bool { return cr.Decision != ports.StopDecision }
