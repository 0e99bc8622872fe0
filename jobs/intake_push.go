package jobs

import (
	"context"
	"slices"
	"strings"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
)

// EventPush is a push to the default branch: the roadmap may have changed.
const EventPush = "push"

// pushEvent registers the push body (see intakeEvents).
var pushEvent = intakeEvent{Events: []string{EventPush}, Key: "push",
	New: func() IntakeBody { return new(PushIntake) }, Handle: (*Intake).onPush}

// PushIntake is a push to the default branch.
type PushIntake struct {
	Branch string `json:"branch"`
	After  string `json:"after"`
	// Changed are the paths the listed commits added or modified. GitHub lists at most 20 commits;
	// Truncated says the list may be cut, so the roadmap may have changed unseen.
	Changed   []string `json:"changed,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

func (p *PushIntake) check() error {
	return nil // a push names its branch and whatever it changed; nothing to require
}

func (h *Intake) onPush(ctx context.Context, in *intake) (string, error) {
	push := in.p.Body.(*PushIntake)
	rc, err := h.repoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
	if _, bad := asRepoConfigError(err); bad {
		// Nobody to answer on a push; the next command or pull request reports it.
		in.log.Warn("intake: invalid repository configuration", "err", err)
		return metrics.ResultNoop, nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(push.Branch, rc.BranchPrefix), !rc.Triggers.Push:
		return metrics.ResultNoop, nil
	case !push.Truncated && !slices.Contains(push.Changed, rc.Roadmap):
		return metrics.ResultNoop, nil
	}
	err = h.d.Enqueuer.EnqueueRun(ctx, RunPayload{TaskHeader: in.p.by(in.p.Sender),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerPush, HeadSHA: push.After})
	if err := enqueued(err); err != nil {
		return "", err
	}
	return metrics.ResultAccepted, nil
}
