package jobs

import (
	"context"
	"errors"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
)

// EventCheckRun is a button pressed on one of Akira's check runs, or "Re-run".
const EventCheckRun = "check_run"

// checkRunEvent registers the check run body (see intakeEvents).
var checkRunEvent = intakeEvent{Events: []string{EventCheckRun}, Key: "check_run",
	New: func() IntakeBody { return new(CheckRunIntake) }, Handle: (*Intake).onCheckRun}

// CheckRunIntake is a button pressed on one of Akira's task check runs, or "Re-run".
type CheckRunIntake struct {
	ID int64 `json:"id"`
	// RunID and TaskID come from the check run's external_id (CheckRunExternalID).
	RunID    string              `json:"run_id"`
	TaskID   string              `json:"task_id"`
	Decision runner.DecisionKind `json:"decision"`
	// Number is the pull request the check run belongs to, 0 when GitHub named none.
	Number int `json:"number,omitempty"`
	// Rerequested says the decision is a "Re-run" rather than a button.
	Rerequested bool `json:"rerequested,omitempty"`
}

func (cr *CheckRunIntake) check() error {
	if cr.RunID == "" || cr.TaskID == "" || cr.Decision == "" {
		return errors.New("check run without a run, a task and a decision")
	}
	return nil
}

// answer: a button other than Stop answers an escalation, which a recovery replays.
func (cr *CheckRunIntake) answer() bool { return cr.Decision != ports.StopDecision }

func (h *Intake) onCheckRun(ctx context.Context, in *intake) (string, error) {
	cr := in.p.Body.(*CheckRunIntake)
	acc, err := h.authorize(ctx, in, in.p.Sender)
	if err != nil {
		return "", err
	}
	if !acc.allowed && in.recovered {
		return metrics.ResultRefused, nil // refused when it first came
	}
	if !acc.allowed {
		if cr.Number != 0 {
			if err := in.reply(ctx, cr.Number, refusalText(in.p.Sender, string(cr.Decision), acc.level)); err != nil {
				return "", err
			}
		}
		return metrics.ResultRefused, nil
	}
	if cr.Decision == ports.StopDecision {
		_, asked, err := h.d.Store.RequestStop(ctx, cr.RunID, in.p.Sender, false)
		if errors.Is(err, store.ErrNotFound) {
			return metrics.ResultNoop, nil
		}
		if err != nil {
			return "", err
		}
		in.log.Info("intake: Stop pressed", "run", cr.RunID, "by", in.p.Sender, "asked", asked)
		return metrics.ResultAccepted, nil
	}
	err = h.d.Enqueuer.EnqueueResume(ctx, ResumePayload{TaskHeader: in.p.by(in.p.Sender),
		Number: cr.Number, Decision: cr.Decision, RunID: cr.RunID, TaskID: cr.TaskID,
		ByButton: true, Recovered: in.recovered, AnsweredAt: in.answeredAt})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}

// onReview starts a follow-up task for a review: only from someone who may command Akira, and only on a
// pull request Akira opened or runs on. Anything else is left alone without a word: reviews are
