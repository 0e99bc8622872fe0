package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/roadmap"
)

// How much of the repository's memory a prompt gets.
const (
	maxPromptLessons   = 5
	promptLessonBudget = 4000 // bytes of lesson text
)

// lessonsFor ranks the repository's lessons against the task. The memory is a help, never a reason
// to fail: a store that cannot be read gives none, with a warning.
func (e *engine) lessonsFor(ctx context.Context, t *roadmap.Task) []lessons.Lesson {
	if e.o.Lessons == nil {
		return nil
	}
	all, err := e.o.Lessons.List(ctx)
	if err != nil {
		e.o.Logger.Warn("runner: lessons unavailable", "err", err)
		return nil
	}
	query := strings.Join(append([]string{t.Title, t.Phase, t.Notes, t.Description}, t.Accept...), " ")
	return lessons.Rank(all, query, maxPromptLessons, promptLessonBudget)
}

// learn keeps the guidance a person gave for a task that then succeeded: next time a related task
// starts with it.
func (e *engine) learn(ctx context.Context, t *roadmap.Task, guidance string) {
	guidance = strings.TrimSpace(guidance)
	if e.o.Lessons == nil || guidance == "" || e.o.DryRun {
		return
	}
	l := lessons.Lesson{Text: guidance, Source: fmt.Sprintf("retry guidance for %s %s", t.ID, oneLine(t.Title))}
	if _, err := e.o.Lessons.Add(ctx, l); err != nil {
		e.o.Logger.Warn("runner: lesson not kept", "task", t.ID, "err", err)
	}
}
