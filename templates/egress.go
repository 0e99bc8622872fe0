package templates

import (
	"net"
	"strconv"
	"time"
)

// Blocked is a destination the egress proxy refused a task's attempt, with the configuration line
// that would let it through (runner.AllowLine).
type Blocked struct {
	TaskID  string
	Attempt int
	// Who is "agent" or "verification".
	Who    string
	Host   string
	Port   int
	Method string // Method and Path: a call the model route refused
	Path   string
	Count  int
	First  time.Time
	Reason string
	Allow  string
}

// Destination is what was refused: host:port, and the call for the model route.
func (b Blocked) Destination() string {
	d := net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
	if b.Path != "" {
		d += " " + b.Method + " " + b.Path
	}
	return d
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
