package runner

import (
	"time"

	"github.com/akira-bot/akira/runner/config"
)

// ApplyOperator sets on o what the operator's file decides for every run, in one place for
// `akira run` and the App's worker so the two cannot drift: the environment passed through, the
// verification and stall time limits, the protected paths and whether a repository may lift the one on
// workflow files, the judge's confidence, automatic setup and the budget. What differs stays with the caller, after this call: the CLI's flags override
// it, and a worker's budget is the run's own (it may have been raised on the run).
func (o *Options) ApplyOperator(op config.Operator) {
	o.Env = append(append([]string{}, op.Env...), o.Env...)
	o.VerifyTimeout = time.Duration(op.VerifyTimeout)
	o.StallTimeout = time.Duration(op.StallTimeout)
	o.ProtectedPaths = op.ProtectedPaths
	o.AllowWorkflows = op.AllowWorkflows
	o.MinConfidence = op.MinConfidence()
	o.AutoSetup = op.AutoSetup
	o.Budget = Budget{CostUSD: op.Budget.CostUSD, Tokens: op.Budget.Tokens, WallTime: time.Duration(op.Budget.WallTime)}
}
