package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs"
)

// ackConcurrency is how many deliveries arrive at once in BenchmarkWebhookAck.
const ackConcurrency = 200

// BenchmarkWebhookAck measures what GitHub waits for when people comment `/akira status` at once: the
// signed delivery through the gin server, the signature check, the parse and the asynq enqueue of the
// intake task in Redis, until the 202, with ackConcurrency deliveries in flight. The delivery is
// signed before the clock starts, as GitHub signs it before sending. Next to it, in the same run and
// at the same concurrency, two floors: a bare asynq enqueue of the same intake payloads, and the same
// enqueue behind a bare net/http handler that only reads the body (what any HTTP answer costs on this
// machine, so that the table tells the HTTP hop from Akira's own work). It reports the latency
// percentiles of all three and the webhook's ratios to the bare enqueue (x-floor-p50, x-floor-p99;
// the goal for both is 1.5 or less) and to the bare HTTP floor (x-http-p50, x-http-p99).
func BenchmarkWebhookAck(b *testing.B) {
	fake := githubtest.New(b)
	fake.CreateRepo("octo", "bench", map[string]string{"README.md": "x\n"})
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(b), PoolSize: ackConcurrency})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("redis at %s: %v", redisAddr(b), err)
	}
	queue := "akira-bench-" + randomHex(b, 6)
	b.Cleanup(func() {
		_ = asynq.NewInspectorFromRedisClient(rdb).DeleteQueue(queue, true)
		_ = rdb.Close()
	})
	enq := jobs.NewEnqueuer(asynq.NewClientFromRedisClient(rdb), jobs.TaskOptions{Queue: queue})
	handler, err := app.NewServer(
		app.ServerConfig{AppID: fake.AppID(), WebhookSecret: []byte(webhookSecret), BotLogin: fake.BotLogin()},
		app.Deps{Enqueuer: enq, Logger: slog.New(slog.DiscardHandler)})
	must(b, err)
	web := httptest.NewServer(handler)
	b.Cleanup(web.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ackConcurrency, MaxConnsPerHost: ackConcurrency}}

	user := map[string]any{"login": "alice", "id": 7, "type": "User"}
	installation := fake.InstallationID("octo", "bench")
	payload := map[string]any{
		"action": "created", "installation": map[string]any{"id": installation},
		"repository": map[string]any{"name": "bench", "full_name": "octo/bench", "default_branch": "main",
			"owner": map[string]any{"login": "octo", "type": "User"}},
		"sender": user, "issue": map[string]any{"number": 1, "title": "bench", "user": user},
		"comment": map[string]any{"id": 99, "body": "/akira status", "user": user},
	}
	signed := fake.SignedWebhook(web.URL+"/webhook", webhookSecret, "issue_comment", "template", payload)
	body, err := io.ReadAll(signed.Body)
	must(b, err)
	post := func(url, id string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header = signed.Header.Clone()
		req.Header.Set("X-GitHub-Delivery", id)
		return client.Do(req)
	}
	webhook := func(id string) error {
		resp, err := post(web.URL+"/webhook", id)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("webhook answer %d", resp.StatusCode)
		}
		return nil
	}
	floor := func(id string) error {
		return enq.EnqueueIntake(context.Background(), jobs.IntakePayload{DeliveryID: id, Event: jobs.EventIssueComment,
			InstallationID: installation, Owner: "octo", Repo: "bench", DefaultBranch: "main", Sender: "alice",
			Comment: &jobs.CommentIntake{ID: 99, Number: 1, Author: "alice", Body: "/akira status"}})
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if err := floor(r.Header.Get("X-GitHub-Delivery")); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	b.Cleanup(bare.Close)
	httpFloor := func(id string) error {
		resp, err := post(bare.URL, id)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("bare HTTP answer %d", resp.StatusCode)
		}
		return nil
	}
	// Warm every path: connections, Redis scripts.
	must(b, webhook("warm-web-"+queue))
	must(b, floor("warm-floor-"+queue))
	must(b, httpFloor("warm-http-"+queue))

	var webLat, floorLat, httpLat []time.Duration
	round := 0
	for b.Loop() {
		round++
		floorLat = append(floorLat, concurrently(b, fmt.Sprintf("floor-%s-%d", queue, round), floor)...)
		httpLat = append(httpLat, concurrently(b, fmt.Sprintf("http-%s-%d", queue, round), httpFloor)...)
		webLat = append(webLat, concurrently(b, fmt.Sprintf("web-%s-%d", queue, round), webhook)...)
	}
	wp50, wp99 := percentiles(webLat)
	fp50, fp99 := percentiles(floorLat)
	hp50, hp99 := percentiles(httpLat)
	b.ReportMetric(float64(wp50.Microseconds()), "ack-p50-µs")
	b.ReportMetric(float64(wp99.Microseconds()), "ack-p99-µs")
	b.ReportMetric(float64(fp50.Microseconds()), "floor-p50-µs")
	b.ReportMetric(float64(fp99.Microseconds()), "floor-p99-µs")
	b.ReportMetric(float64(wp50)/float64(fp50), "x-floor-p50")
	b.ReportMetric(float64(wp99)/float64(fp99), "x-floor-p99")
	b.ReportMetric(float64(wp50)/float64(hp50), "x-http-p50")
	b.ReportMetric(float64(wp99)/float64(hp99), "x-http-p99")
	b.Logf("akira-bench: ack.p50.ms %.2f", float64(wp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.p99.ms %.2f", float64(wp99.Microseconds())/1000)
	b.Logf("akira-bench: ack.floor_p50.ms %.2f", float64(fp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.floor_p99.ms %.2f", float64(fp99.Microseconds())/1000)
	b.Logf("akira-bench: ack.http_p50.ms %.2f", float64(hp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.http_p99.ms %.2f", float64(hp99.Microseconds())/1000)
}

// concurrently runs ackConcurrency calls at once, released together, and returns each one's latency.
func concurrently(b *testing.B, prefix string, call func(id string) error) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, ackConcurrency)
	errs := make([]error, ackConcurrency)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ackConcurrency {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			errs[i] = call(fmt.Sprintf("%s-%d", prefix, i))
			lat[i] = time.Since(t0)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return lat
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}
