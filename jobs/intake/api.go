package intake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// Operators reach Akira's runs through the REST API and the dashboard with API tokens: each has a
// name (who acted, in the audit and on the pull request) and a scope. Only a token's SHA-256 is
// stored, so Redis never holds one that works.

// Control actions, the API's and the dashboard's names for the comment commands.
const (
	ActionStop    = "stop"
	ActionAbort   = "abort"
	ActionRetry   = "retry"
	ActionApprove = "approve"
	ActionSkip    = "skip"
	ActionPause   = "pause"
	ActionResume  = "resume"
)

// ErrNotNow is returned for an action the run's state does not allow (stop of a run that is not
// working, a decision on a task that is not parked).
var ErrNotNow = errors.New("not possible in the run's state")

// ControlRequest is an operator's action on a run through the API or the dashboard.
type ControlRequest struct {
	RunID    string
	Action   string
	TaskID   string // retry, approve and skip: the parked task (the only one when empty)
	Guidance string // retry
	Token    store.Token
	Via      string // "api" or "dashboard"
	// RequestID makes the action's jobs unique (a client retrying the same request acts once).
	RequestID string
	// Answer says the action answers an escalation (the line on the pull request says so).
	Answer bool
	// Now pauses at once, discarding the current attempt (pause only).
	Now bool
}

// Controller carries out control actions the way the comment commands do: a stop is asked of the
// job working on the run, a decision goes through the resume job, as `/akira stop` and `/akira
// approve` do. Every action is audited and mirrored as a line on the pull request (a job).
type Controller struct {
	Store    *store.Store
	Enqueuer *queue.Enqueuer
	Logger   *slog.Logger
}

// Control carries out req and says what happened, in words for the caller.
func (c *Controller) Control(ctx context.Context, req ControlRequest) (string, error) {
	run, err := c.Store.Get(ctx, req.RunID)
	if err != nil {
		return "", err
	}
	by := req.Token.Name + " (" + req.Via + ")"
	entry := store.AuditEntry{Time: time.Now().UTC(), Token: req.Token.Name, Via: req.Via, Action: req.Action, RunID: run.ID,
		TaskID: req.TaskID, Repo: run.Owner + "/" + run.Repo}
	result, err := c.control(ctx, run, req, by)
	entry.Result = result
	if err != nil {
		entry.Result = "refused: " + err.Error()
	}
	if aerr := c.Store.Audit(ctx, entry); aerr != nil {
		return "", errors.Join(err, aerr)
	}
	if err != nil {
		return "", err
	}
	c.mirror(ctx, run, req, result)
	return result, nil
}

