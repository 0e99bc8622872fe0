package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/workspace"
	"github.com/akira-bot/akira/templates"
)

// ErrBusy is returned by a run job whose branch another worker is writing to. It is not a failure:
// asynq retries the job later without using up its retries (see IsFailure), which queues it behind
// the run that holds the branch.
var ErrBusy = errors.New("jobs: another worker is writing to the branch; retrying later")

// errNothingToDo ends a job that finds its work already done (a duplicate, a finished run).
var errNothingToDo = errors.New("jobs: nothing to do")

// IsFailure is the asynq.Config.IsFailure of a worker: waiting for a busy branch is not a failure.
func IsFailure(err error) bool { return !errors.Is(err, ErrBusy) }

// RetryDelay is the asynq.Config.RetryDelayFunc of a worker: a busy branch is tried again soon, a
// failure after an exponential backoff (10s, 20s, 40s, ... at most 10 minutes).
func RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, ErrBusy) {
		return 5 * time.Second
	}
	return time.Duration(math.Min(float64(10*time.Second)*math.Pow(2, float64(n)), float64(10*time.Minute)))
}

// AgentFactory builds the agent of a profile the operator defined.
type AgentFactory func(name string, p config.AgentProfile) (agent.Agent, error)

// Deps is what the handlers need. Store, Locker, Enqueuer and GitHub are required.
type Deps struct {
	Store    *Store
	Locker   *Locker
	Enqueuer *Enqueuer
	GitHub   Installations
	// Operator is the operator's configuration: agent profiles, attempts, verification settings.
	Operator config.Operator
	// NewAgent builds agents; nil builds exec agents only (ExecAgent).
	NewAgent AgentFactory
	// WorkDir is where workspaces are created (os.TempDir when empty).
	WorkDir string
	// Author of checkpoint commits (runner.DefaultAuthor when empty).
	Author  runner.Identity
	Metrics *Metrics
	Logger  *slog.Logger
}

// ExecAgent is the AgentFactory for exec profiles: the profile's command, with only the variables it
// names passed through.
func ExecAgent(workDir string) AgentFactory {
	return func(name string, p config.AgentProfile) (agent.Agent, error) {
		if p.Kind != "exec" {
			return nil, fmt.Errorf("jobs: agent %s: kind %s is not available in this worker", name, p.Kind)
		}
		return &agent.Exec{Command: p.Command, PassEnv: p.Env, Timeout: time.Duration(p.Timeout), TempDir: workDir}, nil
	}
}

// Handler processes the task types of this package.
type Handler struct {
	d   Deps
	log *slog.Logger
}

// NewHandler checks the dependencies.
func NewHandler(d Deps) (*Handler, error) {
	if d.Store == nil || d.Locker == nil || d.Enqueuer == nil || d.GitHub == nil {
		return nil, errors.New("jobs: handler needs a store, a locker, an enqueuer and GitHub")
	}
	if d.NewAgent == nil {
		d.NewAgent = ExecAgent(d.WorkDir)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Handler{d: d, log: log}, nil
}

// NewServeMux routes the task types to h.
func NewServeMux(h *Handler) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc(TypeRun, h.HandleRun)
	mux.HandleFunc(TypeResume, h.HandleResume)
	return mux
}

