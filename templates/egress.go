package templates

import "time"

// Blocked is a destination the egress proxy refused a task's attempt, with the configuration line
// that would let it through (runner.AllowLine).
type Blocked struct {
	TaskID  string
	Attempt int
	// Who is "agent" or "verification".
	Who    string
	Host   string
	Port   int
	Count  int
	First  time.Time
	Reason string
	Allow  string
}

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
