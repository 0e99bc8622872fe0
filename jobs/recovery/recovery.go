// Package recovery is the flow that finds what GitHub or Redis lost: the sweep that asks GitHub to
// redeliver webhook deliveries that failed, and the recovery after Redis lost its data, which asks GitHub
// to deliver again the answers to escalations no job had acted on. The run flow asks it whether an
// answer is still the one a run waits for (PendingAnswer) and whether Redis lost its data (CheckEpoch).
package recovery

import (
	"log/slog"

	"github.com/akira-bot/akira/jobs/flow"
)

// Recovery is the recovery flow of a worker.
type Recovery struct {
	d   *flow.Deps
	log *slog.Logger
}

// New returns the recovery flow of a worker.
func New(d *flow.Deps, log *slog.Logger) *Recovery { return &Recovery{d: d, log: log} }
