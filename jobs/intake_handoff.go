package jobs

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
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

// TriggerAPI starts a run handed off through the REST API.
const TriggerAPI = lifecycle.TriggerAPI

// TypeHandoff is a run handed off through the REST API, on its way to a run job.
const TypeHandoff = "akira:handoff"

// handoffTaskType is served by API.HandleHandoff (see taskTypes).
var handoffTaskType = taskType{Name: TypeHandoff, Handle: func(h *Handler) asynq.HandlerFunc { return h.api.HandleHandoff }}

// HandoffRequest is a run to start from outside GitHub, as the API received it.
type HandoffRequest struct {
	Owner, Repo string
	// Base is the branch the run starts from and its pull request goes into (the default branch
	// when empty).
	Base string
	// Plan is the plan's text (markdown task checkboxes); PlanPath instead names a plan file of the
	// repository in any format Akira reads; neither: the configured roadmap.
	Plan, PlanPath string
	Agent          string
	BudgetUSD      float64
	// Reference is the caller's conversation or ticket id, kept on the run and shown on its pull request.
	Reference string
	Notify    map[string][]string
	Token     store.Token
	// Key is the client's Idempotency-Key ("" for none).
	Key string
	// Via is how the request came (store.ViaAPI when empty; ViaMCP, ViaCLI), for the audit.
	Via string
}

// HandoffPayload is the payload of TypeHandoff.
type HandoffPayload struct {
	Version    int                 `json:"v"`
	DeliveryID string              `json:"delivery_id"`
	Owner      string              `json:"owner"`
	Repo       string              `json:"repo"`
	Base       string              `json:"base,omitempty"`
	Plan       string              `json:"plan,omitempty"`
	PlanPath   string              `json:"plan_path,omitempty"`
	Agent      string              `json:"agent,omitempty"`
	BudgetUSD  float64             `json:"budget_usd,omitempty"`
	Reference  string              `json:"reference,omitempty"`
	Notify     map[string][]string `json:"notify,omitempty"`
	TokenName  string              `json:"token"`
}

// JobID is the handoff's key: a repeated request queues nothing new.
func (p HandoffPayload) JobID() string { return "handoff:" + p.DeliveryID }

