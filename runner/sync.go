package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/runner/workspace"
)

// Bringing the branch up to date with its base while the run works. When Options.BaseMoved says the
// base advanced, the engine merges the base into the branch before the next task (and once more after
// the last one, before the caller marks the pull request ready): checkpoints already pushed are never
// rewritten. A clean merge is verified like a task (the repository's verification) and pushed as a
// merge commit with an Akira-Sync trailer; a merge that conflicts, or fails verification, becomes the
// task SyncTaskID: the agent gets the conflicting hunks, every side quoted as data, resolves them, and
// the result is verified and pushed like a checkpoint. Its escalation, decisions (retry, skip, abort,
// approve) and parked work are those of any task.

// SyncTaskID is the task that brings the branch up to date with its base: its events, its escalation
// and the decisions about it carry this id.
const SyncTaskID = "sync"

// TrailerSync names, on a merge commit, the base commit the branch was brought up to date with:
// "<base branch>@<sha>".
const TrailerSync = "Akira-Sync"

// syncTask is the task the sync runs as.
func (e *engine) syncTask() *roadmap.Task {
	return &roadmap.Task{ID: SyncTaskID, Title: "Bring " + e.ws.Branch + " up to date with " + e.ws.Base}
}

// syncBase merges the base into the branch when the caller says it moved. It returns errAborted on an
// abort decision; a sync left parked halts the run (no task starts on a branch that cannot take the
// base).
func (e *engine) syncBase(ctx context.Context) error {
	if !e.canSync() || e.syncSkipped || e.halted != "" {
		return nil
	}
	// BaseMoved is asked unless prepare asked it already (syncDue); a decision waiting about the sync
	// goes on whatever it says.
	moved := e.syncDue
	e.syncDue = false
	if !moved {
		moved = e.o.BaseMoved(ctx)
	}
	if !moved && !e.syncDecisionWaits() {
		return nil
	}
	s, err := e.ws.MergeBase(ctx)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if s.UpToDate() {
		return nil
	}
	e.syncing = &s
	defer func() { e.syncing, e.syncNote, e.syncPlan = nil, "", nil }()
	t := e.syncTask()
	r := &TaskResult{ID: t.ID, Title: t.Title, Status: TaskPending}
	e.results[SyncTaskID] = r
	e.taskStart = time.Now()
	if err := e.emit(ctx, e.taskEvent(EventTaskStarted, t, Event{MaxAttempts: e.o.MaxAttempts,
		Message: "the base moved: merging " + e.ws.Base + "@" + shortSHA(s.Base)})); err != nil {
		return err
	}
	if err := e.resolvePlanConflict(ctx); err != nil {
		return err
	}
	var guide Decision
	if d, ok := e.o.Decisions[SyncTaskID]; ok && !e.syncDecided {
		e.syncDecided = true
		if err := e.emit(ctx, e.taskEvent(EventTaskDecided, t, Event{Decision: &d})); err != nil {
			return err
		}
		switch d.Kind {
		case DecisionSkip:
			e.syncSkipped = true
			if err := e.ws.Reset(ctx); err != nil {
				return fmt.Errorf("runner: %w", err)
			}
			return e.skip(ctx, t, "the branch was left behind "+e.ws.Base+" by decision")
		case DecisionAbort:
			_ = e.ws.Reset(ctx)
			return errAborted
		case DecisionApprove:
			return e.approveSync(ctx, t)
		case DecisionRetry:
			guide = d
		case DecisionPark, "":
			_ = e.ws.Reset(ctx)
			e.halted = "the branch could not be brought up to date with " + e.ws.Base
			esc := Escalation{TaskID: t.ID, Title: t.Title, Reason: "awaiting_decision", Summary: "kept parked until a decision",
				HeadSHA: e.ws.Head()}
			return e.markParked(ctx, t, esc)
		}
	}
	if len(e.syncing.Conflicts) == 0 && guide.Kind == "" {
		f, err := e.verifySync(ctx, t)
		if err != nil || f == nil {
			return err
		}
		// The merge is clean but the merged tree fails verification: the agent fixes it.
		e.syncNote = f.text(0)
	}
	return e.attempts(ctx, t, guide)
}

// canSync says this run may merge its base: the caller asks about the base (Options.BaseMoved), the
// repository did not turn syncing off, and the run is not one task's rerun.
func (e *engine) canSync() bool {
	return e.o.BaseMoved != nil && !e.syncOff && e.o.only == nil
}

// syncDecisionWaits says a person's decision about the sync task is still to be acted on: a sync left
// parked by an earlier job goes on (or stays parked) whatever BaseMoved says now.
func (e *engine) syncDecisionWaits() bool {
	_, ok := e.o.Decisions[SyncTaskID]
	return ok && !e.syncDecided
}

// syncWanted says, before any task, whether a job with no task left has a sync to do; the answer of
// BaseMoved is kept for the sync itself (syncDue), so the caller is asked once.
func (e *engine) syncWanted(ctx context.Context) bool {
	if !e.canSync() {
		return false
	}
	if e.syncDue || e.syncDecisionWaits() {
		return true
	}
	e.syncDue = e.o.BaseMoved(ctx)
	return e.syncDue
}

