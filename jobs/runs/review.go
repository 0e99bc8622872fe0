package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/templates"
)

// A review that requests changes on a pull request Akira works on (or a review comment holding
// `/akira fix [guidance]`) from someone who may command Akira starts a review run: one task, on the
// pull request's branch, whose prompt holds the review's comments (path, line, diff hunk, body) and the
// guidance. Its checkpoint reads "akira: address review <id>" with an Akira-Review trailer; the task is
// named within the review (Akira-Task: review-<id>#address), so each review is addressed once. When it
// is done, each review thread gets a reply naming the commit and the reviewer is asked to review again.
// A task that keeps failing escalates like any other.

// TrailerReview names the review a checkpoint addresses.
const TrailerReview = "Akira-Review"

// reviewTaskID and the title "review <id>" make the checkpoint's subject "akira: address review <id>".
const reviewTaskID = "address"

func reviewScope(id int64) string { return "review-" + strconv.FormatInt(id, 10) }

// reviewPlan is the review run's one-task plan, as a JSON task list so that the task's id is its own,
// verified with the commands of the plan the pull request's earlier run followed.
func reviewPlan(rv *lifecycle.ReviewRequest, verify []string) (plan, source string) {
	task := map[string]any{"id": reviewTaskID, "title": "review " + strconv.FormatInt(rv.ID, 10)}
	if len(verify) > 0 {
		task["verify"] = verify
	}
	data, _ := json.MarshalIndent(map[string]any{"tasks": []any{task}}, "", "  ")
	return string(data) + "\n", reviewScope(rv.ID) + ".json"
}

