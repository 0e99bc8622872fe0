package intake

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
)

// A run handed off from outside GitHub (`POST /api/v1/runs`, `akira handoff`, `akira mcp`) enters
// the same intake as a comment: the API request checks what it can without GitHub (the token, the
// plan text) and queues a handoff job; the handoff job finds the repository's installation, plans
// the run as the run job will (configuration, agent) and queues the run job, which opens the pull
// request as for any other trigger. The API answers at once with the run's id: it is derived from
// the handoff's key, so the run job creates the run under the id the caller already holds.

// CheckPlanText reads a plan given as text (markdown task checkboxes) the way the run job will, and
// says how many tasks it has; the error names the line of each problem.
func CheckPlanText(text string) (int, error) {
	rm, err := roadmap.ParseMarkdown("plan", []byte(text))
	if err != nil {
		var list roadmap.Errors
		var one *roadmap.Error
		switch {
		case errors.As(err, &list):
		case errors.As(err, &one):
			list = roadmap.Errors{one}
		default:
			return 0, err
		}
		var out []string
		for _, e := range list {
			c := *e
			c.File = "plan"
			out = append(out, c.Error())
		}
		return 0, errors.New(strings.Join(out, "; "))
	}
	if len(rm.Tasks) == 0 {
		return 0, errors.New("plan: no tasks: write each task as a checkbox line, e.g. \"- [ ] Add a health endpoint\"")
	}
	return len(rm.Tasks), nil
}

// StartHandoff records a handoff and queues its job; created is false when the request's
// Idempotency-Key was seen in the last HandoffTTL, and the handoff returned is then the first one.
// The key is claimed with SET NX and an expiry, so two concurrent repeats start one run; it holds the
// run's id and the request's fingerprint, and a repeat whose request differs is a *KeyReusedError.
func (c *Controller) StartHandoff(ctx context.Context, req queue.HandoffRequest, tasks int) (store.Handoff, bool, error) {
	if req.Key != "" && req.Token.ID == "" {
		return store.Handoff{}, false, errors.New("jobs: handoff: an Idempotency-Key needs the token's ID")
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return store.Handoff{}, false, fmt.Errorf("jobs: handoff: %w", err)
	}
	delivery := "api-" + hex.EncodeToString(b)
	id := queue.RunIDFor(delivery)
	branch := store.HandoffBranch(config.DefaultBranchPrefix, id)
	if req.Issue > 0 {
		branch = config.DefaultBranchPrefix + "issue-" + strconv.Itoa(req.Issue)
	}
	h := store.Handoff{ID: id, Repo: req.Owner + "/" + req.Repo, Base: req.Base, Branch: branch,
		Reference: req.Reference, Created: time.Now().UTC(), Tasks: tasks}
	if prev, created, err := c.Store.Claim(ctx, h, req.Token.ID, req.Key, req.Fingerprint()); err != nil || !created {
		return prev, false, err
	}
	p := queue.HandoffPayload{Version: queue.PayloadVersion, DeliveryID: delivery, Owner: req.Owner, Repo: req.Repo, Base: req.Base,
		Plan: req.Plan, PlanPath: req.PlanPath, Agent: req.Agent, BudgetUSD: req.BudgetUSD, Reference: req.Reference,
		Issue: req.Issue, Notify: req.Notify, TokenName: req.Token.Name}
	if err := queue.Enqueued(c.Enqueuer.EnqueueHandoff(ctx, p)); err != nil {
		// Nothing was queued: the key must not keep answering with a run that will never exist.
		return store.Handoff{}, false, errors.Join(err, c.Store.Drop(ctx, id, req.Token.ID, req.Key))
	}
	_ = c.Store.Audit(ctx, store.AuditEntry{Time: h.Created, Token: req.Token.Name, Via: cmp.Or(req.Via, store.ViaAPI), Action: "start", RunID: id, Repo: h.Repo,
		Result: "queued"})
	return h, true, nil
}

// HandleHandoff turns a handoff into a run job.
func (h *API) HandleHandoff(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeHandoff, h.handoff)
}

