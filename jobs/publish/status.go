package publish

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// StatusText is the Markdown answer to `/akira status` on an issue or pull request, from the run
// state alone.
func StatusText(ctx context.Context, s *store.Records, owner, repo string, number int) (string, error) {
	run, err := s.ByNumber(ctx, owner, repo, number)
	if errors.Is(err, store.ErrNotFound) {
		return templates.Render("status", templates.Status{})
	}
	if err != nil {
		return "", err
	}
	return templates.Render("status", statusData(run))
}

// SyncedText is the base commit the run last merged, as people read it ("main@0123456789ab"); "" when
// it merged none.
func SyncedText(run *lifecycle.Run) string {
	base, sha, ok := strings.Cut(run.LastSynced(), "@")
	if !ok {
		return ""
	}
	if len(sha) > 12 {
		sha = sha[:12] // as the merge's own note says it
	}
	return base + "@" + sha
}

// statusData is the status template's data for a run.
func statusData(run *lifecycle.Run) templates.Status {
	s := templates.Status{RunID: run.ID, State: run.Status.Label(), Branch: run.Branch,
		SummaryURL: run.SummaryURL, PRURL: run.PRURL, Synced: SyncedText(run)}
	var current *lifecycle.TaskState
	for _, t := range run.Tasks {
		if !lifecycle.IsSyncTask(t.ID) {
			s.Total++ // the merge of the base is no task of the plan
		} else if t.Status != lifecycle.TaskStatusRunning {
			continue
		}
		switch t.Status {
		case lifecycle.TaskStatusPassed, lifecycle.TaskStatusSkipped:
			s.Done++
		case lifecycle.TaskStatusRunning:
			current = t
		}
	}
	if run.Status == lifecycle.StatusParked && len(run.Parked) > 0 {
		current = run.Task(run.Parked[0].TaskID)
	}
	if current != nil {
		s.CurrentID, s.CurrentTitle, s.Attempt = current.ID, current.Title, current.Attempts
	}
	if run.Status == lifecycle.StatusRunning {
		p := progressData(run, time.Now())
		s.Progress = &p
	}
	return s
}