// verifyOf collects the verify commands of a plan, once each, in order.
func verifyOf(planText, source string) []string {
	if planText == "" {
		return nil
	}
	rm, err := roadmap.Parse(planName(source), []byte(planText))
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range rm.Tasks {
		for _, v := range t.Verify {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// planReviewRun fills in a review run from the pull request's earlier run, when Akira has one.
func planReviewRun(run *lifecycle.Run, p queue.RunPayload, prior *lifecycle.Run) {
	rv := p.Review
	run.Review = rv
	var verify []string
	if prior != nil {
		verify = verifyOf(prior.Plan, prior.PlanSource)
		run.Issue, run.OpenedPR, run.Agent = prior.Issue, prior.OpenedPR, prior.Agent
	}
	run.Roadmap = ""
	run.Plan, run.PlanSource = reviewPlan(rv, verify)
	run.Source = fmt.Sprintf("review %d by @%s", rv.ID, rv.By)
	if run.PRURL != "" {
		run.SourceURL = run.PRURL + "#pullrequestreview-" + strconv.FormatInt(rv.ID, 10)
	}
	run.Title = "Akira: address review " + strconv.FormatInt(rv.ID, 10)
}

// reviewContext is the prompt section of a review run: the review, each comment with its place in the
// diff, and the guidance.
func reviewContext(ctx context.Context, gh ports.Reviews, run *lifecycle.Run) (string, []ports.ReviewComment, error) {
	rv := run.Review
	comments, err := gh.ReviewComments(ctx, run.Owner, run.Repo, run.PR, rv.ID)
	if err != nil {
		return "", nil, fmt.Errorf("jobs: comments of review %d: %w", rv.ID, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## The review to address\n\n@%s reviewed the pull request and asked for changes. Change the code so that each point below is addressed; the reviewer reads the result.\n", rv.By)
	if body := strings.TrimSpace(rv.Body); body != "" {
		fmt.Fprintf(&b, "\n### The review\n\n%s\n", quoteBlock(body))
	}
	for i, c := range comments {
		fmt.Fprintf(&b, "\n### Comment %d on `%s`", i+1, c.Path)
		if c.Line > 0 {
			fmt.Fprintf(&b, " line %d", c.Line)
		}
		b.WriteString("\n\n")
		if hunk := strings.TrimSpace(c.DiffHunk); hunk != "" {
			f := templates.Fence(hunk)
			fmt.Fprintf(&b, "%sdiff\n%s\n%s\n\n", f, hunk, f)
		}
		fmt.Fprintf(&b, "%s\n", quoteBlock(c.Body))
	}
	if g := strings.TrimSpace(rv.Guidance); g != "" {
		fmt.Fprintf(&b, "\n### Guidance\n\n%s\n", quoteBlock(g))
	}
	return b.String(), comments, nil
}

// maxReviewLesson caps the text a review comment leaves as a lesson.
const maxReviewLesson = 600

// reviewLessons are what a review teaches once the run addressed it: the review's text and each
// thread's first comment, with the reviewer and a link. Their ids come from the review and the
// comment, so a review addressed again replaces its lessons instead of adding more.
func reviewLessons(run *lifecycle.Run, comments []ports.ReviewComment) []lessons.Lesson {
	rv := run.Review
	source := fmt.Sprintf("review %d by @%s, addressed", rv.ID, rv.By)
	var out []lessons.Lesson
	if body := strings.TrimSpace(rv.Body); body != "" {
		out = append(out, lessons.Lesson{ID: lessons.IDFor(fmt.Sprintf("%s/review-%d", run.Repo, rv.ID)), Text: publish.ClipText(body, maxReviewLesson),
			Origin: lessons.OriginPerson, Source: source, Author: rv.By, Link: run.SourceURL})
	}
	for _, c := range comments {
		body := c.Body
		if c.ID == rv.CommentID {
			body = rv.Guidance // the `/akira fix` comment: what follows the command is the teaching
		}
		if c.InReplyTo != 0 || strings.TrimSpace(body) == "" {
			continue
		}
		l := lessons.Lesson{ID: lessons.IDFor(fmt.Sprintf("%s/review-comment-%d", run.Repo, c.ID)),
			Text:   fmt.Sprintf("On %s: %s", c.Path, publish.ClipText(body, maxReviewLesson)),
			Origin: lessons.OriginPerson, Source: source, Author: cmp.Or(c.User, rv.By)}
		if run.PRURL != "" {
			l.Link = fmt.Sprintf("%s#discussion_r%d", run.PRURL, c.ID)
		}
		out = append(out, l)
	}
	return out
}

func quoteBlock(s string) string {
	return "> " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n> ")
}

// answerReview replies in each thread of the review with the commit that addresses it, once, and asks
// the reviewer to review again.
func (h *Runs) answerReview(ctx context.Context, gh ports.GitHub, run *lifecycle.Run) error {
	rv := run.Review
	t := run.Task(reviewTaskID)
	if rv == nil || t == nil || t.Checkpoint == "" {
		return nil
	}
	comments, err := gh.ReviewComments(ctx, run.Owner, run.Repo, run.PR, rv.ID)
	if err != nil {
		return fmt.Errorf("jobs: comments of review %d: %w", rv.ID, err)
	}
	data := templates.ReviewAddressed{Commit: t.Checkpoint}
	if run.RepoURL != "" {
		data.CommitURL = run.RepoURL + "/commit/" + t.Checkpoint
	}
	reply := publish.Render("review_addressed", data, "Addressed in "+publish.Short(t.Checkpoint)+".")
	for _, c := range comments {
		if c.InReplyTo != 0 {
			continue // reply in the thread once, under its first comment
		}
		key := fmt.Sprintf("review-%s-%d", run.ID, c.ID)
		done, err := h.d.Store.Replied(ctx, key)
		if err != nil {
			return err
		}
		if done {
			continue
		}
		if err := gh.ReplyToReviewComment(ctx, run.Owner, run.Repo, run.PR, c.ID, reply); err != nil {
			return fmt.Errorf("jobs: reply to review comment %d: %w", c.ID, err)
		}
		if err := h.d.Store.MarkReplied(ctx, key); err != nil {
			return err
		}
	}
	if err := gh.RequestReview(ctx, run.Owner, run.Repo, run.PR, []string{rv.By}); err != nil {
		return fmt.Errorf("jobs: ask @%s to review again: %w", rv.By, err)
	}
	return nil
}
