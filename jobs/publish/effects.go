package publish

import (
	"log/slog"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/store"
)

// Effects performs what a run's transitions leave to do outside Redis: the summary comment, check
// runs, replies, notifications, the pull request's state. A flow that changes a run reaches it
// through Publish (the outbox) or the Reporter (a run job's engine events).
type Effects struct {
	d       *flow.Deps
	log     *slog.Logger
	records *store.Records
	slots   *store.Slots
	replies *store.Dedupe
}

// New returns the publishing flow of a worker.
func New(d *flow.Deps, log *slog.Logger) *Effects {
	return &Effects{d: d, log: log, records: d.Store.Records, slots: d.Store.Slots, replies: d.Store.Dedupe}
}