// HandleRun starts or continues a run: branch lock, fresh installation token for git, the engine with
// the GitHub reporter, and the run state at the end. A parked run ends the job (successfully): it
// holds no worker while people decide.
func (h *Handler) HandleRun(ctx context.Context, t *asynq.Task) (err error) {
	p, err := DecodeRunPayload(t)
	if err != nil {
		h.d.Metrics.job(TypeRun, OutcomeInvalid)
		return err
	}
	log := h.log.With("task", TypeRun, "delivery", p.DeliveryID, "repo", p.Owner+"/"+p.Repo, "trigger", p.Trigger)
	gh, err := h.d.GitHub.Installation(ctx, p.InstallationID)
	if err != nil {
		h.d.Metrics.job(TypeRun, OutcomeRetry)
		return fmt.Errorf("jobs: installation %d: %w", p.InstallationID, err)
	}
	run, err := h.resolveRun(ctx, gh, p)
	var busy *BranchBusyError
	switch {
	case errors.Is(err, errNothingToDo):
		log.Info("run job: nothing to do")
		h.d.Metrics.job(TypeRun, OutcomeNoop)
		return nil
	case errors.As(err, &busy):
		return h.branchBusy(ctx, gh, p, busy, log)
	case err != nil:
		h.d.Metrics.job(TypeRun, outcomeOf(err))
		return err
	}
	log = log.With("run", run.ID, "branch", run.Branch)
	outcome, err := h.work(ctx, gh, run, log)
	h.d.Metrics.job(TypeRun, outcome)
	return err
}

func outcomeOf(err error) string {
	switch {
	case errors.Is(err, ErrBusy):
		return OutcomeBusy
	case errors.Is(err, asynq.SkipRetry):
		return OutcomeFailed
	}
	return OutcomeRetry
}

