package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// HandleResume applies a human decision to a parked run: it acts only while the run is parked on that
// task and its branch is where the run left it; otherwise it replies why nothing happened. Approve,
// retry and skip enqueue a job that continues the run; abort ends it.
func (h *Resumer) HandleResume(ctx context.Context, t *asynq.Task) error {
	return flow.Handle(ctx, t, h.d.Metrics, queue.TypeResume, h.Resume)
}

// Resume acts on one decision (see HandleResume); its result is the job's metric result.
func (h *Resumer) Resume(ctx context.Context, p queue.ResumePayload) (string, error) {
	log := h.log.With("task", queue.TypeResume, "delivery", p.DeliveryID, "installation", p.InstallationID,
		"repo", p.Owner+"/"+p.Repo, "decision", p.Decision, "by", p.Sender)
	gh, err := flow.Installation(ctx, h.d.GitHub, p.InstallationID)
	if err != nil {
		return metrics.ResultRetry, err
	}
	var run *lifecycle.Run
	if p.RunID != "" {
		run, err = h.records.Get(ctx, p.RunID)
	} else {
		run, err = h.records.ByNumber(ctx, p.Owner, p.Repo, p.Number)
	}
	if errors.Is(err, store.ErrNotFound) {
		// Redis may have lost the record of a parked run: its branch still knows it.
		run, err = h.rebuilds.rebuildParkedRun(ctx, gh, p)
		// Nothing to rebuild: no branch with a lost run, nothing parked on it, or nothing GitHub knows
		// or Akira can read to rebuild it from.
		if errors.Is(err, errNoLostRun) || errors.Is(err, ports.ErrGitHubNotFound) || isRepoConfigError(err) {
			log.Info("resume job: no run, and no lost run to rebuild", "why", err)
			return h.decisionIgnored(ctx, gh, p, nil, "there is no Akira run here to "+string(p.Decision), log)
		}
		if err == nil {
			log.Warn("resume job: rebuilt a lost run from its branch", "run", run.ID, "branch", run.Branch, "parked", len(run.Parked))
		}
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	log = log.With("run", run.ID)
	if p.Recovered {
		pending, why, err := h.recovery.PendingAnswer(ctx, gh, run, p)
		if err != nil {
			return metrics.ResultRetry, err
		}
		if !pending {
			log.Info("resume job: a replayed answer that was acted on before Redis lost it, or never the answer; nothing to do", "why", why)
			return metrics.ResultNoop, nil
		}
		log.Warn("resume job: an answer Redis lost before any job acted on it; acting on it now")
	}
	if p.Decision == runner.DecisionAbort && run.Status == lifecycle.StatusPaused {
		// A paused run may have no branch yet (paused in the queue): it ends here, no job needed.
		paused, _, err := h.records.Transition(ctx, run.ID, func(r *lifecycle.Run) (lifecycle.Event, error) {
			if r.Status != lifecycle.StatusPaused {
				return nil, nil
			}
			return lifecycle.PauseAborted{By: p.Sender}, nil
		})
		if err != nil {
			return metrics.ResultRetry, err
		}
		if paused.Status == lifecycle.StatusAborted {
			if _, err := h.pub.Publish(ctx, gh, paused, log); err != nil {
				return metrics.ResultRetry, err
			}
			return metrics.ResultAborted, nil
		}
	}
	head, err := gh.GetRef(ctx, run.Owner, run.Repo, "heads/"+run.Branch)
	if errors.Is(err, ports.ErrGitHubNotFound) {
		return h.decisionIgnored(ctx, gh, p, run, fmt.Sprintf("the branch `%s` of run `%s` no longer exists", run.Branch, run.ID), log)
	}
	if err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: branch head: %w", err)
	}
	d := lifecycle.Decision{Key: p.JobID(), TaskID: p.TaskID, Decision: runner.Decision{Kind: p.Decision, Guidance: p.Guidance, By: p.Sender}}
	if p.CommentID != 0 && p.Number != 0 && run.RepoURL != "" {
		// GitHub sends /issues/N of a pull request on to /pull/N.
		d.Link = fmt.Sprintf("%s/issues/%d#issuecomment-%d", run.RepoURL, p.Number, p.CommentID)
	}
	runID := run.ID
	run, already, err := h.records.Decide(ctx, runID, d, head)
	if _, ok := errors.AsType[*store.NotParkedError](err); ok && p.Decision == runner.DecisionAbort {
		// An abort of a run waiting for its CI, or paused, ends it here: no job works on it.
		waiting, _, werr := h.records.Transition(ctx, runID, func(r *lifecycle.Run) (lifecycle.Event, error) {
			switch r.Status {
			case lifecycle.StatusWaitingCI:
				return lifecycle.CIAborted{By: p.Sender}, nil
			case lifecycle.StatusPaused:
				return lifecycle.PauseAborted{By: p.Sender}, nil
			}
			return nil, nil
		})
		if werr != nil {
			return metrics.ResultRetry, werr
		}
		if waiting.Status == lifecycle.StatusAborted {
			if _, err := h.pub.Publish(ctx, gh, waiting, log); err != nil {
				return metrics.ResultRetry, err
			}
			return metrics.ResultAborted, nil
		}
		// An abort of a run that is working: the job working on it stops it and ends it.
		if _, asked, serr := h.records.RequestStop(ctx, runID, p.Sender, true); serr != nil {
			return metrics.ResultRetry, serr
		} else if asked {
			log.Info("resume job: abort requested of a working run")
			return metrics.ResultDecided, nil
		}
	}
	if np, ok := errors.AsType[*store.NotParkedError](err); ok {
		return h.decisionIgnored(ctx, gh, p, run, np.Reason, log)
	}
	if err != nil {
		return metrics.ResultRetry, err
	}
	log.Info("resume job: decision taken", "already", already)
	// A retried job whose decision was taken finds what its first try left in the outbox.
	if _, err := h.pub.Publish(ctx, gh, run, log); err != nil {
		return metrics.ResultRetry, err
	}
	if p.Decision == runner.DecisionAbort {
		return metrics.ResultAborted, nil
	}
	return metrics.ResultDecided, nil
}

// decisionIgnored answers a decision that did nothing, on the issue or pull request it came from.
func (h *Resumer) decisionIgnored(ctx context.Context, c ports.Comments, p queue.ResumePayload, run *lifecycle.Run, why string, log *slog.Logger) (string, error) {
	log.Info("resume job: nothing happened", "why", why)
	if p.Recovered {
		return metrics.ResultNoop, nil // said when it first came, or never needed saying
	}
	number := p.Number
	if number == 0 && run != nil {
		number = publish.SummaryNumber(run)
	}
	if number == 0 {
		return metrics.ResultRefused, nil
	}
	msg := publish.Render("decision_ignored", templates.DecisionIgnored{Decision: string(p.Decision), ByButton: p.ByButton, Reason: why},
		"`/akira "+string(p.Decision)+"` did nothing: "+why+".")
	retried, _ := asynq.GetRetryCount(ctx)
	if err := publish.ReplyOnce(ctx, h.replies, c, p.Owner, p.Repo, number, p.JobID(), msg, retried > 0); err != nil {
		return metrics.ResultRetry, fmt.Errorf("jobs: reply: %w", err)
	}
	return metrics.ResultRefused, nil
}
