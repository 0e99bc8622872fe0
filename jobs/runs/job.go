package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/templates"
)

// HandleRun starts or continues a run: branch lock, fresh installation token for git, the engine with
// the GitHub reporter, and the run state at the end. A parked run ends the job (successfully): it
// holds no worker while people decide.
func (h *Runs) HandleRun(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeRun, func(ctx context.Context, p queue.RunPayload) (string, error) {
		// A rate-limited installation's run waits out the limit in the queue, before any GitHub call.
		if result, err := h.d.Paused(ctx, p.InstallationID); err != nil {
			return result, err
		}
		result, err := h.runJob(ctx, p)
		if result != metrics.ResultQueued && (err == nil || errors.Is(err, asynq.SkipRetry)) {
			// The job ended without taking its turn (nothing to do, a reply, a plan first) and will
			// not be tried again: its place in line goes. A slot it took was freed by work's caller.
			_ = h.d.Fair.Unlist(context.WithoutCancel(ctx), p.Ticket())
		}
		return result, err
	})
}

// workFair is h.work behind the fair gate (jobs/fair): the run's turn and a slot of its installation
// first, so that resolving it (cheap on a retry: the run is found by its id) is all a waiting run
// costs, and an answer that needs no worker (a run already active on the branch) is not held back.
func (h *Runs) workFair(ctx context.Context, gh ports.GitHub, p queue.RunPayload, run *lifecycle.Run, log *slog.Logger) (string, error) {
	if err := h.d.Fair.Acquire(ctx, p.Ticket()); err != nil {
		if w, ok := errors.AsType[*fair.SlotWaitError](err); ok {
			log.Debug("run job: waits for a slot", "reason", w.Reason, "retry_in", w.Delay)
			return metrics.ResultQueued, err
		}
		return metrics.ResultRetry, err
	}
	release := h.d.Fair.Hold(ctx, p.Ticket())
	defer release()
	return h.work(ctx, gh, run, log)
}

func (h *Runs) runJob(ctx context.Context, p queue.RunPayload) (string, error) {
	log := h.log.With("task", queue.TypeRun, "delivery", p.DeliveryID, "installation", p.InstallationID,
		"repo", p.Owner+"/"+p.Repo, "trigger", p.Trigger)
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	run, err := h.resolveRun(ctx, gh, p)
	up, untrusted := errors.AsType[*UntrustedPlanError](err)
	cn, unconfirmed := errors.AsType[*ConfirmNeededError](err)
	fr, forkRefused := errors.AsType[*ForkRefusedError](err)
	switch busy, isBusy := errors.AsType[*store.BranchBusyError](err); {
	case errors.Is(err, ErrNothingToDo):
		log.Info("run job: nothing to do")
		return metrics.ResultNoop, nil
	case errors.Is(err, errPlanning):
		log.Info("run job: the issue has no checklist; a plan job writes one first")
		return ResultPlanned, nil
	case unconfirmed:
		log.Info("run job: the proposed plan waits for /akira run --confirm")
		retried, _ := asynq.GetRetryCount(ctx)
		text := publish.Render("plan_confirm", templates.PlanConfirm{URL: cn.URL},
			"Akira did not start: the plan it proposed for this issue runs only with `/akira run --confirm`.")
		if rerr := publish.ReplyOnce(ctx, h.d.Store.Dedupe, gh, p.Owner, p.Repo, p.Number, "confirm-"+p.JobID(), text, retried > 0); rerr != nil {
			return metrics.ResultRetry, rerr
		}
		return metrics.ResultReplied, nil
	case isBusy:
		return h.branchBusy(ctx, gh, p, busy, log)
	case forkRefused:
		log.Info("run job: the fork's pull request is not run", "why", fr.Error())
		retried, _ := asynq.GetRetryCount(ctx)
		text := publish.Render("fork_refused", templates.ForkRefused{Workflows: fr.Workflows, Asked: fr.Asked, Now: fr.Now}, "Akira did not start: "+strings.TrimPrefix(fr.Error(), "jobs: ")+".")
		if rerr := publish.ReplyOnce(ctx, h.d.Store.Dedupe, gh, p.Owner, p.Repo, p.Number, "fork-"+p.JobID(), text, retried > 0); rerr != nil {
			return metrics.ResultRetry, rerr
		}
		return metrics.ResultRefused, nil
	case untrusted:
		log.Info("run job: untrusted plan", "author", up.Author, "fork", up.Fork, "permission", up.Permission, "commands", len(up.Commands))
		if rerr := h.refuseUntrustedPlan(ctx, gh, p, up); rerr != nil {
			return metrics.ResultRetry, rerr
		}
		return metrics.ResultReplied, nil
	case err != nil:
		return resultOf(err), h.refuseConfig(ctx, gh, p, err)
	}
	log = log.With("run", run.ID, "branch", run.Branch)
	return h.workFair(ctx, gh, p, run, log)
}

func resultOf(err error) string {
	switch {
	case errors.Is(err, flow.ErrBusy):
		return metrics.ResultBusy
	case errors.Is(err, asynq.SkipRetry), isRepoConfigError(err):
		return metrics.ResultFailed
	}
	return metrics.ResultRetry
}

func isRepoConfigError(err error) bool {
	_, ok := flow.AsRepoConfigError(err)
	return ok
}

