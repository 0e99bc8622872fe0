package admin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// browser is a person at the dashboard: a cookie jar and no automatic redirects, so that each answer
// is checked as the server gave it.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// answer is one answer: status, body and the Location of a redirect.
type answer struct {
	status   int
	body     string
	location string
	header   http.Header
}

func (b *browser) do(method, path string, form url.Values) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(data), location: resp.Header.Get("Location"), header: resp.Header}
}

func (b *browser) get(path string) answer { b.t.Helper(); return b.do("GET", path, nil) }

func (b *browser) post(path string, form url.Values) answer {
	b.t.Helper()
	return b.do("POST", path, form)
}

// login logs in with secret and wants to land on next.
func (b *browser) login(secret, next string) {
	b.t.Helper()
	a := b.post("/ui/login", url.Values{"token": {secret}, "next": {next}})
	if a.status != http.StatusSeeOther || a.location != next {
		b.t.Fatalf("login: %d to %q, want 303 to %s\n%s", a.status, a.location, next, a.body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf reads the CSRF token from a dashboard page.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	a := b.get(path)
	m := csrfField.FindStringSubmatch(a.body)
	if a.status != http.StatusOK || m == nil {
		b.t.Fatalf("%s: %d, no CSRF token in\n%s", path, a.status, a.body)
	}
	return m[1]
}

func wantPage(t *testing.T, what string, a answer, status int, contains ...string) {
	t.Helper()
	if a.status != status {
		t.Errorf("%s: status %d, want %d\n%s", what, a.status, status, a.body)
		return
	}
	for _, s := range contains {
		if !strings.Contains(a.body, s) {
			t.Errorf("%s: the page lacks %q\n%s", what, s, a.body)
		}
	}
}

// TestDashboardLogin: pages need a session; the login page keeps a redirect on the dashboard; a bad
// token is refused; a good one sets a strict, HttpOnly cookie and lands where the person was going;
// logging out ends the session.
func TestDashboardLogin(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.srv.URL)

	if a := b.get("/"); a.status != http.StatusFound || a.location != "/ui/" {
		t.Errorf("/: %d to %q, want the dashboard", a.status, a.location)
	}
	if a := b.get("/ui"); a.status != http.StatusFound || a.location != "/ui/" {
		t.Errorf("/ui: %d to %q", a.status, a.location)
	}
	if a := b.get("/ui/queue"); a.status != http.StatusSeeOther || a.location != "/ui/login?next=%2Fui%2Fqueue" {
		t.Errorf("a page without a session: %d to %q, want the login page", a.status, a.location)
	}
	for next, want := range map[string]string{"/ui/queue": "/ui/queue", "//evil.example/ui/": "/ui/", "https://evil.example/": "/ui/", `/ui/\evil`: "/ui/"} {
		a := b.get("/ui/login?next=" + url.QueryEscape(next))
		wantPage(t, "login page with next "+next, a, http.StatusOK, `name="next" value="`+want+`"`)
	}
	a := b.get("/ui/login")
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"} {
		if a.header.Get(h) == "" {
			t.Errorf("the login page has no %s header", h)
		}
	}

	wantPage(t, "a wrong token", b.post("/ui/login", url.Values{"token": {"akira_wrong"}, "next": {"/ui/queue"}}),
		http.StatusUnauthorized, "That token is not valid.", `value="/ui/queue"`)
	if a := b.get("/ui/"); a.status != http.StatusSeeOther {
		t.Fatalf("a refused login opened a session: %d", a.status)
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(f.srv.URL+"/ui/login", url.Values{"token": {f.read}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/ui" || strings.Contains(cookie.Value, f.read) {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, path /ui, without the token itself", cookie)
	}

	b.login(f.read, "/ui/queue")
	wantPage(t, "the queue after login", b.get("/ui/queue"), http.StatusOK, "dash-reader")
	csrf := b.csrf("/ui/")
	if a := b.post("/ui/logout", url.Values{"csrf": {"wrong"}}); a.status != http.StatusForbidden || !strings.Contains(a.body, "CSRF token is missing or wrong") {
		t.Errorf("logout with a wrong CSRF token: %d\n%s", a.status, a.body)
	}
	if a := b.post("/ui/logout", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther || a.location != "/ui/login" {
		t.Errorf("logout: %d to %q", a.status, a.location)
	}
	if a := b.get("/ui/"); a.status != http.StatusSeeOther {
		t.Errorf("the session outlived logout: %d", a.status)
	}
}

// TestDashboardSessionEnds: a session ends when it expires, when its token is revoked, and when its
// cookie is tampered with.
func TestDashboardSessionEnds(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h, err := NewServer(Deps{Store: f.store, Controller: f.ctl, Queue: emptyQueue(t), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := startHandler(t, h)

	b := newBrowser(t, srv)
	b.login(f.read, "/ui/")
	wantPage(t, "runs", b.get("/ui/"), http.StatusOK, f.runID)
	mu.Lock()
	now = now.Add(sessionTTL + time.Minute)
	mu.Unlock()
	if a := b.get("/ui/"); a.status != http.StatusSeeOther {
		t.Errorf("an expired session still opens pages: %d", a.status)
	}

	mu.Lock()
	now = time.Now()
	mu.Unlock()
	b.login(f.read, "/ui/")
	u, _ := url.Parse(srv + "/ui/")
	cookies := b.c.Jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	parts := strings.Split(cookies[0].Value, ".")
	for name, value := range map[string]string{
		"a later expiry":     parts[0] + "." + fmt.Sprint(time.Now().Add(100*sessionTTL).Unix()) + "." + parts[2],
		"another token hash": strings.Repeat("0", len(parts[0])) + "." + parts[1] + "." + parts[2],
		"no MAC":             parts[0] + "." + parts[1],
	} {
		tampered := newBrowser(t, srv)
		tampered.c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: value, Path: "/ui"}})
		if a := tampered.get("/ui/"); a.status != http.StatusSeeOther {
			t.Errorf("a cookie with %s opens pages: %d", name, a.status)
		}
	}

	if ok, err := f.store.RevokeToken(context.Background(), "dash-reader"); err != nil || !ok {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if a := b.get("/ui/"); a.status != http.StatusSeeOther {
		t.Errorf("a revoked token's session still opens pages: %d", a.status)
	}
}

// TestDashboardPages: each page shows its run, task, log, queue and escalations, with the strangers'
// text escaped; unknown runs, tasks and bad filters are answered as such.
func TestDashboardPages(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.srv.URL)
	b.login(f.read, "/ui/")
	run := "/ui/runs/" + f.runID

	// A run is named by its issue's title and number and who started it; its state is in words.
	wantPage(t, "runs", b.get("/ui/?repo=octo/demo&state=parked"), http.StatusOK, f.runID, "octo/demo",
		`>Docs for the parser #1</a>`, "<td>@alice</td>", `<span class="state state-parked">needs a decision</span>`, "<td>1.2 Write docs</td>")
	if a := b.get("/ui/?state=succeeded"); strings.Contains(a.body, f.runID) {
		t.Errorf("a parked run is listed under succeeded:\n%s", a.body)
	}
	wantPage(t, "a bad state filter", b.get("/ui/?state=sleeping"), http.StatusBadRequest, "state &#34;sleeping&#34; is not one of")
	wantPage(t, "a bad limit", b.get("/ui/?limit=0"), http.StatusBadRequest, "limit &#34;0&#34; is not a number from 1 to 1000")
	// A page of one run links the older runs and, from there, the newest again.
	if _, _, err := f.store.Create(context.Background(), &lifecycle.Run{ID: "r-admin-newer", Owner: "octo", Repo: "demo", Branch: "akira/newer"}); err != nil {
		t.Fatal(err)
	}
	first := b.get("/ui/?limit=1")
	wantPage(t, "first page", first, http.StatusOK, "r-admin-newer", "Older runs")
	m := regexp.MustCompile(`href="(/ui/\?[^"]*)" rel="next"`).FindStringSubmatch(first.body)
	if m == nil || strings.Contains(first.body, f.runID) {
		t.Fatalf("first page of one run:\n%s", first.body)
	}
	second := b.get(html.UnescapeString(m[1]))
	wantPage(t, "second page", second, http.StatusOK, f.runID, "Newest runs")
	if strings.Contains(second.body, "r-admin-newer") || strings.Contains(second.body, "Older runs") {
		t.Errorf("second (last) page:\n%s", second.body)
	}
	wantPage(t, "a bad cursor", b.get("/ui/?cursor=nonsense"), http.StatusBadRequest, "start again from the first page")

	a := b.get(run)
	wantPage(t, "run", a, http.StatusOK, "Add &lt;b&gt;bold&lt;/b&gt; parser", "Task 1.2 “Write docs” needs a decision", "every attempt failed: verification failed",
		"Files the agent changed", "<code>docs/guide.md</code>", "accepts the agent's work as it is", "Abort the run", "<code>mkdocs build --strict</code> exited with code 1",
		"WARNING - Doc file &#39;guide.md&#39; contains a link to &#39;missing.md&#39;",
		"3f2a9c1", "accepted 0.93", `/ui/runs/`+f.runID+`/tasks/1.1/attempts/2/log`, `action="/ui/runs/`+f.runID+`/retry"`)
	for _, code := range []string{"max_attempts", "`", ">parked<", "passing-output"} {
		if strings.Contains(a.body, code) {
			t.Errorf("the run page shows %q: a person reads the reason in words, the failing output only", code)
		}
	}
	if strings.Contains(a.body, "<b>bold</b>") {
		t.Error("a task title reached the page unescaped")
	}
	if a := b.get("/ui/runs/no-such-run"); a.status != http.StatusNotFound {
		t.Errorf("an unknown run: %d", a.status)
	}
	wantPage(t, "task", b.get(run+"/tasks/1.1"), http.StatusOK, "Add &lt;b&gt;bold&lt;/b&gt; parser", "Attempt 2: full log",
		// Attempt 1's timeline, in words, with the cost so far; attempt 2 kept none.
		`id="attempt-1"`, "Attempt 1: failed", "model call", "claude-sonnet-4-5, 1200 in / 300 out tokens", "$0.042",
		"Files changed: <code>parser/bold.go</code>", "+40 −0", "verify failed", "$ go test ./... → exit 1", "<pre>--- FAIL: TestBold</pre>",
		`id="attempt-2" open`, "No timeline was kept for this attempt")
	if a := b.get(run + "/tasks/9.9"); a.status != http.StatusNotFound {
		t.Errorf("an unknown task: %d", a.status)
	}
	wantPage(t, "log", b.get(run+"/tasks/1.1/attempts/1/log"), http.StatusOK, "hello from the agent")
	// Spend: this month's, by installation and repository, with its CSV.
	wantPage(t, "spend before any cost", b.get("/ui/spend"), http.StatusOK, "Nothing spent this month.")
	if _, err := f.store.Update(context.Background(), f.runID, func(r *lifecycle.Run) error { r.EditTask(r.Tasks[1].ID).CostUSD = 0.5; return nil }); err != nil {
		t.Fatal(err)
	}
	month := store.SpendMonth(time.Now())
	wantPage(t, "spend", b.get("/ui/spend"), http.StatusOK, "<td>7</td><td>octo/demo</td><td class=\"num\">$0.50</td>",
		`href="/ui/spend.csv?month=`+month+`"`, `<a href="/ui/spend?month=`+month+`">`+month+`</a>`)
	wantPage(t, "spend as CSV", b.get("/ui/spend.csv?month="+month), http.StatusOK, month+",7,octo/demo,0.500000")
	if a := b.get(run + "/tasks/1.1/attempts/2/log"); a.status != http.StatusNotFound || !strings.Contains(a.body, "no log of attempt 2 of task 1.1") {
		t.Errorf("a log never kept: %d %s", a.status, a.body)
	}
	// A queue with one task waiting shows on the queue page and in the API.
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	queue := "akira-admin-test-" + strings.ReplaceAll(f.runID, ".", "-") + fmt.Sprint(time.Now().UnixNano())
	client := asynq.NewClientFromRedisClient(rdb)
	if _, err := client.Enqueue(asynq.NewTask("akira:test", nil), asynq.Queue(queue)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = asynq.NewInspectorFromRedisClient(rdb).DeleteQueue(queue, true) })
	// Waiting 1, running, scheduled, retrying and failed 0, total 1: the columns add up; it takes work.
	q := b.get("/ui/queue")
	wantPage(t, "queue", q, http.StatusOK, "<td>"+queue+"</td>"+strings.Repeat(`<td class="num">`, 1)+`1</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">1</td>`)
	if strings.Contains(q.body, "false") || strings.Contains(q.body, "true") {
		t.Errorf("the queue page shows a raw boolean:\n%s", q.body)
	}
	wantPage(t, "escalations", b.get("/ui/escalations"), http.StatusOK, f.runID, "1.2", "verification failed")
}

