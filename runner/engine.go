package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/timeline"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/runner/workspace"
)

// errAborted ends the task loop after an abort decision.
var errAborted = errors.New("aborted by decision")

type engine struct {
	o           Options
	ws          *workspace.Workspace
	rm          *roadmap.Roadmap
	roadmapPath string // "" for an external plan
	source      string // the plan's name in prompts
	roadmapData []byte // the roadmap file as of the last checkpoint
	results     map[string]*TaskResult
	out         Outcome
	pushed      bool // this engine pushed the branch (a checkpoint, a start commit, a merge of the base)
	verifyEnv   []string
	// agentEnv are the variables the agent's commands get besides its profile's (the dependency cache's).
	agentEnv []string
	// services are the repository's services, running from setup to the end of the run.
	services  *env.Services
	start     time.Time
	taskStart time.Time // when the current task started, for durations reported before it ends
	// halted says why no further task starts (the budget is reached); "" while the run goes on.
	halted string
	// yielded: Options.Yield asked for no further task; what is left stays pending.
	yielded bool
	// checkpointing says this worker holds Options.checkpoints (a combination checkpoints again).
	checkpointing bool
	// lastChanged are the paths of the last checkpoint.
	lastChanged []string
	// rec is the timeline of the attempt running (nil between attempts, or when none is kept);
	// attemptUsage what that attempt has used (its agent, its judge).
	rec          *attemptRecord
	attemptUsage agent.Usage

	// syncing is the merge of the base the sync task is resolving (sync.go); syncNote what failed
	// verification after a clean merge; syncPlan the plan file as Akira settled its conflict. syncOff: the repository turned syncing off; syncSkipped: a
	// person decided to leave the branch behind its base for this run.
	syncing     *workspace.Sync
	syncNote    string
	syncPlan    []byte
	syncOff     bool
	syncSkipped bool
	// syncDue says the next syncBase merges the base without asking Options.BaseMoved: the plan came
	// from the base (a follow-up's new plan file), or BaseMoved was asked already by prepare.
	// syncDecided: the decision about the sync task was acted on (it is this run's, and a later
	// merge of a base that moved again is a sync of its own).
	syncDue     bool
	syncDecided bool

	// byID and ids index rm once: choosing the next task must not cost a scan of the plan per
	// candidate (roadmap.Task is a linear search), which made each choice cost O(tasks²).
	byID map[string]*roadmap.Task
	ids  []string
}

func (e *engine) run(ctx context.Context) (out Outcome, err error) {
	e.start = time.Now()
	e.out = Outcome{RunID: e.o.RunID, Repo: e.o.Repo, Branch: e.o.Branch, Base: e.o.Base, Status: StatusFailed}
	defer func() {
		e.services.Stop()
		if e.ws != nil {
			if cerr := e.ws.Close(); cerr != nil {
				e.o.Logger.Warn("runner: workspace not removed", "dir", e.ws.Dir, "err", cerr)
			}
		}
	}()
	if err := e.prepare(ctx); err != nil {
		return e.finish(ctx, err)
	}
	aborted := false
	if e.o.MaxParallel > 1 && !e.o.DryRun && e.o.only == nil {
		var err error
		if aborted, err = e.runParallel(ctx); err != nil {
			return e.finish(ctx, err)
		}
	}
	for e.halted == "" && !aborted && !e.yielded {
		t := e.next()
		if t == nil {
			break
		}
		if e.o.Yield != nil && e.o.only == nil && e.o.Yield(ctx) {
			e.yielded = true
			break
		}
		if err := e.syncBase(ctx); err != nil {
			if errors.Is(err, errAborted) {
				aborted = true
				break
			}
			return e.finish(ctx, err)
		}
		if e.halted != "" {
			break
		}
		if err := e.runTask(ctx, t); err != nil {
			if errors.Is(err, errAborted) {
				aborted = true
				break
			}
			return e.finish(ctx, err)
		}
	}
	// Once more after the last task: the pull request must not turn ready behind its base.
	if !aborted && !e.yielded && e.halted == "" && len(e.out.Parked) == 0 {
		if err := e.syncBase(ctx); errors.Is(err, errAborted) {
			aborted = true
		} else if err != nil {
			return e.finish(ctx, err)
		}
	}
	if !aborted && !e.yielded {
		if err := e.blockRest(ctx); err != nil {
			return e.finish(ctx, err)
		}
	}
	switch {
	case aborted:
		e.out.Status = StatusAborted
	case len(e.out.Parked) > 0:
		e.out.Status = StatusParked
	case e.yielded:
		e.out.Status = StatusYielded
	default:
		e.out.Status = StatusSucceeded
		e.teach(ctx)
	}
	if e.o.DryRun {
		diff, err := e.ws.Diff(ctx)
		if err != nil {
			return e.finish(ctx, fmt.Errorf("runner: %w", err))
		}
		e.out.Diff = diff
	}
	return e.finish(ctx, nil)
}