// resolveRun loads the run a payload continues, or creates the run a trigger starts. A run created
// by an earlier try of the same job is found again by its id, derived from the delivery.
func (h *Runs) resolveRun(ctx context.Context, gh ports.GitHub, p queue.RunPayload) (*lifecycle.Run, error) {
	if p.Trigger == lifecycle.TriggerContinue {
		run, err := h.d.Store.Get(ctx, p.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrNothingToDo
		}
		if err != nil {
			return nil, err
		}
		if run.Status != lifecycle.StatusQueued && run.Status != lifecycle.StatusRunning {
			return nil, ErrNothingToDo
		}
		return run, nil
	}
	if p.BudgetUSD > 0 {
		// `/akira run --budget` where a run waits because its budget is spent: raise it and go on.
		if run, err := h.raiseBudget(ctx, p); err != nil || run != nil {
			return run, err
		}
	}
	if p.CommentID != 0 {
		// `/akira run` where a person stopped a run: continue it from its last checkpoint.
		if run, err := h.reviveStopped(ctx, p); err != nil || run != nil {
			return run, err
		}
	}
	id := queue.RunIDFor(p.DeliveryID)
	if run, err := h.d.Store.Get(ctx, id); err == nil {
		if run.Status.Terminal() || run.Status == lifecycle.StatusParked {
			return nil, ErrNothingToDo
		}
		return run, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	in, err := h.GatherRunInputs(ctx, gh, p)
	if err != nil {
		return nil, err
	}
	var ownPR *ports.PullRequest
	if n, ok := IssueOfBranch(p.Branch, in.Config.BranchPrefix); ok && p.Trigger == lifecycle.TriggerPullRequest && p.CommentID != 0 && in.PR != nil {
		// `/akira run` on the pull request of an issue's run that Redis has no record of (it would have
		// been revived above): the run is the issue's, its plan the issue's checklist, not a plan file.
		ownPR = in.PR
		p.Trigger, p.Number, p.Branch, p.HeadSHA = lifecycle.TriggerIssue, n, "", ""
		if in, err = h.GatherRunInputs(ctx, gh, p); err != nil {
			return nil, err
		}
	}
	run, err := PlanRun(p, id, in, h.d.Operator)
	if err == nil && ownPR != nil && run.PR == 0 {
		run.PR, run.PRURL, run.PRNodeID, run.OpenedPR = ownPR.Number, ownPR.URL, ownPR.NodeID, true
	}
	if errors.Is(err, errNeedsConfirm) {
		return nil, &ConfirmNeededError{URL: in.PostedPlanURL}
	}
	if errors.Is(err, ErrNeedsPlan) || errors.Is(err, errNeedsNormalize) {
		// An issue in prose: write a plan first; the plan job posts it (and, under plan: auto, runs it).
		// A checklist no format reads: the plan job proposes a rewrite, which waits for --confirm.
		perr := h.d.Enqueuer.EnqueuePlan(ctx, queue.PlanPayload{TaskHeader: queue.TaskHeader{DeliveryID: planIssueKey(p), InstallationID: p.InstallationID, Owner: p.Owner, Repo: p.Repo, Sender: p.Sender}, DefaultBranch: in.Repo.DefaultBranch, Number: p.Number, CommentID: p.CommentID, FromRun: true, Normalize: errors.Is(err, errNeedsNormalize)})
		if perr := queue.Enqueued(perr); perr != nil {
			return nil, perr
		}
		return nil, errPlanning
	}
	if err != nil {
		return nil, err
	}
	if err := CheckPlanTrust(ctx, gh, p, run, in.Issue); err != nil {
		return nil, err
	}
	if _, forkBranch := flow.ForkOfBranch(in.Config.BranchPrefix, run.Branch); run.Fork != nil || forkBranch {
		if err := h.prepareForkBranch(ctx, gh, p, run, in.Config.BranchPrefix); err != nil {
			return nil, err
		}
	}
	// The branch's commits say whether a pull request's push left anything to do, and whether the
	// branch belongs to a run Redis lost.
	lostID, commits, known, err := branchRun(ctx, h.d.Store.Records, gh, run)
	if err != nil {
		return nil, err
	}
	if p.Trigger == lifecycle.TriggerPullRequest && p.CommentID == 0 {
		// A push to the pull request runs only what it left to do: ticking boxes by hand or changing
		// code starts nothing.
		pending, err := pendingPlans(ctx, gh, run, commits)
		if err != nil {
			return nil, err
		}
		if len(pending) == 0 {
			return nil, ErrNothingToDo
		}
		if len(run.Plans) > 0 {
			run.Plans = pending
		}
	}
	if existing := adoptLostRun(run, p.DeliveryID, lostID, known); existing != nil {
		if existing.Status.Terminal() || existing.Status == lifecycle.StatusParked {
			return nil, ErrNothingToDo
		}
		return existing, nil
	}
	if run.Rebuilt != "" {
		h.log.Warn("run job: the branch belongs to a run Redis has no record of; rebuilding it from the branch",
			"run", run.ID, "repo", run.Owner+"/"+run.Repo, "branch", run.Branch, "delivery", p.DeliveryID)
	}
	run, _, err = h.d.Store.Create(ctx, run)
	return run, err
}

// ConfirmNeededError ends a plain /akira run of an issue whose checklist Akira proposed to rewrite:
// the proposal (at URL) runs only with /akira run --confirm.
type ConfirmNeededError struct{ URL string }

func (e *ConfirmNeededError) Error() string { return errNeedsConfirm.Error() }

// errPlanning ends a run job that handed an issue in prose to a plan job.
var errPlanning = errors.New("jobs: planning first")

// UntrustedPlanError stops a run whose plan carries verify commands written by someone without write
// access, until a writer vouches for them (/akira run --trust-plan).
type UntrustedPlanError struct {
	Author, Permission string
	Commands           []string
	// Fork is where the plan files came from, for a fork's content (Author is then unknown).
	Fork string
}

func (e *UntrustedPlanError) Error() string {
	if e.Fork != "" {
		return fmt.Sprintf("the plan's verify commands come from the fork %s and no writer vouched for them", e.Fork)
	}
	return fmt.Sprintf("the plan's verify commands were written by %s (%s access) and no writer vouched for them", e.Author, e.Permission)
}

// CheckPlanTrust refuses an issue plan with verify commands whose author has no write access, unless
// the payload says a writer vouched for it. The commenter's own permission was checked at intake;
// this is about who wrote the commands. A plan without verify commands is only text for the agent.
// A plan file in the repository is not checked here: only people with push access put files on a
// branch, and a commit's author field proves nothing about who pushed it. The exception is a fork's
// content on a branch of the repository, which CheckForkPlanTrust checks.
func CheckPlanTrust(ctx context.Context, perms ports.Permissions, p queue.RunPayload, run *lifecycle.Run, is *ports.Issue) error {
	if run.Plan == "" || p.TrustPlan || is == nil || run.PlanFromComment {
		return nil
	}
	rm, err := roadmap.ParseMarkdown("issue", []byte(run.Plan))
	if err != nil {
		return nil
	}
	var cmds []string
	for _, t := range rm.Tasks {
		cmds = append(cmds, t.Verify...)
	}
	if len(cmds) == 0 {
		return nil
	}
	author := is.Author
	if p.Plan != "" {
		if p.Trigger == queue.TriggerAPI {
			return nil // a plan handed off with an API token is the operator's, as any hand-off's
		}
		author = p.Sender // a plan pasted in the comment is the commenter's
	}
	if author == "" {
		return &UntrustedPlanError{Author: "an unknown author", Permission: ports.PermNone, Commands: cmds}
	}
	level, err := perms.Permission(ctx, p.Owner, p.Repo, author)
	if err != nil {
		return fmt.Errorf("jobs: permission of the plan's author %s: %w", is.Author, err)
	}
	if slices.Contains(flow.WriteLevels, strings.ToLower(level)) {
		return nil
	}
	return &UntrustedPlanError{Author: author, Permission: level, Commands: cmds}
}

// prepareForkBranch checks the plan files of a fork's content and, for a new fork run, starts its branch
// at the fork's head. It serves a fork run, and a run of the pull request Akira opened for one (its
// branch holds the fork's files too, which no writer put there).
func (h *Runs) prepareForkBranch(ctx context.Context, gh ports.GitHub, p queue.RunPayload, run *lifecycle.Run, prefix string) error {
	start, err := gh.GetRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch)
	missing := errors.Is(err, ports.ErrGitHubNotFound)
	switch {
	case missing && run.Fork == nil:
		return nil // the engine says the branch is gone
	case missing:
		start = run.Fork.Head
	case err != nil:
		return fmt.Errorf("jobs: branch %s: %w", run.Branch, err)
	}
	if err := CheckForkPlanTrust(ctx, gh, p, run, start); err != nil {
		if up, ok := errors.AsType[*UntrustedPlanError](err); ok {
			if up.Fork, err = forkName(ctx, gh, run, prefix); err != nil {
				return err
			}
			return up
		}
		return err
	}
	if !missing {
		// An earlier run's branch (or an earlier try's): the run continues there, and what the
		// fork pushed since is not taken in.
		return nil
	}
	if err := gh.CreateRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch, start); err != nil {
		return fmt.Errorf("jobs: start %s at the fork's head %s: %w", run.Branch, start, err)
	}
	h.log.Info("run job: started a branch at a fork's head", "repo", run.Owner+"/"+run.Repo, "branch", run.Branch,
		"fork", run.Fork.Repo, "head", start)
	return nil
}

