package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
)

// BenchmarkWebhookIgnoredComment is the intake's own cost for the most common delivery: a signed comment
// without a command (read, verify, decode, parse, answer), in process.
func BenchmarkWebhookIgnoredComment(b *testing.B) {
	h, err := NewServer(ServerConfig{AppID: 1, WebhookSecret: []byte(testSecret)},
		Deps{Enqueuer: &recordingEnqueuer{}, Logger: slog.New(slog.DiscardHandler)})
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