// prepare clones, resolves the roadmap and branch, checks out, parses the plan and works out what is
// already done.
func (e *engine) prepare(ctx context.Context) error {
	ws, err := workspace.Clone(ctx, workspace.Options{
		Remote: e.o.Repo, Base: e.o.Base, WorkDir: e.o.WorkDir, Auth: e.o.GitAuth, Cache: e.o.Cache,
		Author: e.o.Author, PassEnv: e.o.GitEnv, DryRun: e.o.DryRun,
	})
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	e.ws = ws
	e.out.Base = ws.Base

	repoCfg, _, err := config.LoadRepo(ctx, ws.ReadBase)
	if _, bad := errors.AsType[*config.RepoError](err); bad {
		return fmt.Errorf("runner: %w: %w", ErrUsage, err)
	}
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if e.o.MaxAttempts <= 0 {
		e.o.MaxAttempts = repoCfg.MaxAttempts
		if e.o.MaxAttempts <= 0 {
			e.o.MaxAttempts = DefaultMaxAttempts
		}
	}
	if len(e.o.Verify) == 0 {
		e.o.Verify = repoCfg.Verify
	}
	if err := withRepoEgress(&e.o.Sandbox, repoCfg); err != nil {
		return fmt.Errorf("runner: %w: .github/akira.yml: %w", ErrUsage, err)
	}
	if repoCfg.MemoryOff() {
		e.o.Lessons = nil // memory: off in .github/akira.yml
	}
	if e.o.MinConfidence <= 0 {
		e.o.MinConfidence = judge.DefaultMinConfidence
	}
	// A repository may ask its judge for more confidence than the operator's, never less.
	e.o.MinConfidence = max(e.o.MinConfidence, repoCfg.MinConfidence)
	repoProtected := repoCfg.ProtectedPaths
	if e.o.AllowWorkflows && repoCfg.AllowsWorkflows() {
		// The operator's consent and the repository's: workflow files are no longer refused, unless
		// the repository lists them in protected_paths of its own.
		notWorkflows := func(g string) bool { return g == config.WorkflowPaths }
		e.o.ProtectedPaths = slices.DeleteFunc(slices.Clone(e.o.ProtectedPaths), notWorkflows)
		if !repoCfg.OwnProtectedPaths() {
			repoProtected = nil
		}
	}
	for _, g := range repoProtected {
		if !slices.Contains(e.o.ProtectedPaths, g) {
			e.o.ProtectedPaths = append(e.o.ProtectedPaths, g)
		}
	}
	e.syncOff = repoCfg.SyncOff()

	planName := e.o.PlanSource
	if e.o.Plan == nil {
		e.roadmapPath = e.o.Roadmap
		if e.roadmapPath == "" {
			e.roadmapPath = repoCfg.Roadmap
		}
		if e.roadmapPath == "" {
			e.roadmapPath = DefaultRoadmap
		}
		e.roadmapPath = filepath.ToSlash(filepath.Clean(e.roadmapPath))
		if filepath.IsAbs(e.roadmapPath) || strings.HasPrefix(e.roadmapPath, "../") {
			return fmt.Errorf("runner: %w: roadmap %q must be a path inside the repository", ErrUsage, e.o.Roadmap)
		}
		planName = e.roadmapPath
		e.source = e.roadmapPath
	} else {
		if planName == "" {
			planName = "plan"
		}
		e.source = planName
	}
	e.out.Roadmap = e.source

	branch := e.o.Branch
	if branch == "" {
		branch = DefaultBranch(repoCfg.BranchPrefix, planName)
	}
	e.out.Branch = branch
	if err := ws.Checkout(ctx, branch); err != nil {
		if strings.Contains(err.Error(), "not a valid branch name") {
			return fmt.Errorf("runner: %w: %w", ErrUsage, err)
		}
		return fmt.Errorf("runner: %w", err)
	}

	data := e.o.Plan
	if data == nil {
		data, err = ws.ReadFile(e.roadmapPath)
		if errors.Is(err, os.ErrNotExist) && !ws.Created && e.canSync() {
			// A follow-up on an existing branch names a plan file the base gained since: the plan is
			// the base's, and the base is merged in before the first task (the checkpoints then tick
			// the merged file).
			if b, ok, berr := ws.ReadBase(ctx, e.roadmapPath); berr == nil && ok {
				data, err, e.syncDue = b, nil, true
			}
		}
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("runner: %w: %s not found on branch %s", ErrInvalidPlan, e.roadmapPath, branch)
		} else if err != nil {
			return fmt.Errorf("runner: %w: %w", ErrInvalidPlan, err)
		}
	}
	rm, err := roadmap.ParseAs(e.source, data, e.o.Convention)
	if err != nil {
		return fmt.Errorf("runner: %w: %w", ErrInvalidPlan, err)
	}
	if rm.Task(SyncTaskID) != nil {
		// The sync task's events, escalation, decisions and parked work are named by its id, and the
		// engine treats a task by that id as the merge of the base: a task of the plan with the same
		// id would be mistaken for it, whether or not this run merges its base.
		return fmt.Errorf("runner: %w: %s: task id %q is reserved for the task that brings the branch up to date with its base; give the task another id",
			ErrInvalidPlan, e.source, SyncTaskID)
	}
	e.rm = rm
	e.indexTasks()
	for _, w := range rm.Warnings {
		e.o.Logger.Warn("runner: plan read with a warning", "warning", w.Error())
	}
	if e.roadmapPath != "" {
		e.roadmapData = data
	}
	if len(rm.Tasks) == 0 {
		return fmt.Errorf("runner: %w: %s has no tasks (checkboxes)", ErrInvalidPlan, e.source)
	}
	for _, id := range e.o.Skip {
		if rm.Task(id) == nil {
			return fmt.Errorf("runner: %w: --skip %s: no such task in %s", ErrUsage, id, e.source)
		}
	}
	for id := range e.o.Decisions {
		if rm.Task(id) == nil && id != SyncTaskID {
			return fmt.Errorf("runner: %w: decision for %s: no such task in %s", ErrUsage, id, e.source)
		}
	}

	doneBy, err := ws.Checkpoints(ctx, TrailerTask, TrailerRevert)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	for _, id := range e.order() {
		t := e.task(id)
		r := &TaskResult{ID: t.ID, Title: t.Title, Phase: t.Phase, Status: TaskPending}
		switch sha := doneBy[e.key(t.ID)]; {
		case sha != "":
			r.Status, r.Commit, r.Note = TaskDone, sha, "checkpoint already on the branch"
		case t.Done:
			r.Status, r.Note = TaskDone, "ticked in the roadmap"
		case slices.Contains(e.o.Skip, t.ID):
			r.Status, r.Note = TaskSkipped, "skipped (--skip)"
		case t.Optional && !e.o.IncludeOptional:
			r.Status, r.Note = TaskSkipped, "optional in the plan (a * task); not run unless optional tasks are included"
		}
		e.results[t.ID] = r
		e.out.Tasks = append(e.out.Tasks, *r)
	}
	e.verifyEnv = proc.Environ(e.o.Env)
	if e.o.StartCommit && e.hasPending() {
		if err := e.startCommit(ctx); err != nil {
			return err
		}
	}
	e.out.Head = ws.Head()
	if err := e.emit(ctx, Event{Type: EventRunStarted, Repo: e.o.Repo, Roadmap: e.source, Branch: branch,
		Base: ws.Base, Tasks: e.snapshot(), MaxAttempts: e.o.MaxAttempts, Commit: ws.Head(),
		Message: map[bool]string{true: "new branch from " + ws.Base, false: "continuing the branch"}[ws.Created]}); err != nil {
		return err
	}
	for _, id := range e.order() {
		if r := e.results[id]; r.Status == TaskSkipped {
			if err := e.emit(ctx, e.taskEvent(EventTaskSkipped, e.task(id), Event{Message: r.Note})); err != nil {
				return err
			}
		}
	}
	if e.hasPending() || e.syncWanted(ctx) {
		// Before setup, which may take minutes, and on the run's own head (the App shows the
		// failure on its pull request, never on the base branch). A job with no task left that
		// only brings the branch up to date verifies the merge (or has the agent resolve it) in
		// the same environment as a task.
		if err := e.checkAgent(ctx); err != nil {
			return err
		}
		return e.prepareEnv(ctx, repoCfg)
	}
	return nil
}

