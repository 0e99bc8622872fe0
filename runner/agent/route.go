package agent

import "github.com/akira-bot/akira/runner/egress"

// ModelRouter is an agent whose model calls go through the egress proxy: the proxy holds the key of
// the endpoint it returns (nil for none) and meters the calls.
type ModelRouter interface {
	ModelRoute() *egress.Model
}

// ModelRoute is the exec agent's model endpoint.
func (e *Exec) ModelRoute() *egress.Model { return e.Model }
