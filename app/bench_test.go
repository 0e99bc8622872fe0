package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/akira-bot/akira/app/githubtest"
	"github.com/akira-bot/akira/runner/config"
)

func BenchmarkParse(b *testing.B) {
	body := strings.Repeat("Some discussion of the change.\n\n```go\n/akira abort\n```\n> /akira skip\n", 20) +
		"/akira retry use the v2 client\nand keep the old test\n"
	for b.Loop() {
		if _, ok := Parse(body).(Command); !ok {
			b.Fatal("no command")
		}
	}
}

// noGitHub fails every call: the benchmarked deliveries must be answered without asking GitHub.
type noGitHub struct{}

func (noGitHub) PermissionLevel(context.Context, int64, string, string, string) (string, error) {
	panic("GitHub called")
}
func (noGitHub) RepoConfig(context.Context, int64, string, string, string) (config.Repo, error) {
	panic("GitHub called")
}
func (noGitHub) PullRequest(context.Context, int64, string, string, int) (PullRequestInfo, error) {
	panic("GitHub called")
}
func (noGitHub) PullRequestFiles(context.Context, int64, string, string, int) ([]string, error) {
	panic("GitHub called")
}
func (noGitHub) CreateComment(context.Context, int64, string, string, int, string) error {
	panic("GitHub called")
}
func (noGitHub) AddReaction(context.Context, int64, string, string, int64, string) error {
	panic("GitHub called")
}

// BenchmarkWebhookIgnoredComment is the intake's own cost for the most common delivery: a signed comment
// without a command (read, verify, decode, parse, answer), in process.
func BenchmarkWebhookIgnoredComment(b *testing.B) {
	h, err := NewServer(ServerConfig{AppID: 1, WebhookSecret: []byte(testSecret)},
		Deps{Enqueuer: &recordingEnqueuer{}, GitHub: noGitHub{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	repo := githubtest.Repo{ID: 1, Owner: "acme", Name: "widgets", DefaultBranch: "main", InstallationID: 7}
	body, err := json.Marshal(issueCommentJSON(repo, 1, false, 9, "alice", strings.Repeat("Looks good to me. ", 50)))
	if err != nil {
		b.Fatal(err)
	}
	sig := githubtest.SignPayload(testSecret, body)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", "d")
		req.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