// forkName names the fork whose content the run's branch holds, for a refusal: the fork run's own, or
// for a run of the pull request Akira opened for one, the fork of the pull request its branch names.
func forkName(ctx context.Context, pulls ports.Pulls, run *lifecycle.Run, prefix string) (string, error) {
	if run.Fork != nil {
		return run.Fork.Repo, nil
	}
	n, _ := flow.ForkOfBranch(prefix, run.Branch)
	pr, err := pulls.GetPullRequest(ctx, run.Owner, run.Repo, n)
	if errors.Is(err, ports.ErrGitHubNotFound) || (err == nil && pr.HeadRepo == "") {
		return fmt.Sprintf("behind #%d", n), nil // gone with its fork: the branch still holds its content
	}
	if err != nil {
		return "", fmt.Errorf("jobs: pull request #%d: %w", n, err)
	}
	return pr.HeadRepo, nil
}

// CheckForkPlanTrust refuses the verify commands that content from a fork adds to the run's plan
// files, unless a writer vouched for them (/akira run --trust-plan): nothing shows who wrote a fork's
// files, so only commands already in the base branch's copy of a file count as a writer's. ref is the
// commit the run starts from. The refusal names the fork of a fork run; the caller names it otherwise.
func CheckForkPlanTrust(ctx context.Context, repos ports.Repos, p queue.RunPayload, run *lifecycle.Run, ref string) error {
	if p.TrustPlan || run.Plan != "" {
		return nil
	}
	files := run.Plans
	if len(files) == 0 {
		files = []string{run.Roadmap}
	}
	var cmds []string
	for _, f := range files {
		head, err := planVerify(ctx, repos, run, ref, f)
		if err != nil {
			return err
		}
		base, err := planVerify(ctx, repos, run, run.Base, f)
		if err != nil {
			return err
		}
		for _, c := range head {
			if !slices.Contains(base, c) && !slices.Contains(cmds, c) {
				cmds = append(cmds, c)
			}
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	up := &UntrustedPlanError{Permission: ports.PermNone, Commands: cmds}
	if run.Fork != nil {
		up.Fork = run.Fork.Repo
	}
	return up
}

// planVerify lists the verify commands of the plan file path at ref; none when it is missing or does
// not parse (the engine then says what is wrong with it).
func planVerify(ctx context.Context, repos ports.Repos, run *lifecycle.Run, ref, path string) ([]string, error) {
	data, err := repos.GetFile(ctx, run.Owner, run.Repo, ref, path)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: plan file %s at %s: %w", path, ref, err)
	}
	rm, err := roadmap.Parse(path, data)
	if err != nil {
		return nil, nil
	}
	var cmds []string
	for _, t := range rm.Tasks {
		cmds = append(cmds, t.Verify...)
	}
	return cmds, nil
}

// refuseUntrustedPlan shows the commands Akira will not run and how a writer confirms them.
func (h *Runs) refuseUntrustedPlan(ctx context.Context, c ports.Comments, p queue.RunPayload, up *UntrustedPlanError) error {
	retried, _ := asynq.GetRetryCount(ctx)
	text := UntrustedPlanText(up)
	if err := publish.ReplyOnce(ctx, h.d.Store.Dedupe, c, p.Owner, p.Repo, p.Number, "untrusted-"+p.JobID(), text, retried > 0); err != nil {
		return fmt.Errorf("jobs: post untrusted plan: %w", err)
	}
	return nil
}

// UntrustedPlanText is the reply that lists the verify commands of a plan whose author has no write access.
func UntrustedPlanText(up *UntrustedPlanError) string {
	return publish.Render("untrusted_plan", templates.UntrustedPlan{Author: up.Author, Permission: up.Permission, Commands: clipAll(up.Commands), Fork: up.Fork},
		"Akira did not start: the plan's verify commands were written by someone without write access. A writer can reply `/akira run --trust-plan`.")
}

// clipAll keeps the commands a writer must review readable in one comment: each whole up to 500
// characters, at most 50 of them.
func clipAll(cmds []string) []string {
	var out []string
	for i, c := range cmds {
		if i == 50 {
			out = append(out, fmt.Sprintf("… and %d more", len(cmds)-i))
			break
		}
		if r := []rune(c); len(r) > 500 {
			c = string(r[:500]) + "…"
		}
		out = append(out, c)
	}
	return out
}

// refuseConfig answers a configuration problem where the people who can fix it will see it, and
// makes the job end without a retry. Other errors are returned as they are.
func (h *Runs) refuseConfig(ctx context.Context, c ports.Comments, p queue.RunPayload, err error) error {
	ce, ok := flow.AsRepoConfigError(err)
	if !ok {
		return err
	}
	if p.Number > 0 {
		retried, _ := asynq.GetRetryCount(ctx)
		if rerr := publish.ReplyOnce(ctx, h.d.Store.Dedupe, c, p.Owner, p.Repo, p.Number, "config-"+p.JobID(),
			publish.ConfigErrorText(ce, "start the run", "", ""), retried > 0); rerr != nil {
			return fmt.Errorf("jobs: post configuration error: %w", rerr)
		}
	}
	return fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry)
}

