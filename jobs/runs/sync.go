package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
)

// The base branch moves under a run. The engine merges the base into the branch before its next task
// and once more after its last (runner.Hooks.BaseMoved, runner/sync.go); what the App adds is knowing
// when the base moved:
//   - the push webhook of the base marks every branch standing on it (intake: onPush; store.Bases);
//     a run job records that its branch stands on its base when it starts;
//   - the pull request's mergeable_state, read when the job starts, marks the branch when GitHub says
//     its merge conflicts (dirty) or that it is behind;
//   - before the pull request is marked ready (the run's end, or its CI's green), the compare API says
//     whether the branch lacks commits of its base: if so the pull request stays a draft, the branch
//     is marked and the run continues with a job that merges the base first.
//
// A mark is only a reason to ask GitHub: BaseMoved says yes when the compare API finds the branch
// behind its base, and clears the mark (compare-and-delete, so a push landing meanwhile keeps its
// own) when it does not. The mark lives in Redis, so a worker that dies before the merge leaves it to
// the job that continues the run; it is per branch, so a follow-up run on the same pull request sees
// a base that moved while no run worked. `sync: off` in .github/akira.yml turns all of it off.

// baseWatch is one run job's view of its base branch.
type baseWatch struct {
	bases *store.Bases
	gh    ports.Bases
	// run is the run's record: as the job read it, then as it ended (ended).
	run *lifecycle.Run
	log *slog.Logger
	// skipped says a person had left the branch behind its base before this job.
	skipped bool
}

func newBaseWatch(bases *store.Bases, gh ports.Bases, run *lifecycle.Run, log *slog.Logger) *baseWatch {
	return &baseWatch{bases: bases, gh: gh, run: run, log: log}
}

// start records that the branch stands on its base and reads what the pull request's mergeable_state
// says of it (pr is the pull request as the job read it; nil when the run has none yet).
func (w *baseWatch) start(ctx context.Context, pr *ports.PullRequest) {
	r := w.run
	if r.SyncOff || r.Branch == "" || r.Base == "" || r.Branch == r.Base {
		return
	}
	w.skipped = syncSkipped(r)
	if err := w.bases.WatchBase(ctx, r.Owner, r.Repo, r.Base, r.Branch); err != nil {
		w.log.Warn("run job: the branch's base is not watched; its pull request's state before it turns ready is", "err", err)
	}
	if pr == nil || w.skipped {
		return
	}
	if s := pr.MergeableState; s == ports.MergeStateDirty || s == ports.MergeStateBehind {
		// A mark already there says as much, and may be the one beforeReady left: replacing it
		// would lose that a job already tried to merge this base.
		mark, err := w.bases.BaseMark(ctx, r.Owner, r.Repo, r.Branch)
		if err == nil && mark == "" {
			w.log.Info("run job: the pull request's merge is "+s+"; the base is merged before the next task", "pr", pr.Number)
			err = w.bases.MarkBaseMoved(ctx, r.Owner, r.Repo, r.Branch, "mergeable_state "+s+" at "+pr.HeadSHA)
		}
		if err != nil {
			w.log.Warn("run job: the pull request's mergeable_state not kept", "err", err)
		}
	}
}

// moved is the engine's runner.Hooks.BaseMoved: the branch is marked and GitHub finds it behind its
// base. A mark it cannot check is left to the engine, which merges only what is there to merge.
func (w *baseWatch) moved(ctx context.Context) bool {
	r := w.run
	mark, err := w.bases.BaseMark(ctx, r.Owner, r.Repo, r.Branch)
	if err != nil {
		w.log.Warn("run job: the base's mark unread; the pull request's state before it turns ready says", "err", err)
		return false
	}
	if mark == "" {
		return false
	}
	behind, _, err := w.behind(ctx, mark)
	if err != nil {
		w.log.Warn("run job: the branch not compared with its base; the engine looks itself", "err", err)
		return true
	}
	return behind
}