// resolveRun loads the run a payload continues, or creates the run a trigger starts. A run created
// by an earlier try of the same job is found again by its id, derived from the delivery.
func (h *Handler) resolveRun(ctx context.Context, gh GitHub, p RunPayload) (*Run, error) {
	if p.Trigger == TriggerContinue {
		run, err := h.d.Store.Get(ctx, p.RunID)
		if errors.Is(err, ErrNotFound) {
			return nil, errNothingToDo
		}
		if err != nil {
			return nil, err
		}
		if run.Status != StatusQueued && run.Status != StatusRunning {
			return nil, errNothingToDo
		}
		return run, nil
	}
	id := RunIDFor(p.DeliveryID)
	if run, err := h.d.Store.Get(ctx, id); err == nil {
		if run.Status.Terminal() || run.Status == StatusParked {
			return nil, errNothingToDo
		}
		return run, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	run, err := h.newRun(ctx, gh, p, id)
	if err != nil {
		return nil, err
	}
	run, _, err = h.d.Store.Create(ctx, run)
	return run, err
}

// configError is a repository configuration or plan problem that the repository's people must fix; a
// retry cannot.
type configError struct {
	path     string
	problems []string
	action   string
}

func (e *configError) Error() string {
	return fmt.Sprintf("jobs: %s: %s", e.path, strings.Join(e.problems, "; "))
}

// repoConfig reads .github/akira.yml from the default branch, never from a branch a run works on.
func (h *Handler) repoConfig(ctx context.Context, gh GitHub, owner, repo string) (config.Repo, error) {
	for _, path := range []string{".github/akira.yml", ".github/akira.yaml"} {
		data, err := gh.GetFile(ctx, owner, repo, "", path)
		if errors.Is(err, ErrGitHubNotFound) {
			continue
		}
		if err != nil {
			return config.Repo{}, fmt.Errorf("jobs: read %s: %w", path, err)
		}
		rc, err := config.ParseRepo(data)
		if err == nil {
			err = h.d.Operator.ValidateRepo(rc)
		}
		if err != nil {
			return config.Repo{}, &configError{path: path, problems: splitProblems(err), action: "start the run"}
		}
		return rc, nil
	}
	return config.DefaultRepo(), nil
}

func splitProblems(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// newRun works out the branch, the plan and the pull request of a new run.
func (h *Handler) newRun(ctx context.Context, gh GitHub, p RunPayload, id string) (*Run, error) {
	run := &Run{ID: id, Owner: p.Owner, Repo: p.Repo, InstallationID: p.InstallationID, Trigger: p.Trigger,
		Sender: p.Sender, Base: p.DefaultBranch, CloneURL: p.CloneURL, Status: StatusQueued}
	if run.Base == "" || run.CloneURL == "" || run.RepoURL == "" {
		info, err := gh.Repository(ctx, p.Owner, p.Repo)
		if err != nil {
			return nil, fmt.Errorf("jobs: repository: %w", err)
		}
		if run.Base == "" {
			run.Base = info.DefaultBranch
		}
		if run.CloneURL == "" {
			run.CloneURL = info.CloneURL
		}
		run.RepoURL = info.HTMLURL
	}
	rc, err := h.repoConfig(ctx, gh, p.Owner, p.Repo)
	if err != nil {
		return nil, h.refuseConfig(ctx, gh, p, err)
	}
	name, _, err := h.d.Operator.Agent(rc.Agent)
	if err != nil {
		return nil, h.refuseConfig(ctx, gh, p, &configError{path: ".github/akira.yml", problems: []string{"agent: " + err.Error()}, action: "start the run"})
	}
	run.Agent = name
	run.MaxAttempts = h.d.Operator.MaxAttemptsFor(rc)
	run.Roadmap = rc.Roadmap
	if p.Path != "" {
		run.Roadmap = p.Path
	}
	switch p.Trigger {
	case TriggerIssue:
		run.Issue = p.Number
		run.Branch = rc.BranchPrefix + "issue-" + strconv.Itoa(p.Number)
		is, err := gh.GetIssue(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return nil, fmt.Errorf("jobs: issue #%d: %w", p.Number, err)
		}
		run.Title = is.Title
		if p.Path == "" {
			if rm, err := roadmap.ParseMarkdown("issue", []byte(is.Body)); err == nil && len(rm.Tasks) > 0 {
				run.Roadmap, run.Plan = "", is.Body
				run.PlanSource = "issue #" + strconv.Itoa(p.Number)
				run.Source, run.SourceURL = run.PlanSource, is.URL
			}
		}
	case TriggerPush:
		run.Branch = runner.DefaultBranch(rc.BranchPrefix, run.Roadmap)
		run.Title = "Akira: tasks from " + run.Roadmap
	case TriggerPullRequest:
		pr, err := gh.GetPullRequest(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return nil, fmt.Errorf("jobs: pull request #%d: %w", p.Number, err)
		}
		if pr.HeadRepo != "" && !strings.EqualFold(pr.HeadRepo, p.Owner+"/"+p.Repo) {
			return nil, fmt.Errorf("jobs: pull request #%d comes from the fork %s; fork pull requests are never run: %w",
				p.Number, pr.HeadRepo, asynq.SkipRetry)
		}
		run.PR, run.PRURL, run.PRNodeID, run.Branch, run.Base = pr.Number, pr.URL, pr.NodeID, pr.HeadRef, pr.BaseRef
		if p.Branch != "" && p.Branch != pr.HeadRef {
			return nil, fmt.Errorf("jobs: pull request #%d now comes from %s, not %s: %w", p.Number, pr.HeadRef, p.Branch, asynq.SkipRetry)
		}
	}
	if run.Source == "" {
		run.Source = run.Roadmap
		if run.RepoURL != "" {
			run.SourceURL = run.RepoURL + "/blob/" + run.Base + "/" + run.Roadmap
		}
	}
	return run, nil
}

// refuseConfig answers a configuration problem where the people who can fix it will see it, and
// makes the job end without a retry.
func (h *Handler) refuseConfig(ctx context.Context, gh GitHub, p RunPayload, err error) error {
	var ce *configError
	if !errors.As(err, &ce) {
		return err
	}
	if p.Number > 0 {
		body, rerr := templates.Render("config_error", templates.ConfigError{Path: ce.path, Problems: ce.problems, Action: ce.action})
		if rerr != nil {
			return rerr
		}
		if _, _, cerr := gh.CreateComment(ctx, p.Owner, p.Repo, p.Number, body); cerr != nil {
			return fmt.Errorf("jobs: post configuration error: %w", cerr)
		}
	}
	return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
}

// branchBusy answers a trigger for a branch another run owns. People get a reply at once; a push or
// a pull request update waits behind a working run (and is dropped, with a note, behind a parked one,
// because a parked run may wait for days).
func (h *Handler) branchBusy(ctx context.Context, gh GitHub, p RunPayload, busy *BranchBusyError, log *slog.Logger) error {
	active := busy.Active
	if p.Trigger != TriggerIssue && active.Status != StatusParked {
		log.Info("run job: branch busy, waiting", "active_run", active.ID)
		h.d.Metrics.job(TypeRun, OutcomeBusy)
		return fmt.Errorf("%w (run %s)", ErrBusy, active.ID)
	}
	number := p.Number
	if number == 0 {
		number = summaryNumber(active)
	}
	if number > 0 {
		msg := fmt.Sprintf("A run is already in progress on `%s`: run `%s` is %s.", active.Branch, active.ID, active.Status)
		if active.Status == StatusParked && len(active.Parked) > 0 {
			msg += fmt.Sprintf(" It waits for a decision on `%s`: reply `/akira approve`, `/akira retry <guidance>`, `/akira skip` or `/akira abort` first.", active.Parked[0].TaskID)
		}
		if p.Trigger == TriggerIssue {
			msg += " Nothing new was started; reply `/akira status` to follow it."
		} else {
			msg += " The new changes were not started; they are picked up by the next run on the branch."
		}
		if active.SummaryURL != "" {
			msg += fmt.Sprintf(" ([run summary](%s))", active.SummaryURL)
		}
		if _, _, err := gh.CreateComment(ctx, p.Owner, p.Repo, number, msg); err != nil {
			h.d.Metrics.job(TypeRun, OutcomeRetry)
			return fmt.Errorf("jobs: reply that the branch is busy: %w", err)
		}
	}
	log.Info("run job: branch owned by another run", "active_run", active.ID, "status", active.Status)
	h.d.Metrics.job(TypeRun, OutcomeRefused)
	return nil
}

// work is the part of the run job under the branch lock.
func (h *Handler) work(ctx context.Context, gh GitHub, run *Run, log *slog.Logger) (string, error) {
	lk, err := h.d.Locker.Acquire(ctx, BranchLockName(run.Owner, run.Repo, run.Branch))
	if errors.Is(err, ErrLocked) {
		log.Info("run job: branch locked by another worker, waiting")
		return OutcomeBusy, fmt.Errorf("%w: %s", ErrBusy, run.Branch)
	}
	if err != nil {
		return OutcomeRetry, err
	}
	defer func() {
		if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn("run job: release branch lock", "err", err)
		}
	}()
	lctx := lk.Context()

	// Read the state again under the lock: the run may have finished, parked or been aborted while
	// this job waited.
	run, err = h.d.Store.Update(lctx, run.ID, func(r *Run) error {
		if r.Status != StatusQueued && r.Status != StatusRunning {
			return errNothingToDo
		}
		r.Status = StatusRunning
		r.Jobs++
		return nil
	})
	if errors.Is(err, errNothingToDo) {
		return OutcomeNoop, nil
	}
	if err != nil {
		return OutcomeRetry, err
	}
	log.Info("run job: working", "job", run.Jobs, "decisions", len(run.Decisions), "parked", len(run.Parked))

	_, profile, err := h.d.Operator.Agent(run.Agent)
	if err != nil {
		return h.fail(ctx, gh, run, fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry), log)
	}
	ag, err := h.d.NewAgent(run.Agent, profile)
	if err != nil {
		return h.fail(ctx, gh, run, fmt.Errorf("jobs: %w: %w", err, asynq.SkipRetry), log)
	}
	if run, err = h.ensurePR(lctx, gh, run); err != nil {
		return h.retryOrFail(ctx, lctx, gh, run, err, log)
	}

	rep := NewReporter(gh, h.d.Store, h.d.Metrics, log, run)
	opts := runner.Options{
		Repo: run.CloneURL, Roadmap: run.Roadmap, Branch: run.Branch, Base: run.Base, RunID: run.ID,
		Agent: ag, MaxAttempts: run.MaxAttempts, Decisions: engineDecisions(run),
		Env: h.d.Operator.Env, VerifyTimeout: time.Duration(h.d.Operator.VerifyTimeout),
		AgentTimeout: time.Duration(profile.Timeout), ProtectedPaths: h.d.Operator.ProtectedPaths,
		Author: h.d.Author, WorkDir: h.d.WorkDir, Reporter: rep, GitAuth: gh.GitAuthHeader, Logger: log,
	}
	if run.Plan != "" {
		opts.Plan, opts.PlanSource = []byte(run.Plan), run.PlanSource
	}
	out, runErr := runner.Run(lctx, opts)
	run = rep.Run()
	if runErr != nil {
		return h.retryOrFail(ctx, lctx, gh, run, runErr, log)
	}
	return h.finish(ctx, gh, run, out, log)
}

