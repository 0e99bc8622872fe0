package jobs

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/queue"
)

// TestInlinePlanInRunComment: a plan pasted under `/akira run` reaches the run job with the command;
// one that cannot be read is answered at once, naming the comment's line, and nothing is queued.
func TestInlinePlanInRunComment(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.Permissions["alice"] = "write"
	good := "/akira run\n\n```markdown\n- [ ] 1 One\n- [ ] 2 Two\n  - depends: 1\n```\n"
	if err := jh.intake(queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventIssueComment,
		Body: &queue.CommentIntake{ID: 11, Number: 4, Author: "alice", Body: good}}); err != nil {
		t.Fatal(err)
	}
	runs := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(runs) != 1 || runs[0].Plan != "- [ ] 1 One\n- [ ] 2 Two\n  - depends: 1\n" {
		t.Fatalf("queued = %+v", runs)
	}

	bad := "Let's go.\n/akira run\n- [ ] 1 One\n- [ ] 2 Two\n  - depends: 9\n"
	if err := jh.intake(queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventIssueComment,
		Body: &queue.CommentIntake{ID: 12, Number: 4, Author: "alice", Body: bad}}); err != nil {
		t.Fatal(err)
	}
	if n := len(queued[queue.RunPayload](jh, queue.TypeRun)); n != 1 {
		t.Fatalf("a plan that cannot be read queued a run (%d)", n)
	}
	replies := jh.gh.CommentsOn(4)
	if len(replies) != 1 || !strings.Contains(replies[0], "cannot be read") || !strings.Contains(replies[0], "comment:5:") {
		t.Fatalf("replies = %q", replies)
	}
}