// key is how a task is named on the branch (its Akira-Task trailer and parked ref): its id, within
// TaskScope when the branch holds the tasks of several plans.
func (e *engine) key(id string) string {
	if e.o.TaskScope == "" {
		return id
	}
	return e.o.TaskScope + "#" + id
}

func (e *engine) hasPending() bool {
	for _, r := range e.results {
		if r.Status == TaskPending {
			return true
		}
	}
	return false
}

// startCommit gives a branch with nothing ahead of its base an empty commit carrying the run's trailer,
// pushed before the first task, so that a pull request can be opened from it (GitHub refuses one
// without commits). A branch that already has one, from an earlier job of the run, gets none.
func (e *engine) startCommit(ctx context.Context) error {
	ahead, err := e.ws.Git(ctx, "rev-list", "--count", "refs/remotes/origin/"+e.ws.Base+"..HEAD")
	if err != nil {
		return fmt.Errorf("runner: start commit: %w", err)
	}
	if strings.TrimSpace(ahead) != "0" {
		return nil
	}
	msg := fmt.Sprintf("akira: start run %s\n\nThe pull request of this run needs a commit; the tasks follow.\n\n%s: %s\n",
		e.o.RunID, TrailerRun, e.o.RunID)
	if _, err := e.ws.Commit(ctx, msg); err != nil {
		return fmt.Errorf("runner: start commit: %w", err)
	}
	if err := e.push(ctx); err != nil {
		return fmt.Errorf("runner: start commit: %w", err)
	}
	return nil
}

// push publishes the last checkpoint: through GitHub's API when Options.CommitAPI is set (GitHub signs
// the commit, and the workspace then stands on it), else with git push.
func (e *engine) push(ctx context.Context) error {
	var err error
	if e.o.CommitAPI != nil {
		_, err = e.ws.PushAPI(ctx, e.o.CommitAPI)
	} else {
		err = e.ws.Push(ctx)
	}
	if err == nil {
		e.pushed = true
	}
	return err
}

func (e *engine) order() []string {
	if len(e.rm.Order) > 0 {
		return e.rm.Order
	}
	if e.ids != nil && len(e.ids) == len(e.rm.Tasks) {
		return e.ids
	}
	ids := make([]string, len(e.rm.Tasks))
	for i, t := range e.rm.Tasks {
		ids[i] = t.ID
	}
	return ids
}

// indexTasks builds byID and ids from rm.
func (e *engine) indexTasks() {
	e.byID = make(map[string]*roadmap.Task, len(e.rm.Tasks))
	e.ids = make([]string, len(e.rm.Tasks))
	for i, t := range e.rm.Tasks {
		e.byID[t.ID] = t
		e.ids[i] = t.ID
	}
}

// task is rm.Task(id) through the index when there is one.
func (e *engine) task(id string) *roadmap.Task {
	if t, ok := e.byID[id]; ok {
		return t
	}
	return e.rm.Task(id)
}

// next is the pending task whose dependencies are all done with the highest priority, the first in
// roadmap order among equals.
func (e *engine) next() *roadmap.Task {
	var best *roadmap.Task
	for _, id := range e.order() {
		if e.results[id].Status != TaskPending || (e.o.only != nil && !e.o.only[id]) {
			continue
		}
		t := e.task(id)
		ready := true
		for _, d := range t.Depends {
			if r := e.results[d]; r == nil || r.Status != TaskDone {
				ready = false
				break
			}
		}
		if ready && (best == nil || t.Priority > best.Priority) {
			best = t
		}
	}
	return best
}

