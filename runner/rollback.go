package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/workspace"
)

// RevertConflictError is a rollback whose revert does not apply to the branch head.
type RevertConflictError = workspace.RevertConflictError

// RollbackOptions names the checkpoint to undo and where it is.
type RollbackOptions struct {
	// Repo is a clone URL or a local repository path.
	Repo string
	// TaskID is the task whose checkpoint is reverted, with every later done task that depends on it.
	TaskID string
	// Roadmap, Branch and Base are as for Run; Plan and PlanSource an external plan (an issue's);
	// TaskScope the plan's scope on a branch of several plans.
	Roadmap, Branch, Base string
	Plan                  []byte
	PlanSource            string
	TaskScope             string
	// RunID goes into the Akira-Run trailer of the revert commits.
	RunID   string
	Author  Identity
	WorkDir string
	Cache   *workspace.Cache
	GitAuth func(ctx context.Context) (string, error)
	// DryRun reverts in the workspace only: nothing is pushed.
	DryRun bool
	// RequestID, when set, names this rollback in an Akira-Rollback trailer of its revert commits, so
	// that the same request made again (a job retried after its push) finds its reverts on the branch
	// and reports them instead of failing or reverting anything twice.
	RequestID string
	// CommitAPI, when set, makes each revert commit through GitHub's API (which signs it), as for
	// the run's checkpoints where the base's rules require signed commits; nothing is pushed with git.
	CommitAPI workspace.CommitAPI
}

// TrailerRollback is "<request id> <reverted checkpoint>" on a revert commit of a named rollback.
const TrailerRollback = "Akira-Rollback"

// RevertedTask is one checkpoint a rollback undid.
type RevertedTask struct {
	ID, Title string
	// Checkpoint is the commit undone; Revert the commit that undoes it.
	Checkpoint, Revert string
}

// RollbackOutcome is what a rollback did: the reverts, newest checkpoint first, and the new head.
type RollbackOutcome struct {
	Branch   string
	Reverted []RevertedTask
	Head     string
}

