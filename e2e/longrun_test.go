package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// simClock is the simulated time of a long run, shared by the fake GitHub (which issues installation
// tokens and refuses expired ones by it) and the worker's App (which judges its tokens by it).
type simClock struct {
	mu    sync.Mutex
	now   time.Time
	start time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *simClock) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Sub(c.start)
}

// TestLongRunWithShortTokens is a 90-minute run with installation tokens that live one minute: each
// of its 30 tasks takes three simulated minutes (the clock moves when a push is done), so every push
// and most API calls find the last token expired. The run pushes every checkpoint; no git request is
// refused (git gets a valid token before each push), an API call that meets an expired token is
// repeated with a new one, and tokens are still shared while they last (fewer tokens than calls).
func TestLongRunWithShortTokens(t *testing.T) {
	const tasks, perTask = 30, 3 * time.Minute
	// Hours ahead of the real time, so that ghinstallation's own refresh (by time.Now) never fires:
	// the App's judgement by the simulated clock is what keeps the tokens valid.
	start := time.Now().Add(3 * time.Hour)
	clock := &simClock{now: start, start: start}
	hook := func(r githubtest.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, ".git/git-receive-pack") && r.Status == http.StatusOK {
			clock.advance(perTask)
		}
	}
	e := newEnvWith(t, true, redisAddr(t), "", githubtest.WithClock(clock.Now), githubtest.WithTokenTTL(time.Minute),
		githubtest.WithRequestHook(hook))
	e.spec.Clock = clock.Now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runWorker(ctx, e.spec, testLogger(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})

	e.createRepo(map[string]string{"README.md": "# demo\n"})
	var body strings.Builder
	for i := range tasks {
		fmt.Fprintf(&body, "- [ ] Add part %d\n", i+1)
	}
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "A long one", User: "alice", Body: body.String()})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	if got := e.taskCommits(run.Branch); len(got) != tasks {
		t.Fatalf("%d tasks checkpointed, want %d: %v", len(got), tasks, got)
	}
	if d := clock.elapsed(); d < 90*time.Minute {
		t.Fatalf("the run lasted %v of simulated time, want at least 90 minutes", d)
	}

	reqs := e.gh.Requests()
	pushes, calls, refused := 0, 0, 0
	for i, r := range reqs {
		isGit := strings.Contains(r.Path, ".git/")
		switch {
		case isGit && r.Status == http.StatusUnauthorized:
			t.Errorf("git %s %s was refused: its token had expired", r.Method, r.Path)
		case !isGit && r.Status == http.StatusUnauthorized:
			// Only a call that raced a push's clock jump can meet one: repeated with a new token.
			refused++
			if !recovered(reqs[i+1:], r) {
				t.Errorf("%s %s was refused and not repeated with a new token", r.Method, r.Path)
			}
		}
		if isGit && r.Method == http.MethodPost && strings.HasSuffix(r.Path, "git-receive-pack") {
			pushes++
		}
		if !isGit && !strings.HasSuffix(r.Path, "/access_tokens") {
			calls++
		}
	}
	minted := e.gh.TokensIssued()
	t.Logf("%v simulated: %d pushes, %d API calls (%d refused with 401), %d tokens minted", clock.elapsed().Round(time.Minute),
		pushes, calls, refused, minted)
	// Every push found the last token expired: at least one token per push; and the calls between two
	// pushes shared one.
	if minted < pushes || minted >= pushes+calls {
		t.Errorf("%d tokens for %d pushes and %d API calls: want at least one per push, and fewer than one per request", minted, pushes, calls)
	}
}

// recovered reports whether a request refused with 401 was sent again and answered.
func recovered(after []githubtest.Request, r githubtest.Request) bool {
	for _, n := range after {
		if n.Method == r.Method && n.Path == r.Path {
			return n.Status < 400
		}
	}
	return false
}