// TestDashboardControl: the run page's buttons reach the controller with the form's task and
// guidance, only with the session's CSRF token and a control token; the answer comes back on the
// run page, and refusals name why.
func TestDashboardControl(t *testing.T) {
	f := newFixture(t)
	run := "/ui/runs/" + f.runID

	reader := newBrowser(t, f.srv.URL)
	reader.login(f.read, "/ui/")
	csrf := reader.csrf(run)
	if a := reader.post(run+"/retry", url.Values{"task_id": {"1.2"}}); a.status != http.StatusForbidden {
		t.Errorf("a form without its CSRF token: %d", a.status)
	}
	a := reader.post(run+"/retry", url.Values{"csrf": {csrf}, "task_id": {"1.2"}})
	if a.status != http.StatusSeeOther || !strings.Contains(a.location, url.QueryEscape("token dash-reader may only read; retry needs a control token")) {
		t.Errorf("a read token's retry: %d to %q", a.status, a.location)
	}
	if len(f.ctl.reqs) != 0 {
		t.Fatalf("refused forms reached the controller: %+v", f.ctl.reqs)
	}

	ops := newBrowser(t, f.srv.URL)
	ops.login(f.write, "/ui/")
	csrf = ops.csrf(run)
	if a := ops.post(run+"/rewind", url.Values{"csrf": {csrf}}); a.status != http.StatusNotFound {
		t.Errorf("an unknown action: %d", a.status)
	}
	a = ops.post(run+"/retry", url.Values{"csrf": {csrf}, "task_id": {"1.2"}, "guidance": {"use the v2 client"}})
	if a.status != http.StatusSeeOther || a.location != run+"?done="+url.QueryEscape("retry queued") {
		t.Fatalf("retry: %d to %q", a.status, a.location)
	}
	wantPage(t, "the run page after the retry", ops.get(a.location), http.StatusOK, "retry queued")
	if len(f.ctl.reqs) != 1 {
		t.Fatalf("controller saw %+v", f.ctl.reqs)
	}
	if r := f.ctl.reqs[0]; r.Action != "retry" || r.RunID != f.runID || r.TaskID != "1.2" || r.Guidance != "use the v2 client" || r.Token.Name != "ops" || r.Via != "dashboard" {
		t.Errorf("request %+v", r)
	}

	// Pause now and resume: the forms carry the action and the "now" flag to the controller.
	f.ctl.reqs = nil
	for _, form := range []struct {
		action string
		values url.Values
		now    bool
	}{{"pause", url.Values{"csrf": {csrf}, "now": {"1"}}, true}, {"pause", url.Values{"csrf": {csrf}}, false}, {"resume", url.Values{"csrf": {csrf}}, false}} {
		if a := ops.post(run+"/"+form.action, form.values); a.status != http.StatusSeeOther || strings.Contains(a.location, "error") {
			t.Errorf("%s: %d to %q", form.action, a.status, a.location)
		}
		if last := f.ctl.reqs[len(f.ctl.reqs)-1]; last.Action != form.action || last.Now != form.now {
			t.Errorf("%s reached the controller as %+v", form.action, last)
		}
	}

	for _, tt := range []struct {
		err  error
		want string
		code int
	}{
		{fmt.Errorf("%w: the run is not parked", intake.ErrNotNow), "?error=" + url.QueryEscape(intake.ErrNotNow.Error()+": the run is not parked"), http.StatusSeeOther},
		{errors.New("redis: connection refused"), "?error=" + url.QueryEscape("the action could not be carried out now; try again"), http.StatusSeeOther},
		{store.ErrNotFound, "", http.StatusNotFound},
	} {
		f.ctl.err = tt.err
		a := ops.post(run+"/approve", url.Values{"csrf": {csrf}, "task_id": {"1.2"}})
		if a.status != tt.code || (tt.want != "" && a.location != run+tt.want) {
			t.Errorf("controller error %v: %d to %q, want %d %s", tt.err, a.status, a.location, tt.code, tt.want)
		}
	}
}

