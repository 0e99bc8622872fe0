// Package intake is the intake flow: what arrives up to the work it queues. A webhook delivery's
// intake task (the commenter's permission first, then the repository's configuration, the replies,
// the 👀 reaction and the run, decision or rollback it queues), the slash commands' handlers, and what
// arrives through the REST API (the audit lines of operators' actions, runs handed off). It sits on
// top: it reaches the run flow (jobs/runs) and publishing; neither reaches it.
package intake

import (
	"log/slog"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/runs"
	"github.com/akira-bot/akira/jobs/store"
)

// worker is what the intake flow's types share: the worker's dependencies and the flows below.
type worker struct {
	d      *flow.Deps
	log    *slog.Logger
	pub    *publish.Effects
	runs   *runs.Runs
	ci     *runs.CIWatch
	intake *Intake
}

type (
	// Intake serves webhook deliveries (akira:intake) and the slash commands.
	Intake struct{ *worker }
	// API serves what arrives through the REST API: audit lines (akira:audit-line) and hand-offs
	// (akira:handoff).
	API struct {
		*worker
		handoffs *store.Handoffs
	}
)

// New returns the intake flow of a worker, on its dependencies and the flows below it.
func New(d *flow.Deps, log *slog.Logger, pub *publish.Effects, rf runs.Flows) (*Intake, *API) {
	w := &worker{d: d, log: log, pub: pub, runs: rf.Runs, ci: rf.CI}
	w.intake = &Intake{w}
	return w.intake, &API{w, d.Store.Handoffs}
}
