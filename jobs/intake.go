package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

// TypeIntake is one webhook delivery Akira acts on: everything that talks to GitHub before work
// is queued (permission, configuration, replies) happens in its handler, where it can be retried.
const TypeIntake = "akira:intake"

// intakeTaskType is served by Intake.HandleIntake (see taskTypes).
var intakeTaskType = taskType{Name: TypeIntake, Handle: func(h *Handler) asynq.HandlerFunc { return h.intake.HandleIntake }}

// TaskHeader is what every task payload that comes from a delivery carries: the payload's version,
// the delivery (whose id makes the task id), the installation and repository, and who caused it.
type TaskHeader struct {
	Version int `json:"v"`
	// DeliveryID is X-GitHub-Delivery; GitHub keeps it on redelivery, so it makes a stable task id
	// (a continuation's is the resume task's key).
	DeliveryID     string `json:"delivery_id"`
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	// Sender is the login that caused the event.
	Sender string `json:"sender,omitempty"`
}

// check reports what is missing from the header.
func (h TaskHeader) check() []error {
	errs := []error{checkVersion(h.Version)}
	if h.DeliveryID == "" {
		errs = append(errs, errors.New("no delivery id"))
	}
	if h.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if h.Owner == "" || h.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	return errs
}

// by is the header of a task a delivery queues on behalf of sender (the commenter, the reviewer): the
// same delivery, so its task id makes a redelivery queue nothing new.
func (h TaskHeader) by(sender string) TaskHeader {
	h.Sender = sender
	return h
}

// IntakePayload is one webhook delivery Akira acts on, unpacked by the webhook server from GitHub's
// payload: the header, and the body its event brings (a *CommentIntake for an issue_comment, ...).
type IntakePayload struct {
	TaskHeader
	Event string `json:"event"`
	// DefaultBranch and RepoURL (the repository's web page) are the payload's; empty when it had none.
	DefaultBranch string `json:"default_branch,omitempty"`
	RepoURL       string `json:"repo_url,omitempty"`
	// Body is the event's part, stored under its intakeEvent's Key (see MarshalJSON).
	Body IntakeBody `json:"-"`
	// bodies is how many event bodies the decoded JSON held; Validate wants one.
	bodies int
}

// IntakeBody is what a delivery's event brings beside the header. Each trigger event is one file: its
// event constants, its body type with check, its handler, and its intakeEvent value, listed in
// intakeEvents.
type IntakeBody interface {
	// check reports what is missing from the body.
	check() error
}

// answerer is a body that may answer an escalation: only such a delivery is acted on when a
// recovery replays it after Redis lost its data (see intake_recover.go).
type answerer interface{ answer() bool }

// intakeEvent is one kind of delivery the intake acts on.
type intakeEvent struct {
	// Events are the webhook events (X-GitHub-Event) whose deliveries carry this body.
	Events []string
	// Key is the body's field in the task's JSON payload; it never changes, so queued tasks still read.
	Key string
	// New returns an empty body to decode into.
	New func() IntakeBody
	// Handle acts on the delivery; its result is the job's metric result.
	Handle func(h *Intake, ctx context.Context, in *intake) (string, error)
	// Offline handlers ask GitHub nothing first: in.gh is nil, and no permission is checked.
	Offline bool
}

// intakeEvents are the trigger events the intake acts on. A new one is a file (see IntakeBody), a
// line here, and its decode case in app/handlers.go.
var intakeEvents = []intakeEvent{
	commentEvent, pushEvent, pullRequestEvent, checkRunEvent, reviewEvent, ciEvent, issueTriggerEvent,
}

// intakeEventOf is the registration of a webhook event.
func intakeEventOf(event string) (intakeEvent, bool) {
	for _, e := range intakeEvents {
		if slices.Contains(e.Events, event) {
			return e, true
		}
	}
	return intakeEvent{}, false
}

// intakeWire is IntakePayload without its methods, for encoding/json.
type intakeWire IntakePayload