// blockRest marks every task still pending as blocked: one of its dependencies did not get done.
func (e *engine) blockRest(ctx context.Context) error {
	for _, id := range e.order() {
		r := e.results[id]
		if r.Status != TaskPending || (e.o.only != nil && !e.o.only[id]) {
			continue
		}
		t := e.task(id)
		var why []string
		for _, d := range t.Depends {
			if dr := e.results[d]; dr != nil && dr.Status != TaskDone {
				why = append(why, fmt.Sprintf("%s (%s)", d, dr.Status))
			}
		}
		r.Status = TaskBlocked
		r.Note = "blocked by " + strings.Join(why, ", ")
		if len(why) == 0 && e.halted != "" {
			r.Note = "not started: " + e.halted
		}
		if err := e.emit(ctx, e.taskEvent(EventTaskBlocked, t, Event{Message: r.Note})); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) runTask(ctx context.Context, t *roadmap.Task) error {
	r := e.results[t.ID]
	e.taskStart = time.Now()
	defer func() { r.Duration += time.Since(e.taskStart) }()
	if err := e.emit(ctx, e.taskEvent(EventTaskStarted, t, Event{MaxAttempts: e.o.MaxAttempts, Accept: t.Accept})); err != nil {
		return err
	}
	var guide Decision // a retry decision's guidance, with who gave it
	if d, ok := e.o.Decisions[t.ID]; ok {
		if d.Kind == "" {
			d.Kind = DecisionPark
		}
		if err := e.emit(ctx, e.taskEvent(EventTaskDecided, t, Event{Decision: &d})); err != nil {
			return err
		}
		switch d.Kind {
		case DecisionPark:
			esc := Escalation{TaskID: t.ID, Title: t.Title, Phase: t.Phase, Reason: "awaiting_decision",
				Summary: "kept parked until a decision", HeadSHA: e.ws.Head()}
			if sha := e.ws.Parked(e.key(t.ID)); sha != "" {
				esc.ParkedRef, esc.ParkedCommit = e.ws.ParkedRef(e.key(t.ID)), sha
			}
			return e.markParked(ctx, t, esc)
		case DecisionSkip:
			return e.skip(ctx, t, "skipped by decision")
		case DecisionAbort:
			return errAborted
		case DecisionApprove:
			if t.Gate == roadmap.GateBefore && e.ws.Parked(e.key(t.ID)) == "" {
				// Approved at its gate: the agent may start now.
				return e.attempts(ctx, t, Decision{})
			}
			if err := e.ws.ApplyParked(ctx, e.key(t.ID)); err != nil {
				return fmt.Errorf("runner: approve %s: %w", t.ID, err)
			}
			f, err := e.checkpoint(ctx, t, checkpointInfo{approved: true, gated: t.Gate == roadmap.GateAfter})
			if err != nil {
				return err
			}
			if f != nil {
				return fmt.Errorf("runner: approve %s: the parked work cannot be a checkpoint: %s", t.ID, f.summary())
			}
			return nil
		case DecisionRetry:
			guide = d
		default:
			return fmt.Errorf("runner: %w: unknown decision %q for %s", ErrUsage, d.Kind, t.ID)
		}
	}
	if _, decided := e.o.Decisions[t.ID]; t.Gate == roadmap.GateBefore && !decided {
		return e.gateBefore(ctx, t)
	}
	return e.attempts(ctx, t, guide)
}

// overBudget says which limit of the budget this run has reached, or "".
func (e *engine) overBudget() string {
	b := e.o.Budget
	if b.CostUSD <= 0 && b.Tokens <= 0 && b.WallTime <= 0 {
		return "" // no limit: no sum over every task's usage before each attempt
	}
	used := e.o.Spent.Usage
	for _, r := range e.results {
		used = used.Add(r.Usage)
	}
	worked := e.o.Spent.WorkTime + time.Since(e.start)
	switch {
	case b.CostUSD > 0 && used.CostUSD >= b.CostUSD:
		return fmt.Sprintf("spent $%.2f of the $%.2f it had", used.CostUSD, b.CostUSD)
	case b.Tokens > 0 && used.InputTokens+used.OutputTokens >= b.Tokens:
		return fmt.Sprintf("used %d tokens of the %d it had", used.InputTokens+used.OutputTokens, b.Tokens)
	case b.WallTime > 0 && worked >= b.WallTime:
		return fmt.Sprintf("worked %s of the %s it had", worked.Round(time.Second), b.WallTime)
	}
	return ""
}

// budgetReached parks the task before another attempt, until a person raises the budget or ends
// the run.
func (e *engine) budgetReached(ctx context.Context, t *roadmap.Task, attempts int, over string) error {
	esc := Escalation{TaskID: t.ID, Title: t.Title, Phase: t.Phase, Attempts: attempts, Reason: ReasonBudget,
		Summary: "the run's budget is reached: " + over, HeadSHA: e.ws.Head()}
	d, err := e.escalate(ctx, t, esc)
	if err != nil {
		return err
	}
	switch d.Kind {
	case DecisionSkip:
		return e.skip(ctx, t, "skipped when the budget was reached")
	case DecisionAbort:
		return errAborted
	}
	e.halted = "the run's budget is reached"
	return e.markParked(ctx, t, esc)
}

// gateBefore stops at a task's gate before its agent starts, until a person approves.
func (e *engine) gateBefore(ctx context.Context, t *roadmap.Task) error {
	esc := Escalation{TaskID: t.ID, Title: t.Title, Phase: t.Phase, Reason: ReasonGateBefore,
		Summary: "the plan asks a person to approve this task before the agent starts", HeadSHA: e.ws.Head()}
	d, err := e.escalate(ctx, t, esc)
	if err != nil {
		return err
	}
	switch d.Kind {
	case DecisionApprove:
		return e.attempts(ctx, t, Decision{})
	case DecisionRetry:
		return e.attempts(ctx, t, d)
	case DecisionSkip:
		return e.skip(ctx, t, "skipped at its gate")
	case DecisionAbort:
		return errAborted
	}
	return e.markParked(ctx, t, esc)
}

// gateAfter stops at a task's gate with its verified work parked, until a person approves it (a later
// run's approve makes it the checkpoint) or asks for another try.
func (e *engine) gateAfter(ctx context.Context, t *roadmap.Task, n int, info checkpointInfo) (*failure, error) {
	changed, err := e.ws.Stage(ctx)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	summary := fmt.Sprintf("verified; the plan asks a person to approve the work before it becomes a checkpoint (%d changed: %s)",
		len(changed), strings.Join(clipList(changed, 10), ", "))
	esc := Escalation{TaskID: t.ID, Title: t.Title, Phase: t.Phase, Attempts: n, Reason: ReasonGateAfter,
		Summary: summary, Verify: info.verify, HeadSHA: e.ws.Head()}
	d, err := e.escalate(ctx, t, esc)
	if err != nil {
		return nil, err
	}
	switch d.Kind {
	case DecisionApprove:
		info.gated = true
		return e.checkpoint(ctx, t, info)
	case DecisionSkip:
		if err := e.ws.Reset(ctx); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		return nil, e.skip(ctx, t, "skipped at its gate")
	case DecisionAbort:
		return nil, errAborted
	case DecisionRetry:
		return &failure{agentErr: "a person asked for another try at the gate: " + d.Guidance}, nil
	}
	return nil, e.park(ctx, t, esc)
}

func clipList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string(nil), items[:n]...), fmt.Sprintf("and %d more", len(items)-n))
}

