package app

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/queue"
)

// TestSameDeliveryQueuedOnce: GitHub redelivering a delivery (the same X-GitHub-Delivery, several
// times at once) queues one intake task on the real queue; every copy is answered 202, the first
// "intake enqueued", the others "already enqueued".
func TestSameDeliveryQueuedOnce(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	b := make([]byte, 4)
	rand.Read(b)
	qname := "akira-app-dedupe-" + hex.EncodeToString(b)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(qname, true) })
	client := asynq.NewClientFromRedisClient(rdb)

	fake := githubtest.New(t)
	repo := fake.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n"})
	h, err := NewServer(ServerConfig{AppID: fake.AppID(), WebhookSecret: []byte(testSecret), BotLogin: fake.BotLogin()},
		Deps{Enqueuer: queue.NewEnqueuer(client, queue.TaskOptions{Queue: qname}), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	payload := issueCommentJSON(repo, 1, false, 77, "alice", "/akira run")

	const copies = 5
	reasons := make([]string, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() {
			resp, err := srv.Client().Do(fake.SignedWebhook(srv.URL+"/webhook", testSecret, "issue_comment", "delivery-once", payload))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var a ackBody
			data, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(data, &a); err != nil || resp.StatusCode != http.StatusAccepted {
				t.Errorf("copy %d: %d %s", i, resp.StatusCode, data)
			}
			reasons[i] = a.Reason
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, r := range reasons {
		count[r]++
	}
	if count["intake enqueued"] != 1 || count["already enqueued"] != copies-1 {
		t.Errorf("answers %v, want one \"intake enqueued\" and %d \"already enqueued\"", count, copies-1)
	}
	tasks, err := insp.ListPendingTasks(qname)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].Type != queue.TypeIntake {
		t.Fatalf("%d tasks queued for one delivery, want one intake: %+v", len(tasks), tasks)
	}
}
