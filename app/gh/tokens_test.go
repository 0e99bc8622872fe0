package gh_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/internal/githubtest"
)

// testClock is a clock a test moves by hand, shared by the fake GitHub and the App.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	// Hours ahead of the real time: ghinstallation's own refresh (a minute before the expiry, by
	// time.Now) never fires, so what is tested is the App's judgement by this clock.
	return &testClock{now: time.Now().Add(3 * time.Hour)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClockEnv(t *testing.T, ttl time.Duration) (*env, *testClock) {
	t.Helper()
	clock := newTestClock()
	srv := githubtest.New(t, githubtest.WithClock(clock.Now), githubtest.WithTokenTTL(ttl))
	srv.CreateRepo(owner, repo, map[string]string{"README.md": "# hello\n"})
	app, err := gh.NewApp(gh.AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.PrivateKeyPEM(), BaseURL: srv.URL(),
		HTTPClient: srv.Client(), Retry: fastRetry, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Installation(srv.InstallationID(owner, repo))
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, app: app, c: c}, clock
}

// TestTokenReusedWhileValid: git and the API share one installation token while it has life left (a
// new one is not minted per push), git gets a new one once less than its margin is left, and the API
// never sends an expired one (no 401 on the way).
func TestTokenReusedWhileValid(t *testing.T) {
	e, clock := newClockEnv(t, time.Hour)
	ctx := context.Background()
	t1, err := e.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Minute) // 10 minutes left
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	t2, err := e.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if t2 != t1 || e.srv.TokensIssued() != 1 {
		t.Fatalf("with 10 minutes left: token %q after %q, %d minted; want the same one", t2, t1, e.srv.TokensIssued())
	}
	clock.Advance(6 * time.Minute) // 4 minutes left: enough for an API call, not for git
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.TokensIssued(); n != 1 {
		t.Fatalf("an API call with 4 minutes left minted a token (%d in all)", n)
	}
	t3, err := e.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if t3 == t1 || e.srv.TokensIssued() != 2 {
		t.Fatalf("with 4 minutes left git got %q (first %q), %d minted; want a new token", t3, t1, e.srv.TokensIssued())
	}
	if got := e.lastRequest("GET", "/repos/").Header.Get("Authorization"); got != "token "+t1 {
		t.Fatalf("the API call used %q, want the first token", got)
	}
	// Past the second token's life with no call in between: the next API call mints before sending.
	clock.Advance(2 * time.Hour)
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.srv.Requests() {
		if r.Status == http.StatusUnauthorized {
			t.Fatalf("%s %s was sent with an expired token (401)", r.Method, r.Path)
		}
	}
	if n := e.srv.TokensIssued(); n != 3 {
		t.Fatalf("%d tokens minted, want 3", n)
	}
}

// TestShortTokensStillReused: tokens that live one minute are reused for most of their life (a
// margin is at most a quarter of it), and every use is valid when GitHub checks it.
func TestShortTokensStillReused(t *testing.T) {
	e, clock := newClockEnv(t, time.Minute)
	ctx := context.Background()
	seen := map[string]bool{}
	for range 20 { // ten minutes in steps of 30 seconds
		tok, err := e.c.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[tok] = true
		if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
			t.Fatal(err)
		}
		clock.Advance(30 * time.Second)
	}
	for _, r := range e.srv.Requests() {
		if r.Status == http.StatusUnauthorized {
			t.Fatalf("%s %s was sent with an expired token (401)", r.Method, r.Path)
		}
	}
	// Each token serves two steps (0 s and 30 s of its 60), so ten minutes take about ten tokens.
	if n := e.srv.TokensIssued(); n < 9 || n > 11 || len(seen) != n {
		t.Fatalf("%d tokens minted (%d given to git) over ten minutes of one-minute tokens; want about 10", n, len(seen))
	}
}

// TestConditionalReads: a read repeated unchanged is sent with the ETag of the last answer and
// answered 304 (free of the rate limit) and the caller still gets the content; a changed resource is
// read afresh.
func TestConditionalReads(t *testing.T) {
	e := newEnv(t, map[string]string{"ROADMAP.md": "- [ ] one\n"}, nil)
	ctx := context.Background()
	read := func() string {
		t.Helper()
		b, err := e.c.GetFile(ctx, owner, repo, "main", "ROADMAP.md")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "- [ ] one\n" {
		t.Fatalf("first read %q", got)
	}
	if got := read(); got != "- [ ] one\n" {
		t.Fatalf("second read %q", got)
	}
	reads := e.requests("GET", "/contents/")
	if len(reads) != 2 || reads[0].Status != 200 || reads[1].Status != http.StatusNotModified ||
		!strings.HasPrefix(reads[1].Header.Get("If-None-Match"), `W/"`) {
		t.Fatalf("reads: statuses %v, second If-None-Match %q; want 200 then a conditional 304", statuses(reads), reads[1].Header.Get("If-None-Match"))
	}
	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "main", Message: "more", Files: map[string]string{"ROADMAP.md": "- [ ] two\n"}})
	if got := read(); got != "- [ ] two\n" {
		t.Fatalf("read after a change %q, want the new content", got)
	}
	if got := statuses(e.requests("GET", "/contents/")); got[len(got)-1] != 200 {
		t.Fatalf("statuses %v, want a 200 for the changed file", got)
	}
}

// TestTokensOfSeveralInstallationsAtOnce: installations mint and refresh their tokens at the same time
// (a worker runs several runs) without sharing anything ghinstallation writes (the race detector
// found the shared App transport in CI); each gets a token for itself.
func TestTokensOfSeveralInstallationsAtOnce(t *testing.T) {
	e, clock := newClockEnv(t, 2*time.Minute)
	e.srv.CreateRepo("other", "repo", map[string]string{"README.md": "# other\n"})
	other, err := e.app.Installation(e.srv.InstallationID("other", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		c := e.c
		if i%2 == 1 {
			c = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%10 == 0 {
				clock.Advance(time.Minute) // tokens run short while others are minted
			}
			if _, err := c.Token(context.Background()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