// MarshalJSON writes the body under its event's key, beside the header's fields, as the payload
// has always been laid out.
func (p IntakePayload) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(intakeWire(p))
	if err != nil {
		return nil, err
	}
	if p.Body == nil {
		return head, nil
	}
	key := ""
	for _, e := range intakeEvents {
		if reflect.TypeOf(e.New()) == reflect.TypeOf(p.Body) {
			key = e.Key
		}
	}
	if key == "" {
		return nil, fmt.Errorf("jobs: intake body %T is not in intakeEvents", p.Body)
	}
	body, err := json.Marshal(p.Body)
	if err != nil {
		return nil, err
	}
	out := append(head[:len(head)-1:len(head)-1], `,"`+key+`":`...)
	out = append(out, body...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads the header and the body of the payload's event.
func (p *IntakePayload) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, (*intakeWire)(p)); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	p.Body, p.bodies = nil, 0
	for _, e := range intakeEvents {
		raw, ok := fields[e.Key]
		if !ok || string(raw) == "null" {
			continue
		}
		p.bodies++
		if !slices.Contains(e.Events, p.Event) {
			continue // Validate says the event came without its body
		}
		body := e.New()
		if err := json.Unmarshal(raw, body); err != nil {
			return fmt.Errorf("%s: %w", e.Key, err)
		}
		p.Body = body
	}
	return nil
}

// JobID is the delivery id: GitHub redelivering a webhook enqueues nothing new.
func (p IntakePayload) JobID() string { return "intake:" + p.DeliveryID }

// Validate reports what is missing from an intake payload.
func (p IntakePayload) Validate() error {
	errs := p.TaskHeader.check()
	set := p.bodies
	if set == 0 && p.Body != nil {
		set = 1
	}
	ev, known := intakeEventOf(p.Event)
	switch {
	case set != 1:
		errs = append(errs, fmt.Errorf("%d event bodies, want 1", set))
	case known && (p.Body == nil || reflect.TypeOf(p.Body) != reflect.TypeOf(ev.New())):
		errs = append(errs, fmt.Errorf("event %s without its body", p.Event))
	default:
		if err := p.Body.check(); err != nil {
			errs = append(errs, err)
		}
	}
	if !known {
		errs = append(errs, fmt.Errorf("unknown event %q", p.Event))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("intake payload: %w", err)
	}
	return nil
}

// reactionAccepted acknowledges a command Akira took.
const reactionAccepted = "eyes"

// intake is one delivery being handled: its payload, its installation's GitHub client and the log
// line fields every line of it carries.
type intake struct {
	p     IntakePayload
	store *store.Store
	gh    ports.GitHub
	log   *slog.Logger
	// retried says an earlier try of this job may have posted replies already.
	retried bool
	// recovered says a recovery asked GitHub for this delivery again after Redis lost its data: only
	// an answer to an escalation is acted on, and nothing is said (see intake_recover.go). answeredAt
	// is when GitHub first delivered it.
	recovered  bool
	answeredAt time.Time
}

// HandleIntake acts on one delivery. Nothing is written to GitHub or queued before the permission check
// passes, except the refusal itself. Every failure to talk to GitHub is returned, so asynq retries the
// job with backoff; every reply is keyed by the delivery, so a retry never posts it twice.
func (h *Intake) HandleIntake(ctx context.Context, t *asynq.Task) error {
	p, err := DecodeIntakePayload(t)
	if err != nil {
		h.d.Metrics.Job(TypeIntake, metrics.ResultInvalid)
		return err
	}
	if err := h.d.Fair.Paused(ctx, p.InstallationID); err != nil {
		h.d.Metrics.Job(TypeIntake, metrics.ResultQueued)
		return err
	}
	result, err := h.intake(ctx, p)
	h.d.Metrics.Job(TypeIntake, result)
	return err
}

