package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/verify"
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
	kept, err := e.o.Lessons.List(ctx)
	if err != nil {
		e.o.Logger.Warn("runner: lessons unavailable", "err", err)
		return nil
	}
	// The automatic lessons of earlier versions quote command output an agent may have written:
	// they take no place in a prompt.
	all := slices.DeleteFunc(kept, func(l lessons.Lesson) bool { return !l.Shown() })
	query := strings.Join(append([]string{t.Title, t.Phase, t.Notes, t.Description}, t.Accept...), " ")
	if e.o.Semantic != nil {
		found, err := e.o.Semantic.Rank(ctx, all, query, maxPromptLessons, promptLessonBudget)
		if err == nil {
			return found
		}
		e.o.Logger.Warn("runner: embeddings unavailable, lessons ranked by keywords", "err", err)
	}
	return lessons.Rank(all, query, maxPromptLessons, promptLessonBudget)
}

// learn keeps the guidance a person gave for a task that then succeeded: next time a related task
// starts with it.
func (e *engine) learn(ctx context.Context, t *roadmap.Task, guide Decision) {
	guidance := strings.TrimSpace(guide.Guidance)
	if e.o.Lessons == nil || guidance == "" || e.o.DryRun {
		return
	}
	l := lessons.Lesson{Text: guidance, Origin: lessons.OriginPerson, Source: fmt.Sprintf("retry guidance for %s %s", t.ID, oneLine(t.Title)),
		Author: guide.By, Link: guide.Link, Run: e.out.RunID}
	if _, err := e.o.Lessons.Add(ctx, l); err != nil {
		e.o.Logger.Warn("runner: lesson not kept", "task", t.ID, "err", err)
	}
}

// teach keeps the run's Teach lessons once all its tasks are done: what a reviewer asked for and
// the run then did is worth knowing next time.
func (e *engine) teach(ctx context.Context) {
	if e.o.Lessons == nil || e.o.DryRun || len(e.o.Teach) == 0 {
		return
	}
	for _, r := range e.results {
		if r.Status != TaskDone {
			return
		}
	}
	for _, l := range e.o.Teach {
		l.Run = e.out.RunID
		if _, err := e.o.Lessons.Add(ctx, l); err != nil {
			e.o.Logger.Warn("runner: lesson not kept", "err", err)
		}
	}
}

// learnFix keeps what a task's own attempts found out: a verification command failed, and a later
// attempt made it pass by changing these files. It keeps the command and the file names only: the
// output is written by whatever the agent made the command run, so none of it is kept, and prompts
// quote the lesson as data (see buildPrompt).
func (e *engine) learnFix(ctx context.Context, t *roadmap.Task, f *failure) {
	if e.o.Lessons == nil || e.o.DryRun {
		return
	}
	var failed verify.Result
	for _, r := range f.verify {
		if !r.Passed() {
			failed = r
			break
		}
	}
	if failed.Command == "" {
		return
	}
	// The plan file changed only by Akira's tick: not part of the fix.
	files := slices.DeleteFunc(slices.Clone(e.lastChanged), func(p string) bool { return p == e.roadmapPath })
	if len(files) == 0 {
		return
	}
	l := lessons.Recording(failed.Command, files, fmt.Sprintf("a failure fixed in %s %s", t.ID, oneLine(t.Title)))
	l.Run = e.out.RunID
	if _, err := e.o.Lessons.Add(ctx, l); err != nil {
		e.o.Logger.Warn("runner: lesson not kept", "task", t.ID, "err", err)
	}
}

// lessonLine names a lesson given to an attempt, for its event and the check run (markdown). An
// automatic lesson's text holds file names an agent chose: it is shown as code, so it can neither
// link, mention nor format anything, and says who wrote it.
func lessonLine(l lessons.Lesson) string {
	if l.Recorded() {
		return l.ID + ": recorded by Akira (data, not a rule): " + codeSpan(oneLine(l.Text))
	}
	line := l.ID + ": " + oneLine(l.Text)
	if l.Link != "" {
		line += " ([source](" + l.Link + "))"
	}
	return line
}
