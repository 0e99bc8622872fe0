package templates

import (
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// Blocked is a destination the egress proxy refused a task's attempt (lifecycle keeps it in the run's
// state).
type Blocked = lifecycle.Blocked

// BlockedSection is the part of a task's check run output, or of a run's summary (where each
// entry names its task), that lists what the network refused.
type BlockedSection struct {
	Blocked []Blocked
}

// Requests is how many requests were refused in all.
func (b BlockedSection) Requests() int {
	n := 0
	for _, x := range b.Blocked {
		n += x.Count
	}
	return n
}