// restoreLostRun writes back the record of a run Redis lost while this job worked on it, as the job
// last wrote it, queued, and queues the job that continues it (the queue went with the record): the
// run goes on from its branch with its decisions, attempts and check runs, and no person has to
// notice. A record someone rebuilt meanwhile (a `/akira run` that found the branch) is left alone.
func (h *Runs) restoreLostRun(ctx context.Context, run *lifecycle.Run, worked time.Duration, log *slog.Logger) {
	r := *run
	r.WorkTime += worked
	if lifecycle.Allowed(r.Status, lifecycle.EventJobRequeued) {
		if _, err := lifecycle.Apply(&r, lifecycle.JobRequeued{}, time.Now()); err != nil {
			log.Warn("run job: the lost record not restored", "err", err)
			return
		}
	}
	restored, created, err := h.d.Store.Create(ctx, &r)
	if err != nil {
		log.Warn("run job: Redis lost the run's record; not restored", "err", err)
		return
	}
	if !created {
		return
	}
	log.Warn("run job: Redis lost the run's record while the job worked; restored it from the job's copy", "status", restored.Status)
	if restored.Status != lifecycle.StatusQueued {
		return // parked, finished: nothing runs until people act, as before the loss
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, queue.Continuation(restored, "restored:"+restored.ID+":"+strconv.Itoa(restored.Jobs), restored.Sender))
	if err != nil && !errors.Is(err, queue.ErrDuplicate) {
		log.Warn("run job: restored run not queued; the reaper or the next command continues it", "err", err)
	}
}

