// Package jobs is Akira's use cases, run by asynq workers. Its root is the worker's wiring and the
// intake and run flows, each a small type of its own that Handler holds:
//
//   - intake*.go: what arrives (Intake: a webhook's intake task and the slash commands; API: audit
//     lines and hand-offs; Planner: plans for issues in prose; Recovery: the sweeper and the recovery
//     after Redis lost its data) up to the work it queues; the commands' grammar is jobs/command.
//   - run*.go: the run (Runs: the run job, its branch lock, the engine, stop, pause, budget, review,
//     rebuild; Resumer, Rollbacks, CIWatch, Reaper). Every status change is an event of
//     jobs/lifecycle, the run's transition table, applied through store.Records.Transition.
//   - handler.go, worker.go: the task types (taskTypes) and their wiring.
//
// Below them: jobs/publish, the publishing flow (what goes back to GitHub and elsewhere: the outbox
// and its relay, notifications, the Reporter with its attempt logs, check runs and summary);
// jobs/queue (every task type's payload, constructor and enqueue method); jobs/flow (the worker's
// dependencies); jobs/store (Redis, a type per concern), jobs/ports (the GitHub interfaces app/gh
// implements), jobs/metrics, jobs/fair, jobs/lifecycle, jobs/command and jobs/notify.
//
// It never imports app, gin, go-github or ghinstallation.
package jobs
