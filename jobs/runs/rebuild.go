package runs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/workspace"
)

// A run's record lives in Redis; its work lives on its branch. When Redis loses the record (a restart
// without persistence, or the record expired), the branch still says which run it belongs to (the
// Akira-Run trailer of the start commit and of every checkpoint), which tasks are done (Akira-Task
// trailers) and which wait for a decision (their parked refs). The next command or delivery that
// touches the branch rebuilds the record from there instead of starting a second run beside the first:
// the run keeps its id, so its summary comment and check runs (found by the id in their markers and
// external ids) are reused rather than posted again. What only the record knew is gone: attempt counts,
// durations and costs before the loss, and decisions not yet acted on (a skipped task runs again).

// branchRun reads which run the branch's commits belong to: its id ("" when the branch is missing or
// has no Akira run), the branch's commits, and the run's record when Redis still has it.
func branchRun(ctx context.Context, runs *store.Records, gh ports.Repos, run *lifecycle.Run) (id string, commits []ports.BranchCommit, known *lifecycle.Run, err error) {
	if run.Branch == "" || run.Base == "" || run.Branch == run.Base {
		return "", nil, nil, nil
	}
	commits, err = gh.BranchCommits(ctx, run.Owner, run.Repo, run.Base, run.Branch)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return "", nil, nil, nil
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("jobs: commits of %s: %w", run.Branch, err)
	}
	if id = runIDOf(commits); id == "" {
		return "", commits, nil, nil
	}
	known, err = runs.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return id, commits, nil, nil
	}
	return id, commits, known, err
}

// adoptLostRun gives a new run the id of the lost run its branch belongs to (id and known are what
// branchRun found), marked rebuilt by key (the delivery that found it). It returns the run an earlier
// try of the same delivery rebuilt already, else nil.
func adoptLostRun(run *lifecycle.Run, key, id string, known *lifecycle.Run) (existing *lifecycle.Run) {
	switch {
	case known != nil && known.Rebuilt == key:
		return known
	case known != nil, id == "", id == run.ID:
		return nil // no lost run: a known one is followed as usual
	}
	run.ID, run.Rebuilt = id, key
	return nil
}

// runIDOf is the run named by the latest Akira-Run trailer of the commits.
func runIDOf(commits []ports.BranchCommit) string {
	id := ""
	for _, c := range commits {
		if v := TrailerValues(c.Message, runner.TrailerRun); len(v) > 0 {
			id = v[len(v)-1]
		}
	}
	return id
}

// errNoLostRun says a decision names an issue or pull request whose branch holds no lost run waiting
// for a decision.
var errNoLostRun = errors.New("jobs: no lost run to rebuild")

// rebuildParkedRun rebuilds, for a decision on number, the lost run of number's branch: the run a
// `/akira run` on it would plan, under the id its branch names, with its done tasks from the trailers
// and its parked tasks from their parked refs. The rebuilt run is stored parked so that the decision
// applies to it as to any parked run. errNoLostRun when there is nothing to rebuild or nothing waits.
func (h *Rebuilds) rebuildParkedRun(ctx context.Context, gh ports.GitHub, p queue.ResumePayload) (*lifecycle.Run, error) {
	return h.rebuilds.rebuildLostRun(ctx, gh, lostRunRequest{Key: p.JobID(), InstallationID: p.InstallationID,
		Owner: p.Owner, Repo: p.Repo, Number: p.Number, Sender: p.Sender})
}

// lostRunRequest is a command on an issue or pull request whose run Redis may have lost: Key names the
// command (the rebuilt run is marked with it), Settled asks for a run at rest (see lifecycle.Rebuilt).
type lostRunRequest struct {
	Key            string
	InstallationID int64
	Owner, Repo    string
	Number         int
	Sender         string
	Settled        bool
}

