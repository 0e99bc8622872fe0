package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

// intakeHandler acts on the deliveries of one trigger event: its payload's body is the
// queue.IntakeEvent of the same Key.
type intakeHandler struct {
	// Handle acts on the delivery; its result is the job's metric result.
	Handle func(h *Intake, ctx context.Context, in *intake) (string, error)
	// Offline handlers ask GitHub nothing first: in.gh is nil, and no permission is checked.
	Offline bool
}

// intakeHandlers are the handlers of queue.IntakeEvents, by the event's Key. A new trigger event is its
// body's file in jobs/queue, its handler's file here and a line in each list.
var intakeHandlers = map[string]intakeHandler{
	queue.CommentEvent.Key:      {Handle: (*Intake).onComment},
	queue.PushEvent.Key:         {Handle: (*Intake).onPush},
	queue.PullRequestEvent.Key:  {Handle: (*Intake).onPullRequest},
	queue.CheckRunEvent.Key:     {Handle: (*Intake).onCheckRun},
	queue.ReviewEvent.Key:       {Handle: (*Intake).onReview},
	queue.IssueTriggerEvent.Key: {Handle: (*Intake).onIssueTrigger},
	// A CI report only matters to a run waiting for that commit: nothing is asked of GitHub before
	// CIWatch.onCI (run_ci.go) looks.
	queue.CIEvent.Key: {Offline: true, Handle: func(h *Intake, ctx context.Context, in *intake) (string, error) {
		return h.ci.OnCI(ctx, in.p, in.log)
	}},
}

// reactionAccepted acknowledges a command Akira took.
const reactionAccepted = "eyes"

// intake is one delivery being handled: its payload, its installation's GitHub client and the log
// line fields every line of it carries.
type intake struct {
	p     queue.IntakePayload
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
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeIntake, h.intake)
}

func (h *Intake) intake(ctx context.Context, p queue.IntakePayload) (string, error) {
	if result, err := h.d.Paused(ctx, p.InstallationID); err != nil {
		return result, err
	}
	log := h.log.With("task", queue.TypeIntake, "delivery", p.DeliveryID, "event", p.Event,
		"installation", p.InstallationID, "repo", p.Owner+"/"+p.Repo)
	registered, _ := queue.IntakeEventOf(p.Event) // Validate passed: the event is registered
	ev, ok := intakeHandlers[registered.Key]
	if !ok {
		return metrics.ResultInvalid, fmt.Errorf("jobs: no handler for the %s event: %w", p.Event, asynq.SkipRetry)
	}
	if ev.Offline {
		return ev.Handle(h, ctx, &intake{p: p, store: h.d.Store, log: log})
	}
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
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
		if a, ok := p.Body.(queue.Answerer); !ok || !a.Answer() {
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

// authorize allows write, maintain and admin, then the repository's allowlist. Errors are failures to
// ask GitHub; a broken configuration only means the allowlist grants nothing.
func (h *Intake) authorize(ctx context.Context, in *intake, login string) (access, error) {
	level, err := in.gh.Permission(ctx, in.p.Owner, in.p.Repo, login)
	if err != nil {
		return access{}, fmt.Errorf("jobs: permission of %s: %w", login, err)
	}
	if slices.Contains(flow.WriteLevels, strings.ToLower(level)) {
		return access{allowed: true, level: level}, nil
	}
	rc, err := h.d.RepoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := flow.AsRepoConfigError(err); bad {
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
	return publish.ReplyOnce(ctx, in.store.Dedupe, in.gh, in.p.Owner, in.p.Repo, number, "delivery-"+in.p.DeliveryID, body, in.retried)
}
