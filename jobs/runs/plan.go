package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
)

// RunInputs is what GitHub says about a new run's repository and the issue or pull request it is for.
type RunInputs struct {
	Repo   ports.RepoInfo
	Config config.Repo
	// Issue is set for TriggerIssue, PR for TriggerPullRequest.
	Issue *ports.Issue
	PR    *ports.PullRequest
	// PlanFiles are the plan files the pull request changes (trigger pull_request, fork), in path order.
	PlanFiles []string
	// Workflows are the workflow files a fork's pull request changes (trigger fork).
	Workflows []string
	// Prior is the latest run of the pull request a review run addresses, when Redis knows it.
	Prior *lifecycle.Run
	// postedPlan is the plan Akira posted for an issue without a checklist, and its comment's link;
	// PostedNormalized says it rewrites a checklist Akira could not read (it runs only with --confirm).
	postedPlan, PostedPlanURL string
	PostedNormalized          bool
}

// ErrNeedsPlan stops a run of an issue written in prose that has no plan yet.
var ErrNeedsPlan = errors.New("jobs: the issue has no task checklist and no plan yet")

// errNeedsNormalize stops a run of an issue whose checklist no format reads with confidence: the
// planner agent proposes a rewrite first, which runs only once a person confirms it.
var errNeedsNormalize = errors.New("jobs: the issue's checklist is not read with confidence")

// errNeedsConfirm stops a plain /akira run of an issue whose proposed rewrite waits for --confirm.
var errNeedsConfirm = errors.New("jobs: the proposed plan waits for /akira run --confirm")

// inputsGitHub is what gatherRunInputs reads on GitHub.
type inputsGitHub interface {
	ports.Repos
	ports.Pulls
	ports.Comments
}

// GatherRunInputs asks GitHub what PlanRun needs.
func (h *Runs) GatherRunInputs(ctx context.Context, gh inputsGitHub, p queue.RunPayload) (RunInputs, error) {
	var in RunInputs
	info, err := gh.Repository(ctx, p.Owner, p.Repo)
	if err != nil {
		return in, fmt.Errorf("jobs: repository: %w", err)
	}
	in.Repo = info
	if p.DefaultBranch != "" {
		in.Repo.DefaultBranch = p.DefaultBranch
	}
	if in.Config, err = h.d.RepoConfig(ctx, gh, p.Owner, p.Repo, in.Repo.DefaultBranch); err != nil {
		return in, err
	}
	switch p.Trigger {
	case lifecycle.TriggerIssue:
		is, err := gh.GetIssue(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return in, fmt.Errorf("jobs: issue #%d: %w", p.Number, err)
		}
		in.Issue = &is
		if p.Path == "" && p.Plan == "" && (!hasTasks(is.Body) || needsNormalize(is.Body)) {
			if in.postedPlan, in.PostedPlanURL, in.PostedNormalized, err = postedPlan(ctx, gh, p.Owner, p.Repo, p.Number); err != nil {
				return in, err
			}
		}
	case lifecycle.TriggerReview:
		pr, err := gh.GetPullRequest(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return in, fmt.Errorf("jobs: pull request #%d: %w", p.Number, err)
		}
		in.PR = pr
		prior, err := h.d.Store.ByNumber(ctx, p.Owner, p.Repo, p.Number)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return in, err
		}
		in.Prior = prior
	case lifecycle.TriggerPullRequest:
		pr, err := gh.GetPullRequest(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return in, fmt.Errorf("jobs: pull request #%d: %w", p.Number, err)
		}
		in.PR = pr
		files, err := gh.PullRequestFiles(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return in, fmt.Errorf("jobs: files of pull request #%d: %w", p.Number, err)
		}
		in.PlanFiles = changedPlans(files, in.Config)
	case lifecycle.TriggerFork:
		// The files first, then the head: a head still at the commit the writer asked for was the
		// head these files were listed at.
		files, err := gh.PullRequestFiles(ctx, p.Owner, p.Repo, p.Number)
		if err != nil {
			return in, fmt.Errorf("jobs: files of pull request #%d: %w", p.Number, err)
		}
		if in.PR, err = gh.GetPullRequest(ctx, p.Owner, p.Repo, p.Number); err != nil {
			return in, fmt.Errorf("jobs: pull request #%d: %w", p.Number, err)
		}
		in.PlanFiles = changedPlans(files, in.Config)
		for _, f := range files {
			if config.MatchAny([]string{config.WorkflowPaths}, f) {
				in.Workflows = append(in.Workflows, f)
			}
		}
	case queue.TriggerAPI:
		if p.Number > 0 {
			// A hand-off that names an issue continues it: the issue's title, and its checklist
			// unless the hand-off brings a plan.
			is, err := gh.GetIssue(ctx, p.Owner, p.Repo, p.Number)
			if err != nil {
				return in, fmt.Errorf("jobs: issue #%d: %w", p.Number, err)
			}
			in.Issue = &is
		}
	}
	return in, nil
}