// rebuildLostRun is rebuildParkedRun for any command: with Settled, a lost run with nothing parked is
// rebuilt too (succeeded when every task is done on its branch, else stopped).
func (h *Rebuilds) rebuildLostRun(ctx context.Context, gh ports.GitHub, p lostRunRequest) (*lifecycle.Run, error) {
	if p.Number <= 0 {
		return nil, errNoLostRun
	}
	rp := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: p.Key, InstallationID: p.InstallationID, Owner: p.Owner, Repo: p.Repo, Sender: p.Sender},
		Trigger: lifecycle.TriggerIssue, Number: p.Number}
	pr, err := gh.GetPullRequest(ctx, p.Owner, p.Repo, p.Number)
	switch {
	case errors.Is(err, ports.ErrGitHubNotFound):
	case err != nil:
		return nil, fmt.Errorf("jobs: pull request #%d: %w", p.Number, err)
	default:
		rp.Trigger, rp.Branch = lifecycle.TriggerPullRequest, pr.HeadRef
	}
	in, err := h.runs.GatherRunInputs(ctx, gh, rp)
	if err != nil {
		return nil, err
	}
	if pr != nil {
		// Akira's own pull request of an issue run: the plan is the issue's.
		if n, ok := IssueOfBranch(pr.HeadRef, in.Config.BranchPrefix); ok {
			is, err := gh.GetIssue(ctx, p.Owner, p.Repo, n)
			if err != nil {
				return nil, fmt.Errorf("jobs: issue #%d: %w", n, err)
			}
			rp.Trigger, rp.Number, rp.Branch, in.Issue, in.PR = lifecycle.TriggerIssue, n, "", &is, nil
		}
	}
	run, err := PlanRun(rp, "", in, h.d.Operator)
	if err != nil {
		return nil, err
	}
	if pr != nil && run.PR == 0 {
		run.PR, run.PRURL, run.PRNodeID, run.OpenedPR = pr.Number, pr.URL, pr.NodeID, true
	}
	head, err := gh.GetRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return nil, errNoLostRun
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: branch %s: %w", run.Branch, err)
	}
	id, commits, known, err := branchRun(ctx, h.d.Store.Records, gh, run)
	switch {
	case err != nil:
		return nil, err
	case known != nil && known.Rebuilt == p.Key:
		return known, nil // rebuilt by an earlier try of this job
	case known != nil, id == "":
		return nil, errNoLostRun
	}
	run.ID, run.Rebuilt, run.Head = id, p.Key, head
	plan := []byte(run.Plan)
	if run.Plan == "" {
		if plan, err = gh.GetFile(ctx, run.Owner, run.Repo, run.Branch, run.Roadmap); err != nil {
			return nil, fmt.Errorf("jobs: %s on %s: %w", run.Roadmap, run.Branch, err)
		}
	}
	rm, err := roadmap.Parse(planName(run.Source), plan)
	if err != nil {
		return nil, fmt.Errorf("%w: the plan no longer parses: %v", errNoLostRun, err)
	}
	done := checkpointsOf(commits)
	rebuilt := lifecycle.Rebuilt{Head: head, Settled: p.Settled}
	anyParked := false
	for _, t := range rm.Tasks {
		rt := lifecycle.RebuiltTask{ID: t.ID, Title: t.Title, Checkpoint: done[t.ID], Done: done[t.ID] != "" || t.Done}
		if !rt.Done {
			_, err := gh.GetRef(ctx, run.Owner, run.Repo, strings.TrimPrefix(workspace.ParkedRefOf(run.Branch, t.ID), "refs/"))
			if err != nil && !errors.Is(err, ports.ErrGitHubNotFound) {
				return nil, fmt.Errorf("jobs: parked work of %s: %w", t.ID, err)
			}
			rt.Parked = err == nil
			anyParked = anyParked || rt.Parked
		}
		rebuilt.Tasks = append(rebuilt.Tasks, rt)
	}
	if !anyParked && !p.Settled {
		return nil, fmt.Errorf("%w: no task of run %s has parked work on %s", errNoLostRun, id, run.Branch)
	}
	if _, err := lifecycle.Apply(run, rebuilt, time.Now()); err != nil {
		return nil, err
	}
	created, _, err := h.d.Store.Create(ctx, run)
	return created, err
}

// IssueOfBranch reads the issue number out of an issue run's branch name (<prefix>issue-<n>).
func IssueOfBranch(branch, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(branch, prefix+"issue-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// checkpointsOf is the latest checkpoint of each task among commits (oldest first), without the
// tasks a later commit reverted (Akira-Revert), as the engine reads a branch.
func checkpointsOf(commits []ports.BranchCommit) map[string]string {
	done := map[string]string{}
	for _, c := range commits {
		for _, t := range TrailerValues(c.Message, runner.TrailerTask) {
			done[t] = c.SHA
		}
		for _, t := range TrailerValues(c.Message, runner.TrailerRevert) {
			delete(done, t)
		}
	}
	return done
}

// TrailerValues returns the values of key among the trailers of a commit message: the "Key: value"
// lines of its last paragraph, as git interprets them.
func TrailerValues(msg, key string) []string {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	last := msg
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		last = msg[i+2:]
	}
	var out []string
	for _, line := range strings.Split(last, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), key) {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
