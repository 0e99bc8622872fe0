package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/templates"
)

// Most issues are written in prose. `/akira run` on one (no task checkboxes, no path) first asks the
// repository's agent for a plan and posts it as a comment; the next `/akira run` runs that plan, read
// back from the comment (or the issue's own checklist, if someone edited one in). `/akira plan
// [guidance]` asks for a new plan. With `plan: auto` the run starts as soon as the plan is posted,
// but only when the issue's author has write access: the agent wrote the plan's verify commands from
// the issue's text, and a stranger's text must not choose commands that run before a writer has seen
// them. No pull request is opened before there is a plan to run.

// Results of a plan job.
const (
	ResultPlanned = "planned"
)

// HandlePlan writes and posts a plan for an issue.
func (h *Planner) HandlePlan(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypePlan, h.plan)
}

func (h *Planner) plan(ctx context.Context, p queue.PlanPayload) (string, error) {
	if result, err := h.d.Paused(ctx, p.InstallationID); err != nil {
		return result, err
	}
	log := h.log.With("task", queue.TypePlan, "delivery", p.DeliveryID, "installation", p.InstallationID,
		"repo", p.Owner+"/"+p.Repo, "issue", p.Number)
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	retried, _ := asynq.GetRetryCount(ctx)
	in, err := h.runs.GatherRunInputs(ctx, gh, queue.RunPayload{TaskHeader: queue.TaskHeader{Owner: p.Owner, Repo: p.Repo}, DefaultBranch: p.DefaultBranch,
		Trigger: lifecycle.TriggerIssue, Number: p.Number})
	if ce, bad := flow.AsRepoConfigError(err); bad {
		if rerr := publish.ReplyOnce(ctx, h.d.Store.Dedupe, gh, p.Owner, p.Repo, p.Number, "config-"+p.JobID(),
			publish.ConfigErrorText(ce, "write a plan", "", ""), retried > 0); rerr != nil {
			return metrics.ResultRetry, rerr
		}
		return metrics.ResultReplied, nil
	}
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return metrics.ResultInvalid, fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	name, profile, err := h.d.Operator.Agent(in.Config.Agent)
	if err != nil {
		return metrics.ResultFailed, h.planFailed(ctx, gh, p, "the agent `"+in.Config.Agent+"` is not one the operator offers", retried > 0)
	}
	ag, err := h.d.NewAgent(name, profile)
	if err != nil {
		return metrics.ResultFailed, h.planFailed(ctx, gh, p, "the agent could not start: "+err.Error(), retried > 0)
	}
	if p.Normalize {
		return h.normalize(ctx, gh, p, in, ag, profile, log)
	}
	log.Info("plan job: asking the agent for a plan", "agent", name)
	res, err := runner.MakePlan(ctx, runner.PlanOptions{
		Repo: in.Repo.CloneURL, Base: in.Repo.DefaultBranch,
		Subject: fmt.Sprintf("issue #%d: %s", p.Number, in.Issue.Title), Request: in.Issue.Body, Guidance: p.Guidance,
		Agent: ag, AgentTimeout: time.Duration(profile.Timeout), WorkDir: h.d.WorkDir, Cache: h.d.Cache, GitAuth: gh.GitAuthHeader,
		Sandbox: h.d.Sandbox, AgentNetwork: profile.AgentNetwork(), Logger: log,
	})
	if errors.Is(err, runner.ErrNoPlan) {
		log.Info("plan job: no plan", "err", err, "attempts", res.Attempts)
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), runner.ErrNoPlan.Error()), ": ")
		return metrics.ResultFailed, h.planFailed(ctx, gh, p, "the agent's answers held no plan that parses ("+reason+")", retried > 0)
	}
	if err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: plan: %w", err)
	}

	auto := p.FromRun && in.Config.Plan == config.PlanAuto
	refused := false
	if auto {
		level, err := gh.Permission(ctx, p.Owner, p.Repo, in.Issue.Author)
		if err != nil {
			return metrics.ResultRetry, fmt.Errorf("jobs: permission of the issue's author: %w", err)
		}
		if !slices.Contains(flow.WriteLevels, strings.ToLower(level)) {
			auto, refused = false, true
		}
	}
	body := publish.Render("plan", templates.Plan{Issue: p.Number, Plan: res.Plan, Tasks: res.Tasks, Auto: auto, AutoRefused: refused, By: publish.Person(p.Sender)},
		templates.PlanMarker(p.Number)+"\n```markdown\n"+res.Plan+"```\n")
	if err := postOrEdit(ctx, gh, p.Owner, p.Repo, p.Number, templates.PlanMarker(p.Number), body); err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: post the plan: %w", err)
	}
	log.Info("plan job: plan posted", "tasks", res.Tasks, "attempts", res.Attempts, "auto", auto)
	if auto {
		err := h.d.Enqueuer.EnqueueRun(ctx, queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "planned-" + p.DeliveryID, InstallationID: p.InstallationID, Owner: p.Owner, Repo: p.Repo, Sender: p.Sender}, DefaultBranch: in.Repo.DefaultBranch, Trigger: lifecycle.TriggerIssue, Number: p.Number})
		if err := queue.Enqueued(err); err != nil {
			return metrics.ResultRetry, err
		}
	}
	return ResultPlanned, nil
}

