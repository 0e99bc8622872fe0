package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
)

// A spec pull request may change several plan files (the roadmap, files matching `specs:`). Its run
// runs the engine once per changed file, in path order, on the pull request's branch. Plan files other
// than the configured roadmap may share task ids (every spec-kit tasks.md starts at T001), so on the
// branch and in the run state their tasks are named "<path>#<id>": the Akira-Task trailers, parked
// refs, check run names and decisions of two files never meet.

func scoped(scope, id string) string {
	if scope == "" || id == "" {
		return id
	}
	return scope + "#" + id
}

// changedPlans are the plan files among a pull request's changed files, in path order.
func changedPlans(files []string, rc config.Repo) []string {
	var out []string
	for _, f := range files {
		if f == rc.Roadmap || config.MatchAny(rc.Specs, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pendingPlans keeps the plans that still have work: a task neither ticked in the file on the branch
// nor checkpointed by a trailer among the branch's commits. A push that only ticked boxes or changed
// code leaves none.
func pendingPlans(ctx context.Context, gh ports.Repos, run *lifecycle.Run, commits []ports.BranchCommit) ([]string, error) {
	done := map[string]bool{}
	for id := range checkpointsOf(commits) {
		done[id] = true
	}
	var out []string
	for _, plan := range run.PlanFiles() {
		data, err := gh.GetFile(ctx, run.Owner, run.Repo, run.Branch, plan)
		if err != nil {
			return nil, fmt.Errorf("jobs: %s on %s: %w", plan, run.Branch, err)
		}
		rm, err := roadmap.Parse(plan, data)
		if err != nil {
			out = append(out, plan) // the run says what is wrong with it
			continue
		}
		if slices.ContainsFunc(rm.Tasks, func(t *roadmap.Task) bool { return !t.Done && !done[scoped(run.ScopeFor(plan), t.ID)] }) {
			out = append(out, plan)
		}
	}
	return out, nil
}

// scopedReporter names the tasks of the engine's events within their plan.
type scopedReporter struct {
	r     *publish.Reporter
	scope string
}

func (s scopedReporter) Report(ctx context.Context, ev runner.Event) error {
	if s.scope != "" {
		ev.TaskID = scoped(s.scope, ev.TaskID)
		ev.Tasks = scopeResults(s.scope, ev.Tasks)
		if ev.Escalation != nil {
			esc := *ev.Escalation
			esc.TaskID = scoped(s.scope, esc.TaskID)
			ev.Escalation = &esc
		}
		if ev.Outcome != nil {
			out := scopeOutcome(s.scope, *ev.Outcome)
			ev.Outcome = &out
		}
	}
	return s.r.Report(ctx, ev)
}

func scopeResults(scope string, ts []runner.TaskResult) []runner.TaskResult {
	if scope == "" || ts == nil {
		return ts
	}
	out := make([]runner.TaskResult, len(ts))
	for i, t := range ts {
		t.ID = scoped(scope, t.ID)
		out[i] = t
	}
	return out
}

func scopeOutcome(scope string, o runner.Outcome) runner.Outcome {
	if scope == "" {
		return o
	}
	o.Tasks = scopeResults(scope, o.Tasks)
	parked := make([]runner.Escalation, len(o.Parked))
	for i, e := range o.Parked {
		e.TaskID = scoped(scope, e.TaskID)
		parked[i] = e
	}
	o.Parked = parked
	return o
}

// decisionsFor are the decisions of the engine run of one plan, by the plan's own task ids.
func decisionsFor(all map[string]runner.Decision, scope string) map[string]runner.Decision {
	out := map[string]runner.Decision{}
	for id, d := range all {
		if lifecycle.ScopeOf(id) == scope {
			if scope != "" {
				id = strings.TrimPrefix(id, scope+"#")
			}
			out[id] = d
		}
	}
	return out
}

// runPlans runs the engine over each plan of the run in turn, and stops at the first that does not
// succeed (a parked plan waits for its decision; the next plans wait with it). The outcome names tasks
// as the run state does.
func runPlans(ctx context.Context, opts runner.Options, run *lifecycle.Run, rep *publish.Reporter) (runner.Outcome, error) {
	if run.Plan != "" || len(run.Plans) == 0 {
		return runner.Run(ctx, opts)
	}
	var total runner.Outcome
	for i, plan := range run.Plans {
		scope := run.ScopeFor(plan)
		o := opts
		o.Roadmap, o.TaskScope, o.Decisions = plan, scope, decisionsFor(opts.Decisions, scope)
		o.Reporter = scopedReporter{r: rep, scope: scope}
		o.StartCommit = opts.StartCommit && i == 0
		out, err := runner.Run(ctx, o)
		out = scopeOutcome(scope, out)
		total.RunID, total.Repo, total.Branch, total.Base = out.RunID, out.Repo, out.Branch, out.Base
		total.Roadmap = strings.Join(run.Plans[:i+1], ", ")
		total.Status, total.Error, total.Duration = out.Status, out.Error, total.Duration+out.Duration
		total.Tasks = append(total.Tasks, out.Tasks...)
		total.Parked = append(total.Parked, out.Parked...)
		if out.Head != "" {
			total.Head = out.Head
		}
		if err != nil || out.Status != runner.StatusSucceeded {
			return total, err
		}
	}
	return total, nil
}
