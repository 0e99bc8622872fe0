package githubtest

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestClockExpiresTokens: with a clock of the test's, an installation token lives the configured
// lifetime by that clock, and is refused once it is over on REST and on git smart HTTP alike.
func TestClockExpiresTokens(t *testing.T) {
	var mu sync.Mutex
	now := time.Now().Add(time.Hour)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	s, repo := newRepoServer(t, WithClock(clock), WithTokenTTL(time.Minute))
	tok := s.InstallationToken(repo.InstallationID)
	api := tokenClient(t, s, tok)
	extra := "http.extraheader=" + basicAuthHeader(tok)
	work := t.TempDir()
	ctx := context.Background()

	advance(50 * time.Second)
	if _, _, err := api.Repositories.Get(ctx, "octo", "hello"); err != nil {
		t.Fatalf("REST with 10 s of the token left: %v", err)
	}
	if _, err := runGit(t, work, "-c", extra, "ls-remote", s.CloneURL("octo", "hello")); err != nil {
		t.Fatalf("git with 10 s of the token left: %v", err)
	}
	advance(10 * time.Second)
	if _, _, err := api.Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusUnauthorized {
		t.Errorf("REST with the token's minute over: %v, want 401", err)
	}
	if _, err := runGit(t, work, "-c", extra, "ls-remote", s.CloneURL("octo", "hello")); err == nil {
		t.Error("git with the token's minute over succeeded")
	}
}

// TestConditionalGet: a REST read carries an ETag; asked again with it in If-None-Match, the answer is
// 304 with no body while the resource is unchanged, and a 200 with a new ETag once it changed.
func TestConditionalGet(t *testing.T) {
	s, repo := newRepoServer(t)
	tok := s.InstallationToken(repo.InstallationID)
	get := func(etag string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL()+"repos/octo/hello/issues/1/comments", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "token "+tok)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	issue := s.AddIssue("octo", "hello", Issue{Title: "t", User: "alice"})
	if issue.Number != 1 {
		t.Fatalf("issue number %d", issue.Number)
	}
	first, _ := get("")
	etag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("first read: %d, ETag %q", first.StatusCode, etag)
	}
	again, body := get(etag)
	if again.StatusCode != http.StatusNotModified || len(body) != 0 || again.Header.Get("ETag") != etag {
		t.Fatalf("conditional read of the unchanged list: %d, %d bytes, ETag %q", again.StatusCode, len(body), again.Header.Get("ETag"))
	}
	s.AddComment("octo", "hello", 1, "alice", "hello")
	changed, body := get(etag)
	if changed.StatusCode != http.StatusOK || len(body) == 0 || changed.Header.Get("ETag") == etag {
		t.Fatalf("conditional read of the changed list: %d, %d bytes, ETag %q (was %q)", changed.StatusCode, len(body), changed.Header.Get("ETag"), etag)
	}
}
