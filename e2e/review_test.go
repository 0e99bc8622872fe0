package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner/lessons"
)

// reviewPR is the pull_request object of a review event for pr.
func (e *env) reviewPR(pr githubtest.PullRequest) map[string]any {
	repo := e.repository()
	return map[string]any{"number": pr.Number, "user": user("akira-test[bot]"),
		"head": map[string]any{"ref": pr.Head, "sha": e.gh.Branch(e.owner, e.repo, pr.Head), "repo": repo},
		"base": map[string]any{"ref": pr.Base, "sha": e.gh.Branch(e.owner, e.repo, pr.Base), "repo": repo}}
}

// review submits a review on GitHub and delivers its pull_request_review webhook.
func (e *env) review(pr githubtest.PullRequest, rv githubtest.Review) githubtest.Review {
	e.t.Helper()
	rv = e.gh.AddReview(e.owner, e.repo, pr.Number, rv)
	e.deliver("pull_request_review", "review-"+randomHex(e.t, 4), map[string]any{
		"action": "submitted", "installation": e.installation(), "repository": e.repository(), "sender": user(rv.User),
		"review":       map[string]any{"id": rv.ID, "state": strings.ToLower(rv.State), "body": rv.Body, "user": user(rv.User)},
		"pull_request": e.reviewPR(pr),
	}, http.StatusAccepted)
	return rv
}

// reviewCommentEvent delivers the pull_request_review_comment webhook of a review's comment.
func (e *env) reviewCommentEvent(pr githubtest.PullRequest, c githubtest.ReviewComment) {
	e.t.Helper()
	e.deliver("pull_request_review_comment", "review-comment-"+randomHex(e.t, 4), map[string]any{
		"action": "created", "installation": e.installation(), "repository": e.repository(), "sender": user(c.User),
		"comment": map[string]any{"id": c.ID, "pull_request_review_id": c.ReviewID, "body": c.Body, "user": user(c.User),
			"path": c.Path, "line": c.Line},
		"pull_request": e.reviewPR(pr),
	}, http.StatusAccepted)
}

// reviewCommits returns the commits of the branch that address the review.
func (e *env) reviewCommits(branch string, reviewID int64) []githubtest.Commit {
	var out []githubtest.Commit
	for _, c := range e.gh.Log(e.owner, e.repo, branch) {
		if c.Trailers["Akira-Review"] == strconv.FormatInt(reviewID, 10) {
			out = append(out, c)
		}
	}
	return out
}