// behind compares the branch with its base on GitHub; when it lacks nothing of the base, the mark
// seen ("" for none) is cleared.
func (w *baseWatch) behind(ctx context.Context, mark string) (bool, ports.BaseComparison, error) {
	r := w.run
	cmp, err := w.gh.CompareBase(ctx, r.Owner, r.Repo, r.Base, r.Branch)
	if err != nil {
		return false, cmp, fmt.Errorf("jobs: compare %s with %s: %w", r.Branch, r.Base, err)
	}
	if cmp.Behind() {
		return true, cmp, nil
	}
	if mark != "" {
		if err := w.bases.ClearBaseMark(ctx, r.Owner, r.Repo, r.Branch, mark); err != nil {
			w.log.Warn("run job: the base's mark not cleared; the next check clears it", "err", err)
		}
	}
	return false, cmp, nil
}

// readyMark is the mark a run leaves when its pull request was not marked ready because its branch
// is behind base (at the base's head): the continuation merges it. Seen again for the same head, it
// says the continuation did not merge it (the repository turned syncing off since), and the pull
// request turns ready as it is rather than the run continuing for ever.
func readyMark(baseHead string) string { return "before ready: behind at " + baseHead }

// beforeReady says whether the branch must take its base before its pull request is marked ready;
// when it must, the branch is marked for the job that continues the run. pr is the pull request as
// read just now.
func (w *baseWatch) beforeReady(ctx context.Context, pr *ports.PullRequest) (bool, error) {
	r := w.run
	if r.SyncOff {
		return false, nil
	}
	mark, err := w.bases.BaseMark(ctx, r.Owner, r.Repo, r.Branch)
	if err != nil {
		return false, err
	}
	if syncSkipped(r) && mark == "" {
		return false, nil // a person left the branch behind this base; nothing moved since
	}
	behind, cmp, err := w.behind(ctx, mark)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		// The branch or its base is gone: there is nothing to merge (the job's start, or the next
		// one's, finds out what people did).
		w.log.Warn("run job: the branch not compared with its base", "err", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !behind && pr != nil && pr.MergeableState == ports.MergeStateDirty {
		w.log.Warn("run job: GitHub says the merge conflicts, yet the branch has all of its base; readied as it is", "pr", pr.Number)
	}
	if !behind {
		return false, nil
	}
	want := readyMark(cmp.BaseHead)
	if mark == want {
		w.log.Warn("run job: the branch is still behind its base after a job to merge it; readied as it is", "base_head", cmp.BaseHead)
		return false, nil
	}
	if err := w.bases.MarkBaseMoved(ctx, r.Owner, r.Repo, r.Branch, want); err != nil {
		return false, err
	}
	w.log.Info("run job: the base moved; its merge comes before the pull request turns ready", "behind_by", cmp.BehindBy, "base_head", cmp.BaseHead)
	return true, nil
}

// syncSkipped says a person decided to leave the branch behind its base (skip on the sync task).
func syncSkipped(r *lifecycle.Run) bool {
	for _, t := range r.Tasks {
		if lifecycle.IsSyncTask(t.ID) && t.Status == lifecycle.TaskStatusSkipped {
			return true
		}
	}
	return false
}

// ended takes the run's record as the job's engine left it. A sync skipped in this job leaves the
// branch behind the base it skipped: its mark goes, and only a push after the decision asks for a
// merge again.
func (w *baseWatch) ended(ctx context.Context, run *lifecycle.Run) {
	w.run = run
	if run.SyncOff || w.skipped || !syncSkipped(run) {
		return
	}
	mark, err := w.bases.BaseMark(ctx, run.Owner, run.Repo, run.Branch)
	if err == nil && mark != "" {
		err = w.bases.ClearBaseMark(ctx, run.Owner, run.Repo, run.Branch, mark)
	}
	if err != nil {
		w.log.Warn("run job: the base's mark after a skipped sync not cleared", "err", err)
	}
}