// agentConfigError is an agent choice of .github/akira.yml the operator does not offer.
func agentConfigError(err error) error {
	return &config.RepoError{Path: config.RepoPaths[0], Problems: []string{"agent: " + err.Error()}, Err: err}
}

// PlanRun works out a new run, id, from its payload and what GitHub said: the branch, the plan, the
// agent and the attempts. It is pure, so every trigger's planning is tested without GitHub.
func PlanRun(p queue.RunPayload, id string, in RunInputs, op config.Operator) (*lifecycle.Run, error) {
	run := &lifecycle.Run{ID: id, Owner: p.Owner, Repo: p.Repo, InstallationID: p.InstallationID, Trigger: p.Trigger,
		Sender: p.Sender, Base: in.Repo.DefaultBranch, CloneURL: in.Repo.CloneURL, RepoURL: in.Repo.HTMLURL}
	if _, err := lifecycle.Apply(run, lifecycle.Created{}, time.Now()); err != nil {
		return nil, err
	}
	rc := in.Config
	name, _, err := op.Agent(rc.Agent)
	if err != nil {
		return nil, agentConfigError(err)
	}
	run.Agent = name
	run.MaxAttempts = op.MaxAttemptsFor(rc)
	run.MaxParallel = op.MaxParallelFor(rc)
	run.Budget, run.BudgetCeilingUSD = op.BudgetFor(rc), op.BudgetCeiling.CostUSD
	run.Notify = rc.Notify
	if ci := op.CIFor(rc); ci.Watch != config.CIWatchOff {
		run.CI = &lifecycle.CIWatch{Timeout: time.Duration(ci.Timeout), Grace: time.Duration(ci.Grace), MaxRounds: ci.MaxFixRounds,
			RerunFlaky: ci.RerunFlaky, Each: ci.Watch == config.CIWatchEach}
	}
	if p.BudgetUSD > 0 {
		run.Budget.CostUSD, _ = op.RaiseCost(p.BudgetUSD)
	}
	run.AllowRedBase = p.AllowRedBase
	run.SyncOff = rc.SyncOff()
	run.Roadmap = rc.Roadmap
	if p.Path != "" {
		run.Roadmap = p.Path
	}
	switch p.Trigger {
	case lifecycle.TriggerIssue:
		is := in.Issue
		run.Issue = p.Number
		run.Branch = IssueBranch(rc.BranchPrefix, p.Number)
		run.Title = is.Title
		switch {
		case p.Plan != "":
			run.Roadmap, run.Plan = "", p.Plan
			run.PlanSource = pastedPlanSource + strconv.Itoa(p.Number)
			run.Source = run.PlanSource
			if run.RepoURL != "" && p.CommentID != 0 {
				run.SourceURL = fmt.Sprintf("%s/issues/%d#issuecomment-%d", run.RepoURL, p.Number, p.CommentID)
			}
		case p.Path != "" && p.Path != rc.Roadmap:
			// A plan file other than the roadmap names its tasks within its path ("<path>#<id>"),
			// as a spec pull request's do: the issue's branch may hold the checkpoints of the
			// issue's own checklist (a follow-up on the same pull request), whose ids ("1.1", ...)
			// the file's tasks would otherwise be taken for.
			run.Plans, run.Roadmap, run.Source = []string{p.Path}, rc.Roadmap, p.Path
			if run.RepoURL != "" {
				run.SourceURL = run.RepoURL + "/blob/" + run.Base + "/" + p.Path
			}
		case p.Path != "":
		case hasTasks(is.Body) && !needsNormalize(is.Body):
			run.Roadmap, run.Plan = "", is.Body
			run.PlanSource = "issue #" + strconv.Itoa(p.Number)
			run.Source, run.SourceURL = run.PlanSource, is.URL
		case in.postedPlan != "" && in.PostedNormalized && !p.Confirm:
			return nil, errNeedsConfirm
		case in.postedPlan != "":
			run.Roadmap, run.Plan, run.PlanFromComment = "", in.postedPlan, true
			run.PlanSource = "the plan for issue #" + strconv.Itoa(p.Number)
			run.Source, run.SourceURL = run.PlanSource, in.PostedPlanURL
		case needsNormalize(is.Body):
			return nil, errNeedsNormalize
		default:
			return nil, ErrNeedsPlan
		}
	case lifecycle.TriggerPush:
		run.Branch = runner.DefaultBranch(rc.BranchPrefix, run.Roadmap)
		run.Title = "Akira: tasks from " + run.Roadmap
	case queue.TriggerAPI:
		if err := planAPIRun(run, p, in.Issue, rc, op); err != nil {
			return nil, err
		}
	case lifecycle.TriggerFork:
		if err := planForkRun(run, p, in); err != nil {
			return nil, err
		}
	case lifecycle.TriggerPullRequest, lifecycle.TriggerReview:
		pr := in.PR
		if flow.IsFork(pr.HeadRepo, p.Owner, p.Repo) {
			return nil, fmt.Errorf("jobs: pull request #%d comes from the fork %q; fork pull requests are never run: %w",
				p.Number, pr.HeadRepo, asynq.SkipRetry)
		}
		if p.Branch != "" && p.Branch != pr.HeadRef {
			return nil, fmt.Errorf("jobs: pull request #%d now comes from %s, not %s: %w", p.Number, pr.HeadRef, p.Branch, asynq.SkipRetry)
		}
		run.PR, run.PRURL, run.PRNodeID, run.Branch, run.Base = pr.Number, pr.URL, pr.NodeID, pr.HeadRef, pr.BaseRef
		run.OpenedPR = strings.HasPrefix(pr.HeadRef, rc.BranchPrefix)
		if p.Trigger == lifecycle.TriggerReview {
			planReviewRun(run, p, in.Prior)
			break
		}
		planSpecFiles(run, p, in)
	default:
		return nil, fmt.Errorf("jobs: a new run cannot have trigger %s: %w", p.Trigger, asynq.SkipRetry)
	}
	if run.Source == "" {
		run.Source = run.Roadmap
		if run.RepoURL != "" {
			run.SourceURL = run.RepoURL + "/blob/" + run.Base + "/" + run.Roadmap
		}
	}
	if run.Title == "" {
		run.Title = "Akira: " + run.Source
	}
	return run, nil
}

