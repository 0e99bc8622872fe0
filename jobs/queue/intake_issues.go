package queue

import (
	"errors"
	"slices"
)

// EventIssues is an issue assigned or labelled (see TriggerIntake).
const EventIssues = "issues"

// IssueTriggerEvent registers the issue trigger body (see IntakeEvents).
var IssueTriggerEvent = IntakeEvent{Events: []string{EventIssues}, Key: "trigger",
	New: func() IntakeBody { return new(TriggerIntake) }}

// Issue triggers: the issue assigned to the App's bot, or the trigger label added; and the same taken
// back, which stops nothing.
const (
	TriggerAssigned   = "assigned"
	TriggerUnassigned = "unassigned"
	TriggerLabeled    = "labeled"
	TriggerUnlabeled  = "unlabeled"
)

// TriggerIntake is an issue assigned to Akira's bot or labelled, which starts a run as `/akira run` on
// it would, with the same permission rules (the actor's).
type TriggerIntake struct {
	Number int    `json:"number"`
	Action string `json:"action"`
	Actor  string `json:"actor"`
	// Label is the label added or removed.
	Label string `json:"label,omitempty"`
}

func (tr *TriggerIntake) check() error {
	if tr.Number <= 0 || tr.Actor == "" ||
		!slices.Contains([]string{TriggerAssigned, TriggerUnassigned, TriggerLabeled, TriggerUnlabeled}, tr.Action) {
		return errors.New("issue trigger without an issue, an actor and an action")
	}
	return nil
}