// attempts runs attempts until one checkpoints, then asks for a decision when they are exhausted or
// the same failure repeats.
func (e *engine) attempts(ctx context.Context, t *roadmap.Task, guide Decision) error {
	r := e.results[t.ID]
	guidance := guide.Guidance
	var last, firstVerifyFail *failure
	lastFeedback, lastSig := "", ""
	round := 0 // attempts since the start or since a retry decision
	for {
		if over := e.overBudget(); over != "" {
			return e.budgetReached(ctx, t, r.Attempts, over)
		}
		round++
		r.Attempts++
		feedback := joinFeedback(lastFeedback, guidance)
		f, err := e.recordedAttempt(ctx, t, r.Attempts, feedback)
		if err != nil {
			return err
		}
		if f == nil {
			if t.ID != SyncTaskID {
				e.learn(ctx, t, guide)
				if guidance == "" && firstVerifyFail != nil {
					e.learnFix(ctx, t, firstVerifyFail)
				}
			}
			return nil
		}
		if firstVerifyFail == nil && len(f.verify) > 0 && f.combine == "" {
			firstVerifyFail = f
		}
		last = f
		lastFeedback = f.text(r.Attempts)
		if err := e.emit(ctx, e.taskEvent(EventAttemptFailed, t, Event{Attempt: r.Attempts, MaxAttempts: e.o.MaxAttempts,
			Feedback: lastFeedback, Verify: f.verify, Message: f.summary(), Stalled: f.stalled})); err != nil {
			return err
		}
		sig := f.signature(e.ws.Dir)
		repeated := round > 1 && sig == lastSig
		lastSig = sig
		if round < e.o.MaxAttempts && !repeated {
			if err := e.resetFor(ctx, t); err != nil {
				return err
			}
			continue
		}

		esc := Escalation{TaskID: t.ID, Title: t.Title, Phase: t.Phase, Attempts: r.Attempts, Reason: "max_attempts",
			Summary: last.summary(), Feedback: lastFeedback, Verify: last.verify, HeadSHA: e.ws.Head()}
		if repeated {
			esc.Reason = "repeated_failure"
		}
		d, err := e.escalate(ctx, t, esc)
		if err != nil {
			return err
		}
		switch d.Kind {
		case DecisionRetry:
			guide, guidance, round, lastSig = d, d.Guidance, 0, ""
			if err := e.resetFor(ctx, t); err != nil {
				return err
			}
			continue
		case DecisionSkip:
			if err := e.ws.Reset(ctx); err != nil {
				return fmt.Errorf("runner: %w", err)
			}
			if t.ID == SyncTaskID {
				e.syncSkipped = true
			}
			return e.skip(ctx, t, "skipped by decision")
		case DecisionAbort:
			if err := e.ws.Reset(ctx); err != nil {
				return fmt.Errorf("runner: %w", err)
			}
			return errAborted
		case DecisionApprove:
			f, err := e.checkpoint(ctx, t, checkpointInfo{approved: true, verify: last.verify})
			if err != nil {
				return err
			}
			if f == nil {
				return nil
			}
			// The work cannot become a checkpoint (protected paths, a broken roadmap): park it instead.
			esc.Summary = "approval refused: " + f.summary()
			esc.Feedback = f.text(r.Attempts)
			if err := e.emit(ctx, e.taskEvent(EventAttemptFailed, t, Event{Attempt: r.Attempts, Feedback: esc.Feedback, Message: esc.Summary})); err != nil {
				return err
			}
		}
		if t.ID == SyncTaskID {
			files := make([]string, 0, len(e.syncing.Conflicts))
			for _, c := range e.syncing.Conflicts {
				files = append(files, c.Path)
			}
			if len(files) > 0 {
				esc.Summary = "the merge of " + e.ws.Base + " conflicts in " + strings.Join(files, ", ") + ": " + esc.Summary
			}
			e.halted = "the branch could not be brought up to date with " + e.ws.Base
		}
		return e.park(ctx, t, esc)
	}
}

func joinFeedback(feedback, guidance string) string {
	guidance = strings.TrimSpace(guidance)
	if guidance == "" {
		return feedback
	}
	g := "Guidance from a human for this attempt:\n\n" + guidance + "\n"
	if feedback == "" {
		return g
	}
	return strings.TrimRight(feedback, "\n") + "\n\n" + g
}

// recordedAttempt is attempt with its timeline, from its start to its end and what came of it.
func (e *engine) recordedAttempt(ctx context.Context, t *roadmap.Task, n int, feedback string) (*failure, error) {
	e.attemptUsage = agent.Usage{}
	e.rec = e.startRecord(ctx, t.ID, n, feedback != "")
	defer func() { e.rec = nil }()
	f, err := e.attempt(ctx, t, n, feedback)
	if e.rec == nil {
		return f, err
	}
	r := e.results[t.ID]
	end := &timeline.End{CostUSD: e.attemptUsage.CostUSD, RunCostUSD: e.spent().Usage.CostUSD, Estimated: e.attemptUsage.Estimated}
	switch {
	case err != nil:
		end.Result, end.Summary = timeline.ResultStopped, err.Error()
	case f != nil:
		end.Result, end.Summary = timeline.ResultFailed, f.summary()
	case r.Status == TaskDone:
		end.Result, end.Commit = timeline.ResultCheckpointed, r.Commit
	case r.Status == TaskParked:
		end.Result, end.Summary = timeline.ResultParked, r.Note
	case r.Status == TaskSkipped:
		end.Result, end.Summary = timeline.ResultSkipped, r.Note
	default:
		end.Result = timeline.ResultStopped
	}
	e.rec.add(timeline.Event{Kind: timeline.KindAttemptEnded, End: end})
	return f, err
}

