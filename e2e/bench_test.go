package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/queue"
)

// ackConcurrency is how many deliveries arrive at once in BenchmarkWebhookAck.
const ackConcurrency = 200

// BenchmarkWebhookAck measures what GitHub waits for when people comment `/akira status` at once: the
// signed delivery through the gin server, the signature check, the parse and the asynq enqueue of the
// intake task in Redis, until the 202, with ackConcurrency deliveries in flight. The delivery is
// signed before the clock starts, as GitHub signs it before sending. Each delivery is timed twice: by
// the sender, from the request sent to the answer read (the HTTP round trip on this machine, its
// client's work included), and by the server, from the request's headers read to its answer written
// (what akira_webhook_ack_seconds records: Akira's own hold on the delivery). Next to them,
// interleaved with the deliveries request by request (see interleaved) so that they move with the
// machine's load, two floors: a bare asynq enqueue of the same intake payloads, and the same enqueue
// behind a bare net/http handler that only reads the body (what any HTTP answer costs here, so that
// the table tells the HTTP hop from Akira's own work). It reports the latency percentiles and the
// ratios: the server's hold to the bare enqueue (x-held-floor-p50, -p99; the goal for both is 1.5 or
// less), the round trip to the bare enqueue (x-floor-p50, -p99) and to the bare HTTP floor
// (x-http-p50, -p99).
func BenchmarkWebhookAck(b *testing.B) {
	a := newAckBench(b)
	webhook, floor, httpFloor, qname := a.webhook, a.floor, a.httpFloor, a.queue
	// Warm every path: connections, Redis scripts.
	must(b, webhook("warm-web-"+qname))
	must(b, floor("warm-floor-"+qname))
	must(b, httpFloor("warm-http-"+qname))

	var webLat, floorLat, httpLat []time.Duration
	a.takeHeld() // not the warm-up's
	round := 0
	for b.Loop() {
		round++
		// Interleaved request by request: each of the ackConcurrency senders makes one webhook
		// delivery, one bare enqueue and one bare HTTP enqueue, in an order that rotates with the
		// sender, so that the floors are measured under the very load the webhook meets (a busy
		// machine slows all three alike) rather than in a quieter moment before or after.
		lats := interleaved(b, fmt.Sprintf("%s-%d", qname, round), webhook, floor, httpFloor)
		webLat, floorLat, httpLat = append(webLat, lats[0]...), append(floorLat, lats[1]...), append(httpLat, lats[2]...)
	}
	wp50, wp99 := percentiles(webLat)
	fp50, fp99 := percentiles(floorLat)
	hp50, hp99 := percentiles(httpLat)
	held := a.takeHeld()
	if len(held) != len(webLat) {
		b.Fatalf("the server saw %d deliveries accepted, the sender %d", len(held), len(webLat))
	}
	sp50, sp99 := percentiles(held)
	b.ReportMetric(float64(wp50.Microseconds()), "ack-p50-µs")
	b.ReportMetric(float64(wp99.Microseconds()), "ack-p99-µs")
	b.ReportMetric(float64(fp50.Microseconds()), "floor-p50-µs")
	b.ReportMetric(float64(fp99.Microseconds()), "floor-p99-µs")
	b.ReportMetric(float64(wp50)/float64(fp50), "x-floor-p50")
	b.ReportMetric(float64(wp99)/float64(fp99), "x-floor-p99")
	b.ReportMetric(float64(sp50)/float64(fp50), "x-held-floor-p50")
	b.ReportMetric(float64(sp99)/float64(fp99), "x-held-floor-p99")
	b.ReportMetric(float64(wp50)/float64(hp50), "x-http-p50")
	b.ReportMetric(float64(wp99)/float64(hp99), "x-http-p99")
	b.Logf("akira-bench: ack.p50.ms %.2f", float64(wp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.p99.ms %.2f", float64(wp99.Microseconds())/1000)
	b.Logf("akira-bench: ack.held_p50.ms %.2f", float64(sp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.held_p99.ms %.2f", float64(sp99.Microseconds())/1000)
	b.Logf("akira-bench: ack.floor_p50.ms %.2f", float64(fp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.floor_p99.ms %.2f", float64(fp99.Microseconds())/1000)
	b.Logf("akira-bench: ack.http_p50.ms %.2f", float64(hp50.Microseconds())/1000)
	b.Logf("akira-bench: ack.http_p99.ms %.2f", float64(hp99.Microseconds())/1000)
}

// BenchmarkWebhookBurst sends a burst of deliveries at a steady pace, 1,000 in 10 s (200 in 2 s with
// BENCH_QUICK=1), each with its own id, and GitHub's redelivery of every tenth one right after its
// first answer. Each delivery is paired with a bare enqueue of the same payload made by the same
// sender at the same moment (the order alternating), the floor that moves with the machine. When the
// burst is over it reads the queue: every delivery must have left exactly one intake task (0 lost,
// 0 doubled, the redeliveries answered without a second task), and it reports the server's hold
// p50/p99 beside the bare enqueue's (goal for p99: 1.5× or less).
func BenchmarkWebhookBurst(b *testing.B) {
	n, over := 1000, 10*time.Second
	if os.Getenv("BENCH_QUICK") != "" {
		n, over = 200, 2*time.Second
	}
	a := newAckBench(b)
	must(b, a.webhook("warm-web-"+a.queue))
	must(b, a.floor("warm-floor-"+a.queue))
	var held, floorLat []time.Duration
	round := 0
	for b.Loop() {
		round++
		a.takeHeld()
		prefix := fmt.Sprintf("burst-%s-%d-", a.queue, round)
		floorPrefix := fmt.Sprintf("burst-floor-%s-%d-", a.queue, round)
		lat := make([]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			time.Sleep(time.Until(start.Add(over * time.Duration(i) / time.Duration(n))))
			wg.Go(func() {
				id := prefix + strconv.Itoa(i)
				floorCall := func() {
					t0 := time.Now()
					if err := a.floor(floorPrefix + strconv.Itoa(i)); err != nil {
						errs[i] = err
					}
					lat[i] = time.Since(t0)
				}
				if i%2 == 0 {
					floorCall()
				}
				if err := a.webhook(id); err != nil {
					errs[i] = err
					return
				}
				if i%2 == 1 {
					floorCall()
				}
				if i%10 == 0 {
					// GitHub's redelivery: the same id again.
					if err := a.webhook(id); err != nil {
						errs[i] = fmt.Errorf("redelivery of %s: %w", id, err)
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		lost, doubled := a.queuedIntakes(b, prefix, n)
		b.Logf("akira-bench: burst.lost %d", lost)
		b.Logf("akira-bench: burst.doubled %d", doubled)
		if lost != 0 || doubled != 0 {
			b.Errorf("a burst of %d deliveries: %d lost, %d doubled", n, lost, doubled)
		}
		held = append(held, a.takeHeld()...)
		floorLat = append(floorLat, lat...)
	}
	hp50, hp99 := percentiles(held)
	fp50, fp99 := percentiles(floorLat)
	b.ReportMetric(float64(hp99)/float64(fp99), "x-held-floor-p99")
	b.Logf("akira-bench: burst.deliveries %d", n)
	b.Logf("akira-bench: burst.seconds %.0f", over.Seconds())
	b.Logf("akira-bench: burst.held_p50.ms %.2f", float64(hp50.Microseconds())/1000)
	b.Logf("akira-bench: burst.held_p99.ms %.2f", float64(hp99.Microseconds())/1000)
	b.Logf("akira-bench: burst.floor_p50.ms %.2f", float64(fp50.Microseconds())/1000)
	b.Logf("akira-bench: burst.floor_p99.ms %.2f", float64(fp99.Microseconds())/1000)
}

// queuedIntakes reads every task waiting in the bench's queue and counts, of the deliveries
// prefix0 … prefix(n-1), those that left no intake task (lost) and the tasks beyond one per
// delivery (doubled).
func (a *ackBench) queuedIntakes(b *testing.B, prefix string, n int) (lost, doubled int) {
	b.Helper()
	ins := asynq.NewInspectorFromRedisClient(a.rdb)
	seen := map[string]int{}
	for page := 1; ; page++ {
		tasks, err := ins.ListPendingTasks(a.queue, asynq.PageSize(1000), asynq.Page(page))
		must(b, err)
		for _, t := range tasks {
			var p queue.IntakePayload
			must(b, json.Unmarshal(t.Payload, &p))
			if strings.HasPrefix(p.DeliveryID, prefix) {
				seen[p.DeliveryID]++
			}
		}
		if len(tasks) < 1000 {
			break
		}
	}
	for i := range n {
		switch c := seen[prefix+strconv.Itoa(i)]; {
		case c == 0:
			lost++
		case c > 1:
			doubled += c - 1
		}
	}
	return lost, doubled
}

// ackBench is the webhook server of the acknowledgement benchmarks, with its floors: the same intake
// enqueue bare, and behind a bare net/http handler.
type ackBench struct {
	fake         *githubtest.Server
	rdb          *redis.Client
	queue        string
	installation int64
	// webhook delivers the signed comment with the delivery id given and wants a 202; floor enqueues
	// the same intake payload bare; httpFloor posts the body to a bare handler that enqueues it.
	webhook, floor, httpFloor func(id string) error
	heldMu                    sync.Mutex
	held                      []time.Duration
}

// takeHeld returns the server's holds of the deliveries accepted since the last call.
func (a *ackBench) takeHeld() []time.Duration {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	h := a.held
	a.held = nil
	return h
}

func newAckBench(b *testing.B) *ackBench {
	b.Helper()
	a := &ackBench{}
	fake := githubtest.New(b)
	fake.CreateRepo("octo", "bench", map[string]string{"README.md": "x\n"})
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(b), PoolSize: ackConcurrency})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("redis at %s: %v", redisAddr(b), err)
	}
	qname := "akira-bench-" + randomHex(b, 6)
	b.Cleanup(func() {
		_ = asynq.NewInspectorFromRedisClient(rdb).DeleteQueue(qname, true)
		_ = rdb.Close()
	})
	enq := queue.NewEnqueuer(asynq.NewClientFromRedisClient(rdb), queue.TaskOptions{Queue: qname})
	// The server's own view of each delivery, through the hook that feeds akira_webhook_ack_seconds.
	handler, err := app.NewServer(
		app.ServerConfig{AppID: fake.AppID(), WebhookSecret: []byte(webhookSecret), BotLogin: fake.BotLogin()},
		app.Deps{Enqueuer: enq,
			// The log line of every delivery is formatted as in production, then dropped.
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Observe: func(_, result string, took time.Duration) {
				if result == "accepted" {
					a.heldMu.Lock()
					a.held = append(a.held, took)
					a.heldMu.Unlock()
				}
			}})
	must(b, err)
	web := httptest.NewServer(handler)
	b.Cleanup(web.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ackConcurrency, MaxConnsPerHost: ackConcurrency}}

	installation := fake.InstallationID("octo", "bench")
	signed := fake.SignedWebhook(web.URL+"/webhook", webhookSecret, "issue_comment", "template",
		githubSizedComment(installation, "octo", "bench", "alice", "/akira status"))
	body, err := io.ReadAll(signed.Body)
	must(b, err)
	b.Logf("akira-bench: ack.payload.bytes %d", len(body))
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
		return enq.EnqueueIntake(context.Background(), queue.IntakePayload{TaskHeader: queue.TaskHeader{DeliveryID: id, InstallationID: installation, Owner: "octo", Repo: "bench", Sender: "alice"}, Event: queue.EventIssueComment, DefaultBranch: "main",
			Body: &queue.CommentIntake{ID: 99, Number: 1, Author: "alice", Body: "/akira status"}})
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
	a.fake, a.rdb, a.queue, a.installation = fake, rdb, qname, installation
	a.webhook, a.floor, a.httpFloor = webhook, floor, httpFloor
	return a
}

// interleaved runs ackConcurrency senders at once, released together; each makes one call of every
// kind, one after the other, starting with kind i%len(calls) for sender i, so that no kind is always
// first into a quiet machine or last into a loaded one. It returns each kind's latencies.
func interleaved(b *testing.B, prefix string, calls ...func(id string) error) [][]time.Duration {
	b.Helper()
	lat := make([][]time.Duration, len(calls))
	for k := range lat {
		lat[k] = make([]time.Duration, ackConcurrency)
	}
	errs := make([]error, ackConcurrency)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ackConcurrency {
		wg.Go(func() {
			<-start
			for j := range calls {
				k := (i + j) % len(calls)
				t0 := time.Now()
				if err := calls[k](fmt.Sprintf("%d-%s-%d", k, prefix, i)); err != nil && errs[i] == nil {
					errs[i] = err
				}
				lat[k][i] = time.Since(t0)
			}
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

// githubSizedComment is an issue_comment payload with every field GitHub sends (the URLs of the
// repository, the users, the issue and the comment, counts, reactions): about 11 kB, where GitHub's
// own examples are 12 to 16 kB, so that the ack pays for reading, hashing and decoding what GitHub
// really sends, not a trimmed toy.
func githubSizedComment(installation int64, owner, repo, author, body string) map[string]any {
	const api, web = "https://api.github.com", "https://github.com"
	full := owner + "/" + repo
	user := func(login string, id int) map[string]any {
		u := map[string]any{"login": login, "id": id, "node_id": "MDQ6VXNlcjIxMDMxMDY3", "gravatar_id": "",
			"avatar_url": fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id),
			"html_url":   web + "/" + login, "type": "User", "site_admin": false, "user_view_type": "public"}
		u["url"] = api + "/users/" + login
		for field, path := range map[string]string{"followers_url": "followers", "following_url": "following{/other_user}",
			"gists_url": "gists{/gist_id}", "starred_url": "starred{/owner}{/repo}", "subscriptions_url": "subscriptions",
			"organizations_url": "orgs", "repos_url": "repos", "events_url": "events{/privacy}",
			"received_events_url": "received_events"} {
			u[field] = api + "/users/" + login + "/" + path
		}
		return u
	}
	reactions := func(url string) map[string]any {
		return map[string]any{"url": url + "/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
			"hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0}
	}
	r := map[string]any{"id": 186853002, "node_id": "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=", "name": repo, "full_name": full,
		"private": false, "owner": user(owner, 21031067), "html_url": web + "/" + full, "description": nil, "fork": false,
		"url": api + "/repos/" + full, "created_at": "2019-05-15T15:19:25Z", "updated_at": "2019-05-15T15:21:03Z",
		"pushed_at": "2019-05-15T15:20:57Z", "git_url": "git://github.com/" + full + ".git",
		"ssh_url": "git@github.com:" + full + ".git", "clone_url": web + "/" + full + ".git", "svn_url": web + "/" + full,
		"homepage": nil, "size": 0, "stargazers_count": 0, "watchers_count": 0, "language": "Go", "has_issues": true,
		"has_projects": true, "has_downloads": true, "has_wiki": true, "has_pages": true, "has_discussions": false,
		"forks_count": 0, "mirror_url": nil, "archived": false, "disabled": false, "open_issues_count": 2,
		"license": nil, "allow_forking": true, "is_template": false, "web_commit_signoff_required": false,
		"topics": []string{}, "visibility": "public", "forks": 0, "open_issues": 2, "watchers": 0,
		"default_branch": "main", "custom_properties": map[string]any{}}
	for field, path := range map[string]string{"forks_url": "forks", "keys_url": "keys{/key_id}",
		"collaborators_url": "collaborators{/collaborator}", "teams_url": "teams", "hooks_url": "hooks",
		"issue_events_url": "issues/events{/number}", "events_url": "events", "assignees_url": "assignees{/user}",
		"branches_url": "branches{/branch}", "tags_url": "tags", "blobs_url": "git/blobs{/sha}",
		"git_tags_url": "git/tags{/sha}", "git_refs_url": "git/refs{/sha}", "trees_url": "git/trees{/sha}",
		"statuses_url": "statuses/{sha}", "languages_url": "languages", "stargazers_url": "stargazers",
		"contributors_url": "contributors", "subscribers_url": "subscribers", "subscription_url": "subscription",
		"commits_url": "commits{/sha}", "git_commits_url": "git/commits{/sha}", "comments_url": "comments{/number}",
		"issue_comment_url": "issues/comments{/number}", "contents_url": "contents/{+path}",
		"compare_url": "compare/{base}...{head}", "merges_url": "merges", "archive_url": "{archive_format}{/ref}",
		"downloads_url": "downloads", "issues_url": "issues{/number}", "pulls_url": "pulls{/number}",
		"milestones_url": "milestones{/number}", "notifications_url": "notifications{?since,all,participating}",
		"labels_url": "labels{/name}", "releases_url": "releases{/id}", "deployments_url": "deployments"} {
		r[field] = api + "/repos/" + full + "/" + path
	}
	issueURL := api + "/repos/" + full + "/issues/1"
	issue := map[string]any{"url": issueURL, "repository_url": api + "/repos/" + full,
		"labels_url": issueURL + "/labels{/name}", "comments_url": issueURL + "/comments", "events_url": issueURL + "/events",
		"html_url": web + "/" + full + "/issues/1", "id": 444500041, "node_id": "MDU6SXNzdWU0NDQ1MDAwNDE=", "number": 1,
		"title": "Spelling error in the README file", "user": user(author, 7), "state": "open", "locked": false,
		"labels": []any{map[string]any{"id": 1362934389, "node_id": "MDU6TGFiZWwxMzYyOTM0Mzg5",
			"url": api + "/repos/" + full + "/labels/bug", "name": "bug", "color": "d73a4a", "default": true,
			"description": "Something isn't working"}},
		"assignee": user(owner, 21031067), "assignees": []any{user(owner, 21031067)}, "milestone": nil, "comments": 0,
		"created_at": "2019-05-15T15:20:18Z", "updated_at": "2019-05-15T15:20:21Z", "closed_at": nil,
		"author_association": "OWNER", "active_lock_reason": nil, "state_reason": nil,
		"body": "It looks like you accidently spelled 'commit' with two 't's.", "reactions": reactions(issueURL),
		"timeline_url": issueURL + "/timeline", "performed_via_github_app": nil}
	commentURL := api + "/repos/" + full + "/issues/comments/492700400"
	comment := map[string]any{"url": commentURL, "html_url": web + "/" + full + "/issues/1#issuecomment-492700400",
		"issue_url": issueURL, "id": 492700400, "node_id": "MDEyOklzc3VlQ29tbWVudDQ5MjcwMDQwMA==", "user": user(author, 7),
		"created_at": "2019-05-15T15:20:21Z", "updated_at": "2019-05-15T15:20:21Z", "author_association": "OWNER",
		"body": body, "reactions": reactions(commentURL), "performed_via_github_app": nil}
	return map[string]any{"action": "created", "issue": issue, "comment": comment, "repository": r,
		"sender": user(author, 7), "installation": map[string]any{"id": installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}}
}
