package lifecycle

import (
	"strings"

	"github.com/akira-bot/akira/runner"
)

// A run's status is one vocabulary, owned here: each state is a constant and a row of statusTable
// that says what the state means to everyone who reads it — the store (does the run keep its
// branch however long it sleeps), the summary and /akira status (its label), the metrics (the
// result of a run job that leaves the run there), the dashboard and the API (the list of states).
// Adding a state is a constant, a row here and its rows in Table.

// RunStatus is where a run is in its life.
type RunStatus string

const (
	// StatusQueued: created, or a decision arrived, and a job is on the queue to (continue) work.
	StatusQueued RunStatus = "queued"
	// StatusRunning: a worker holds the branch lock and works on the run.
	StatusRunning RunStatus = "running"
	// StatusParked: a task is escalated; the run waits for a human decision and holds no worker.
	StatusParked RunStatus = "parked"
	// StatusSucceeded: every task is done (passed, approved or skipped) and the PR is ready.
	StatusSucceeded RunStatus = "succeeded"
	// StatusFailed: the run stopped on an error it cannot recover from.
	StatusFailed RunStatus = "failed"
	// StatusAborted: someone replied /akira abort.
	StatusAborted RunStatus = "aborted"
	// StatusStopped: someone stopped the run while it worked (/akira stop); like a parked run it keeps
	// its branch and holds no worker, and /akira run continues it from the last checkpoint.
	StatusStopped RunStatus = "stopped"
	// StatusWaitingCI: the tasks are done and pushed; the run waits for its pull request's own CI on
	// the head commit (see CIWatch) and holds no worker.
	StatusWaitingCI RunStatus = "waiting_ci"
	// StatusPaused: someone paused the run (/akira pause, the API): its current task finished (or,
	// paused now, was discarded) and the run holds no worker until it is resumed at the next task.
	StatusPaused RunStatus = "paused"
)

// StatusInfo is what a state means to the readers of a run's status.
type StatusInfo struct {
	Status RunStatus
	// Terminal: the run is over and frees its branch.
	Terminal bool
	// Waits: the run holds no worker and waits for people (a decision, a resume, a new /akira run) or
	// for its pull request's CI, however long that takes: it keeps its branch and is never stale.
	Waits bool
	// Label is the word the summary comment and the /akira status reply show.
	Label string
	// Phrase is the state in the words a person uses on the dashboard: a parked run "needs a
	// decision", a succeeded one is "finished".
	Phrase string
	// Result is the result label of akira_jobs_total for a run job that leaves the run in this
	// state; empty when no run job ends there.
	Result string
}

// statusTable is every state, in the order the dashboard lists them and the diagram draws them.
var statusTable = []StatusInfo{
	{Status: StatusQueued, Label: "queued", Phrase: "queued", Result: "decided"},
	{Status: StatusRunning, Label: "running", Phrase: "running"},
	{Status: StatusWaitingCI, Waits: true, Label: "waiting for CI", Phrase: "waiting for CI", Result: "waiting_ci"},
	{Status: StatusParked, Waits: true, Label: "parked", Phrase: "needs a decision", Result: "parked"},
	{Status: StatusPaused, Waits: true, Label: "paused", Phrase: "paused", Result: "paused"},
	{Status: StatusStopped, Waits: true, Label: "stopped", Phrase: "stopped"},
	{Status: StatusSucceeded, Terminal: true, Label: "done", Phrase: "finished", Result: "succeeded"},
	{Status: StatusFailed, Terminal: true, Label: "failed", Phrase: "failed", Result: "failed"},
	{Status: StatusAborted, Terminal: true, Label: "aborted", Phrase: "aborted", Result: "aborted"},
}

// RunStatuses are a run's states, in the order the dashboard lists them and the diagram draws them.
var RunStatuses = func() []RunStatus {
	out := make([]RunStatus, len(statusTable))
	for i, info := range statusTable {
		out[i] = info.Status
	}
	return out
}()

// Info says what s means; an unknown status (a record from a newer Akira) is none of the above and
// is labelled with its own word.
func (s RunStatus) Info() StatusInfo {
	for _, info := range statusTable {
		if info.Status == s {
			return info
		}
	}
	return StatusInfo{Status: s, Label: string(s), Phrase: strings.ReplaceAll(string(s), "_", " ")}
}

// Terminal reports whether the run is over; a terminal run frees its branch.
func (s RunStatus) Terminal() bool { return s.Info().Terminal }

// Waits reports whether the run waits for people or CI, holding no worker and keeping its branch.
func (s RunStatus) Waits() bool { return s.Info().Waits }

// Label is the word people read for s in the summary and the status reply.
func (s RunStatus) Label() string { return s.Info().Label }

// Phrase is how the dashboard says s: "needs a decision" for a parked run.
func (s RunStatus) Phrase() string { return s.Info().Phrase }

// Result is the akira_jobs_total result of a run job that leaves the run in state s.
func (s RunStatus) Result() string { return s.Info().Result }

// EngineStatus is the state the engine's verdict asks for at the end of a run job: the engine's
// parked, aborted and failed are the run's; everything else (done, yielded to a later job) is
// succeeded, which the table may still turn into waiting for CI or queued.
func EngineStatus(s runner.RunStatus) RunStatus {
	switch s {
	case runner.StatusParked:
		return StatusParked
	case runner.StatusAborted:
		return StatusAborted
	case runner.StatusFailed:
		return StatusFailed
	}
	return StatusSucceeded
}