// branchBusy answers a trigger for a branch another run owns. People get a reply at once; a push or
// a pull request update waits behind a working run (and is dropped, with a note, behind a parked one,
// because a parked run may wait for days).
func (h *Runs) branchBusy(ctx context.Context, c ports.Comments, p queue.RunPayload, busy *store.BranchBusyError, log *slog.Logger) (string, error) {
	active := busy.Active
	command := p.Trigger == lifecycle.TriggerIssue || p.Trigger == lifecycle.TriggerFork
	if !command && active.Status != lifecycle.StatusParked {
		log.Info("run job: branch busy, waiting", "active_run", active.ID)
		return metrics.ResultBusy, fmt.Errorf("%w (run %s)", flow.ErrBusy, active.ID)
	}
	number := p.Number
	if number == 0 {
		number = publish.SummaryNumber(active)
	}
	if number > 0 {
		data := templates.BranchBusy{Branch: active.Branch, RunID: active.ID, State: active.Status.Label(),
			FromCommand: command, SummaryURL: active.SummaryURL}
		if active.Status == lifecycle.StatusParked && len(active.Parked) > 0 {
			data.ParkedTask = active.Parked[0].TaskID
		}
		msg := publish.Render("branch_busy", data, "A run is already in progress on `"+active.Branch+"`.")
		retried, _ := asynq.GetRetryCount(ctx)
		if err := publish.ReplyOnce(ctx, h.d.Store.Dedupe, c, p.Owner, p.Repo, number, "busy-"+p.JobID(), msg, retried > 0); err != nil {
			return metrics.ResultRetry, fmt.Errorf("jobs: reply that the branch is busy: %w", err)
		}
	}
	log.Info("run job: branch owned by another run", "active_run", active.ID, "status", active.Status)
	return metrics.ResultRefused, nil
}