// engineDecisions turns the run's decisions into the engine's, and keeps every other parked task
// parked: without a decision the engine would run it again.
func engineDecisions(run *Run) map[string]runner.Decision {
	out := map[string]runner.Decision{}
	for id, d := range run.Decisions {
		kind := runner.DecisionPark
		switch d.Action {
		case ActionApprove:
			kind = runner.DecisionApprove
		case ActionRetry:
			kind = runner.DecisionRetry
		case ActionSkip:
			kind = runner.DecisionSkip
		case ActionAbort:
			kind = runner.DecisionAbort
		}
		out[id] = runner.Decision{Kind: kind, Guidance: d.Guidance}
	}
	for _, p := range run.Parked {
		if _, ok := out[p.TaskID]; !ok {
			out[p.TaskID] = runner.Decision{Kind: runner.DecisionPark}
		}
	}
	return out
}

// ensurePR makes sure the run has its pull request before the first task, so that check runs and the
// summary have a home. A new branch gets an empty start commit first: GitHub refuses a pull request
// without commits.
func (h *Handler) ensurePR(ctx context.Context, gh GitHub, run *Run) (*Run, error) {
	if run.PR != 0 {
		return run, nil
	}
	pr, err := gh.FindPullRequest(ctx, run.Owner, run.Repo, run.Branch, run.Base)
	if errors.Is(err, ErrGitHubNotFound) {
		pr, err = h.openPR(ctx, gh, run)
	}
	if err != nil {
		return run, err
	}
	return h.d.Store.Update(ctx, run.ID, func(r *Run) error {
		r.PR, r.PRURL, r.PRNodeID = pr.Number, pr.URL, pr.NodeID
		return nil
	})
}