func (h *Intake) intake(ctx context.Context, p IntakePayload) (string, error) {
	log := h.log.With("task", TypeIntake, "delivery", p.DeliveryID, "event", p.Event,
		"installation", p.InstallationID, "repo", p.Owner+"/"+p.Repo)
	ev, _ := intakeEventOf(p.Event) // Validate passed: the event is registered
	if ev.Offline {
		return ev.Handle(h, ctx, &intake{p: p, store: h.d.Store, log: log})
	}
	gh, err := installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	n, _ := asynq.GetRetryCount(ctx)
	in := &intake{p: p, store: h.d.Store, gh: gh, log: log, retried: n > 0}
	if in.answeredAt, in.recovered, err = h.d.Store.Recovered(ctx, p.DeliveryID); err != nil {
		return metrics.ResultRetry, err
	}
	if in.recovered {
		in.log = log.With("recovered", true)
		if a, ok := p.Body.(answerer); !ok || !a.answer() {
			return metrics.ResultNoop, nil // only an answer can have been lost unacted
		}
	}
	result, err := ev.Handle(h, ctx, in)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		// The delivery names a repository, issue or installation GitHub does not know (a forged or
		// stale payload): no retry will change that.
		log.Warn("intake: GitHub does not know what the delivery names; dropped", "err", err)
		return metrics.ResultInvalid, fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	if err != nil {
		log.Warn("intake: failed, will retry", "err", err)
		return metrics.ResultRetry, err
	}
	log.Info("intake: done", "result", result)
	return result, nil
}

// access is the answer to "may this user command Akira here?".
type access struct {
	allowed bool
	// level is the user's permission on the repository.
	level string
	// cfg is the repository configuration when it had to be read (allowlist), else nil.
	cfg *config.Repo
}

// writeLevels may command Akira whatever the repository's configuration says.
var writeLevels = []string{ports.PermAdmin, ports.PermMaintain, ports.PermWrite}

// authorize allows write, maintain and admin, then the repository's allowlist. Errors are failures to
// ask GitHub; a broken configuration only means the allowlist grants nothing.
func (h *Intake) authorize(ctx context.Context, in *intake, login string) (access, error) {
	level, err := in.gh.Permission(ctx, in.p.Owner, in.p.Repo, login)
	if err != nil {
		return access{}, fmt.Errorf("jobs: permission of %s: %w", login, err)
	}
	if slices.Contains(writeLevels, strings.ToLower(level)) {
		return access{allowed: true, level: level}, nil
	}
	rc, err := h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := asRepoConfigError(err); bad {
		in.log.Warn("intake: allowlist unavailable", "err", err)
		return access{level: level}, nil
	}
	if err != nil {
		return access{}, err
	}
	return access{allowed: rc.Allowed(login), level: level, cfg: &rc}, nil
}

// react acknowledges a comment. A failure is logged only: the work is queued, and retrying the whole
// intake for an emoji is not worth it.
func (in *intake) react(ctx context.Context, commentID int64) {
	if err := in.gh.AddReaction(ctx, in.p.Owner, in.p.Repo, commentID, reactionAccepted); err != nil {
		in.log.Warn("intake: could not react to the command", "comment", commentID, "err", err)
	}
}

// reply posts an answer on the issue or pull request, once per delivery.
func (in *intake) reply(ctx context.Context, number int, body string) error {
	return replyOnce(ctx, in.store.Dedupe, in.gh, in.p.Owner, in.p.Repo, number, "delivery-"+in.p.DeliveryID, body, in.retried)
}

// enqueued treats a duplicate as success: the work is queued already.
func enqueued(err error) error {
	if errors.Is(err, ErrDuplicate) {
		return nil
	}
	return err
}

// NewIntakeTask builds a TypeIntake task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewIntakeTask(p IntakePayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	return o.newTask(TypeIntake, p, intakeTimeout, intakeMaxRetry)
}

// DecodeIntakePayload reads a TypeIntake payload; see decode.
func DecodeIntakePayload(t *asynq.Task) (IntakePayload, error) {
	var p IntakePayload
	return p, decode(t, TypeIntake, &p)
}

// EnqueueIntake enqueues a TypeIntake task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueIntake(ctx context.Context, p IntakePayload) error {
	t, err := e.opts.NewIntakeTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