// planSpecFiles makes a pull request's run (its own, or a fork's) run the plan files it changes.
func planSpecFiles(run *lifecycle.Run, p queue.RunPayload, in RunInputs) {
	rc := in.Config
	if p.Path == "" && len(in.PlanFiles) > 0 && !slices.Equal(in.PlanFiles, []string{rc.Roadmap}) {
		run.Plans = in.PlanFiles
		run.Roadmap = rc.Roadmap
		run.Source = strings.Join(in.PlanFiles, ", ")
		if run.RepoURL != "" && len(in.PlanFiles) == 1 {
			run.SourceURL = run.RepoURL + "/blob/" + run.Branch + "/" + in.PlanFiles[0]
		}
		run.Title = "Akira: " + run.Source
	}
}

// ForkRefusedError stops a writer's `/akira run` on a fork's pull request that Akira will not put on a
// branch of the repository as it is: it changes workflow files, or its head moved after the command.
type ForkRefusedError struct {
	Workflows  []string
	Asked, Now string
}

func (e *ForkRefusedError) Error() string {
	if len(e.Workflows) > 0 {
		return "jobs: the fork's pull request changes workflow files: " + strings.Join(e.Workflows, ", ")
	}
	return "jobs: the fork's pull request moved from " + e.Asked + " to " + e.Now + " after /akira run"
}

// planForkRun plans a writer's run of a fork's pull request: a branch of the repository that starts
// at the head the writer asked for, the base the pull request goes into, and a pull request of the
// run's own that names the fork's. The configuration is the default branch's (in.Config), as for
// every run; nothing of the fork's is read here.
func planForkRun(run *lifecycle.Run, p queue.RunPayload, in RunInputs) error {
	pr := in.PR
	if pr.HeadRepo == "" || !flow.IsFork(pr.HeadRepo, p.Owner, p.Repo) {
		return fmt.Errorf("jobs: pull request #%d does not come from a fork that exists: %w", p.Number, asynq.SkipRetry)
	}
	if len(in.Workflows) > 0 {
		return &ForkRefusedError{Workflows: in.Workflows}
	}
	if pr.HeadSHA != p.HeadSHA {
		return &ForkRefusedError{Asked: p.HeadSHA, Now: pr.HeadSHA}
	}
	run.Branch, run.Base = flow.ForkBranch(in.Config.BranchPrefix, p.Number), pr.BaseRef
	run.Fork = &lifecycle.Fork{Number: pr.Number, URL: pr.URL, Repo: pr.HeadRepo, Ref: pr.HeadRef, Head: p.HeadSHA}
	planSpecFiles(run, p, in)
	if run.Source == "" {
		// The roadmap as the fork has it, on the run's branch.
		run.Source = run.Roadmap
		if run.RepoURL != "" {
			run.SourceURL = run.RepoURL + "/blob/" + run.Branch + "/" + run.Roadmap
		}
	}
	run.Title = cmp.Or(run.Title, "Akira: "+run.Source) + fmt.Sprintf(" (from #%d)", p.Number)
	return nil
}