func (c *Controller) control(ctx context.Context, run *lifecycle.Run, req ControlRequest, by string) (string, error) {
	switch req.Action {
	case ActionStop:
		_, asked, err := c.Store.RequestStop(ctx, run.ID, by, false)
		if err != nil {
			return "", err
		}
		if !asked {
			return "", fmt.Errorf("%w: run %s is %s, not working", ErrNotNow, run.ID, run.Status)
		}
		return "stop requested", nil
	case ActionPause:
		_, asked, err := c.Store.RequestPause(ctx, run.ID, by, req.Now)
		if err != nil {
			return "", err
		}
		if !asked {
			return "", fmt.Errorf("%w: run %s is %s, neither queued nor working", ErrNotNow, run.ID, run.Status)
		}
		if req.Now {
			return "pause requested now", nil
		}
		return "pause requested after the current task", nil
	case ActionResume:
		resumed, ok, err := c.Store.Resume(ctx, run.ID, by)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%w: run %s is %s, not paused", ErrNotNow, run.ID, run.Status)
		}
		if len(resumed.Outbox) > 0 {
			// The next job and the summary are the outbox's effects: a publish job performs them now
			// (the relay would, later, if this enqueue were lost).
			err := c.Enqueuer.EnqueuePublish(ctx, queue.PublishPayload{RunID: run.ID, InstallationID: run.InstallationID, Rev: resumed.Rev})
			if err := queue.Enqueued(err); err != nil {
				return "", err
			}
		}
		return "resumed", nil
	case ActionAbort, ActionRetry, ActionApprove, ActionSkip:
		if run.Status.Terminal() {
			return "", fmt.Errorf("%w: run %s is %s", ErrNotNow, run.ID, run.Status)
		}
		if req.Action != ActionAbort {
			if run.Status != lifecycle.StatusParked {
				return "", fmt.Errorf("%w: run %s is %s, not waiting for a decision", ErrNotNow, run.ID, run.Status)
			}
			if len(run.Parked) == 0 {
				return "", fmt.Errorf("%w: run %s has no task waiting for a decision", ErrNotNow, run.ID)
			}
			if req.TaskID != "" && run.ParkedTask(req.TaskID) == nil {
				return "", fmt.Errorf("%w: task %s of run %s is not waiting for a decision", ErrNotNow, req.TaskID, run.ID)
			}
		}
		if req.Action == ActionAbort && run.Status != lifecycle.StatusParked {
			if _, asked, err := c.Store.RequestStop(ctx, run.ID, by, true); err != nil {
				return "", err
			} else if asked {
				return "abort requested", nil
			}
		}
		taskID := req.TaskID
		if taskID == "" && len(run.Parked) > 0 && req.Action != ActionAbort {
			taskID = run.Parked[0].TaskID
		}
		err := c.Enqueuer.EnqueueResume(ctx, queue.ResumePayload{TaskHeader: queue.TaskHeader{DeliveryID: "control-" + req.RequestID, InstallationID: run.InstallationID, Owner: run.Owner, Repo: run.Repo, Sender: by}, Number: cmp.Or(run.PR, run.Issue), RunID: run.ID, TaskID: taskID, ByButton: true,
			Decision: runner.DecisionKind(req.Action), Guidance: req.Guidance})
		if err := queue.Enqueued(err); err != nil {
			return "", err
		}
		return req.Action + " queued", nil
	}
	return "", fmt.Errorf("%w: unknown action %q", ErrNotNow, req.Action)
}

// mirror queues the line on the pull request that says what an operator did: posting it is a job
// with retries, so a stalled GitHub neither holds the operator's request nor loses the line. The
// audit in Redis is the record; a line that cannot be queued is logged.
func (c *Controller) mirror(ctx context.Context, run *lifecycle.Run, req ControlRequest, result string) {
	number := cmp.Or(run.PR, run.Issue)
	if number == 0 {
		return
	}
	body := publish.Render("control_audit", templates.ControlAudit{Action: req.Action, TaskID: req.TaskID, Token: req.Token.Name, Via: req.Via,
		Guidance: req.Guidance, Result: result, RunID: run.ID, Answer: req.Answer}, req.Action+" through the "+req.Via+" by "+req.Token.Name+".")
	err := c.Enqueuer.EnqueueAuditLine(ctx, queue.AuditLinePayload{ID: req.RequestID + "-" + req.Action, InstallationID: run.InstallationID,
		Owner: run.Owner, Repo: run.Repo, Number: number, Body: body})
	if err := queue.Enqueued(err); err != nil {
		log := c.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("control: audit line not queued", "run", run.ID, "err", err)
	}
}

// HandleAuditLine posts the line.
func (h *API) HandleAuditLine(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeAuditLine, h.postAuditLine)
}

func (h *API) postAuditLine(ctx context.Context, p queue.AuditLinePayload) (string, error) {
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
	if err == nil {
		_, _, err = gh.CreateComment(ctx, p.Owner, p.Repo, p.Number, p.Body)
	}
	if err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: audit line on %s/%s#%d: %w", p.Owner, p.Repo, p.Number, err)
	}
	return publish.ResultSent, nil
}