// attempt runs the agent and the verification once. It returns a failure, or nil once the task is
// checkpointed; an error is not about the task (cancellation, git, a reporter).
func (e *engine) attempt(ctx context.Context, t *roadmap.Task, n int, feedback string) (*failure, error) {
	r := e.results[t.ID]
	plan := verify.Choose(e.ws.Dir, t.Verify, e.o.Verify)
	verifyNote := ""
	if plan.Source == verify.SourceDetected {
		verifyNote = "Akira will run the project's default tests (detected from " + plan.Reason + "): " +
			strings.Join(plan.Commands, " && ") + ". Make sure they pass."
	} else if plan.Source == verify.SourceNone {
		verifyNote = "No verification commands are configured for this task: make sure the project still builds and its tests pass."
	}
	promptVerify := plan.Commands
	if plan.Source == verify.SourceDetected || plan.Source == verify.SourceNone {
		promptVerify = nil
	}
	section, learnt, files := e.o.Context, []lessons.Lesson(nil), []contextFile(nil)
	if t.ID == SyncTaskID {
		section = e.syncPrompt()
	} else {
		learnt, files = e.lessonsFor(ctx, t), e.contextFor(t)
	}
	prompt := buildPrompt(promptInput{roadmap: e.rm, source: e.source, task: t, attempt: n, maxAttempts: e.o.MaxAttempts,
		verify: promptVerify, verifyNote: verifyNote, protected: e.o.ProtectedPaths, feedback: feedback, context: section,
		lessons: learnt, files: files})
	var used []string
	for _, l := range learnt {
		used = append(used, lessonLine(l))
	}
	if err := e.emit(ctx, e.taskEvent(EventAttemptStarted, t, Event{Attempt: n, MaxAttempts: e.o.MaxAttempts, Feedback: feedback, Lessons: used})); err != nil {
		return nil, err
	}

	agentHome, err := e.ws.Scratch("home-agent")
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	verifyHome, err := e.ws.Scratch("home-verify")
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	agentBox, agentNet, err := egressPolicy(e.o.Sandbox, e.o.AgentNetwork, e.ws.Dir, e.ws.GitDir(), agentHome, modelOf(e.o.Agent), e.costLeft(),
		e.rec.hook(timeline.ByAgent))
	if err != nil {
		return nil, err
	}
	tctx, cancelTimeout := context.WithTimeout(ctx, e.o.AgentTimeout)
	actx, cancel := context.WithCancelCause(tctx)
	dog := newStallWatchdog(e.ws.Dir, e.o.StallTimeout)
	go dog.watch(actx, cancel)
	res, aerr := e.o.Agent.Run(actx, agent.Request{
		Workspace: e.ws.Dir, TaskID: t.ID, TaskTitle: t.Title, Attempt: n, Prompt: prompt, Feedback: feedback,
		ProtectedPaths: e.o.ProtectedPaths, Sandbox: agentBox,
		Activity: dog.alive, Env: e.agentEnv, Record: e.rec.hook(timeline.ByAgent),
	})
	timedOut := tctx.Err() == context.DeadlineExceeded
	stalled := errors.Is(context.Cause(actx), errStalled)
	cancel(nil)
	cancelTimeout()
	var blocked []egress.Blocked
	if agentNet != nil {
		rep := agentNet.Close()
		res.Usage, blocked = meteredUsage(res.Usage, rep, modelOf(e.o.Agent) != nil), rep.Blocked
	}
	r.Usage = r.Usage.Add(res.Usage)
	e.attemptUsage = e.attemptUsage.Add(res.Usage)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("runner: %w", ctx.Err())
	}
	agentFailure := ""
	if aerr != nil {
		agentFailure = aerr.Error()
		switch {
		case stalled:
			agentFailure = fmt.Sprintf("stalled: no output and no change in the work tree for %s (stall timeout); the agent was stopped", e.o.StallTimeout)
		case timedOut:
			agentFailure = fmt.Sprintf("timed out after %s (agent timeout)", e.o.AgentTimeout)
		}
	}
	e.rec.agentFinished(res, agentFailure)
	e.recordChanges(ctx)
	ev := Event{Attempt: n, Usage: &res.Usage, Duration: res.Duration, Output: res.Output, Blocked: blocked}
	if aerr != nil {
		ev.Message = aerr.Error()
	}
	if err := e.emit(ctx, e.taskEvent(EventAgentFinished, t, ev)); err != nil {
		return nil, err
	}
	if aerr != nil {
		return &failure{agentErr: agentFailure, agentOutput: res.Output, stalled: stalled}, nil
	}
	if f := e.checkDisk(); f != nil {
		return f, nil
	}

	// Choose again: the agent may have created the build file a default is detected from.
	plan = verify.Choose(e.ws.Dir, t.Verify, e.o.Verify)
	if err := e.emit(ctx, e.taskEvent(EventVerifyStarted, t, Event{Attempt: n, VerifyPlan: &plan, Message: plan.Describe()})); err != nil {
		return nil, err
	}
	started := time.Now()
	results, blocked, err := e.runVerify(ctx, plan, verifyHome)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("runner: %w", ctx.Err())
		}
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := e.emit(ctx, e.taskEvent(EventVerifyFinished, t, Event{Attempt: n, Verify: results, Duration: time.Since(started), Blocked: blocked})); err != nil {
		return nil, err
	}
	if !verify.Passed(results) {
		return &failure{verify: results}, nil
	}
	info := checkpointInfo{plan: plan, verify: results}
	if f, err := e.judgeWork(ctx, t, n, &info); f != nil || err != nil {
		return f, err
	}
	if t.Gate == roadmap.GateAfter {
		return e.gateAfter(ctx, t, n, info)
	}
	return e.checkpoint(ctx, t, info)
}

// runVerify runs the verification commands of plan, through an egress session of their own, and
// returns what the session refused.
func (e *engine) runVerify(ctx context.Context, plan verify.Plan, home string) ([]verify.Result, []egress.Blocked, error) {
	box, sess, err := egressPolicy(e.o.Sandbox, e.o.Sandbox.VerifyNetwork, e.ws.Dir, e.ws.GitDir(), home, nil, 0, e.rec.hook(timeline.ByVerify))
	if err != nil {
		return nil, nil, err
	}
	results, err := verify.Run(ctx, e.ws.Dir, plan.Commands, verify.Options{
		Env: e.verifyEnv, Timeout: e.o.VerifyTimeout, OutputCap: e.o.OutputCap, Stream: e.o.Output, Sandbox: box,
	})
	var blocked []egress.Blocked
	if sess != nil {
		blocked = sess.Close().Blocked
	}
	e.rec.verified(results)
	return results, blocked, err
}

// recordChanges records the files the attempt changed, as the work tree holds them.
func (e *engine) recordChanges(ctx context.Context) {
	if e.rec == nil {
		return
	}
	changes, err := e.ws.Changes(ctx)
	if err != nil {
		e.o.Logger.Warn("runner: the attempt's changed files are not in its timeline", "err", err)
		return
	}
	e.rec.filesChanged(changes)
}

// costLeft is what the run's cost budget leaves for one attempt's model calls (0: no limit).
func (e *engine) costLeft() float64 {
	if e.o.Budget.CostUSD <= 0 {
		return 0
	}
	return max(e.o.Budget.CostUSD-e.spent().Usage.CostUSD, 1e-9)
}

// judgeWork asks the acceptance judge about verified work of a task with acceptance criteria. A
// verdict that fails or falls short of the confidence needed fails the attempt with the judge's
// reasons; so does a judge that gives no valid verdict, since the work was not shown to meet them.
func (e *engine) judgeWork(ctx context.Context, t *roadmap.Task, n int, info *checkpointInfo) (*failure, error) {
	if e.o.Judge == nil || len(t.Accept) == 0 {
		return nil, nil
	}
	if _, err := e.ws.Stage(ctx); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	diff, err := e.ws.StagedDiff(ctx)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	req := judge.Request{TaskID: t.ID, Title: t.Title, Description: strings.TrimSpace(t.Description + "\n" + t.Notes),
		Criteria: t.Accept, Diff: diff, Verification: verificationText(info.verify)}
	asked := time.Now()
	v, usage, jerr := e.o.Judge.Judge(ctx, req)
	e.results[t.ID].Usage = e.results[t.ID].Usage.Add(usage)
	e.attemptUsage = e.attemptUsage.Add(usage)
	if jerr != nil {
		e.rec.judged(nil, usage, time.Since(asked), jerr, e.o.MinConfidence)
	} else {
		e.rec.judged(&v, usage, time.Since(asked), nil, e.o.MinConfidence)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("runner: %w", ctx.Err())
	}
	ev := Event{Attempt: n, MinConfidence: e.o.MinConfidence, Usage: &usage}
	if jerr != nil {
		ev.Message = "the acceptance judge gave no valid verdict: " + jerr.Error()
		if err := e.emit(ctx, e.taskEvent(EventJudged, t, ev)); err != nil {
			return nil, err
		}
		return &failure{judgeErr: ev.Message, verify: info.verify}, nil
	}
	ev.Verdict = &v
	if err := e.emit(ctx, e.taskEvent(EventJudged, t, ev)); err != nil {
		return nil, err
	}
	if !v.Passed(e.o.MinConfidence) {
		return &failure{verdict: &v, minConfidence: e.o.MinConfidence, verify: info.verify}, nil
	}
	info.verdict = &v
	return nil, nil
}