// work is the part of the run job under the branch lock.
func (h *Runs) work(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, log *slog.Logger) (result string, err error) {
	lk, err := h.d.Locker.Acquire(ctx, store.BranchLockName(run.Owner, run.Repo, run.Branch))
	if errors.Is(err, store.ErrLocked) {
		if run.Status == lifecycle.StatusRunning {
			// A job of this run holds the branch (a running run always has one, or the reaper gives it
			// one when its worker dies): this copy, typically asynq recovering a job whose worker died,
			// has nothing to add.
			log.Info("run job: the run is moving under another job; nothing to do")
			return metrics.ResultNoop, nil
		}
		log.Info("run job: branch locked by another worker, waiting")
		return metrics.ResultBusy, fmt.Errorf("%w: %s", flow.ErrBusy, run.Branch)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	jobStart := time.Now()
	defer func() {
		// Running means "a job holds the lock": a job that asynq will retry leaves the run queued, so
		// the reaper does not take it for dead and defeat the retry's backoff.
		// A lost lock is different: asynq may not hear of the error at all (the lock is usually lost
		// because Redis is unreachable), and the reaper continues a running run as soon as its lock is
		// free, so the run stays running.
		requeue := result == metrics.ResultRetry && !errors.Is(context.Cause(lk.Context()), store.ErrLockLost)
		if _, uerr := h.d.Store.Update(context.WithoutCancel(ctx), run.ID, func(r *lifecycle.Run) error {
			// The time this job worked counts against the run's wall-time budget.
			r.WorkTime += time.Since(jobStart)
			if requeue && lifecycle.Allowed(r.Status, lifecycle.EventJobRequeued) {
				_, err := lifecycle.Apply(r, lifecycle.JobRequeued{}, time.Now())
				return err
			}
			return nil
		}); errors.Is(uerr, store.ErrNotFound) && result == metrics.ResultRetry {
			// Redis lost the run's record while this job worked (FLUSHALL, a restart without
			// persistence), which cut the job short: it holds the freshest copy of the record,
			// decisions and all. (A job that ended its work holds a copy older than its last write.)
			h.restoreLostRun(context.WithoutCancel(ctx), run, time.Since(jobStart), log)
		} else if uerr != nil {
			log.Warn("run job: record the time worked and the status for a retry", "err", uerr)
		}
		if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn("run job: release branch lock", "err", err)
		}
	}()
	lctx := lk.Context()

	// Read the state again under the lock: the run may have finished, parked or been aborted while
	// this job waited.
	run, _, err = h.d.Store.Transition(lctx, run.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if !lifecycle.Allowed(r.Status, lifecycle.EventJobStarted) {
			return nil, ErrNothingToDo
		}
		return lifecycle.JobStarted{Dashboard: h.d.PublicURL}, nil
	})
	if errors.Is(err, ErrNothingToDo) {
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	if len(run.Outbox) > 0 {
		// A job that died after a transition left its effects; they come before anything new.
		if run, err = h.pub.Publish(lctx, gh, run, log); err != nil {
			return metrics.ResultRetry, err
		}
	}
	log.Info("run job: working", "job", run.Jobs, "decisions", len(run.Decisions), "parked", len(run.Parked))
	if run.Pause != nil {
		return h.pauseRun(ctx, gh, run, log) // paused while it waited in the queue: nothing to finish first
	}
	if run.Stop != nil {
		return h.stopRun(ctx, gh, run, log) // stopped while it waited in the queue
	}

	if d, ok := run.Decisions[lifecycle.CITaskID]; ok && run.CI != nil {
		// A person answered the CI's escalation: another fix round, or the pull request as it is.
		if run, _, err = h.d.Store.Apply(lctx, run.ID, lifecycle.CIDecided{Decision: d.Decision}); err != nil {
			return metrics.ResultRetry, err
		}
		if run, err = h.pub.Publish(ctx, gh, run, log); err != nil {
			return metrics.ResultRetry, err
		}
		if run.Status == lifecycle.StatusSucceeded {
			return metrics.ResultSucceeded, nil
		}
	}

	pr, why, err := h.goneByPeople(lctx, gh, run)
	if err != nil {
		return metrics.ResultRetry, err
	} else if why != "" {
		return h.stopForPeople(ctx, gh, run, why, log)
	}
	bases := newBaseWatch(h.d.Store.Bases, gh, run, log)
	bases.start(lctx, pr)

	_, profile, err := h.d.Operator.Agent(run.Agent)
	if err != nil {
		return h.fail(ctx, gh, run, fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry), log)
	}
	ag, err := h.d.NewAgent(run.Agent, profile)
	if err != nil {
		return h.fail(ctx, gh, run, fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry), log)
	}

	if over := h.spend.spendCapReached(ctx, run); over != "" && !run.Checkpointed() {
		// A run that has done nothing yet does not start; one that has pauses before its next
		// task (Yield below), keeping its work.
		return h.fail(ctx, gh, run, fmt.Errorf("jobs: %s: %w", over, asynq.SkipRetry), log)
	}
	rep := h.pub.Reporter(gh, log, run)
	opts := runner.Options{
		Inputs: runner.Inputs{
			Repo:      run.CloneURL,
			Roadmap:   run.Roadmap,
			Branch:    run.Branch,
			Base:      run.Base,
			RunID:     run.ID,
			Decisions: engineDecisions(run),
			// The pull request is opened from this workspace's branch (see Reporter), so a new branch
			// needs a commit before the first task: the one clone of the run makes it.
			StartCommit: run.PR == 0,
		},
		Limits: runner.Limits{
			MaxAttempts:  run.MaxAttempts,
			MaxParallel:  run.MaxParallel,
			Spent:        runner.Spent{Usage: SpentUsage(run), WorkTime: run.WorkTime},
			AgentTimeout: time.Duration(profile.Timeout),
		},
		Hooks: runner.Hooks{
			Reporter: rep,
			Timeline: rep.Timeline(),
			Logger:   log,
		},
		Agent:        ag,
		Author:       h.d.Author,
		WorkDir:      h.d.WorkDir,
		Cache:        h.d.Cache,
		Lessons:      h.d.Store.Lessons(run.InstallationID, run.Owner, run.Repo),
		Semantic:     h.d.Semantic,
		Judge:        h.d.Judge,
		GitAuth:      gh.GitAuthHeader,
		Sandbox:      h.d.Sandbox,
		AgentNetwork: profile.AgentNetwork(),
	}
	opts.ApplyOperator(h.d.Operator)
	if !run.SyncOff {
		// Before each task and after the last: merge the base when it moved (sync.go).
		opts.BaseMoved = bases.moved
	}
	// The run's budget, not the operator's: a person may have raised it on this run.
	opts.Budget = runner.Budget{CostUSD: run.Budget.CostUSD, Tokens: run.Budget.Tokens, WallTime: time.Duration(run.Budget.WallTime)}
	publish.EnvOptions(&opts, run, h.d.Store, h.d.DepCaches)
	if err := h.repoRules(lctx, gh, run, &opts, log); err != nil {
		return metrics.ResultRetry, err
	}
	if profile.AgentNetwork() == sandbox.NetAllow || h.d.Sandbox.VerifyNetwork == sandbox.NetAllow {
		log.Warn("run job: " + sandbox.AllowWarning)
	}
	if h.d.Sandbox.Mode != sandbox.Bubblewrap {
		log.Warn("run job: no sandbox: the agent and the verification commands run as the worker's user and can reach its files and network (sandbox: none)")
	}
	if run.Plan != "" {
		opts.Plan, opts.PlanSource = []byte(run.Plan), run.PlanSource
		opts.TaskScope = planScope(run)
	}
	if rv := run.Review; rv != nil {
		var comments []ports.ReviewComment
		if opts.Context, comments, err = reviewContext(lctx, gh, run); err != nil {
			return metrics.ResultRetry, err
		}
		opts.Teach = reviewLessons(run, comments)
		opts.TaskScope = reviewScope(rv.ID)
		opts.Trailers = []string{TrailerReview + ": " + strconv.FormatInt(rv.ID, 10)}
	}
	handed := maps.Clone(run.Decisions)
	sctx, cancelStop := context.WithCancelCause(lctx)
	var pauseAsked atomic.Bool
	go h.watchStop(sctx, run.ID, cancelStop, &pauseAsked, log)
	// A pause lets the current task finish: the engine asks before each task whether to go on, and the
	// record is read then, so a pause asked a moment before a task ends is not missed between polls.
	opts.Yield = func(ctx context.Context) bool {
		if pauseAsked.Load() {
			return true
		}
		if over := h.spend.spendCapReached(ctx, run); over != "" {
			// The installation's month is spent: the run pauses here, for a person to resume
			// once the operator raises the cap or the month turns.
			log.Warn("run job: pausing: " + over)
			if _, asked, err := h.d.Store.RequestPause(ctx, run.ID, spendCapActor, false); err == nil && asked {
				return true
			}
		}
		r, err := h.d.Store.Get(ctx, run.ID)
		return err == nil && r.Pause != nil
	}
	var out runner.Outcome
	var runErr error
	if run.CI != nil && run.CI.Fix != nil {
		// A fix round of the pull request's CI: one task, whose prompt holds what failed.
		log.Info("run job: fix round for the pull request's CI", "round", run.CI.Round, "checks", run.CI.Fix.Checks)
		// Each round's task is its own in the run's state ("ci-<round>#fix"), as the plans of a spec pull request are.
		fo := ciFixOptions(opts, run)
		fo.Reporter, fo.Decisions = scopedReporter{r: rep, scope: fo.TaskScope}, decisionsFor(opts.Decisions, fo.TaskScope)
		out, runErr = runner.Run(sctx, fo)
		out = scopeOutcome(fo.TaskScope, out)
	} else {
		if run.CI != nil && run.CI.Each && run.Review == nil {
			// ci.watch: each: one task (one wave) per job, then the pull request's CI on its checkpoint.
			ciYield, pauseYield := yieldAfterFirst(), opts.Yield
			opts.Yield = func(ctx context.Context) bool { return pauseYield(ctx) || ciYield(ctx) }
		}
		out, runErr = runPlans(sctx, opts, run, rep)
	}
	// The month's warning, when this run's last task took the installation past 80% of its cap.
	_ = h.spend.spendCapReached(ctx, run)
	stopped := errors.Is(context.Cause(sctx), errStopRequested)
	pausedNow := errors.Is(context.Cause(sctx), errPauseNow)
	cancelStop(nil)
	// No held-back summary edit after this: what follows publishes the run's state (or leaves it to
	// the next job, which does).
	rep.Close()
	run = rep.Run()
	if stopped {
		return h.stopRun(ctx, gh, run, log)
	}
	if pausedNow {
		return h.pauseRun(ctx, gh, run, log)
	}
	if runErr != nil {
		return h.retryOrFail(ctx, lctx, gh, run, runErr, log)
	}
	bases.ended(ctx, run)
	return h.finish(ctx, gh, run, out, handed, bases, log)
}