// TestReviews: a writer's review requesting changes on Akira's pull request is answered with one
// checkpoint addressing it, a reply in each thread and a new review request; a read-only user's review
// does nothing; `/akira fix` in a review comment does the same as a review requesting changes.
func TestReviews(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Two things", User: "alice",
		Body: "- [ ] Add one\n- [ ] Add two\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	first := e.waitStatus(1, lifecycle.StatusSucceeded)
	pr := e.onlyPR(first.Branch)

	// A read-only user's review: nothing happens.
	e.review(pr, githubtest.Review{User: "mallory", State: "CHANGES_REQUESTED", Body: "Rewrite it all."})
	e.queueIdle()
	if got := e.runOf(pr.Number); got.ID != first.ID {
		t.Fatalf("a read-only user's review started run %s", got.ID)
	}

	// A writer requests changes, with a comment on a line.
	rv := e.review(pr, githubtest.Review{User: "alice", State: "CHANGES_REQUESTED", Body: "Close, but not yet.",
		Comments: []githubtest.ReviewComment{{Path: "out-1.1.txt", Line: 1, Body: "Say SHOUT-IT here"}}})
	e.eventually("the review's checkpoint", func() bool { return len(e.reviewCommits(first.Branch, rv.ID)) == 1 })
	run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if run.Trigger != lifecycle.TriggerReview || run.Review == nil || run.Review.ID != rv.ID {
		t.Fatalf("run %s: trigger %s review %+v", run.ID, run.Trigger, run.Review)
	}
	mem := e.store.Lessons(e.gh.InstallationID(e.owner, e.repo), e.owner, e.repo)
	taught := map[string]lessons.Lesson{}
	for _, l := range mustLessons(t, mem) {
		taught[l.Text] = l
	}
	if l, ok := taught["On out-1.1.txt: Say SHOUT-IT here"]; !ok || l.Author != "alice" ||
		l.Link != fmt.Sprintf("%s#discussion_r%d", run.PRURL, rv.Comments[0].ID) || !strings.Contains(l.Source, "review") {
		t.Errorf("the addressed review comment is not a lesson with its reviewer and link: %+v", taught)
	}
	if _, ok := taught["Close, but not yet."]; !ok {
		t.Errorf("the review's own text is not a lesson: %+v", taught)
	}
	c := e.reviewCommits(first.Branch, rv.ID)[0]
	if want := "akira: address review " + strconv.FormatInt(rv.ID, 10); c.Subject != want {
		t.Errorf("checkpoint subject %q, want %q", c.Subject, want)
	}
	prompt := e.promptOf("address")
	for _, want := range []string{"Close, but not yet.", "`out-1.1.txt` line 1", "Say SHOUT-IT here", "@alice"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	e.eventually("the thread reply and the new review request", func() bool {
		return slices.Contains(e.gh.RequestedReviewers(e.owner, e.repo, pr.Number), "alice")
	})
	var replies []githubtest.ReviewComment
	for _, rc := range e.gh.ReviewComments(e.owner, e.repo, pr.Number) {
		if rc.InReplyTo == rv.Comments[0].ID {
			replies = append(replies, rc)
		}
	}
	if len(replies) != 1 || !strings.Contains(replies[0].Body, "Addressed in") || !strings.Contains(replies[0].Body, c.SHA[:7]) {
		t.Errorf("thread replies = %+v", replies)
	}

	// `/akira fix` in a review comment.
	fix := e.gh.AddReview(e.owner, e.repo, pr.Number, githubtest.Review{User: "alice", State: "COMMENTED",
		Comments: []githubtest.ReviewComment{{Path: "out-1.2.txt", Line: 1, Body: "/akira fix make it LOUDER"}}})
	e.reviewCommentEvent(pr, fix.Comments[0])
	e.eventually("the fix's checkpoint", func() bool { return len(e.reviewCommits(first.Branch, fix.ID)) == 1 })
	fixed := e.waitStatus(pr.Number, lifecycle.StatusSucceeded)
	if fixed.Review == nil || fixed.Review.Guidance != "make it LOUDER" {
		t.Errorf("fix run review = %+v", fixed.Review)
	}
	if ls := mustLessons(t, mem); len(ls) != 3 || !slices.ContainsFunc(ls, func(l lessons.Lesson) bool { return l.Text == "On out-1.2.txt: make it LOUDER" }) {
		t.Errorf("after /akira fix the lessons are %+v; want its guidance added", ls)
	}
	if got := e.taskCommits(first.Branch); got["1.1"] != 1 || got["1.2"] != 1 {
		t.Errorf("checkpoints of the issue's tasks = %v, want each once", got)
	}
	if n := len(e.reviewCommits(first.Branch, rv.ID)); n != 1 {
		t.Errorf("the first review was addressed %d times", n)
	}
}

// promptOf returns the latest prompt the agent got for a task.
func (e *env) promptOf(task string) string {
	files, _ := filepath.Glob(filepath.Join(e.logDir, "prompt-"+task+"-*.md"))
	if len(files) == 0 {
		e.t.Fatalf("no prompt for task %s", task)
	}
	slices.Sort(files)
	b, err := os.ReadFile(files[len(files)-1])
	must(e.t, err)
	return string(b)
}

func mustLessons(t *testing.T, s lessons.Store) []lessons.Lesson {
	t.Helper()
	ls, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ls
}