func (h *Handler) openPR(ctx context.Context, gh GitHub, run *Run) (*PullRequest, error) {
	ws, err := workspace.Clone(ctx, workspace.Options{Remote: run.CloneURL, Base: run.Base, WorkDir: h.d.WorkDir,
		Auth: gh.GitAuthHeader, Author: h.d.Author})
	if err != nil {
		return nil, fmt.Errorf("jobs: prepare branch: %w", err)
	}
	defer ws.Close()
	if err := ws.Checkout(ctx, run.Branch); err != nil {
		return nil, fmt.Errorf("jobs: prepare branch: %w", err)
	}
	ahead, err := ws.Git(ctx, "rev-list", "--count", "refs/remotes/origin/"+run.Base+"..HEAD")
	if err != nil {
		return nil, fmt.Errorf("jobs: prepare branch: %w", err)
	}
	if strings.TrimSpace(ahead) == "0" {
		msg := fmt.Sprintf("akira: start run %s\n\nThe pull request of this run needs a commit; the tasks follow.\n\n%s: %s\n",
			run.ID, runner.TrailerRun, run.ID)
		if _, err := ws.Commit(ctx, msg); err != nil {
			return nil, fmt.Errorf("jobs: start commit: %w", err)
		}
		if err := ws.Push(ctx); err != nil {
			return nil, fmt.Errorf("jobs: start commit: %w", err)
		}
	}
	body := templates.PRBody{RunID: run.ID, Source: run.Source, SourceURL: run.SourceURL, Issue: run.Issue}
	plan := []byte(run.Plan)
	source := run.PlanSource
	if run.Plan == "" {
		plan, _, _ = readFile(ws.Dir, run.Roadmap)
		source = run.Roadmap
	}
	if rm, err := roadmap.Parse(planName(source), plan); err == nil {
		for _, t := range rm.Tasks {
			body.Tasks = append(body.Tasks, templates.PRTask{ID: t.ID, Title: t.Title, Done: t.Done})
		}
	}
	text, err := templates.Render("pr_body", body)
	if err != nil {
		return nil, err
	}
	title := run.Title
	if title == "" {
		title = "Akira: " + run.Source
	}
	pr, err := gh.CreatePullRequest(ctx, run.Owner, run.Repo, NewPullRequest{Title: title, Body: text, Head: run.Branch, Base: run.Base, Draft: true})
	if err != nil {
		return nil, fmt.Errorf("jobs: open pull request: %w", err)
	}
	return pr, nil
}