// goneByPeople says why the run cannot go on when a person closed its pull request or deleted its
// branch since the last job; "" when both are still there. It returns the pull request as it read it
// (nil when the run has none yet).
func (h *Runs) goneByPeople(ctx context.Context, gh ports.GitHub, run *lifecycle.Run) (*ports.PullRequest, string, error) {
	var pr *ports.PullRequest
	if run.PR != 0 {
		var err error
		pr, err = gh.GetPullRequest(ctx, run.Owner, run.Repo, run.PR)
		if err != nil && !errors.Is(err, ports.ErrGitHubNotFound) {
			return nil, "", fmt.Errorf("jobs: pull request #%d: %w", run.PR, err)
		}
		switch {
		case err != nil:
			return nil, fmt.Sprintf("pull request #%d no longer exists", run.PR), nil
		case pr.Merged:
			return pr, fmt.Sprintf("pull request #%d was merged", run.PR), nil
		case pr.Closed:
			return pr, fmt.Sprintf("pull request #%d was closed", run.PR), nil
		}
	}
	// A branch the run pushed to before (its pull request comes from it, or a checkpoint is on it)
	// must still be there: the run never recreates it.
	if run.PR != 0 || run.Checkpointed() {
		_, err := gh.GetRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch)
		if errors.Is(err, ports.ErrGitHubNotFound) {
			return pr, fmt.Sprintf("the branch `%s` was deleted", run.Branch), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("jobs: branch %s: %w", run.Branch, err)
		}
	}
	return pr, "", nil
}

// stopForPeople ends a run whose pull request or branch a person took away: the run is stopped (not
// failed: nothing went wrong), its open check runs are cancelled, the summary says why, and the issue
// it came from gets a note, since the pull request's comments may no longer be read.
func (h *Runs) stopForPeople(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, why string, log *slog.Logger) (string, error) {
	log.Info("run job: stopped by what people did", "why", why)
	run, _, err := h.d.Store.Apply(ctx, run.ID, lifecycle.TakenAway{Why: why})
	if err != nil {
		return metrics.ResultRetry, err
	}
	if _, err := h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	return metrics.ResultAborted, nil
}

// engineDecisions hands the run's decisions to the engine, and keeps every other parked task parked:
// without a decision the engine would run it again.
func engineDecisions(run *lifecycle.Run) map[string]runner.Decision {
	out := map[string]runner.Decision{}
	for id, d := range run.Decisions {
		out[id] = d.Decision
	}
	for _, p := range run.Parked {
		if _, ok := out[p.TaskID]; !ok {
			out[p.TaskID] = runner.Decision{Kind: runner.DecisionPark}
		}
	}
	return out
}

// lastTry reports whether asynq will not run the job again after an error.
func lastTry(ctx context.Context) bool {
	n, ok1 := asynq.GetRetryCount(ctx)
	max, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= max
}

