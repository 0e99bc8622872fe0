package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/akira-bot/akira/runner"
	"github.com/hibiken/asynq"
)

// TypeResume carries a human decision on a parked run: approve, retry, skip or abort.
const TypeResume = "akira:resume"

// ResumePayload is the payload of TypeResume: a person's decision on a parked run.
type ResumePayload struct {
	TaskHeader
	// Number is the issue or pull request the decision was made on (0 for a check run GitHub did not
	// attach to a pull request).
	Number int `json:"number,omitempty"`
	// CommentID is the reply; when set it is the task id, so the same comment acts once.
	CommentID int64               `json:"comment_id,omitempty"`
	Decision  runner.DecisionKind `json:"decision"`
	// Guidance is the text after `/akira retry`; it reaches the agent's next prompt.
	Guidance string `json:"guidance,omitempty"`
	// ByButton says the decision came from a check run (a button or "Re-run"), which names RunID and
	// TaskID (its external_id); a reply names neither and the run is found by Number.
	ByButton bool   `json:"by_button,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	TaskID   string `json:"task_id,omitempty"`
	// Recovered says the reply was delivered again after Redis lost its data: it acts only if it is
	// still the answer the run waits for (pendingAnswer), and says nothing when it is not.
	Recovered bool `json:"recovered,omitempty"`
	// AnsweredAt is when GitHub first delivered a recovered answer: how a button's answer is placed
	// among the replies (see pendingAnswer).
	AnsweredAt time.Time `json:"answered_at,omitzero"`
}

// JobID is the asynq task id of the payload: the comment id when there is one (GitHub sends an edited
// comment as a new delivery, and the same reply must still act once), else the delivery id.
func (p ResumePayload) JobID() string {
	if p.CommentID != 0 {
		return "resume:comment:" + strconv.FormatInt(p.CommentID, 10)
	}
	return "resume:" + p.DeliveryID
}

// Validate reports what is missing from a resume payload.
func (p ResumePayload) Validate() error {
	errs := []error{CheckVersion(p.Version)}
	if p.DeliveryID == "" && p.CommentID == 0 {
		errs = append(errs, errors.New("neither a delivery id nor a comment id"))
	}
	if p.InstallationID <= 0 {
		errs = append(errs, errors.New("no installation id"))
	}
	if p.Owner == "" || p.Repo == "" {
		errs = append(errs, errors.New("no repository"))
	}
	if p.Number <= 0 && p.RunID == "" {
		errs = append(errs, errors.New("neither an issue number nor a run id"))
	}
	switch p.Decision {
	case runner.DecisionApprove, runner.DecisionRetry, runner.DecisionSkip, runner.DecisionAbort:
	default:
		errs = append(errs, fmt.Errorf("unknown decision %q", p.Decision))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resume payload: %w", err)
	}
	return nil
}

// NewResumeTask builds a TypeResume task. A zero Version is filled in; an invalid payload is an error.
func (o TaskOptions) NewResumeTask(p ResumePayload) (*asynq.Task, error) {
	if p.Version == 0 {
		p.Version = PayloadVersion
	}
	o = o.withDefaults()
	return o.newTask(TypeResume, p, ResumeTimeout, o.MaxRetry)
}

// DecodeResumePayload reads a TypeResume payload; see Decode.
func DecodeResumePayload(t *asynq.Task) (ResumePayload, error) {
	var p ResumePayload
	return p, Decode(t, TypeResume, &p)
}

// EnqueueResume enqueues a TypeResume task. It returns ErrDuplicate when a task with the same id exists.
func (e *Enqueuer) EnqueueResume(ctx context.Context, p ResumePayload) error {
	t, err := e.opts.NewResumeTask(p)
	if err != nil {
		return err
	}
	return e.enqueue(ctx, t)
}