// hasTasks reports whether an issue body holds a task checklist Akira can run.
func hasTasks(body string) bool {
	rm, err := roadmap.ParseMarkdown("issue", []byte(body))
	return err == nil && len(rm.Tasks) > 0
}

// needsNormalize reports whether an issue body is a checklist that no format reads with confidence:
// tasks are there, but it does not parse, or not one of its dependencies names a task. Prose (no
// task at all) is planned, not normalized.
func needsNormalize(body string) bool {
	a := roadmap.Assess("issue.md", []byte(body), "")
	if a.Tasks == 0 {
		return false
	}
	_, err := roadmap.ParseMarkdown("issue", []byte(body))
	return err != nil || !a.Confident
}

// planName keeps an issue plan's format markdown whatever its name says.
func planName(source string) string {
	if strings.HasPrefix(source, "issue #") {
		return "issue.md"
	}
	return source
}

// planAPIRun fills in what a handed-off run takes from its request instead of GitHub. A hand-off that
// names an issue (is) runs on the issue's branch, so it continues the issue's pull request as a
// follow-up `/akira run` does, with the issue's checklist unless it brings a plan.
func planAPIRun(run *lifecycle.Run, p queue.RunPayload, is *ports.Issue, rc config.Repo, op config.Operator) error {
	run.Branch = store.HandoffBranch(rc.BranchPrefix, run.ID)
	if is != nil {
		run.Issue, run.Branch = is.Number, IssueBranch(rc.BranchPrefix, is.Number)
	}
	if p.Base != "" {
		run.Base = p.Base
	}
	if p.Agent != "" {
		name, _, err := op.Agent(p.Agent)
		if err != nil {
			return fmt.Errorf("jobs: agent %q: %w: %w", p.Agent, err, asynq.SkipRetry)
		}
		run.Agent = name
	}
	if p.Notify != nil {
		run.Notify = p.Notify
	}
	run.Reference = p.Reference
	by := strings.TrimSuffix(p.Sender, " (API)")
	if is != nil && p.Plan == "" && p.Path == "" {
		if !hasTasks(is.Body) {
			return fmt.Errorf("jobs: issue #%d has no task checklist, and the hand-off brings no plan: %w", is.Number, asynq.SkipRetry)
		}
		run.Roadmap, run.Plan = "", is.Body
		run.PlanSource = "issue #" + strconv.Itoa(is.Number)
		run.Source, run.SourceURL = run.PlanSource+", handed off by "+by, is.URL
	} else if p.Plan != "" {
		run.Roadmap, run.Plan = "", p.Plan
		run.PlanSource = "the plan handed off by " + by
		run.Source = run.PlanSource
	} else {
		run.Source = run.Roadmap + ", handed off by " + by
		if run.RepoURL != "" {
			run.SourceURL = run.RepoURL + "/blob/" + run.Base + "/" + run.Roadmap
		}
		if is != nil && run.Roadmap != rc.Roadmap {
			// On the issue's branch, as `/akira run <path>` on the issue: the file's tasks are
			// named within its path (see PlanRun).
			run.Plans, run.Roadmap = []string{run.Roadmap}, rc.Roadmap
		}
	}
	if p.Reference != "" {
		run.Source += " (reference " + p.Reference + ")"
	}
	run.Title = "Akira: " + run.Source
	if is != nil && is.Title != "" {
		run.Title = is.Title // the issue's pull request, whoever opens it
	}
	return nil
}

// pastedPlanSource begins the PlanSource of a plan pasted under `/akira run` in a comment.
const pastedPlanSource = "the plan in a comment on #"

// planScope names on the branch the tasks of a plan that runs on an issue's branch without being the
// issue's own: one handed off for the issue ("handoff-<run>#1.1") or pasted under `/akira run` in a
// comment ("comment-<run>#1.1"). The issue's branch holds the checkpoints of the issue's checklist
// (and of earlier plans), whose ids ("1.1", ...) the plan's tasks would otherwise be taken for, and
// skipped as done. "" for any other run.
func planScope(run *lifecycle.Run) string {
	switch {
	case run.Plan == "":
		return ""
	case run.Trigger == queue.TriggerAPI && run.Issue != 0 && run.PlanSource != "issue #"+strconv.Itoa(run.Issue):
		return "handoff-" + run.ID
	case run.Trigger == lifecycle.TriggerIssue && strings.HasPrefix(run.PlanSource, pastedPlanSource):
		return "comment-" + run.ID
	}
	return ""
}

// IssueBranch is the branch of an issue's runs: every run for the issue (a `/akira run` on it, a
// follow-up, a hand-off naming it) continues the same branch and pull request.
func IssueBranch(prefix string, number int) string { return prefix + "issue-" + strconv.Itoa(number) }
