package jobs

import (
	"strings"
	"testing"
)

// TestInlinePlanInRunComment: a plan pasted under `/akira run` reaches the run job with the command;
// one that cannot be read is answered at once, naming the comment's line, and nothing is queued.
func TestInlinePlanInRunComment(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.permissions["alice"] = "write"
	good := "/akira run\n\n```markdown\n- [ ] 1 One\n- [ ] 2 Two\n  - depends: 1\n```\n"
	if err := jh.intake(IntakePayload{TaskHeader: TaskHeader{Sender: "alice"}, Event: EventIssueComment,
		Body: &CommentIntake{ID: 11, Number: 4, Author: "alice", Body: good}}); err != nil {
		t.Fatal(err)
	}
	runs := queued[RunPayload](jh, TypeRun)
	if len(runs) != 1 || runs[0].Plan != "- [ ] 1 One\n- [ ] 2 Two\n  - depends: 1\n" {
		t.Fatalf("queued = %+v", runs)
	}

	bad := "Let's go.\n/akira run\n- [ ] 1 One\n- [ ] 2 Two\n  - depends: 9\n"
	if err := jh.intake(IntakePayload{TaskHeader: TaskHeader{Sender: "alice"}, Event: EventIssueComment,
		Body: &CommentIntake{ID: 12, Number: 4, Author: "alice", Body: bad}}); err != nil {
		t.Fatal(err)
	}
	if n := len(queued[RunPayload](jh, TypeRun)); n != 1 {
		t.Fatalf("a plan that cannot be read queued a run (%d)", n)
	}
	replies := jh.gh.commentsOn(4)
	if len(replies) != 1 || !strings.Contains(replies[0], "cannot be read") || !strings.Contains(replies[0], "comment:5:") {
		t.Fatalf("replies = %q", replies)
	}
}
