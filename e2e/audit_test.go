package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestSlashCommandsAudited: a command a writer gives and one a reader is refused are both in the
// audit trail, with who, where, the delivery and the installation.
func TestSlashCommandsAudited(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Notes", User: "alice", Body: "- [ ] Write the notes\n"})
	e.comment(1, "mallory", "/akira run", false, http.StatusAccepted)
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitStatus(1, lifecycle.StatusSucceeded)
	var entries []store.AuditEntry
	e.eventually("both commands in the audit", func() bool {
		all, err := e.store.AuditLog(context.Background(), 50)
		if err != nil {
			t.Fatal(err)
		}
		entries = entries[:0]
		for _, a := range all {
			if a.Via == store.ViaComment {
				entries = append(entries, a)
			}
		}
		return len(entries) == 2
	})
	byActor := map[string]store.AuditEntry{}
	for _, a := range entries {
		byActor[a.Actor] = a
	}
	refused, run := byActor["mallory"], byActor["alice"]
	if refused.Action != "/akira run" || !strings.HasPrefix(refused.Result, "refused: mallory has read access") {
		t.Errorf("the reader's command: %+v", refused)
	}
	if run.Action != "/akira run" || strings.HasPrefix(run.Result, "refused") {
		t.Errorf("the writer's command: %+v", run)
	}
	for _, a := range entries {
		if a.Repo != e.owner+"/"+e.repo || a.Target != "#1" || a.DeliveryID == "" || a.InstallationID == 0 {
			t.Errorf("entry %+v lacks where it came from", a)
		}
	}
}
