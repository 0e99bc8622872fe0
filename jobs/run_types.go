package jobs

import (
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// The run's state and its words belong to the lifecycle; these names keep the jobs' callers (the
// admin API, the dashboard, the tests) reading as they did.
type (
	Run           = lifecycle.Run
	TaskState     = lifecycle.TaskState
	Parked        = lifecycle.Parked
	Decision      = lifecycle.Decision
	RunStatus     = lifecycle.RunStatus
	Trigger       = lifecycle.Trigger
	StopRequest   = lifecycle.StopRequest
	ReviewRequest = lifecycle.ReviewRequest
)

const (
	StatusQueued    = lifecycle.StatusQueued
	StatusRunning   = lifecycle.StatusRunning
	StatusParked    = lifecycle.StatusParked
	StatusSucceeded = lifecycle.StatusSucceeded
	StatusFailed    = lifecycle.StatusFailed
	StatusAborted   = lifecycle.StatusAborted
	StatusStopped   = lifecycle.StatusStopped

	TriggerIssue       = lifecycle.TriggerIssue
	TriggerPush        = lifecycle.TriggerPush
	TriggerPullRequest = lifecycle.TriggerPullRequest
	TriggerContinue    = lifecycle.TriggerContinue
	TriggerReview      = lifecycle.TriggerReview
)