// TestAdminWhenRedisIsDown: with Redis gone, the API answers 503 naming what cannot be read, and the
// dashboard's pages say so, instead of a 500 or an empty list.
func TestAdminWhenRedisIsDown(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.srv.URL)
	b.login(f.write, "/ui/")

	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	st := store.NewStore(rdb, "akira-admin-down:")
	h, err := NewServer(Deps{Store: st, Controller: f.ctl, Queue: asynq.NewInspectorFromRedisClient(rdb)})
	if err != nil {
		t.Fatal(err)
	}
	srv := startHandler(t, h)
	rdb.Close()

	api := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := api("/api/v1/runs", f.read); code != http.StatusServiceUnavailable || !strings.Contains(body, "tokens cannot be checked now") {
		t.Errorf("API with Redis down: %d %s", code, body)
	}
	wantPage(t, "login with Redis down", newBrowser(t, srv).post("/ui/login", url.Values{"token": {f.read}}),
		http.StatusServiceUnavailable, "Tokens cannot be checked now; try again.")
}

// TestQueueUnreadable: with the queue's Redis gone but tokens readable, the API and the queue page
// answer 503 saying the queue cannot be read.
func TestQueueUnreadable(t *testing.T) {
	f := newFixture(t)
	gone := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	gone.Close()
	h, err := NewServer(Deps{Store: f.store, Controller: f.ctl, Queue: asynq.NewInspectorFromRedisClient(gone)})
	if err != nil {
		t.Fatal(err)
	}
	srv := startHandler(t, h)
	req, _ := http.NewRequest("GET", srv+"/api/v1/queue", nil)
	req.Header.Set("Authorization", "Bearer "+f.read)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(data), "the queue cannot be read now") {
		t.Errorf("API queue: %d %s", resp.StatusCode, data)
	}
	b := newBrowser(t, srv)
	b.login(f.read, "/ui/queue")
	wantPage(t, "queue page", b.get("/ui/queue"), http.StatusServiceUnavailable, "The queue cannot be read now.")
}

