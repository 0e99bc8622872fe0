package queue

// EventPush is a push to a branch: the base of Akira's branches may have moved, and on the default
// branch the roadmap may have changed.
const EventPush = "push"

// PushEvent registers the push body (see IntakeEvents).
var PushEvent = IntakeEvent{Events: []string{EventPush}, Key: "push",
	New: func() IntakeBody { return new(PushIntake) }}

// PushIntake is a push to a branch.
type PushIntake struct {
	Branch string `json:"branch"`
	After  string `json:"after"`
	// Changed are the paths the listed commits added or modified. GitHub lists at most 20 commits;
	// Truncated says the list may be cut, so the roadmap may have changed unseen.
	Changed   []string `json:"changed,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

func (p *PushIntake) check() error {
	return nil // a push names its branch and whatever it changed; nothing to require
}
