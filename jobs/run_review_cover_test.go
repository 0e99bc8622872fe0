package jobs

import (
	"context"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/gittest"
)

func reviewIntake(author, headRef string, number int) queue.IntakePayload {
	return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: author}, Event: queue.EventReview,
		Body: &queue.ReviewIntake{Number: number, ReviewID: 77, Author: author, Body: "Please use tabs.", HeadRef: headRef}}
}

func TestIntakeReviewStartsAReviewRunOnlyOnAkirasPullRequests(t *testing.T) {
	tests := []struct {
		name string
		in   queue.IntakePayload
		runs int
	}{
		{"writer on Akira's branch", reviewIntake("alice", "akira/issue-4", 5), 1},
		{"writer on someone's branch", reviewIntake("alice", "feature", 5), 0},
		{"reader on Akira's branch", reviewIntake("rita", "akira/issue-4", 5), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["rita"] = "read"
			if err := jh.intake(tt.in); err != nil {
				t.Fatal(err)
			}
			runs := queued[queue.RunPayload](jh, queue.TypeRun)
			if len(runs) != tt.runs {
				t.Fatalf("runs = %+v, want %d", runs, tt.runs)
			}
			if tt.runs == 1 {
				r := runs[0]
				if r.Trigger != lifecycle.TriggerReview || r.Number != 5 || r.Branch != "akira/issue-4" || r.Review == nil ||
					r.Review.ID != 77 || r.Review.By != "alice" || r.Review.Body != "Please use tabs." {
					t.Errorf("review run = %+v (review %+v)", r, r.Review)
				}
			}
			// Reviews are everyday traffic: nobody is answered.
			if got := jh.gh.CommentsOn(5); len(got) != 0 {
				t.Errorf("comments = %q, want none", got)
			}
		})
	}
}

func TestReviewRunAddressesTheReviewAndAnswersItsThreads(t *testing.T) {
	jh, repo := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Two things", Body: "- [ ] 1.1 First\n- [ ] 1.2 Second\n"}
	ctx := context.Background()
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	first, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || first.PR != 5 {
		t.Fatalf("issue run = %+v, %v; want pull request 5", first, err)
	}
	jh.gh.ReviewThreads = map[int64][]ports.ReviewComment{77: {
		{ID: 901, Path: "main.go", Line: 3, DiffHunk: "@@ -1 +1 @@\n-a\n+b", Body: "Name this better.", User: "rev"},
		{ID: 902, Path: "main.go", Line: 3, Body: "Agreed.", User: "alice", InReplyTo: 901},
	}}
	p := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d-review", InstallationID: 7, Owner: "o", Repo: "r", Sender: "rev"}, Trigger: lifecycle.TriggerReview, Number: 5,
		Branch: "akira/issue-4", Review: &lifecycle.ReviewRequest{ID: 77, By: "rev", Body: "Please use tabs."}}
	if err := jh.runJob(p); err != nil {
		t.Fatalf("review run: %v", err)
	}
	run, err := jh.store.Get(ctx, queue.RunIDFor("d-review"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != lifecycle.StatusSucceeded || run.Review == nil || run.Issue != 4 || !strings.Contains(run.Source, "review 77 by @rev") {
		t.Fatalf("review run = %s review %+v issue %d source %q", run.Status, run.Review, run.Issue, run.Source)
	}
	// Its checkpoint on the pull request's branch names the review.
	log := gittest.Git(t, repo.Work, "--git-dir="+repo.Remote, "log", "-1", "--format=%s%n%b", "akira/issue-4")
	if !strings.HasPrefix(log, "akira: address review 77") || !strings.Contains(log, runs.TrailerReview+": 77") {
		t.Errorf("head of the branch = %q, want the review's checkpoint", log)
	}
	// The thread is answered once, under its first comment, and the reviewer asked to look again.
	var replies, asks int
	for _, e := range jh.gh.Effects() {
		switch {
		case strings.HasPrefix(e, "reply on #5 to review comment 901: "):
			replies++
		case strings.HasPrefix(e, "reply on #5 to review comment"):
			t.Errorf("reply outside the thread's first comment: %s", e)
		case e == "request review on #5 from rev":
			asks++
		}
	}
	if replies != 1 || asks != 1 {
		t.Errorf("effects = %q; want one reply to 901 and one review request from rev", jh.gh.Effects())
	}
	// What the review taught is remembered, with the reviewer.
	ls, err := jh.store.Lessons(7, "o", "r").List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, l := range ls {
		texts = append(texts, l.Text+" ("+l.Author+")")
	}
	joined := strings.Join(texts, "; ")
	if !strings.Contains(joined, "Please use tabs. (rev)") || !strings.Contains(joined, "On main.go: Name this better. (rev)") || strings.Contains(joined, "Agreed.") {
		t.Errorf("lessons = %q, want the review and the thread's first comment", joined)
	}
}
