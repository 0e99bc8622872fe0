package lifecycle

import (
	"net"
	"strconv"
	"time"
)

// What a run's record keeps of a task's attempts besides its status; templates shows them.

// Judgement is the acceptance judge's latest verdict on a task: kept in the run's state, shown in the
// summary's Judge column and by the API.
type Judgement struct {
	Confidence float64 `json:"confidence"`
	Accepted   bool    `json:"accepted"`
}

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
