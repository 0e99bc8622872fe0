// Package jobs is Akira's use cases, run by asynq workers. Its root is the worker's wiring only:
// handler.go (the flows, built one on the other, and the task types the router is built from) and
// worker.go (a worker's asynq settings). The flows are packages, stacked one way:
//
//   - jobs/intake: what arrives (Intake: a webhook's intake task and the slash commands; API: audit
//     lines, hand-offs and the Controller the REST API calls) up to the work it queues.
//   - jobs/runs: the run (Runs: the run job, its branch lock, the engine, stop, pause, budget, review,
//     rebuild; Resumer, Rollbacks, CIWatch, Reaper, Planner). Every status change is an event of
//     jobs/lifecycle, the run's transition table, applied through store.Records.Transition.
//   - jobs/recovery: what GitHub or Redis lost (the sweep, the recovery after a loss).
//   - jobs/publish: what goes back to GitHub and elsewhere (Effects: the outbox and its relay,
//     notifications; the Reporter with its attempt logs, check runs and summary; replies).
//
// What they share is below them: jobs/queue (every task type's payload, constructor and enqueue
// method), jobs/flow (the worker's dependencies), jobs/store (Redis, a type per concern), jobs/ports
// (the GitHub interfaces app/gh implements), jobs/metrics, jobs/fair, jobs/lifecycle, jobs/command,
// jobs/notify and jobs/audit.
//
// It never imports app, gin, go-github or ghinstallation.
package jobs
