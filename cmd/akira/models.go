package main

import (
	"errors"
	"fmt"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
)

// runModelCheck is what `akira run` says at start of an agent whose tokens would be recorded at no
// cost (profiles.CheckAgent): a warning, or an error when the configuration's budget has a cost
// limit, which could not bind it.
func runModelCheck(name string, ag agent.Agent, op config.Operator) (warning string, err error) {
	problem := profiles.CheckAgent(name, ag)
	if problem == nil {
		return "", nil
	}
	if op.Budget.CostUSD > 0 {
		return "", fmt.Errorf("%w; budget.cost_usd ($%.2f) could not bind it", problem, op.Budget.CostUSD)
	}
	return problem.Error(), nil
}

// serveModelCheck is runModelCheck for every profile of the operator's, at the start of a worker.
// A run given a cost budget later (/akira run --budget, a repository's budget:) with such a
// profile fails at its start with the same reason (see runner.Run).
func serveModelCheck(op config.Operator) (warnings []string, err error) {
	var problems []error
	for _, name := range op.AgentNames() {
		_, p, _ := op.Agent(name)
		if problem := profiles.CheckModel(name, p, ""); problem != nil {
			problems = append(problems, problem)
		}
	}
	if len(problems) == 0 {
		return nil, nil
	}
	if op.Budget.CostUSD > 0 {
		return nil, fmt.Errorf("%w\nbudget.cost_usd ($%.2f) could not bind these agents", errors.Join(problems...), op.Budget.CostUSD)
	}
	for _, p := range problems {
		warnings = append(warnings, p.Error()+"; a run given a cost budget refuses to start with it")
	}
	return warnings, nil
}
