package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/verify"
)

// Parallel tasks. Which tasks may run at once is decided by the plan, never guessed: a task marked
// [P] (spec-kit's parallel marker), and a task that declares its dependencies (so whatever it needs
// is named, and done before it starts). A plain checklist, with neither, keeps its order: each of its
// tasks runs alone.
//
// The run goes in waves: the next ready task (by priority, then plan order) starts the wave; when it
// may run beside others, the other ready tasks that may join it, up to Options.MaxParallel. Each task
// of a wave is done by a worker engine of its own, in its own clone of the branch (a local clone, or
// one from the repository cache: cheap), with the whole engine behind it: attempts, verification,
// gates, escalation (an escalated task parks only itself), budget. The first task to verify pushes
// its checkpoint; a later one finds its push refused (the lease), puts its change on top of the new
// head, verifies the combination and pushes again; a conflict, or a combination that fails
// verification, goes back to its agent as a failed attempt. History stays linear: one checkpoint per
// task, with the usual trailers, so resuming after a crash or a stop reads the branch as always.
//
// Events of the workers are serialized into the run's reporter (which expects one at a time); the
// run's own start and end are reported by the run.

// mayRunBeside says whether a task may share a wave with others; the plan decides (see
// roadmap.Task.MayRunBeside).
func mayRunBeside(t *roadmap.Task) bool { return t.MayRunBeside() }

// ready says whether a pending task's dependencies are all done.
func (e *engine) ready(t *roadmap.Task) bool {
	for _, d := range t.Depends {
		if r := e.results[d]; r == nil || r.Status != TaskDone {
			return false
		}
	}
	return true
}

// wave is the next set of tasks to run at once (nil when none is ready).
func (e *engine) wave() []*roadmap.Task {
	first := e.next()
	if first == nil {
		return nil
	}
	wave := []*roadmap.Task{first}
	if !mayRunBeside(first) {
		return wave
	}
	for _, id := range e.order() {
		if len(wave) >= e.o.MaxParallel {
			break
		}
		t := e.task(id)
		if t == first || e.results[id].Status != TaskPending || !mayRunBeside(t) || !e.ready(t) {
			continue
		}
		wave = append(wave, t)
	}
	return wave
}

// Waves lists the waves a plan runs in with up to maxParallel tasks at once, when every task
// succeeds: what `akira plan` shows. It is the plan's own (roadmap.Roadmap.Waves), which picks
// waves as wave does, without a pass over the plan per wave.
func Waves(rm *roadmap.Roadmap, maxParallel int) [][]string { return rm.Waves(maxParallel) }

// serialReporter passes the events of a run's workers to its reporter one at a time, keeping only
// the events of each worker's own task.
type serialReporter struct {
	mu   sync.Mutex
	next Reporter
}

