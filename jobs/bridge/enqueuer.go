package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/jobs"
)

// Enqueuer is the app.Enqueuer of the webhook server: it turns the intake's requests into jobs'
// payloads, and jobs.ErrDuplicate into app.ErrDuplicate.
type Enqueuer struct {
	Jobs *jobs.Enqueuer
	// Status answers /akira status; (*jobs.Handler).Status or StatusFunc(store).
	StatusFunc func(ctx context.Context, owner, repo string, number int) (string, error)
}

var _ app.Enqueuer = (*Enqueuer)(nil)

// RunPayload converts the intake's run request.
func RunPayload(r app.RunRequest) jobs.RunPayload {
	p := jobs.RunPayload{
		DeliveryID: r.DeliveryID, InstallationID: r.InstallationID, Owner: r.Owner, Repo: r.Repo,
		DefaultBranch: r.DefaultBranch, HeadSHA: r.HeadSHA, Path: r.Path, Sender: r.Sender, CommentID: r.CommentID,
	}
	switch {
	case r.PRNumber > 0:
		// A pull request's own branch: from a pull_request event, or /akira run on the pull request.
		p.Trigger, p.Number, p.Branch = jobs.TriggerPullRequest, r.PRNumber, r.Branch
	case r.Trigger == app.TriggerPush:
		p.Trigger = jobs.TriggerPush
	default:
		p.Trigger, p.Number = jobs.TriggerIssue, r.IssueNumber
	}
	return p
}

// ResumePayload converts the intake's resume request.
func ResumePayload(r app.ResumeRequest) jobs.ResumePayload {
	return jobs.ResumePayload{
		DeliveryID: r.DeliveryID, InstallationID: r.InstallationID, Owner: r.Owner, Repo: r.Repo, Number: r.Number,
		CommentID: r.CommentID, Action: jobs.Action(r.Decision), Guidance: r.Guidance, Sender: r.Sender,
		RunID: r.RunID, TaskID: r.TaskID,
	}
}

func appErr(err error) error {
	if errors.Is(err, jobs.ErrDuplicate) {
		return fmt.Errorf("%w: %w", app.ErrDuplicate, err)
	}
	return err
}

// EnqueueRun implements app.Enqueuer.
func (e *Enqueuer) EnqueueRun(ctx context.Context, r app.RunRequest) error {
	return appErr(e.Jobs.EnqueueRun(ctx, RunPayload(r)))
}

// EnqueueResume implements app.Enqueuer.
func (e *Enqueuer) EnqueueResume(ctx context.Context, r app.ResumeRequest) error {
	return appErr(e.Jobs.EnqueueResume(ctx, ResumePayload(r)))
}

// Status implements app.Enqueuer.
func (e *Enqueuer) Status(ctx context.Context, owner, repo string, number int) (string, error) {
	if e.StatusFunc == nil {
		return "", errors.New("bridge: no status source")
	}
	return e.StatusFunc(ctx, owner, repo, number)
}