// Validate reports what is missing from a handoff payload.
func (p HandoffPayload) Validate() error {
	errs := []error{checkVersion(p.Version)}
	if p.DeliveryID == "" || p.Owner == "" || p.Repo == "" || p.TokenName == "" {
		errs = append(errs, errors.New("key, repository and token are required"))
	}
	if p.Plan != "" && p.PlanPath != "" {
		errs = append(errs, errors.New("plan and plan_path exclude each other"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handoff payload: %w", err)
	}
	return nil
}

// fingerprint is what makes two requests the same one: every field of the run to start, not the
// token (the key is the token's already).
func (r HandoffRequest) fingerprint() string {
	data, _ := json.Marshal(struct {
		Owner, Repo, Base, Plan, PlanPath, Agent, Reference string
		BudgetUSD                                           float64
		Notify                                              map[string][]string
	}{r.Owner, r.Repo, r.Base, r.Plan, r.PlanPath, r.Agent, r.Reference, r.BudgetUSD, r.Notify})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

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
func (c *Controller) StartHandoff(ctx context.Context, req HandoffRequest, tasks int) (store.Handoff, bool, error) {
	if req.Key != "" && req.Token.ID == "" {
		return store.Handoff{}, false, errors.New("jobs: handoff: an Idempotency-Key needs the token's ID")
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return store.Handoff{}, false, fmt.Errorf("jobs: handoff: %w", err)
	}
	delivery := "api-" + hex.EncodeToString(b)
	id := RunIDFor(delivery)
	h := store.Handoff{ID: id, Repo: req.Owner + "/" + req.Repo, Base: req.Base, Branch: store.HandoffBranch(config.DefaultBranchPrefix, id),
		Reference: req.Reference, Created: time.Now().UTC(), Tasks: tasks}
	if prev, created, err := c.Store.Claim(ctx, h, req.Token.ID, req.Key, req.fingerprint()); err != nil || !created {
		return prev, false, err
	}
	p := HandoffPayload{Version: PayloadVersion, DeliveryID: delivery, Owner: req.Owner, Repo: req.Repo, Base: req.Base,
		Plan: req.Plan, PlanPath: req.PlanPath, Agent: req.Agent, BudgetUSD: req.BudgetUSD, Reference: req.Reference,
		Notify: req.Notify, TokenName: req.Token.Name}
	t, err := c.Enqueuer.opts.withDefaults().newTask(TypeHandoff, p, intakeTimeout, intakeMaxRetry)
	if err == nil {
		err = enqueued(c.Enqueuer.enqueue(ctx, t))
	}
	if err != nil {
		// Nothing was queued: the key must not keep answering with a run that will never exist.
		return store.Handoff{}, false, errors.Join(err, c.Store.Drop(ctx, id, req.Token.ID, req.Key))
	}
	_ = c.Store.Audit(ctx, store.AuditEntry{Time: h.Created, Token: req.Token.Name, Via: cmp.Or(req.Via, store.ViaAPI), Action: "start", RunID: id, Repo: h.Repo,
		Result: "queued"})
	return h, true, nil
}

// RepoInstallations finds the installation of the App on a repository (app/gh implements it);
// ErrGitHubNotFound when the App is not installed there.
type RepoInstallations interface {
	RepoInstallation(ctx context.Context, owner, repo string) (int64, error)
}

// HandleHandoff turns a handoff into a run job.
func (h *API) HandleHandoff(ctx context.Context, t *asynq.Task) error {
	var p HandoffPayload
	if err := decode(t, TypeHandoff, &p); err != nil {
		h.d.Metrics.Job(TypeHandoff, metrics.ResultInvalid)
		return err
	}
	result, err := h.handoff(ctx, p)
	h.d.Metrics.Job(TypeHandoff, result)
	return err
}

func (h *API) handoff(ctx context.Context, p HandoffPayload) (string, error) {
	id := RunIDFor(p.DeliveryID)
	log := h.log.With("task", TypeHandoff, "run", id, "repo", p.Owner+"/"+p.Repo, "token", p.TokenName)
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
	gh, err := installation(ctx, h.d.GitHub, inst)
	if err != nil {
		return metrics.ResultRetry, err
	}
	rp := RunPayload{TaskHeader: TaskHeader{Version: PayloadVersion, DeliveryID: p.DeliveryID, InstallationID: inst, Owner: p.Owner, Repo: p.Repo, Sender: p.TokenName + " (API)"}, Trigger: TriggerAPI, Path: p.PlanPath, Plan: p.Plan, BudgetUSD: p.BudgetUSD,
		Base: p.Base, Reference: p.Reference, Agent: p.Agent, Notify: p.Notify}
	// Plan the run now as the run job will: a configuration or an agent the run job would refuse is
	// told to the caller, who has no issue to read a reply on.
	in, err := h.runs.gatherRunInputs(ctx, gh, rp)
	if ce, bad := asRepoConfigError(err); bad {
		return refuse(ce.Error())
	}
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return refuse(fmt.Sprintf("GitHub does not know %s/%s: %v", p.Owner, p.Repo, err))
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	planned, err := planRun(rp, id, in, h.d.Operator)
	if err != nil {
		if ce, bad := asRepoConfigError(err); bad {
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
	if p.Base != "" {
		if _, err := gh.GetRef(ctx, p.Owner, p.Repo, "heads/"+p.Base); errors.Is(err, ports.ErrGitHubNotFound) {
			return refuse(fmt.Sprintf("%s/%s has no branch %s", p.Owner, p.Repo, p.Base))
		} else if err != nil {
			return metrics.ResultRetry, fmt.Errorf("jobs: branch %s: %w", p.Base, err)
		}
	}
	rp.DefaultBranch = in.Repo.DefaultBranch
	if err := enqueued(h.d.Enqueuer.EnqueueRun(ctx, rp)); err != nil {
		return metrics.ResultRetry, err
	}
	log.Info("handoff: run queued")
	return metrics.ResultAccepted, nil
}

// planAPIRun fills in what a handed-off run takes from its request instead of GitHub.
func planAPIRun(run *lifecycle.Run, p RunPayload, rc config.Repo, op config.Operator) error {
	run.Branch = store.HandoffBranch(rc.BranchPrefix, run.ID)
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
	if p.Plan != "" {
		run.Roadmap, run.Plan = "", p.Plan
		run.PlanSource = "the plan handed off by " + by
		run.Source = run.PlanSource
	} else {
		run.Source = run.Roadmap + ", handed off by " + by
		if run.RepoURL != "" {
			run.SourceURL = run.RepoURL + "/blob/" + run.Base + "/" + run.Roadmap
		}
	}
	if p.Reference != "" {
		run.Source += " (reference " + p.Reference + ")"
	}
	run.Title = "Akira: " + run.Source
	return nil
}