// retryOrFail handles an error of the engine or of the preparation. A lost lock or a job cancelled
// (timeout, shutdown) leaves the state alone: another job carries on from the branch. A broken plan or
// configuration, or the last retry, fails the run for good.
func (h *Runs) retryOrFail(ctx, lctx context.Context, gh ports.GitHub, run *lifecycle.Run, err error, log *slog.Logger) (string, error) {
	if cause := context.Cause(lctx); errors.Is(cause, store.ErrLockLost) {
		log.Warn("run job: branch lock lost; another try continues", "err", err)
		return metrics.ResultRetry, fmt.Errorf("jobs: %w: %w", store.ErrLockLost, err)
	}
	if ctx.Err() != nil {
		log.Warn("run job: cancelled; another try continues", "err", err)
		return metrics.ResultRetry, fmt.Errorf("jobs: run %s interrupted: %w", run.ID, err)
	}
	// A red base or a failed setup would fail the same way again: a person starts the run anew.
	permanent := errors.Is(err, runner.ErrInvalidPlan) || errors.Is(err, runner.ErrUsage) || errors.Is(err, asynq.SkipRetry) ||
		errors.Is(err, runner.ErrRedBase) || errors.Is(err, runner.ErrSetupFailed)
	if !permanent && !lastTry(ctx) {
		log.Warn("run job: failed, will retry", "err", err)
		return metrics.ResultRetry, err
	}
	if permanent && !errors.Is(err, asynq.SkipRetry) {
		err = fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return h.fail(ctx, gh, run, err, log)
}

// fail marks the run failed and says why in the summary.
func (h *Runs) fail(ctx context.Context, gh publish.ReporterGitHub, run *lifecycle.Run, err error, log *slog.Logger) (string, error) {
	log.Error("run job: run failed", "err", err)
	msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "jobs: "), ": "+asynq.SkipRetry.Error())
	run, _, uerr := h.d.Store.Transition(ctx, run.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
		if !lifecycle.Allowed(r.Status, lifecycle.EventFailed) {
			return nil, nil // it ended while the job worked (aborted): it stays as it is
		}
		return lifecycle.Failed{Message: msg}, nil
	})
	if uerr != nil {
		return metrics.ResultRetry, errors.Join(err, uerr)
	}
	if _, perr := h.pub.Publish(ctx, gh, run, log); perr != nil {
		// The job ends here all the same: the relay performs what is left.
		log.Warn("run job: the failed run's effects are not all performed yet", "err", perr)
	}
	return metrics.ResultFailed, err
}

// finish records how the engine's run ended, readies the pull request of a finished run and
// publishes the final summary.
func (h *Runs) finish(ctx context.Context, gh ports.GitHub, run *lifecycle.Run, out runner.Outcome, handed map[string]lifecycle.Decision, bases *baseWatch, log *slog.Logger) (string, error) {
	status := lifecycle.EngineStatus(out.Status)
	yielded := out.Status == runner.StatusYielded
	// Only Akira's own draft is marked ready: a person's pull request (a spec pull request) is theirs.
	// A run that watches its CI is readied when its CI is green (run_ci.go).
	if status == lifecycle.StatusSucceeded && !yielded && run.PR != 0 && run.OpenedPR && run.CI == nil {
		// Read afresh (a retried job finds it ready), with what GitHub says of its merge.
		pr, err := gh.GetPullRequest(ctx, run.Owner, run.Repo, run.PR)
		if err != nil {
			return metrics.ResultRetry, fmt.Errorf("jobs: pull request #%d: %w", run.PR, err)
		}
		again, err := bases.beforeReady(ctx, pr)
		switch {
		case err != nil:
			return metrics.ResultRetry, err
		case again:
			// The base moved after the engine's last look: the pull request stays a draft, and the
			// job that continues the run merges the base first.
			yielded = true
		default:
			if err := gh.MarkReady(ctx, run.Owner, run.Repo, pr); err != nil {
				return metrics.ResultRetry, fmt.Errorf("jobs: mark pull request #%d ready: %w", run.PR, err)
			}
		}
	}
	if status == lifecycle.StatusSucceeded && !yielded && run.Review != nil {
		// Before the run is marked done: a retry finds the checkpoint on the branch and answers again.
		if err := h.answerReview(ctx, gh, run); err != nil {
			log.Warn("run job: review not answered; will retry", "err", err)
			return metrics.ResultRetry, err
		}
	}
	run, _, err := h.d.Store.Apply(ctx, run.ID, lifecycle.EngineFinished{Status: status, Outcome: out, Handed: handed, Yielded: yielded})
	if err != nil {
		return metrics.ResultRetry, err
	}
	switch run.Status {
	case lifecycle.StatusQueued, lifecycle.StatusWaitingCI, lifecycle.StatusPaused:
		// The table handed the run on (a decision already made, the pull request's CI, a pause):
		// that, not the engine's verdict, is how this job ended.
		status = run.Status
	}
	result := status.Result()
	if _, err := h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	if run.Status == lifecycle.StatusWaitingCI && run.CI != nil {
		// The CI is read at once, not at the next poll: a repository without CI is done now.
		err := h.d.Enqueuer.EnqueueCI(ctx, queue.CIPayload{RunID: run.ID, InstallationID: run.InstallationID, Head: run.CI.Head, Key: "waiting"})
		if err != nil && !errors.Is(err, queue.ErrDuplicate) {
			log.Warn("run job: CI not read at once; the next poll reads it", "err", err)
		}
	}
	log.Info("run job: done", "status", status, "head", out.Head, "parked", len(out.Parked))
	return result, nil
}