// verifySync runs the repository's verification on the merged tree and, when it passes, commits and
// pushes the merge. It returns the failure otherwise.
func (e *engine) verifySync(ctx context.Context, t *roadmap.Task) (*failure, error) {
	plan := verify.Choose(e.ws.Dir, nil, e.o.Verify)
	if err := e.emit(ctx, e.taskEvent(EventVerifyStarted, t, Event{VerifyPlan: &plan, Message: plan.Describe()})); err != nil {
		return nil, err
	}
	home, err := e.ws.Scratch("home-verify")
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	results, blocked, err := e.runVerify(ctx, plan, home)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := e.emit(ctx, e.taskEvent(EventVerifyFinished, t, Event{Verify: results, Blocked: blocked})); err != nil {
		return nil, err
	}
	if !verify.Passed(results) {
		return &failure{verify: results}, nil
	}
	return e.checkpointSync(ctx, t, checkpointInfo{plan: plan, verify: results})
}

// approveSync takes the parked resolution of an earlier run as the merge, unverified, as a person decided.
func (e *engine) approveSync(ctx context.Context, t *roadmap.Task) error {
	parked := e.ws.Parked(e.key(SyncTaskID))
	if parked == "" {
		return fmt.Errorf("runner: approve %s: no parked resolution on %s", SyncTaskID, e.ws.Branch)
	}
	if _, err := e.ws.Git(ctx, "read-tree", "-u", "--reset", parked); err != nil {
		return fmt.Errorf("runner: approve %s: %w", SyncTaskID, err)
	}
	f, err := e.checkpointSync(ctx, t, checkpointInfo{approved: true})
	if err != nil {
		return err
	}
	if f != nil {
		return fmt.Errorf("runner: approve %s: the parked resolution cannot be the merge: %s", SyncTaskID, f.summary())
	}
	return nil
}

// resetSync puts the workspace back at the last checkpoint with the base merged in again, for another
// attempt at the sync.
func (e *engine) resetSync(ctx context.Context) error {
	if err := e.ws.Reset(ctx); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	s, err := e.ws.MergeBase(ctx)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if s.UpToDate() {
		return errors.New("runner: the base is merged already (someone else brought the branch up to date)")
	}
	*e.syncing = s
	return e.resolvePlanConflict(ctx)
}

// resetFor is Reset between the attempts of a task.
func (e *engine) resetFor(ctx context.Context, t *roadmap.Task) error {
	if t.ID == SyncTaskID && e.syncing != nil {
		return e.resetSync(ctx)
	}
	if err := e.ws.Reset(ctx); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}

// resolvePlanConflict settles a conflict in the plan file, which is Akira's own (boxes the branch
// ticked against lines the base changed): the base's plan is taken and the branch's done tasks are
// ticked in it again. A plan that cannot be ticked stays a conflict for the agent.
func (e *engine) resolvePlanConflict(ctx context.Context) error {
	if e.roadmapPath == "" || e.syncing == nil {
		return nil
	}
	i := slices.IndexFunc(e.syncing.Conflicts, func(c workspace.Conflict) bool { return c.Path == e.roadmapPath })
	if i < 0 {
		return nil
	}
	data, ok, err := e.ws.ReadBase(ctx, e.roadmapPath)
	if err != nil || !ok {
		return nil
	}
	rm, err := roadmap.ParseAs(e.source, data, e.o.Convention)
	if err != nil {
		return nil
	}
	for id, r := range e.results {
		if r.Status != TaskDone || id == SyncTaskID {
			continue
		}
		if t := rm.Task(id); t != nil && !t.Done {
			ticked, err := roadmap.Tick(rm, data, id)
			if err != nil {
				return nil
			}
			data = ticked
			if rm, err = roadmap.ParseAs(e.source, data, e.o.Convention); err != nil {
				return nil
			}
		}
	}
	if err := e.ws.WriteFile(e.roadmapPath, data); err != nil {
		return nil
	}
	e.syncPlan = data
	if _, err := e.ws.Git(ctx, "add", "--", e.roadmapPath); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	e.syncing.Conflicts = slices.Delete(e.syncing.Conflicts, i, i+1)
	return nil
}

