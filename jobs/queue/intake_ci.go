package queue

import (
	"errors"
)

// The pull request's own CI: another app's suite, an Actions workflow run, a commit status.
const (
	EventCheckSuite  = "check_suite"
	EventWorkflowRun = "workflow_run"
	EventStatus      = "status"
)

// CIEvent registers the CI report body (see IntakeEvents). It is offline: a CI report only matters to
// a run waiting for that commit, so nothing is asked of GitHub before CIWatch.onCI (jobs/run_ci.go) looks.
var CIEvent = IntakeEvent{Events: []string{EventCheckSuite, EventWorkflowRun, EventStatus}, Key: "ci",
	New: func() IntakeBody { return new(CIIntake) }}

// CIIntake is a CI's report on a commit: a check suite or workflow run completed, or a commit status.
type CIIntake struct {
	HeadSHA string `json:"head_sha"`
	// Branches are the branches whose head the commit is (the suite's head branch, a status's list).
	Branches []string `json:"branches"`
	// Name and Conclusion say what was reported, for the log.
	Name       string `json:"name,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
}

func (ci *CIIntake) check() error {
	if len(ci.HeadSHA) != 40 || len(ci.Branches) == 0 {
		return errors.New("CI report without a commit and a branch")
	}
	return nil
}
