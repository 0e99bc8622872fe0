package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Checkpoints returns, for each task named by a doneKey trailer on the branch (beyond the base),
// the commit of its latest checkpoint, unless a later commit names it in an undoneKey trailer (a
// rollback): history is read oldest first, so the last word on a task wins.
func (w *Workspace) Checkpoints(ctx context.Context, doneKey, undoneKey string) (map[string]string, error) {
	out, err := w.Git(ctx, "log", "--reverse",
		"--format=%H%x1f%(trailers:key="+doneKey+",valueonly,separator=%x1d)%x1f%(trailers:key="+undoneKey+",valueonly,separator=%x1d)%x1e",
		"refs/remotes/origin/"+w.Base+"..HEAD")
	if err != nil {
		return nil, fmt.Errorf("workspace: read trailers: %w", err)
	}
	done := map[string]string{}
	for _, rec := range strings.Split(out, "\x1e") {
		fields := strings.Split(strings.TrimSpace(rec), "\x1f")
		if len(fields) < 3 || fields[0] == "" {
			continue
		}
		for _, id := range strings.Split(fields[1], "\x1d") {
			if id = strings.TrimSpace(id); id != "" {
				done[id] = fields[0]
			}
		}
		for _, id := range strings.Split(fields[2], "\x1d") {
			if id = strings.TrimSpace(id); id != "" {
				delete(done, id)
			}
		}
	}
	return done, nil
}

// RevertConflictError is a revert that does not apply to the branch head: the paths in conflict and
// the conflicted diff (capped).
type RevertConflictError struct {
	Commit string
	Paths  []string
	Diff   string
}

func (e *RevertConflictError) Error() string {
	return fmt.Sprintf("reverting %s conflicts in %s", short(e.Commit), strings.Join(e.Paths, ", "))
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Revert makes a commit on the branch that undoes commit, with message, and returns it. planPath,
// when set, is the plan file whose checkboxes the commit ticked: its lines are reverted by position
// alone (no context), since the neighbouring boxes were ticked by later checkpoints and a
// line-context merge would take those for a conflict; check, when set, then says whether the plan
// came out as intended. A revert that conflicts leaves the workspace at its last checkpoint and
// returns a *RevertConflictError.
func (w *Workspace) Revert(ctx context.Context, commit, message, planPath string, check func() error) (string, error) {
	if !shaRE.MatchString(commit) {
		return "", fmt.Errorf("workspace: revert: %q is not a commit id", commit)
	}
	_, rerr := w.Git(ctx, "revert", "--no-commit", "--no-edit", commit)
	conflict := &RevertConflictError{Commit: commit}
	if out, derr := w.run(ctx, w.Dir, false, "diff", "--name-only", "--diff-filter=U", "-z"); derr == nil {
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				conflict.Paths = append(conflict.Paths, p)
			}
		}
	}
	fail := func(cause error) (string, error) {
		if out, derr := w.run(ctx, w.Dir, false, "diff", "--no-ext-diff"); derr == nil {
			conflict.Diff = string(out)
			if len(conflict.Diff) > 16<<10 {
				conflict.Diff = conflict.Diff[:16<<10] + "\n… (cut)\n"
			}
		}
		_, _ = w.Git(ctx, "revert", "--abort")
		if err := w.Reset(ctx); err != nil {
			return "", errors.Join(conflict, err)
		}
		if len(conflict.Paths) == 0 {
			return "", fmt.Errorf("workspace: revert %s: %w", short(commit), cause)
		}
		return "", conflict
	}
	onlyPlan := planPath != "" && len(conflict.Paths) > 0 && !slices.ContainsFunc(conflict.Paths, func(p string) bool { return p != planPath })
	if rerr != nil && !onlyPlan {
		return fail(rerr)
	}
	if planPath != "" {
		patch, err := w.run(ctx, w.Dir, false, "diff", "--no-ext-diff", "-U0", "--binary", commit+"^", commit, "--", planPath)
		if err != nil {
			return fail(err)
		}
		if len(patch) > 0 {
			if _, err := w.Git(ctx, "checkout", "HEAD", "--", planPath); err != nil {
				return fail(err)
			}
			if _, err := w.exec(ctx, w.Dir, false, strings.NewReader(string(patch)), "apply", "--reverse", "--unidiff-zero", "--index", "-"); err != nil {
				conflict.Paths = []string{planPath}
				return fail(err)
			}
		}
	}
	if check != nil {
		if err := check(); err != nil {
			if len(conflict.Paths) == 0 {
				conflict.Paths = []string{planPath}
			}
			return fail(err)
		}
	}
	sha, err := w.Commit(ctx, message)
	// A revert leaves its state behind for `git commit` to finish; Akira's commit may not be that one.
	_, _ = w.Git(ctx, "revert", "--quit")
	return sha, err
}
