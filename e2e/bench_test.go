package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/app/githubtest"
	"github.com/akira-bot/akira/jobs"
	"github.com/akira-bot/akira/jobs/bridge"
)

// BenchmarkWebhookAck measures what GitHub waits for when someone comments `/akira run`: the signed
// delivery through the gin server, the signature check, the commenter's permission asked of GitHub
// (the fake, over HTTP), the 👀 reaction and the asynq enqueue in Redis, until the 202. Next to it, in
// the same run, the floor: a bare asynq enqueue of the same payload. ns/op is per webhook; x-floor is
// the ratio.
func BenchmarkWebhookAck(b *testing.B) {
	fake := githubtest.New(b)
	fake.CreateRepo("octo", "bench", map[string]string{"README.md": "x\n"})
	fake.SetPermission("octo", "bench", "alice", "write")
	issue := fake.AddIssue("octo", "bench", githubtest.Issue{Title: "bench", User: "alice"})
	comment := fake.AddComment("octo", "bench", issue.Number, "alice", "/akira run")

	rdb := redis.NewClient(&redis.Options{Addr: redisAddr()})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("redis at %s: %v", redisAddr(), err)
	}
	queue := "akira-bench-" + randomHex(b, 6)
	b.Cleanup(func() {
		_ = asynq.NewInspectorFromRedisClient(rdb).DeleteQueue(queue, true)
		_ = rdb.Close()
	})
	client := asynq.NewClientFromRedisClient(rdb)
	enq := jobs.NewEnqueuer(client, jobs.TaskOptions{Queue: queue})
	ghApp, err := gh.NewApp(gh.AppConfig{AppID: fake.AppID(), PrivateKeyPEM: fake.PrivateKeyPEM(), BaseURL: fake.URL()})
	must(b, err)
	handler, err := app.NewServer(
		app.ServerConfig{AppID: fake.AppID(), WebhookSecret: []byte(webhookSecret), BotLogin: fake.BotLogin()},
		app.Deps{Enqueuer: &bridge.Enqueuer{Jobs: enq}, GitHub: app.NewAppGitHub(ghApp), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(b, err)
	web := httptest.NewServer(handler)
	b.Cleanup(web.Close)

	user := map[string]any{"login": "alice", "id": 7, "type": "User"}
	payload := map[string]any{
		"action": "created", "installation": map[string]any{"id": fake.InstallationID("octo", "bench")},
		"repository": map[string]any{"name": "bench", "full_name": "octo/bench", "default_branch": "main",
			"owner": map[string]any{"login": "octo", "type": "User"}},
		"sender": user, "issue": map[string]any{"number": issue.Number, "title": issue.Title, "user": user},
		"comment": map[string]any{"id": comment.ID, "body": "/akira run", "user": user},
	}
	run := func(i int) {
		req := fake.SignedWebhook(web.URL+"/webhook", webhookSecret, "issue_comment", fmt.Sprintf("bench-%s-%d", queue, i), payload)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("webhook answer %d", resp.StatusCode)
		}
	}
	run(-1) // warm: the installation token, connections

	floorStart := time.Now()
	for i := 0; i < b.N; i++ {
		p := bridge.RunPayload(app.RunRequest{DeliveryID: fmt.Sprintf("floor-%s-%d", queue, i), InstallationID: 1,
			Owner: "octo", Repo: "bench", Trigger: app.TriggerIssueComment, IssueNumber: issue.Number, Sender: "alice"})
		if err := enq.EnqueueRun(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	floor := time.Since(floorStart)

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(b.Elapsed())/float64(floor), "x-floor")
}
