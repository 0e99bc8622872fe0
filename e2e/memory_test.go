package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestLearningThroughGitHub: the guidance of a `/akira retry` that made a task pass becomes a lesson
// of the repository; a later issue's related task gets it in its prompt and passes at its first
// attempt (the scripted agent passes "flaky" tasks only with the magic word in its prompt), while
// an unrelated task's prompt does not carry it. `/akira remember` and `/akira forget` edit the
// memory; a read-only user cannot.
func TestLearningThroughGitHub(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flaky", User: "alice", Body: "- [ ] Add a flaky thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(run.Branch)
	e.comment(pr.Number, "alice", "/akira retry the flaky things need the MAGIC-WORD in their prompt", true, http.StatusAccepted)
	e.waitStatus(1, lifecycle.StatusSucceeded)
	mem := store.NewStore(e.rdb, e.spec.Prefix).Lessons(e.gh.InstallationID(e.owner, e.repo), e.owner, e.repo)
	ls, err := mem.List(context.Background())
	if err != nil || len(ls) != 1 || !strings.Contains(ls[0].Text, "MAGIC-WORD") {
		t.Fatalf("lessons after the retry: %+v, %v", ls, err)
	}
	if ls[0].Author != "alice" || !strings.Contains(ls[0].Link, "/issues/"+strconv.Itoa(pr.Number)+"#issuecomment-") {
		t.Errorf("the lesson does not name who taught it and where: author %q, link %q", ls[0].Author, ls[0].Link)
	}

	before, _ := os.ReadFile(filepath.Join(e.logDir, "calls"))
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 3, Title: "More", User: "alice",
		Body: "- [ ] Add another flaky thing\n- [ ] Write the release notes\n"})
	e.comment(3, "alice", "/akira run", false, http.StatusAccepted)
	e.waitStatus(3, lifecycle.StatusSucceeded)
	after, _ := os.ReadFile(filepath.Join(e.logDir, "calls"))
	if got := strings.Fields(strings.TrimPrefix(string(after), string(before))); strings.Join(got, " ") != "1.1 1 1.2 1" {
		t.Errorf("the second issue's agent calls = %v; want each task once (the flaky one passing at once)", got)
	}
	if p := e.promptOf("1.2"); strings.Contains(p, "MAGIC-WORD") {
		t.Error("the unrelated task's prompt carries the lesson")
	}

	e.comment(3, "mallory", "/akira remember deploy on Fridays", false, http.StatusAccepted)
	e.eventually("the refusal", func() bool { return len(e.commentsWith(3, "Sorry @mallory")) == 1 })
	e.comment(3, "alice", "/akira remember run migrations with make migrate", false, http.StatusAccepted)
	e.eventually("the remember reply", func() bool { return len(e.commentsWith(3, "Remembered as")) == 1 })
	m := regexp.MustCompile("Remembered as `(L[0-9a-f]{8})`").FindStringSubmatch(e.commentsWith(3, "Remembered as")[0].Body)
	if m == nil {
		t.Fatal("no lesson id in the reply")
	}
	if ls, _ := mem.List(context.Background()); len(ls) != 2 {
		t.Errorf("lessons = %+v; want the retry's and alice's note (not mallory's)", ls)
	}
	e.comment(3, "alice", "/akira forget "+m[1], false, http.StatusAccepted)
	e.eventually("the forget reply", func() bool { return len(e.commentsWith(3, "Forgot lesson")) == 1 })
	if ls, _ := mem.List(context.Background()); len(ls) != 1 {
		t.Errorf("lessons after forget = %+v", ls)
	}
}