// readFile reads a file of the workspace by its slash-separated repository path.
func readFile(dir, path string) ([]byte, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// planName keeps an issue plan's format markdown whatever its name says.
func planName(source string) string {
	if strings.HasPrefix(source, "issue #") {
		return "issue.md"
	}
	return source
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
func (h *Handler) retryOrFail(ctx, lctx context.Context, gh GitHub, run *Run, err error, log *slog.Logger) (string, error) {
	if cause := context.Cause(lctx); errors.Is(cause, ErrLockLost) {
		log.Warn("run job: branch lock lost; another try continues", "err", err)
		return OutcomeRetry, fmt.Errorf("jobs: %w: %w", ErrLockLost, err)
	}
	if ctx.Err() != nil {
		log.Warn("run job: cancelled; another try continues", "err", err)
		return OutcomeRetry, fmt.Errorf("jobs: run %s interrupted: %w", run.ID, err)
	}
	permanent := errors.Is(err, runner.ErrInvalidPlan) || errors.Is(err, runner.ErrUsage) || errors.Is(err, asynq.SkipRetry)
	if !permanent && !lastTry(ctx) {
		log.Warn("run job: failed, will retry", "err", err)
		return OutcomeRetry, err
	}
	if permanent && !errors.Is(err, asynq.SkipRetry) {
		err = fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return h.fail(ctx, gh, run, err, log)
}

// fail marks the run failed and says why in the summary.
func (h *Handler) fail(ctx context.Context, gh GitHub, run *Run, err error, log *slog.Logger) (string, error) {
	log.Error("run job: run failed", "err", err)
	msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "jobs: "), ": "+asynq.SkipRetry.Error())
	run, uerr := h.d.Store.Update(ctx, run.ID, func(r *Run) error {
		r.Status, r.Error = StatusFailed, msg
		for i := range r.Tasks {
			if r.Tasks[i].Status == templates.StatusRunning {
				r.Tasks[i].Status = templates.StatusFailed
			}
		}
		return nil
	})
	if uerr != nil {
		return OutcomeRetry, errors.Join(err, uerr)
	}
	p := publisher{gh: gh, store: h.d.Store, metrics: h.d.Metrics, log: log}
	if _, perr := p.publishSummary(ctx, run); perr != nil {
		log.Warn("run job: summary of the failed run not posted", "err", perr)
	}
	return OutcomeFailed, err
}

// finish records how the engine's run ended.
func (h *Handler) finish(ctx context.Context, gh GitHub, run *Run, out runner.Outcome, log *slog.Logger) (string, error) {
	status, outcome := StatusSucceeded, OutcomeSucceeded
	switch out.Status {
	case runner.StatusParked:
		status, outcome = StatusParked, OutcomeParked
	case runner.StatusAborted:
		status, outcome = StatusAborted, OutcomeAborted
	case runner.StatusFailed:
		status, outcome = StatusFailed, OutcomeFailed
	}
	if status == StatusSucceeded && run.PR != 0 {
		pr := &PullRequest{Number: run.PR, Draft: true} // no node id: gh reads the PR afresh, so a retried job finds it ready
		if err := gh.MarkReady(ctx, run.Owner, run.Repo, pr); err != nil {
			return OutcomeRetry, fmt.Errorf("jobs: mark pull request #%d ready: %w", run.PR, err)
		}
	}
	run, err := h.d.Store.Update(ctx, run.ID, func(r *Run) error {
		r.Status = status
		r.Error = out.Error
		if out.Head != "" {
			r.Head = out.Head
		}
		// Decisions were handed to the engine; the parked tasks are those the engine says are parked.
		r.Decisions = nil
		parked := map[string]bool{}
		for _, e := range out.Parked {
			parked[e.TaskID] = true
		}
		kept := r.Parked[:0]
		for _, p := range r.Parked {
			if parked[p.TaskID] {
				kept = append(kept, p)
			}
		}
		r.Parked = kept
		return nil
	})
	if err != nil {
		return OutcomeRetry, err
	}
	p := publisher{gh: gh, store: h.d.Store, metrics: h.d.Metrics, log: log}
	if _, err := p.publishSummary(ctx, run); err != nil {
		return OutcomeRetry, err
	}
	log.Info("run job: done", "status", status, "head", out.Head, "parked", len(out.Parked))
	return outcome, nil
}

// HandleResume applies a human decision to a parked run: it acts only while the run is parked on that
// task and its branch is where the run left it; otherwise it replies why nothing happened. Approve,
// retry and skip enqueue a job that continues the run; abort ends it.
func (h *Handler) HandleResume(ctx context.Context, t *asynq.Task) error {
	p, err := DecodeResumePayload(t)
	if err != nil {
		h.d.Metrics.job(TypeResume, OutcomeInvalid)
		return err
	}
	outcome, err := h.resume(ctx, p)
	h.d.Metrics.job(TypeResume, outcome)
	return err
}

func (h *Handler) resume(ctx context.Context, p ResumePayload) (string, error) {
	log := h.log.With("task", TypeResume, "repo", p.Owner+"/"+p.Repo, "action", p.Action, "by", p.Sender)
	gh, err := h.d.GitHub.Installation(ctx, p.InstallationID)
	if err != nil {
		return OutcomeRetry, fmt.Errorf("jobs: installation %d: %w", p.InstallationID, err)
	}
	var run *Run
	if p.RunID != "" {
		run, err = h.d.Store.Get(ctx, p.RunID)
	} else {
		run, err = h.d.Store.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	}
	if errors.Is(err, ErrNotFound) {
		return h.reply(ctx, gh, p, nil, "there is no Akira run here to "+string(p.Action)+".", log)
	}
	if err != nil {
		return OutcomeRetry, err
	}
	log = log.With("run", run.ID)
	head, err := gh.GetRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch)
	if err != nil && !errors.Is(err, ErrGitHubNotFound) {
		return OutcomeRetry, fmt.Errorf("jobs: branch head: %w", err)
	}
	if errors.Is(err, ErrGitHubNotFound) {
		return h.reply(ctx, gh, p, run, fmt.Sprintf("the branch `%s` of run `%s` no longer exists.", run.Branch, run.ID), log)
	}
	d := Decision{Key: p.JobID(), TaskID: p.TaskID, Action: p.Action, Guidance: p.Guidance, By: p.Sender}
	run, already, err := h.d.Store.Decide(ctx, run.ID, d, head)
	var np *NotParkedError
	if errors.As(err, &np) {
		return h.reply(ctx, gh, p, run, np.Reason+".", log)
	}
	if err != nil {
		return OutcomeRetry, err
	}
	log.Info("resume job: decision taken", "already", already)
	pub := publisher{gh: gh, store: h.d.Store, metrics: h.d.Metrics, log: log}
	if p.Action == ActionAbort {
		for _, pk := range run.Parked {
			if t := run.Task(pk.TaskID); t != nil && t.CheckRunID != 0 {
				if err := gh.UpdateCheckRun(ctx, run.Owner, run.Repo, t.CheckRunID, CheckRun{Conclusion: ConclusionCancelled,
					Title: "Aborted", Summary: fmt.Sprintf("The run was aborted by @%s.", p.Sender)}); err != nil {
					return OutcomeRetry, fmt.Errorf("jobs: cancel check run of %s: %w", pk.TaskID, err)
				}
			}
		}
		if _, err := pub.publishSummary(ctx, run); err != nil {
			return OutcomeRetry, err
		}
		return OutcomeAborted, nil
	}
	cont := RunPayload{Trigger: TriggerContinue, RunID: run.ID, DeliveryID: continueKey(run.ID, p.JobID()),
		InstallationID: run.InstallationID, Owner: run.Owner, Repo: run.Repo, Sender: p.Sender}
	if err := h.d.Enqueuer.EnqueueRun(ctx, cont); err != nil && !errors.Is(err, ErrDuplicate) {
		return OutcomeRetry, err
	}
	if _, err := pub.publishSummary(ctx, run); err != nil {
		return OutcomeRetry, err
	}
	return OutcomeDecided, nil
}

