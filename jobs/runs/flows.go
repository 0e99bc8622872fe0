// Package runs is the run flow: the run job (its branch lock, the engine, stop, pause, budget,
// review, rebuild), the decisions on parked runs, rollbacks, the pull request's own CI, the reaper
// that continues runs whose worker died, and the plans Akira writes for issues in prose. Every status
// change is an event of jobs/lifecycle applied through store.Records.Transition; what a change leaves
// to do on GitHub is jobs/publish's. The intake flow (jobs/intake) queues its work.
package runs

import (
	"log/slog"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/recovery"
	"github.com/akira-bot/akira/jobs/store"
)

// worker is what the run flow's types share: the worker's dependencies, the flows below this one,
// and each other (h.runs.escalate, h.ci...), so a call between them shows where it is made.
type worker struct {
	d        *flow.Deps
	log      *slog.Logger
	pub      *publish.Effects
	recovery *recovery.Recovery
	runs     *Runs
	ci       *CIWatch
	rebuilds *Rebuilds
	spend    *SpendCap
}

// The run flow's types, one per task type or loop.
type (
	// Runs serves the run job (akira:run).
	Runs struct{ *worker }
	// Resumer serves decisions on parked runs (akira:resume).
	Resumer struct {
		*worker
		records *store.Records
		replies *store.Dedupe
	}
	// Rollbacks serves /akira rollback (akira:rollback).
	Rollbacks struct {
		*worker
		records *store.Records
		replies *store.Dedupe
	}
	// CIWatch serves the pull request's own CI after the last checkpoint (akira:ci).
	CIWatch struct {
		*worker
		records *store.Records
	}
	// Reaper continues the runs whose worker died.
	Reaper struct {
		*worker
		records *store.Records
	}
	// Planner writes the plans of issues in prose (akira:plan).
	Planner struct{ *worker }
	// Rebuilds rebuilds the record of a run Redis lost from its branch, for the run job, a decision or
	// a rollback that finds none.
	Rebuilds struct{ *worker }
	// SpendCap holds runs to the operator's monthly spend caps and warns as a month's spend nears one.
	SpendCap struct{ *worker }
)

// Flows are the run flow's types of one worker.
type Flows struct {
	Runs      *Runs
	Resumer   *Resumer
	Rollbacks *Rollbacks
	CI        *CIWatch
	Reaper    *Reaper
	Planner   *Planner
}

// New returns the run flow of a worker, on its dependencies and the flows below it.
func New(d *flow.Deps, log *slog.Logger, pub *publish.Effects, rec *recovery.Recovery) Flows {
	w := &worker{d: d, log: log, pub: pub, recovery: rec}
	records, replies := d.Store.Records, d.Store.Dedupe
	w.runs, w.ci, w.rebuilds = &Runs{w}, &CIWatch{w, records}, &Rebuilds{w}
	w.spend = &SpendCap{w}
	return Flows{
		Runs: w.runs, Resumer: &Resumer{w, records, replies}, Rollbacks: &Rollbacks{w, records, replies},
		CI: w.ci, Reaper: &Reaper{w, records}, Planner: &Planner{w},
	}
}
