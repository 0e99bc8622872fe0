package agent

import "github.com/akira-bot/akira/runner/egress"

// ModelRouter is an agent whose model calls go through the egress proxy: the proxy holds the key of
// the endpoint it returns (nil for none) and meters the calls.
type ModelRouter interface {
	ModelRoute() *egress.Model
}

// ModelRoute is the exec agent's model endpoint.
func (e *Exec) ModelRoute() *egress.Model { return e.Model }

// Priced is an agent whose tokens Akira prices itself: Price names the model it runs and whether
// Akira's price table has it. A run with a cost budget refuses to start with an agent whose model
// has no price (its cost would be recorded as $0, and the budget could not bind).
type Priced interface {
	Price() (model string, priced bool)
}

// Price is the model the exec agent's calls are metered for, and whether it has a price. An exec
// agent without a model route has nothing metered to price: ("", true).
func (e *Exec) Price() (string, bool) {
	if e.Model == nil {
		return "", true
	}
	if e.Model.Model == "" || e.Model.Price == nil {
		return e.Model.Model, false
	}
	_, ok := e.Model.Price(e.Model.Model, egress.Tokens{})
	return e.Model.Model, ok
}
