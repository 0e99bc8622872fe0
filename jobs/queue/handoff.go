package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/hibiken/asynq"
)

// TriggerAPI starts a run handed off through the REST API.
const TriggerAPI = lifecycle.TriggerAPI

// TypeHandoff is a run handed off through the REST API, on its way to a run job.
const TypeHandoff = "akira:handoff"

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
	// Issue names an issue the run is for (0: none): it runs on the issue's branch and continues its
	// pull request, as `/akira run` on the issue does, with the issue's checklist unless a plan is given.
	Issue  int
	Notify map[string][]string
	Token  store.Token
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
	Issue      int                 `json:"issue,omitempty"`
	Notify     map[string][]string `json:"notify,omitempty"`
	TokenName  string              `json:"token"`
}

// JobID is the handoff's key: a repeated request queues nothing new.
func (p HandoffPayload) JobID() string { return "handoff:" + p.DeliveryID }

// Validate reports what is missing from a handoff payload.
func (p HandoffPayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.DeliveryID == "" || p.Owner == "" || p.Repo == "" || p.TokenName == "" {
		errs = append(errs, errors.New("key, repository and token are required"))
	}
	if p.Plan != "" && p.PlanPath != "" {
		errs = append(errs, errors.New("plan and plan_path exclude each other"))
	}
	if p.Issue < 0 {
		errs = append(errs, errors.New("issue must be a positive number"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handoff payload: %w", err)
	}
	return nil
}

// Fingerprint is what makes two requests the same one: every field of the run to start, not the
// token (the key is the token's already).
func (r HandoffRequest) Fingerprint() string {
	data, _ := json.Marshal(struct {
		Owner, Repo, Base, Plan, PlanPath, Agent, Reference string
		BudgetUSD                                           float64
		Notify                                              map[string][]string
		Issue                                               int `json:",omitempty"`
	}{r.Owner, r.Repo, r.Base, r.Plan, r.PlanPath, r.Agent, r.Reference, r.BudgetUSD, r.Notify, r.Issue})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// NewHandoffTask builds a TypeHandoff task. A zero Version is filled in.
func (o TaskOptions) NewHandoffTask(p HandoffPayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.withDefaults().newTask(TypeHandoff, p, IntakeTimeout, IntakeMaxRetry)
}

// EnqueueHandoff enqueues a TypeHandoff task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueHandoff(ctx context.Context, p HandoffPayload) error {
	t, err := e.opts.NewHandoffTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