// verificationText is what the judge reads of the verification: each command, its exit code and
// the end of its output.
func verificationText(results []verify.Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "$ %s\nexit code %d\n%s\n", r.Command, r.ExitCode, strings.TrimRight(verify.Tail(r.Output, FeedbackTailBytes), "\n"))
	}
	return b.String()
}

// checkDisk fails the attempt when the work tree outgrew the operator's disk limit.
func (e *engine) checkDisk() *failure {
	if e.o.Sandbox.Disk <= 0 {
		return nil
	}
	size, err := sandbox.DirSize(e.ws.Dir)
	if err != nil || size <= e.o.Sandbox.Disk {
		return nil
	}
	return &failure{agentErr: fmt.Sprintf("workspace disk limit of %s exceeded: the work tree holds %s",
		sandbox.Bytes(e.o.Sandbox.Disk), sandbox.Bytes(size))}
}

type checkpointInfo struct {
	plan     verify.Plan
	verify   []verify.Result
	verdict  *judge.Verdict
	approved bool
	// gated: the work passed verification and a person approved it at the task's gate.
	gated bool
}

// checkpoint ticks the task, commits everything in one commit and pushes it. A failure means the
// work cannot be a checkpoint (the roadmap no longer parses, protected paths changed).
func (e *engine) checkpoint(ctx context.Context, t *roadmap.Task, info checkpointInfo) (*failure, error) {
	if e.o.checkpoints != nil && !e.checkpointing {
		e.o.checkpoints.Lock()
		e.checkpointing = true
		defer func() { e.checkpointing = false; e.o.checkpoints.Unlock() }()
	}
	if t.ID == SyncTaskID {
		return e.checkpointSync(ctx, t, info)
	}
	r := e.results[t.ID]
	var ticked []byte
	if e.roadmapPath != "" {
		var f *failure
		if ticked, f = e.tick(t); f != nil {
			return f, nil
		}
	}
	changed, err := e.ws.Stage(ctx)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	var bad []string
	for _, p := range changed {
		if config.MatchAny(e.o.ProtectedPaths, p) {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		return &failure{protected: bad}, nil
	}
	sha, err := e.ws.Commit(ctx, e.commitMessage(t, info))
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if ticked != nil {
		e.roadmapData = ticked
	}
	if err := e.push(ctx); err != nil {
		if errors.Is(err, ErrPushRejected) && e.o.only != nil {
			// A task beside this one pushed first: join its work, verify the combination, go again.
			return e.recombine(ctx, t, info)
		}
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := e.ws.DropParked(ctx, e.key(t.ID)); err != nil {
		e.o.Logger.Warn("runner: parked work not deleted", "task", t.ID, "err", err)
	}
	// Through the API the branch holds GitHub's commit, not the local one.
	sha = e.ws.Head()
	e.out.Head = sha
	e.lastChanged = changed
	r.Status, r.Commit = TaskDone, sha
	if info.approved {
		r.Note = "approved without passing verification"
	}
	// Nothing checked this work: no command ran and the task states no criteria a reviewer could.
	r.Unverified = !info.approved && len(info.verify) == 0 && len(t.Accept) == 0
	r.Verdict = info.verdict
	var workflows []string
	for _, p := range changed {
		if config.MatchAny([]string{config.WorkflowPaths}, p) {
			workflows = append(workflows, p)
		}
	}
	return nil, e.emit(ctx, e.taskEvent(EventTaskCheckpointed, t, Event{Attempt: r.Attempts, Commit: sha, Changed: changed, Workflows: workflows,
		Verify: info.verify, Duration: r.Duration + time.Since(e.taskStart), Usage: &r.Usage, Message: r.Note, Unverified: r.Unverified,
		Verdict: info.verdict, MinConfidence: e.o.MinConfidence}))
}

// tick marks the task done in the roadmap file, byte for byte otherwise, and returns the new content.
// The agent must leave the roadmap alone (ticking its own box is tolerated): otherwise it could, say,
// weaken the verify line of a later task.
func (e *engine) tick(t *roadmap.Task) ([]byte, *failure) {
	cur, err := e.ws.ReadFile(e.roadmapPath)
	if err != nil {
		return nil, &failure{roadmapErr: fmt.Sprintf("the roadmap %s could not be read after the attempt: %v", e.roadmapPath, err)}
	}
	ticked, err := roadmap.Tick(e.rm, e.roadmapData, t.ID)
	if err != nil {
		return nil, &failure{roadmapErr: fmt.Sprintf("could not tick task %s: %v", t.ID, err)}
	}
	if !bytes.Equal(cur, e.roadmapData) && !bytes.Equal(cur, ticked) {
		return nil, &failure{roadmapErr: fmt.Sprintf("the roadmap %s was changed during the attempt; only Akira edits it", e.roadmapPath)}
	}
	if err := e.ws.WriteFile(e.roadmapPath, ticked); err != nil {
		return nil, &failure{roadmapErr: fmt.Sprintf("could not write the roadmap %s: %v", e.roadmapPath, err)}
	}
	return ticked, nil
}

func (e *engine) commitMessage(t *roadmap.Task, info checkpointInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "akira: %s %s\n\n", t.ID, oneLine(t.Title))
	switch {
	case info.gated:
		b.WriteString("Verified, then approved by a person at the task's gate.\n")
		for _, r := range info.verify {
			fmt.Fprintf(&b, "- %s\n", oneLine(r.Command))
		}
	case info.approved:
		b.WriteString("Approved by a human without passing verification.\n")
		for _, r := range info.verify {
			if !r.Passed() {
				fmt.Fprintf(&b, "- failed: %s (exit %d)\n", oneLine(r.Command), r.ExitCode)
			}
		}
	case len(info.verify) == 0:
		b.WriteString("No verification: no verify commands were configured and none could be detected.\n")
	default:
		b.WriteString("Verified by:\n")
		for _, r := range info.verify {
			fmt.Fprintf(&b, "- %s\n", oneLine(r.Command))
		}
		if info.plan.Source == verify.SourceDetected {
			fmt.Fprintf(&b, "(detected from %s)\n", info.plan.Reason)
		}
	}
	fmt.Fprintf(&b, "\n%s: %s\n%s: %s\n", TrailerRun, e.o.RunID, TrailerTask, e.key(t.ID))
	for _, tr := range e.o.Trailers {
		fmt.Fprintf(&b, "%s\n", oneLine(tr))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (e *engine) escalate(ctx context.Context, t *roadmap.Task, esc Escalation) (Decision, error) {
	if err := e.emit(ctx, e.taskEvent(EventTaskEscalated, t, Event{Attempt: esc.Attempts, Escalation: &esc,
		Feedback: esc.Feedback, Verify: esc.Verify, Message: esc.Summary})); err != nil {
		return Decision{}, err
	}
	if e.o.Escalate == nil {
		return Decision{Kind: DecisionPark}, nil
	}
	d, err := e.o.Escalate(ctx, esc)
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("runner: %w", ctx.Err())
		}
		return Decision{}, fmt.Errorf("runner: escalation of %s: %w", t.ID, err)
	}
	if d.Kind == "" {
		d.Kind = DecisionPark
	}
	if err := e.emit(ctx, e.taskEvent(EventTaskDecided, t, Event{Decision: &d})); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// park saves the failed work on the task's parked ref (so that a later run can approve it), resets
// the workspace to the last checkpoint and moves on.
func (e *engine) park(ctx context.Context, t *roadmap.Task, esc Escalation) error {
	msg := fmt.Sprintf("akira: parked %s %s\n\n%s\n\n%s: %s\nAkira-Parked: %s\n", t.ID, oneLine(t.Title),
		strings.TrimSpace(esc.Summary), TrailerRun, e.o.RunID, t.ID)
	sha, err := e.ws.PushParked(ctx, e.key(t.ID), msg)
	kept := err == nil
	if errors.Is(err, workspace.ErrRefused) {
		// GitHub would not hold the work (a workflow file from an App without the workflows
		// permission, a secret its push protection found): the task is parked all the same, with
		// nothing to approve, rather than the run failing on it.
		e.o.Logger.Warn("runner: the remote refused to keep the parked work; the task is parked without it", "task", t.ID, "err", err)
	} else if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if esc.HeadSHA != "" {
		// The list is for the person deciding; without it the escalation still stands.
		if names, err := e.ws.Git(ctx, "diff", "--no-renames", "--name-only", esc.HeadSHA, sha, "--"); err == nil && names != "" {
			esc.Changed = strings.Split(names, "\n")
		}
	}
	if err := e.ws.Reset(ctx); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if kept {
		esc.ParkedCommit = sha
	}
	// A dry run pushes nothing: the parked commit lives only in the workspace, which is removed at
	// the end, so there is no ref to name.
	if !e.o.DryRun && kept {
		esc.ParkedRef = e.ws.ParkedRef(e.key(t.ID))
	}
	return e.markParked(ctx, t, esc)
}

func (e *engine) markParked(ctx context.Context, t *roadmap.Task, esc Escalation) error {
	r := e.results[t.ID]
	r.Status, r.Note = TaskParked, esc.Summary
	e.out.Parked = append(e.out.Parked, esc)
	return e.emit(ctx, e.taskEvent(EventTaskParked, t, Event{Attempt: esc.Attempts, Escalation: &esc, Message: esc.Summary}))
}

func (e *engine) skip(ctx context.Context, t *roadmap.Task, note string) error {
	r := e.results[t.ID]
	r.Status, r.Note = TaskSkipped, note
	if err := e.ws.DropParked(ctx, e.key(t.ID)); err != nil {
		e.o.Logger.Warn("runner: parked work not deleted", "task", t.ID, "err", err)
	}
	return e.emit(ctx, e.taskEvent(EventTaskSkipped, t, Event{Message: note}))
}

// finish fills in the outcome and reports the end of the run, also after an error: the final event
// is reported even when ctx was cancelled, so that a live view can print its summary.
func (e *engine) finish(ctx context.Context, runErr error) (Outcome, error) {
	e.out.Duration = time.Since(e.start)
	if e.rm != nil {
		e.out.Tasks = e.snapshot()
	}
	e.out.NoBranch = e.ws != nil && e.ws.Created && !e.pushed && !slices.ContainsFunc(e.out.Tasks, func(r TaskResult) bool { return r.Commit != "" })
	if runErr != nil {
		e.out.Status = StatusFailed
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
			e.out.Status = StatusAborted
		}
		e.out.Error = runErr.Error()
	}
	out := e.out
	if rerr := e.emit(context.WithoutCancel(ctx), Event{Type: EventRunFinished, Outcome: &out, Duration: out.Duration,
		Commit: out.Head, Message: string(out.Status)}); rerr != nil && runErr == nil {
		runErr = rerr
		out.Status, out.Error = StatusFailed, rerr.Error()
	}
	return out, runErr
}

func (e *engine) snapshot() []TaskResult {
	out := make([]TaskResult, 0, len(e.results))
	for _, id := range e.order() {
		if r, ok := e.results[id]; ok {
			out = append(out, *r)
		}
	}
	if r, ok := e.results[SyncTaskID]; ok && e.byID[SyncTaskID] == nil {
		out = append(out, *r)
	}
	return out
}

func (e *engine) taskEvent(typ EventType, t *roadmap.Task, ev Event) Event {
	ev.Type = typ
	ev.TaskID, ev.TaskTitle, ev.Phase = t.ID, t.Title, t.Phase
	return ev
}

// errReporter marks an error returned by the reporter, which stops the run as it is.
type errReporter struct{ err error }

func (e errReporter) Error() string { return "reporter: " + e.err.Error() }
func (e errReporter) Unwrap() error { return e.err }

func (e *engine) emit(ctx context.Context, ev Event) error {
	if e.o.Reporter == nil {
		return nil
	}
	ev.Time = time.Now().UTC()
	ev.RunID = e.o.RunID
	if ev.Branch == "" {
		ev.Branch = e.out.Branch
	}
	if err := e.o.Reporter.Report(ctx, ev); err != nil {
		return errReporter{err}
	}
	return nil
}