func (h *API) handoff(ctx context.Context, p queue.HandoffPayload) (string, error) {
	id := queue.RunIDFor(p.DeliveryID)
	log := h.log.With("task", queue.TypeHandoff, "run", id, "repo", p.Owner+"/"+p.Repo, "token", p.TokenName)
	refuse := func(reason string) (string, error) {
		log.Info("handoff: refused", "reason", reason)
		if err := h.handoffs.FailHandoff(ctx, id, reason); err != nil && !errors.Is(err, store.ErrNotFound) {
			return metrics.ResultRetry, err
		}
		return metrics.ResultRefused, nil
	}
	if h.d.Repositories == nil {
		return refuse("this server cannot find the App's installations (no GitHub App client)")
	}
	inst, err := h.d.Repositories.RepoInstallation(ctx, p.Owner, p.Repo)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return refuse(fmt.Sprintf("the App is not installed on %s/%s (or the repository does not exist)", p.Owner, p.Repo))
	}
	if err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: installation of %s/%s: %w", p.Owner, p.Repo, err)
	}
	gh, err := flow.Installation(ctx, h.d.GitHub, inst)
	if err != nil {
		return metrics.ResultRetry, err
	}
	rp := queue.RunPayload{TaskHeader: queue.TaskHeader{Version: queue.PayloadVersion, DeliveryID: p.DeliveryID, InstallationID: inst, Owner: p.Owner, Repo: p.Repo, Sender: p.TokenName + " (API)"}, Trigger: queue.TriggerAPI, Path: p.PlanPath, Plan: p.Plan, BudgetUSD: p.BudgetUSD,
		Base: p.Base, Reference: p.Reference, Agent: p.Agent, Notify: p.Notify, Number: p.Issue}
	// Plan the run now as the run job will: a configuration or an agent the run job would refuse is
	// told to the caller, who has no issue to read a reply on.
	in, err := h.runs.GatherRunInputs(ctx, gh, rp)
	if ce, bad := flow.AsRepoConfigError(err); bad {
		return refuse(ce.Error())
	}
	if errors.Is(err, ports.ErrGitHubNotFound) {
		if p.Issue > 0 {
			return refuse(fmt.Sprintf("GitHub does not know %s/%s or its issue #%d: %v", p.Owner, p.Repo, p.Issue, err))
		}
		return refuse(fmt.Sprintf("GitHub does not know %s/%s: %v", p.Owner, p.Repo, err))
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	planned, err := runs.PlanRun(rp, id, in, h.d.Operator)
	if err != nil {
		if ce, bad := flow.AsRepoConfigError(err); bad {
			return refuse(ce.Error())
		}
		return refuse(err.Error())
	}
	if planned.Branch != store.HandoffBranch(config.DefaultBranchPrefix, id) {
		// The repository's branch_prefix: a repeated request answers with the branch the run will have.
		if err := h.handoffs.UpdateHandoff(ctx, id, func(r *store.Handoff) { r.Branch = planned.Branch }); err != nil && !errors.Is(err, store.ErrNotFound) {
			return metrics.ResultRetry, err
		}
	}
	if planned.Issue > 0 {
		// A hand-off naming an issue continues the issue's branch (see PlanRun), and so its open pull
		// request: into that pull request's base, never a second pull request into another.
		open, err := gh.FindPullRequest(ctx, p.Owner, p.Repo, planned.Branch, "")
		switch {
		case errors.Is(err, ports.ErrGitHubNotFound):
		case err != nil:
			return metrics.ResultRetry, fmt.Errorf("jobs: pull request of %s: %w", planned.Branch, err)
		case p.Base != "" && !strings.EqualFold(open.BaseRef, p.Base):
			return refuse(fmt.Sprintf("issue #%d's pull request #%d is open into %s, and a hand-off naming the issue continues it: leave base out, or name %s",
				planned.Issue, open.Number, open.BaseRef, open.BaseRef))
		default:
			rp.Base = open.BaseRef
		}
	}
	if p.Base != "" {
		if _, err := gh.GetRef(ctx, p.Owner, p.Repo, "heads/"+p.Base); errors.Is(err, ports.ErrGitHubNotFound) {
			return refuse(fmt.Sprintf("%s/%s has no branch %s", p.Owner, p.Repo, p.Base))
		} else if err != nil {
			return metrics.ResultRetry, fmt.Errorf("jobs: branch %s: %w", p.Base, err)
		}
	}
	rp.DefaultBranch = in.Repo.DefaultBranch
	if err := queue.Enqueued(h.d.Enqueuer.EnqueueRun(ctx, rp)); err != nil {
		return metrics.ResultRetry, err
	}
	log.Info("handoff: run queued")
	return metrics.ResultAccepted, nil
}
