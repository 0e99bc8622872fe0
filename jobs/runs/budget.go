package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
)

// SpentUsage is what the run's agents reported using, over all its jobs.
func SpentUsage(run *lifecycle.Run) agent.Usage {
	var u agent.Usage
	for _, t := range run.Tasks {
		u = u.Add(agent.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD, Estimated: t.UsageEstimated})
	}
	return u
}

// ParkedForBudget reports whether every task the run waits on waits because its budget is spent.
func ParkedForBudget(run *lifecycle.Run) bool {
	if run.Status != lifecycle.StatusParked || len(run.Parked) == 0 {
		return false
	}
	for _, p := range run.Parked {
		if p.Reason != runner.ReasonBudget {
			return false
		}
	}
	return true
}

// raiseBudget raises the cost limit of the or pull request's run to what `/akira run --budget`
// asks (cut at the operator's ceiling) and, when the run waits because its budget is spent, continues
// it. nil when there is no such run: the command then starts a run with that budget.
func (h *Runs) raiseBudget(ctx context.Context, p queue.RunPayload) (*lifecycle.Run, error) {
	if p.Number <= 0 {
		return nil, nil
	}
	prev, err := h.d.Store.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil || !ParkedForBudget(prev) {
		return nil, err
	}
	limit, _ := h.d.Operator.RaiseCost(p.BudgetUSD)
	run, _, err := h.d.Store.Transition(ctx, prev.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if !ParkedForBudget(r) {
			return nil, ErrNothingToDo
		}
		return lifecycle.BudgetRaised{CostUSD: limit, Key: "budget-" + p.DeliveryID, By: p.Sender}, nil
	})
	if errors.Is(err, ErrNothingToDo) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: raise the budget of run %s: %w", prev.ID, err)
	}
	h.log.Info("run job: budget raised", "run", run.ID, "cost_usd", limit, "by", p.Sender)
	return run, nil
}
