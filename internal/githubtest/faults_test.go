package githubtest

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

func TestFaults(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	is := s.AddIssue("octo", "hello", Issue{Title: "t"})
	tok := s.InstallationToken(repo.InstallationID)

	s.InjectFault(Fault{Method: "GET", PathPattern: "/repos/octo/hello/issues/1", Status: http.StatusBadGateway, Times: 2})
	gh := tokenClient(t, s, tok)
	for i, want := range []int{502, 502, 200} {
		_, resp, err := gh.Issues.Get(ctx, "octo", "hello", is.Number)
		if resp == nil || resp.StatusCode != want {
			t.Errorf("call %d: %v, want %d", i, err, want)
		}
	}

	// A 403 without a message is GitHub's secondary rate limit, which go-github recognises.
	s.InjectFault(Fault{Method: "POST", PathPattern: `^/repos/[^/]+/hello/check-runs$`, Status: http.StatusForbidden, Times: 1})
	_, _, err := gh.Checks.CreateCheckRun(ctx, "octo", "hello", github.CreateCheckRunOptions{Name: "c", HeadSHA: s.Branch("octo", "hello", "main")})
	var rl *github.AbuseRateLimitError
	if !errors.As(err, &rl) || rl.GetRetryAfter() != time.Second {
		t.Fatalf("secondary rate limit: %v (%T)", err, err)
	}
	// go-github refuses to call again before Retry-After; a new client shows the fault is used up.
	if _, _, err := tokenClient(t, s, tok).Checks.CreateCheckRun(ctx, "octo", "hello",
		github.CreateCheckRunOptions{Name: "c", HeadSHA: s.Branch("octo", "hello", "main")}); err != nil {
		t.Errorf("after the fault: %v", err)
	}

	// Times 0 lasts until cleared; the method filter leaves other methods alone.
	gh = tokenClient(t, s, tok)
	s.InjectFault(Fault{Method: "POST", PathPattern: "/comments", Status: http.StatusInternalServerError})
	for range 3 {
		if _, _, err := gh.Issues.CreateComment(ctx, "octo", "hello", is.Number, &github.IssueComment{Body: ptr("x")}); statusOf(t, err) != 500 {
			t.Errorf("persistent fault: %v, want 500", err)
		}
	}
	if _, _, err := gh.Issues.ListComments(ctx, "octo", "hello", is.Number, nil); err != nil {
		t.Errorf("GET under a POST fault: %v", err)
	}
	s.ClearFaults()
	if _, _, err := gh.Issues.CreateComment(ctx, "octo", "hello", is.Number, &github.IssueComment{Body: ptr("x")}); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}

	// Faults apply to git too.
	s.InjectFault(Fault{PathPattern: "/octo/hello.git/info/refs", Status: http.StatusServiceUnavailable, Times: 1})
	work := t.TempDir()
	extra := "http.extraheader=" + basicAuthHeader(tok)
	if _, err := runGit(t, work, "-c", extra, "clone", "--quiet", s.CloneURL("octo", "hello"), filepath.Join(work, "a")); err == nil {
		t.Error("clone under a fault succeeded")
	}
	mustGit(t, work, "-c", extra, "clone", "--quiet", s.CloneURL("octo", "hello"), filepath.Join(work, "b"))

	var statuses []int
	for _, r := range s.Requests() {
		if r.Path == "/repos/octo/hello/issues/1" {
			statuses = append(statuses, r.Status)
		}
	}
	if len(statuses) != 3 || statuses[0] != 502 || statuses[2] != 200 {
		t.Errorf("recorded statuses = %v", statuses)
	}
	s.ResetRequests()
	if len(s.Requests()) != 0 {
		t.Error("ResetRequests kept requests")
	}
}

func TestNewServerWithoutTest(t *testing.T) {
	s, err := NewServer(WithAppID(7), WithAppSlug("other"))
	if err != nil {
		t.Fatal(err)
	}
	repo := s.CreateRepo("o", "r", map[string]string{"a": "b"})
	if s.AppID() != 7 || s.BotLogin() != "other[bot]" || s.Branch("o", "r", "main") == "" {
		t.Errorf("app %d bot %q", s.AppID(), s.BotLogin())
	}
	dir := s.GitDir("o", "r")
	s.Close()
	s.Close() // idempotent
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("repository %s survived Close: %v", repo.FullName(), err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("setup failure outside a test did not panic")
			}
		}()
		s.AddComment("o", "r", 99, "x", "y")
	}()
}