// TestNewServerNeedsItsParts: a server without a store, controller or queue is refused at start.
func TestNewServerNeedsItsParts(t *testing.T) {
	if _, err := NewServer(Deps{}); err == nil || !strings.Contains(err.Error(), "needs a store, a controller and a queue inspector") {
		t.Fatalf("NewServer(Deps{}) = %v", err)
	}
}

// TestMetricsAndProfiles: /metrics wants a token that covers every repository unless the operator
// leaves it open; pprof is off unless asked for, and then wants a control token that covers every
// repository.
func TestMetricsAndProfiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	limited, err := f.store.CreateTokenFor(ctx, "web-team", store.ScopeControl, []string{"acme/web"})
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "akira_up 1\n") })
	serve := func(d Deps) string {
		t.Helper()
		d.Store, d.Controller, d.Queue, d.Metrics = f.store, f.ctl, emptyQueue(t), metrics
		h, err := NewServer(d)
		if err != nil {
			t.Fatal(err)
		}
		return startHandler(t, h)
	}
	closed, open, profiled := serve(Deps{}), serve(Deps{MetricsOpen: true}), serve(Deps{Pprof: true})
	for _, tc := range []struct {
		name, base, path, token string
		status                  int
		want                    string
	}{
		{"metrics without a token", closed, "/metrics", "", http.StatusUnauthorized, "an API token is required"},
		{"metrics with a bad token", closed, "/metrics", "akira_0000", http.StatusUnauthorized, "not valid"},
		{"metrics with a token limited to repositories", closed, "/metrics", limited, http.StatusForbidden, "limited to repositories"},
		{"metrics with a read token", closed, "/metrics", f.read, http.StatusOK, "akira_up 1"},
		{"metrics left open", open, "/metrics", "", http.StatusOK, "akira_up 1"},
		{"pprof not asked for", closed, "/debug/pprof/", f.write, http.StatusNotFound, ""},
		{"pprof not asked for, metrics open", open, "/debug/pprof/cmdline", "", http.StatusNotFound, ""},
		{"pprof without a token", profiled, "/debug/pprof/", "", http.StatusUnauthorized, "an API token is required"},
		{"pprof with a read token", profiled, "/debug/pprof/goroutine?debug=1", f.read, http.StatusForbidden, "needs a control token"},
		{"pprof with a control token limited to repositories", profiled, "/debug/pprof/cmdline", limited, http.StatusForbidden, "limited to repositories"},
		{"pprof index", profiled, "/debug/pprof/", f.write, http.StatusOK, "goroutine"},
		{"pprof profile", profiled, "/debug/pprof/goroutine?debug=1", f.write, http.StatusOK, "goroutine profile"},
		{"pprof metrics stay closed", profiled, "/metrics", "", http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.base+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) {
				t.Errorf("GET %s: %d %.200q, want %d with %q", tc.path, resp.StatusCode, data, tc.status, tc.want)
			}
			if tc.status != http.StatusOK && strings.Contains(string(data), "akira_up") {
				t.Errorf("GET %s refused but answered the metrics: %q", tc.path, data)
			}
		})
	}
}

// emptyQueue is a real queue inspector on the test Redis.
func emptyQueue(t *testing.T) Queue {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rdb.Close() })
	return asynq.NewInspectorFromRedisClient(rdb)
}

// startHandler serves h for the test and returns its base URL.
func startHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