// reply answers a decision that did nothing, on the issue or pull request it came from.
func (h *Handler) reply(ctx context.Context, gh GitHub, p ResumePayload, run *Run, why string, log *slog.Logger) (string, error) {
	log.Info("resume job: nothing happened", "why", why)
	number := p.Number
	if number == 0 && run != nil {
		number = summaryNumber(run)
	}
	if number == 0 {
		return OutcomeRefused, nil
	}
	what := "/akira " + string(p.Action)
	if p.CommentID == 0 {
		what = "The " + string(p.Action) + " button"
	} else {
		what = "`" + what + "`"
	}
	msg := fmt.Sprintf("%s did nothing: %s Reply `/akira status` to see where the run is.", what, upperFirst(why))
	if _, _, err := gh.CreateComment(ctx, p.Owner, p.Repo, number, msg); err != nil {
		return OutcomeRetry, fmt.Errorf("jobs: reply: %w", err)
	}
	return OutcomeRefused, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Status is the Markdown answer to `/akira status` on an issue or pull request.
func (h *Handler) Status(ctx context.Context, owner, repo string, number int) (string, error) {
	return h.d.Store.StatusText(ctx, owner, repo, number)
}

// StatusText is the Markdown answer to `/akira status` on an issue or pull request: the web process
// answers it from the state alone.
func (s *Store) StatusText(ctx context.Context, owner, repo string, number int) (string, error) {
	run, err := s.ByNumber(ctx, owner, repo, number)
	if errors.Is(err, ErrNotFound) {
		return templates.Render("status", templates.Status{})
	}
	if err != nil {
		return "", err
	}
	return templates.Render("status", StatusData(run))
}

// StatusData is the status template's data for a run.
func StatusData(run *Run) templates.Status {
	s := templates.Status{RunID: run.ID, State: templateState(run.Status), Branch: run.Branch, Total: len(run.Tasks),
		SummaryURL: run.SummaryURL, PRURL: run.PRURL}
	var current *TaskState
	for i := range run.Tasks {
		t := &run.Tasks[i]
		switch t.Status {
		case templates.StatusPassed, templates.StatusSkipped:
			s.Done++
		case templates.StatusRunning:
			current = t
		}
	}
	if run.Status == StatusParked && len(run.Parked) > 0 {
		current = run.Task(run.Parked[0].TaskID)
	}
	if current != nil {
		s.CurrentID, s.CurrentTitle, s.Attempt = current.ID, current.Title, current.Attempts
	}
	return s
}