// Rollback reverts the checkpoint of o.TaskID and of every done task that depends on it (directly or
// through others), newest first, as revert commits on the branch: the history stays, nothing is
// force-pushed. Each revert commit carries an Akira-Revert trailer, so that the next run finds those
// tasks pending (and unticks nothing by hand: reverting a checkpoint reverts its tick). All reverts
// are made before one push; a revert that conflicts pushes nothing and returns a
// *RevertConflictError naming the conflicting paths.
func Rollback(ctx context.Context, o RollbackOptions) (RollbackOutcome, error) {
	if o.TaskID == "" {
		return RollbackOutcome{}, fmt.Errorf("runner: %w: rollback needs a task id", ErrUsage)
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	ws, err := workspace.Clone(ctx, workspace.Options{Remote: o.Repo, Base: o.Base, WorkDir: o.WorkDir, Auth: o.GitAuth,
		Author: o.Author, Cache: o.Cache, DryRun: o.DryRun})
	if err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
	}
	defer ws.Close()
	repoCfg, _, err := config.LoadRepo(ctx, ws.ReadBase)
	if err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
	}
	path := o.Roadmap
	if path == "" {
		path = repoCfg.Roadmap
	}
	if path == "" {
		path = DefaultRoadmap
	}
	path = filepath.ToSlash(filepath.Clean(path))
	branch := o.Branch
	if branch == "" {
		branch = DefaultBranch(repoCfg.BranchPrefix, path)
	}
	if err := ws.Checkout(ctx, branch); err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
	}
	if ws.Created {
		return RollbackOutcome{}, fmt.Errorf("runner: %w: branch %s does not exist: there is nothing to roll back", ErrUsage, branch)
	}
	name, data := o.PlanSource, o.Plan
	if data == nil {
		name = path
		if data, err = ws.ReadFile(path); errors.Is(err, os.ErrNotExist) {
			return RollbackOutcome{}, fmt.Errorf("runner: %w: %s not found on branch %s", ErrInvalidPlan, path, branch)
		} else if err != nil {
			return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
		}
	}
	rm, err := roadmap.Parse(name, data)
	if err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: %w: %w", ErrInvalidPlan, err)
	}
	if rm.Task(o.TaskID) == nil {
		return RollbackOutcome{}, fmt.Errorf("runner: %w: no task %s in %s", ErrUsage, o.TaskID, name)
	}
	key := func(id string) string {
		if o.TaskScope == "" {
			return id
		}
		return o.TaskScope + "#" + id
	}
	// The same request made again finds its reverts. Through the API each revert is a commit of its
	// own, so a request that failed between two (GitHub answering 5xx, the worker killed) left some:
	// it goes on with the rest; one that finished has nothing left and reports them.
	var prev []RevertedTask
	if o.RequestID != "" {
		if prev, err = earlierRollback(ctx, ws, o.RequestID, rm); err != nil {
			return RollbackOutcome{}, err
		}
	}
	done, err := ws.Checkpoints(ctx, TrailerTask, TrailerRevert)
	if err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
	}
	if done[key(o.TaskID)] == "" {
		if len(prev) > 0 {
			return RollbackOutcome{Branch: branch, Reverted: prev, Head: ws.Head()}, nil
		}
		return RollbackOutcome{}, fmt.Errorf("runner: %w: task %s has no checkpoint on %s", ErrUsage, o.TaskID, branch)
	}
	// The task and its dependents, transitively; of those, the ones with a checkpoint.
	undo := map[string]bool{o.TaskID: true}
	for changed := true; changed; {
		changed = false
		for _, t := range rm.Tasks {
			if undo[t.ID] {
				continue
			}
			for _, d := range t.Depends {
				if undo[d] {
					undo[t.ID], changed = true, true
					break
				}
			}
		}
	}
	order, err := ws.Git(ctx, "rev-list", "refs/remotes/origin/"+ws.Base+"..HEAD")
	if err != nil {
		return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
	}
	newestFirst := strings.Fields(order)
	var targets []RevertedTask
	for _, t := range rm.Tasks {
		if sha := done[key(t.ID)]; undo[t.ID] && sha != "" {
			targets = append(targets, RevertedTask{ID: t.ID, Title: t.Title, Checkpoint: sha})
		}
	}
	slices.SortFunc(targets, func(a, b RevertedTask) int {
		return slices.Index(newestFirst, a.Checkpoint) - slices.Index(newestFirst, b.Checkpoint)
	})
	out := RollbackOutcome{Branch: branch, Reverted: prev}
	current := rm
	for _, t := range targets {
		msg := fmt.Sprintf("akira: revert %s %s\n\nRolled back: this checkpoint is undone and the task is pending again.\n\n%s: %s\n%s: %s\n",
			t.ID, t.Title, TrailerRun, o.RunID, TrailerRevert, key(t.ID))
		if o.RequestID != "" {
			msg += fmt.Sprintf("%s: %s %s\n", TrailerRollback, o.RequestID, t.Checkpoint)
		}
		planFile := ""
		if o.Plan == nil {
			planFile = path
		}
		id := t.ID
		// The plan must come out with this task open and every other task as it was.
		check := func() error {
			if planFile == "" {
				return nil
			}
			data, err := ws.ReadFile(planFile)
			if err != nil {
				return err
			}
			after, err := roadmap.Parse(planFile, data)
			if err != nil {
				return err
			}
			for _, a := range after.Tasks {
				b := current.Task(a.ID)
				switch {
				case a.ID == id && a.Done:
					return fmt.Errorf("%s is still ticked", id)
				case a.ID != id && b != nil && a.Done != b.Done:
					return fmt.Errorf("the revert changed the box of %s", a.ID)
				}
			}
			current = after
			return nil
		}
		sha, err := ws.Revert(ctx, t.Checkpoint, msg, planFile, check)
		if err != nil {
			return RollbackOutcome{}, fmt.Errorf("runner: rollback %s: %w", t.ID, err)
		}
		if o.CommitAPI != nil {
			// One API commit per revert, each on GitHub's last: the workspace then stands on it.
			if sha, err = ws.PushAPI(ctx, o.CommitAPI); err != nil {
				return RollbackOutcome{}, fmt.Errorf("runner: rollback %s: %w", t.ID, err)
			}
		}
		t.Revert = sha
		out.Reverted = append(out.Reverted, t)
	}
	if o.CommitAPI == nil {
		if err := ws.Push(ctx); err != nil {
			return RollbackOutcome{}, fmt.Errorf("runner: rollback: %w", err)
		}
	}
	out.Head = ws.Head()
	return out, nil
}

// earlierRollback returns the reverts a rollback named requestID already made on the branch, in the
// order it made them (none when it made none).
func earlierRollback(ctx context.Context, ws *workspace.Workspace, requestID string, rm *roadmap.Roadmap) ([]RevertedTask, error) {
	commits, err := ws.Trailers(ctx, TrailerRollback)
	if err != nil {
		return nil, fmt.Errorf("runner: rollback: %w", err)
	}
	var out []RevertedTask
	for _, c := range commits {
		for _, v := range c.Values {
			id, checkpoint, ok := strings.Cut(v, " ")
			if !ok || id != requestID {
				continue
			}
			subject, err := ws.Git(ctx, "log", "-1", "--format=%s", c.SHA)
			if err != nil {
				return nil, fmt.Errorf("runner: rollback: %w", err)
			}
			rt := RevertedTask{Checkpoint: checkpoint, Revert: c.SHA}
			// "akira: revert <id> <title>"
			rest := strings.TrimPrefix(subject, "akira: revert ")
			rt.ID, rt.Title, _ = strings.Cut(rest, " ")
			if t := rm.Task(rt.ID); t != nil {
				rt.Title = t.Title
			}
			out = append(out, rt)
		}
	}
	return out, nil
}
