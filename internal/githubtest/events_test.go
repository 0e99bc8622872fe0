package githubtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-github/v60/github"
)

// TestPostComment: a person's comment is added and its issue_comment webhook delivered as GitHub
// sends it, signed, with the comment, the issue, the repository, the sender and the installation,
// and recorded among the deliveries with the app's answer.
func TestPostComment(t *testing.T) {
	s, repo := newRepoServer(t)
	s.SetPermission("octo", "hello", "alice", "write")
	is := s.AddIssue("octo", "hello", Issue{Title: "Do it", User: "alice"})
	type delivery struct {
		event *github.IssueCommentEvent
		err   error
	}
	seen := make(chan delivery, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := github.ValidatePayload(r, []byte("sekrit"))
		var ev any
		if err == nil {
			ev, err = github.ParseWebHook(github.WebHookType(r), body)
		}
		ice, _ := ev.(*github.IssueCommentEvent)
		seen <- delivery{ice, err}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "queued")
	}))
	t.Cleanup(hook.Close)
	s.SetWebhook(hook.URL, "sekrit")

	c, status, answer, err := s.PostComment("octo", "hello", is.Number, "alice", "/akira run")
	if err != nil || status != http.StatusAccepted || string(answer) != "queued" {
		t.Fatalf("PostComment = %d %q, %v", status, answer, err)
	}
	d := <-seen
	if d.err != nil || d.event == nil {
		t.Fatalf("the delivery does not read as a signed issue_comment event: %v", d.err)
	}
	ev := d.event
	if ev.GetAction() != "created" || ev.GetIssue().GetNumber() != is.Number || ev.GetIssue().IsPullRequest() ||
		ev.GetComment().GetID() != c.ID || ev.GetComment().GetBody() != "/akira run" || ev.GetComment().GetUser().GetLogin() != "alice" ||
		ev.GetComment().GetAuthorAssociation() != "COLLABORATOR" || ev.GetSender().GetLogin() != "alice" ||
		ev.GetInstallation().GetID() != repo.InstallationID || ev.GetRepo().GetFullName() != "octo/hello" {
		t.Errorf("payload = %+v", ev)
	}
	if got := s.Comments("octo", "hello", is.Number); len(got) != 1 || got[0].ID != c.ID || got[0].User != "alice" {
		t.Errorf("comments = %+v", got)
	}
	list, _, err := appClient(t, s).Apps.ListHookDeliveries(context.Background(), nil)
	if err != nil || len(list) != 1 || list[0].GetEvent() != "issue_comment" || list[0].GetStatusCode() != http.StatusAccepted {
		t.Errorf("deliveries = %+v, %v", list, err)
	}

	if _, _, _, err := s.PostComment("octo", "hello", 99, "alice", "/akira run"); err == nil {
		t.Error("a comment on an issue that does not exist was posted")
	}
	if n := len(s.Comments("octo", "hello", is.Number)); n != 1 {
		t.Errorf("%d comments after the refused one, want 1", n)
	}
}