func (s *serialReporter) forTask(id string) Reporter {
	return ReporterFunc(func(ctx context.Context, ev Event) error {
		if ev.TaskID != id || ev.Type == EventRunStarted || ev.Type == EventRunFinished {
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next == nil {
			return nil
		}
		return s.next.Report(ctx, ev)
	})
}

// runParallel runs the plan's tasks in waves; it returns when no task is ready (the caller then
// blocks what is left), the budget halted the run, or a decision aborted it.
func (e *engine) runParallel(ctx context.Context) (aborted bool, err error) {
	// The workers check the branch out: it must exist first, or each would create it.
	if e.ws.Created {
		if err := e.ws.Push(ctx); err != nil {
			return false, fmt.Errorf("runner: create %s: %w", e.ws.Branch, err)
		}
	}
	serial := &serialReporter{next: e.o.Reporter}
	// While workers run, the run's own events go through the same lock.
	e.o.Reporter = serial.forAll()
	defer func() { e.o.Reporter = serial.next }()
	for e.halted == "" && !aborted {
		if err := e.syncBase(ctx); errors.Is(err, errAborted) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		if e.halted != "" {
			return false, nil
		}
		wave := e.wave()
		if len(wave) == 0 {
			return false, nil
		}
		if e.o.Yield != nil && e.o.Yield(ctx) {
			e.yielded = true
			return false, nil
		}
		if n, per := e.affordable(len(wave)); n == 0 {
			// Not even one more: the next task parks on the budget before it starts.
			over := fmt.Sprintf("$%.2f is left, less than the $%.2f a task has cost so far", e.costLeft(), per)
			if err := e.budgetReached(ctx, wave[0], 0, over); err != nil {
				if errors.Is(err, errAborted) {
					return true, nil
				}
				return aborted, err
			}
			continue
		} else if n < len(wave) {
			e.o.Logger.Info("runner: fewer tasks at once: the remaining budget covers no more", "wave", len(wave), "started", n,
				"cost_left", e.costLeft())
			wave = wave[:n]
		}
		type result struct {
			task *roadmap.Task
			out  Outcome
			err  error
		}
		results := make([]result, len(wave))
		var wg sync.WaitGroup
		spent := e.spent()
		var escalating, checkpoints sync.Mutex
		for i, t := range wave {
			o := e.o
			o.Reporter = serial.forTask(t.ID)
			o.only = map[string]bool{t.ID: true}
			o.checkpoints = &checkpoints
			o.Branch, o.Base = e.ws.Branch, e.ws.Base
			o.StartCommit, o.MaxParallel = false, 0
			o.services = e.services
			o.Spent = spent
			if esc := e.o.Escalate; esc != nil {
				// One question to a person at a time (a terminal prompt, say).
				o.Escalate = func(ctx context.Context, x Escalation) (Decision, error) {
					escalating.Lock()
					defer escalating.Unlock()
					return esc(ctx, x)
				}
			}
			o.Decisions = nil
			if d, ok := e.o.Decisions[t.ID]; ok {
				o.Decisions = map[string]Decision{t.ID: d}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := Run(ctx, o)
				results[i] = result{task: t, out: out, err: err}
			}()
		}
		wg.Wait()
		var errs []error
		for _, res := range results {
			r := e.results[res.task.ID]
			r.Status = TaskPending
			for _, tr := range res.out.Tasks {
				if tr.ID == res.task.ID {
					*r = tr
				}
			}
			for _, esc := range res.out.Parked {
				if esc.TaskID == res.task.ID {
					e.out.Parked = append(e.out.Parked, esc)
					if esc.Reason == ReasonBudget {
						e.halted = "the run's budget is reached"
					}
				}
			}
			if res.out.Head != "" && r.Status == TaskDone {
				e.out.Head = res.out.Head
			}
			switch {
			case res.out.Status == StatusAborted && res.err == nil:
				aborted = true
			case res.err != nil:
				errs = append(errs, fmt.Errorf("task %s: %w", res.task.ID, res.err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return aborted, err
		}
		if err := e.ws.Sync(ctx); err != nil {
			return aborted, fmt.Errorf("runner: %w", err)
		}
		e.out.Head = e.ws.Head()
		if e.roadmapPath != "" {
			data, err := e.ws.ReadFile(e.roadmapPath)
			if err != nil {
				return aborted, fmt.Errorf("runner: %w", err)
			}
			e.roadmapData = data
		}
	}
	return aborted, nil
}

// forAll passes every event through the lock (the run's own events while workers run).
func (s *serialReporter) forAll() Reporter {
	return ReporterFunc(func(ctx context.Context, ev Event) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next == nil {
			return nil
		}
		return s.next.Report(ctx, ev)
	})
}

// spent is what the run has used so far, for its workers' budget checks.
// affordable is how many of n tasks may start at once within the remaining cost budget, judging
// each by the average cost per of the tasks done so far: tasks running at once are not stopped when
// the budget is reached, so a wave larger than the budget covers would overrun it by its extra tasks.
// With no budget, or no task done yet to judge by, all n start.
func (e *engine) affordable(n int) (int, float64) {
	if e.o.Budget.CostUSD <= 0 {
		return n, 0
	}
	var done int
	var cost float64
	for _, r := range e.results {
		if r.Status == TaskDone && r.Usage.CostUSD > 0 {
			done++
			cost += r.Usage.CostUSD
		}
	}
	if done == 0 {
		return n, 0
	}
	per := cost / float64(done)
	return min(n, int(e.costLeft()/per)), per
}

func (e *engine) spent() Spent {
	s := e.o.Spent
	for _, r := range e.results {
		s.Usage = s.Usage.Add(r.Usage)
	}
	s.WorkTime += time.Since(e.start)
	return s
}

// recombine puts a verified change whose push was refused on top of the work that was pushed
// meanwhile, verifies the combination, and makes the checkpoint; a conflict or a failing combination
// is a failed attempt, with the workspace at the new head for the next one.
func (e *engine) recombine(ctx context.Context, t *roadmap.Task, info checkpointInfo) (*failure, error) {
	moved, conflicts, err := e.ws.Combine(ctx, e.roadmapPath)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if !moved {
		return nil, fmt.Errorf("runner: the push of %s was refused, but the branch did not move: %w", t.ID, ErrPushRejected)
	}
	if e.roadmapPath != "" {
		data, err := e.ws.ReadFile(e.roadmapPath)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		e.roadmapData = data
	}
	if len(conflicts) > 0 {
		return &failure{combine: fmt.Sprintf("the change conflicts in %s with work a task beside this one checkpointed meanwhile; the workspace now holds that work: do the task again on top of it",
			strings.Join(conflicts, ", "))}, nil
	}
	verifyHome, err := e.ws.Scratch("home-verify")
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	plan := verify.Choose(e.ws.Dir, t.Verify, e.o.Verify)
	results, _, err := e.runVerify(ctx, plan, verifyHome)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if !verify.Passed(results) {
		return &failure{verify: results, combine: "the change passed verification alone, but its combination with the work a task beside this one checkpointed meanwhile fails it"}, nil
	}
	info.plan, info.verify = plan, results
	return e.checkpoint(ctx, t, info)
}
