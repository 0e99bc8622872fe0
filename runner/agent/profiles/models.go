package profiles

import (
	"cmp"
	"fmt"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
)

// ModelEnv tells an exec agent the model it runs: AKIRA_MODEL, for a command to pass on (Codex
// reads no variable for it: `codex exec -m "$AKIRA_MODEL"`), and for a profile with an api the
// variables its CLIs read their models from (config.AgentModelEnv). Empty without a model.
func ModelEnv(p config.AgentProfile, model string) []string {
	if model == "" {
		return nil
	}
	env := []string{"AKIRA_MODEL=" + model}
	if m, ok := p.ModelAPI(); ok {
		for _, name := range config.AgentModelEnv(m.Protocol) {
			env = append(env, name+"="+model)
		}
	}
	return env
}

// CheckModel says why the model a profile runs (model, else the profile's) would be recorded at
// no cost: it has no price in the one table, or an exec profile that meters its calls names no
// model, so that its CLI runs a default of its own. nil when every metered token has a price, and
// for an exec profile whose calls are not metered (no api), which has nothing to price. The
// caller makes it a warning, or an error when a cost budget is set: such a budget could not bind.
func CheckModel(name string, p config.AgentProfile, model string) error {
	model = cmp.Or(model, p.Model)
	if _, metered := p.ModelAPI(); p.Kind == "exec" && !metered {
		return nil
	}
	_, priced := Pricer(p.Prices)(model, egress.Tokens{})
	return priceProblem(name, model, priced)
}

// CheckAgent is CheckModel for an agent already built (see agent.Priced).
func CheckAgent(name string, a agent.Agent) error {
	p, ok := a.(agent.Priced)
	if !ok {
		return nil
	}
	model, priced := p.Price()
	return priceProblem(name, model, priced)
}

func priceProblem(name, model string, priced bool) error {
	switch {
	case priced:
		return nil
	case model == "":
		return fmt.Errorf("agent %s: no model: its CLI runs a default model of its own, which Akira neither chose nor may price: "+
			"name one (model: in the profile, or --model), which Akira tells the CLI and prices its calls with", name)
	default:
		return fmt.Errorf("agent %s: model %q has no price: add it to prices: in the operator's configuration "+
			"(%s: {input_per_mtok: …, output_per_mtok: …}, USD per million tokens); until then its calls are recorded at $0", name, model, model)
	}
}