// checkpointSync commits the verified merge and pushes it. Only what is in neither parent is the
// agent's own work, and only that is held to the protected paths and the plan file.
func (e *engine) checkpointSync(ctx context.Context, t *roadmap.Task, info checkpointInfo) (*failure, error) {
	s := e.syncing
	if _, err := e.ws.Stage(ctx); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	own, err := e.ownMergeChanges(ctx, s.Base)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, p := range own {
		if config.MatchAny(e.o.ProtectedPaths, p) {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		return &failure{protected: bad}, nil
	}
	if e.roadmapPath != "" && slices.Contains(own, e.roadmapPath) {
		// The plan Akira settled itself is in neither parent, and is not the agent's.
		if cur, err := e.ws.ReadFile(e.roadmapPath); err != nil || e.syncPlan == nil || !bytes.Equal(cur, e.syncPlan) {
			return &failure{roadmapErr: fmt.Sprintf("the roadmap %s was changed during the attempt; only Akira edits it", e.roadmapPath)}, nil
		}
	}
	sha, err := e.ws.CommitMerge(ctx, *s, e.syncMessage(s, info))
	if err != nil {
		if strings.Contains(err.Error(), "unmerged") || strings.Contains(err.Error(), "conflict markers") {
			return &failure{merge: err.Error()}, nil
		}
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := e.push(ctx); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	sha = e.ws.Head()
	if e.roadmapPath != "" {
		// The plan may have changed with the base: ticks from here on work on the merged file.
		if data, err := e.ws.ReadFile(e.roadmapPath); err == nil {
			if rm, err := roadmap.ParseAs(e.source, data, e.o.Convention); err == nil {
				e.rm, e.roadmapData = rm, data
				e.indexTasks()
				e.keepKnownTasks()
			}
		}
	}
	if err := e.ws.DropParked(ctx, e.key(SyncTaskID)); err != nil {
		e.o.Logger.Warn("runner: parked work not deleted", "task", SyncTaskID, "err", err)
	}
	var files []string
	for _, c := range s.Conflicts {
		files = append(files, c.Path)
	}
	r := e.results[SyncTaskID]
	r.Status, r.Commit = TaskDone, sha
	r.Note = "brought up to date with " + e.ws.Base + "@" + shortSHA(s.Base)
	if info.approved {
		r.Note += " (approved without passing verification)"
	}
	e.out.Head = sha
	e.out.Synced = append(e.out.Synced, e.ws.Base+"@"+s.Base)
	return nil, e.emit(ctx, e.taskEvent(EventTaskCheckpointed, t, Event{Attempt: r.Attempts, Commit: sha, Changed: files,
		Verify: info.verify, Duration: r.Duration, Usage: &r.Usage, Message: r.Note, BaseCommit: s.Base}))
}

// keepKnownTasks keeps the run to the tasks it started with after a merge changed the plan: a task the
// base added is left to a later run (a follow-up on the same pull request), not started in this one.
func (e *engine) keepKnownTasks() {
	for _, id := range e.order() {
		if _, ok := e.results[id]; !ok {
			t := e.task(id)
			e.results[id] = &TaskResult{ID: id, Title: t.Title, Phase: t.Phase, Status: TaskSkipped,
				Note: "added to the plan on " + e.ws.Base + " while this run worked; a follow-up run takes it"}
		}
	}
}

// ownMergeChanges are the staged paths whose content is in neither parent of the merge: the agent's.
func (e *engine) ownMergeChanges(ctx context.Context, base string) ([]string, error) {
	vs := func(rev string) (map[string]bool, error) {
		out, err := e.ws.Git(ctx, "diff", "--cached", "--name-only", "--no-renames", "-z", rev)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		m := map[string]bool{}
		for _, p := range strings.Split(out, "\x00") {
			if p != "" {
				m[p] = true
			}
		}
		return m, nil
	}
	fromHead, err := vs(e.ws.Head())
	if err != nil {
		return nil, err
	}
	fromBase, err := vs(base)
	if err != nil {
		return nil, err
	}
	var own []string
	for p := range fromHead {
		if fromBase[p] {
			own = append(own, p)
		}
	}
	slices.Sort(own)
	return own, nil
}

// syncMessage is the merge commit's message: what was merged, how it was verified, and the trailers
// that say so (Akira-Sync beside Akira-Run).
func (e *engine) syncMessage(s *workspace.Sync, info checkpointInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "akira: bring %s up to date with %s\n\n", e.ws.Branch, e.ws.Base)
	fmt.Fprintf(&b, "Merges %s@%s into the branch; the checkpoints before it are unchanged.\n", e.ws.Base, shortSHA(s.Base))
	if len(s.Conflicts) > 0 {
		b.WriteString("Conflicts resolved in:\n")
		for _, c := range s.Conflicts {
			fmt.Fprintf(&b, "- %s\n", strconv.Quote(c.Path))
		}
	}
	switch {
	case info.approved:
		b.WriteString("Approved by a human without passing verification.\n")
	case len(info.verify) == 0:
		b.WriteString("No verification: no verify commands were configured and none could be detected.\n")
	default:
		b.WriteString("Verified by:\n")
		for _, r := range info.verify {
			fmt.Fprintf(&b, "- %s\n", oneLine(r.Command))
		}
	}
	fmt.Fprintf(&b, "\n%s: %s\n%s: %s@%s\n", TrailerRun, e.o.RunID, TrailerSync, e.ws.Base, s.Base)
	return b.String()
}

// syncPrompt is the section of the sync task's prompt that says what to resolve, with every side of
// each conflicting hunk quoted as data.
func (e *engine) syncPrompt() string {
	if e.syncing == nil {
		return ""
	}
	return syncSection(e.ws.Branch, e.ws.Base, e.syncing.Base, e.syncing.Conflicts, e.syncNote)
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
