package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/hibiken/asynq"
)

// TypeIntake is one webhook delivery Akira acts on: everything that talks to GitHub before work
// is queued (permission, configuration, replies) happens in its handler, where it can be retried.
const TypeIntake = "akira:intake"

// TaskHeader is what every task payload that comes from a delivery carries: the payload's version,
// the delivery (whose id makes the task id), the installation and repository, and who caused it.
type TaskHeader struct {
	Version int `json:"v"`
	// DeliveryID is X-GitHub-Delivery; GitHub keeps it on redelivery, so it makes a stable task id
	// (a Continuation's is the resume task's key).
	DeliveryID     string `json:"delivery_id"`
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	// Sender is the login that caused the event.
	Sender string `json:"sender,omitempty"`
}

// check reports what is missing from the header.
func (h TaskHeader) check() []error {
	errs := []error{CheckVersion(h.Version)}
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

// By is the header of a task a delivery queues on behalf of sender (the commenter, the reviewer): the
// same delivery, so its task id makes a redelivery queue nothing new.
func (h TaskHeader) By(sender string) TaskHeader {
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
	// Body is the event's part, stored under its IntakeEvent's Key (see MarshalJSON).
	Body IntakeBody `json:"-"`
	// bodies is how many event bodies the decoded JSON held; Validate wants one.
	bodies int
}

// IntakeBody is what a delivery's event brings beside the header. Each trigger event is one file: its
// event constants, its body type with check, its handler, and its IntakeEvent value, listed in
// IntakeEvents.
type IntakeBody interface {
	// check reports what is missing from the body.
	check() error
}

// Answerer is a body that may answer an escalation: only such a delivery is acted on when a
// recovery replays it after Redis lost its data (see jobs/intake_recover.go).
type Answerer interface{ Answer() bool }

// IntakeEvent is one kind of delivery the intake acts on.
type IntakeEvent struct {
	// Events are the webhook events (X-GitHub-Event) whose deliveries carry this body.
	Events []string
	// Key is the body's field in the task's JSON payload; it never changes, so queued tasks still read.
	Key string
	// New returns an empty body to decode into.
	New func() IntakeBody
}

// IntakeEvents are the trigger events the intake acts on. A new one is a file (see IntakeBody), a
// line here, and its decode case in app/handlers.go.
var IntakeEvents = []IntakeEvent{
	CommentEvent, PushEvent, PullRequestEvent, CheckRunEvent, ReviewEvent, CIEvent, IssueTriggerEvent,
}

// IntakeEventOf is the registration of a webhook event.
func IntakeEventOf(event string) (IntakeEvent, bool) {
	for _, e := range IntakeEvents {
		if slices.Contains(e.Events, event) {
			return e, true
		}
	}
	return IntakeEvent{}, false
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
	for _, e := range IntakeEvents {
		if reflect.TypeOf(e.New()) == reflect.TypeOf(p.Body) {
			key = e.Key
		}
	}
	if key == "" {
		return nil, fmt.Errorf("jobs: intake body %T is not in IntakeEvents", p.Body)
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
	for _, e := range IntakeEvents {
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
	ev, known := IntakeEventOf(p.Event)
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

// Enqueued treats a duplicate as success: the work is queued already.
func Enqueued(err error) error {
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
	return o.newTask(TypeIntake, p, IntakeTimeout, IntakeMaxRetry)
}

// DecodeIntakePayload reads a TypeIntake payload; see Decode.
func DecodeIntakePayload(t *asynq.Task) (IntakePayload, error) {
	var p IntakePayload
	return p, Decode(t, TypeIntake, &p)
}

// EnqueueIntake enqueues a TypeIntake task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueIntake(ctx context.Context, p IntakePayload) error {
	t, err := e.opts.NewIntakeTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