// planFailed says why there is no plan, once per job; the job ends (another try would fail alike).
func (h *Planner) planFailed(ctx context.Context, c ports.Comments, p queue.PlanPayload, reason string, retried bool) error {
	text := publish.Render("plan_failed", templates.PlanFailed{Reason: reason}, "Akira could not write a plan for this issue: "+reason+".")
	if err := publish.ReplyOnce(ctx, h.d.Store.Dedupe, c, p.Owner, p.Repo, p.Number, "plan-failed-"+p.JobID(), text, retried); err != nil {
		return fmt.Errorf("jobs: reply: %w", err)
	}
	return nil
}

// postOrEdit keeps one comment per marker: the one found is edited, else one is posted.
func postOrEdit(ctx context.Context, c ports.Comments, owner, repo string, number int, marker, body string) error {
	id, _, err := c.FindComment(ctx, owner, repo, number, marker)
	switch {
	case err == nil:
		return c.EditComment(ctx, owner, repo, id, body)
	case errors.Is(err, ports.ErrGitHubNotFound):
		_, _, err = c.CreateComment(ctx, owner, repo, number, body)
		return err
	}
	return err
}

// postedPlan is the plan Akira posted for an issue, read back from its comment, with the comment's
// link; "" when there is none. normalized says it is a rewrite of the issue's checklist, which runs
// only when confirmed.
func postedPlan(ctx context.Context, c ports.Comments, owner, repo string, number int) (plan, url string, normalized bool, err error) {
	id, url, err := c.FindComment(ctx, owner, repo, number, templates.PlanMarker(number))
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("jobs: find the plan of #%d: %w", number, err)
	}
	body, err := c.CommentBody(ctx, owner, repo, id)
	if err != nil {
		return "", "", false, fmt.Errorf("jobs: read the plan of #%d: %w", number, err)
	}
	plan, _, why := runner.ExtractPlan(body)
	if why != "" {
		return "", "", false, nil // edited into something that is no plan: plan again
	}
	return plan, url, strings.Contains(body, templates.NormalizedMarker), nil
}

// normalize has the planner agent rewrite an issue's checklist that no format reads with
// confidence, and posts the rewrite beside the lines each task came from. Nothing runs: a person
// reads it and replies /akira run --confirm (whatever plan: auto says).
func (h *Planner) normalize(ctx context.Context, gh ports.GitHub, p queue.PlanPayload, in RunInputs, ag agent.Agent, profile config.AgentProfile, log *slog.Logger) (string, error) {
	retried, _ := asynq.GetRetryCount(ctx)
	body := in.Issue.Body
	a := roadmap.Assess("issue.md", []byte(body), "")
	problem := a.Problem("issue #" + strconv.Itoa(p.Number))
	if _, perr := roadmap.ParseMarkdown("issue", []byte(body)); perr != nil {
		problem = perr.Error()
	}
	log.Info("plan job: asking the planner agent to rewrite the issue's checklist", "tasks", a.Tasks)
	res, err := runner.NormalizePlan(ctx, runner.NormalizeOptions{Source: "issue.md", Text: body, Problem: problem,
		Agent: ag, AgentTimeout: time.Duration(profile.Timeout), WorkDir: h.d.WorkDir,
		Sandbox: h.d.Sandbox, AgentNetwork: profile.AgentNetwork(), Logger: log})
	if errors.Is(err, runner.ErrNoPlan) {
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), runner.ErrNoPlan.Error()), ": ")
		return metrics.ResultFailed, h.planFailed(ctx, gh, p, "the planner agent's answers held no plan that parses ("+reason+")", retried > 0)
	}
	if err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: normalize: %w", err)
	}
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	data := templates.PlanNormalized{Issue: p.Number, Plan: res.Plan, Problem: problem, Dropped: res.Dropped, By: publish.Person(p.Sender)}
	for _, t := range res.Tasks {
		row := templates.NormalizedRow{ID: t.ID, Title: t.Title, Depends: t.Depends, Guessed: t.Guessed}
		for _, n := range t.SourceLines {
			row.Lines = append(row.Lines, n)
			if n >= 1 && n <= len(lines) && len(row.Source) < 3 {
				row.Source = append(row.Source, strings.TrimSpace(lines[n-1]))
			}
		}
		data.Tasks = append(data.Tasks, row)
	}
	text := publish.Render("plan_normalized", data, templates.PlanMarker(p.Number)+"\n"+templates.NormalizedMarker+"\n```markdown\n"+res.Plan+"```\n")
	if err := postOrEdit(ctx, gh, p.Owner, p.Repo, p.Number, templates.PlanMarker(p.Number), text); err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: post the proposed plan: %w", err)
	}
	log.Info("plan job: proposed plan posted", "tasks", len(res.Tasks), "dropped_verify", len(res.Dropped))
	return ResultPlanned, nil
}

// planIssueKey names the plan job a `/akira run` starts for a prose issue.
func planIssueKey(p queue.RunPayload) string {
	return "run-" + p.DeliveryID + "-" + strconv.Itoa(p.Number)
}
