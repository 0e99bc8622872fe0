package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/workspace"
)

// StatusOptions names the branch whose progress BranchStatus reads.
type StatusOptions struct {
	// Repo is a clone URL or a local repository path.
	Repo string
	// Roadmap is the plan's path (empty: roadmap of .github/akira.yml, else ROADMAP.md); Branch the
	// branch (empty: the one `akira run` would use); Base its base (empty: the default branch).
	Roadmap, Branch, Base string
	WorkDir               string
	// Cache, when set, makes the clone from a local mirror of a network remote.
	Cache   *workspace.Cache
	GitAuth func(ctx context.Context) (string, error)
}

// BranchReport is where a branch stands: each task of the plan done (with its checkpoint), parked
// (with its parked work) or pending.
type BranchReport struct {
	Branch, Base, Roadmap string
	// Exists says the branch is on the remote; a missing branch has everything still to do.
	Exists bool
	Tasks  []TaskResult
	// Synced is the base commit the branch was last brought up to date with ("<base>@<sha>", the
	// newest Akira-Sync trailer); "" when its base was never merged into it.
	Synced string
}

// BranchStatus reads a branch's progress from the remote alone: the plan as it is on the branch, the
// Akira-Task trailers of its checkpoints, and the parked refs of its tasks. Nothing is changed.
func BranchStatus(ctx context.Context, o StatusOptions) (BranchReport, error) {
	ws, err := workspace.Clone(ctx, workspace.Options{Remote: o.Repo, Base: o.Base, WorkDir: o.WorkDir, Auth: o.GitAuth, DryRun: true, Cache: o.Cache})
	if err != nil {
		return BranchReport{}, fmt.Errorf("runner: status: %w", err)
	}
	defer ws.Close()
	repoCfg, _, err := config.LoadRepo(ctx, ws.ReadBase)
	if err != nil {
		return BranchReport{}, fmt.Errorf("runner: status: %w", err)
	}
	rep := BranchReport{Roadmap: o.Roadmap, Branch: o.Branch, Base: ws.Base}
	if rep.Roadmap == "" {
		rep.Roadmap = repoCfg.Roadmap
	}
	if rep.Roadmap == "" {
		rep.Roadmap = DefaultRoadmap
	}
	rep.Roadmap = filepath.ToSlash(filepath.Clean(rep.Roadmap))
	if rep.Branch == "" {
		rep.Branch = DefaultBranch(repoCfg.BranchPrefix, rep.Roadmap)
	}
	if err := ws.Checkout(ctx, rep.Branch); err != nil {
		return BranchReport{}, fmt.Errorf("runner: status: %w", err)
	}
	rep.Exists = !ws.Created
	data, err := ws.ReadFile(rep.Roadmap)
	if errors.Is(err, os.ErrNotExist) {
		return BranchReport{}, fmt.Errorf("runner: %w: %s not found on branch %s", ErrInvalidPlan, rep.Roadmap, rep.Branch)
	}
	if err != nil {
		return BranchReport{}, fmt.Errorf("runner: status: %w", err)
	}
	rm, err := roadmap.Parse(rep.Roadmap, data)
	if err != nil {
		return BranchReport{}, fmt.Errorf("runner: %w: %w", ErrInvalidPlan, err)
	}
	doneBy, err := ws.Checkpoints(ctx, TrailerTask, TrailerRevert)
	if err != nil {
		return BranchReport{}, fmt.Errorf("runner: status: %w", err)
	}
	if !ws.Created {
		synced, err := ws.Git(ctx, "log", "--format=%(trailers:key="+TrailerSync+",valueonly)", "refs/remotes/origin/"+ws.Base+"..HEAD")
		if err != nil {
			return BranchReport{}, fmt.Errorf("runner: status: %w", err)
		}
		for _, line := range strings.Split(synced, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				rep.Synced = line // newest first
				break
			}
		}
	}
	for _, t := range rm.Tasks {
		r := TaskResult{ID: t.ID, Title: t.Title, Phase: t.Phase, Status: TaskPending}
		switch {
		case doneBy[t.ID] != "":
			r.Status, r.Commit = TaskDone, doneBy[t.ID]
		case t.Done:
			r.Status, r.Note = TaskDone, "ticked in the roadmap"
		case ws.Parked(t.ID) != "":
			r.Status, r.Note = TaskParked, "parked work at "+ws.ParkedRef(t.ID)
		}
		rep.Tasks = append(rep.Tasks, r)
	}
	return rep, nil
}
