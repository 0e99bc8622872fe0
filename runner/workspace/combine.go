package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Combine puts the last checkpoint's change on top of the remote branch's head when someone else
// (a task running beside this one) pushed meanwhile: the workspace is reset to the remote head and
// the change is applied there, staged and not committed, for the caller to verify and commit. It
// returns moved=false when the remote head is the one this workspace last pushed (nothing to do).
// planPath, when set, is the plan file: its version is taken from the remote head (the caller ticks
// its box again), since neighbouring boxes ticked by the other task would make a line-context merge
// conflict. A change that conflicts elsewhere leaves the workspace at the remote head without it and
// returns the conflicting paths.
func (w *Workspace) Combine(ctx context.Context, planPath string) (moved bool, conflicts []string, err error) {
	head, err := w.remoteHead(ctx)
	if err != nil {
		return false, nil, err
	}
	if head == w.pushed {
		return false, nil, nil
	}
	mine := w.checkpoint
	// Our commit must sit directly on what we last pushed; anything else is not ours to move.
	if parent, err := w.Git(ctx, "rev-parse", mine+"^"); err != nil || parent != w.pushed {
		return false, nil, fmt.Errorf("workspace: combine: the checkpoint %s does not follow the pushed head", short(mine))
	}
	if _, err := w.Git(ctx, "merge-base", "--is-ancestor", w.pushed, head); err != nil {
		return false, nil, fmt.Errorf("workspace: %s was rewritten on the remote: %w", w.Branch, ErrPushRejected)
	}
	w.checkpoint, w.pushed = head, head
	if err := w.Reset(ctx); err != nil {
		return false, nil, err
	}
	_, perr := w.Git(ctx, "cherry-pick", "--no-commit", mine)
	if out, err := w.run(ctx, w.Dir, false, "diff", "--name-only", "--diff-filter=U", "-z"); err == nil {
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				conflicts = append(conflicts, p)
			}
		}
	}
	onlyPlan := planPath != "" && len(conflicts) > 0 && !slices.ContainsFunc(conflicts, func(p string) bool { return p != planPath })
	if perr != nil && !onlyPlan {
		_, _ = w.Git(ctx, "cherry-pick", "--abort")
		if err := w.Reset(ctx); err != nil {
			return true, nil, err
		}
		if len(conflicts) == 0 {
			return true, nil, fmt.Errorf("workspace: combine: %w", perr)
		}
		// The plan's boxes are Akira's to tick again: not the agent's conflict.
		return true, slices.DeleteFunc(conflicts, func(p string) bool { return p == planPath }), nil
	}
	if planPath != "" {
		if _, err := w.Git(ctx, "checkout", "HEAD", "--", planPath); err != nil {
			return true, nil, fmt.Errorf("workspace: combine: %w", err)
		}
	}
	_, _ = w.Git(ctx, "cherry-pick", "--quit")
	return true, nil, nil
}

// Sync moves the workspace to the remote branch's head (others pushed to it: a parallel run's
// workers) and takes that as its checkpoint.
func (w *Workspace) Sync(ctx context.Context) error {
	head, err := w.remoteHead(ctx)
	if err != nil {
		return err
	}
	w.checkpoint, w.pushed = head, head
	return w.Reset(ctx)
}

// remoteHead fetches the run branch and returns its head on the remote.
func (w *Workspace) remoteHead(ctx context.Context) (string, error) {
	ref := "refs/heads/" + w.Branch
	if out, err := w.remote(ctx, w.Dir, "fetch", "--quiet", "--no-tags", "--", w.opts.Remote, "+"+ref+":refs/remotes/origin/"+w.Branch); err != nil {
		// A deleted branch fails the fetch itself: it is the branch moving under the run, not a
		// network error to retry.
		if strings.Contains(out, "couldn't find remote ref") {
			return "", fmt.Errorf("workspace: %s is gone from the remote: %w", w.Branch, ErrPushRejected)
		}
		return "", fmt.Errorf("workspace: fetch %s: %w", w.Branch, err)
	}
	head, err := w.Git(ctx, "rev-parse", "--verify", "refs/remotes/origin/"+w.Branch+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("workspace: %s is gone from the remote: %w", w.Branch, ErrPushRejected)
	}
	return head, nil
}
