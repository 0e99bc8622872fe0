package gh_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/internal/githubtest"
)

// TestRateLimitIsReportedPerInstallation: a rate limit met by one installation's calls is reported
// with that installation's id and the wait GitHub asked for (the fair gate pauses it alone); another
// installation's calls report nothing.
func TestRateLimitIsReportedPerInstallation(t *testing.T) {
	srv := githubtest.New(t)
	srv.CreateRepo(owner, repo, map[string]string{"README.md": "# hello\n"})
	srv.CreateRepo("other", "calm", map[string]string{"README.md": "# calm\n"})
	type report struct {
		id   int64
		wait time.Duration
	}
	var (
		mu      sync.Mutex
		reports []report
	)
	// go-github refuses calls itself while a limit it saw lasts: each case has an App of its own.
	newApp := func(t *testing.T) *gh.App {
		t.Helper()
		app, err := gh.NewApp(gh.AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.PrivateKeyPEM(), BaseURL: srv.URL(),
			HTTPClient: srv.Client(), Retry: fastRetry,
			OnRateLimit: func(id int64, wait time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, report{id, wait})
			}})
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	limited, calm := srv.InstallationID(owner, repo), srv.InstallationID("other", "calm")
	if limited == calm {
		t.Fatal("the two accounts must be two installations")
	}
	for _, tc := range []struct {
		name  string
		fault githubtest.Fault
		want  time.Duration
	}{
		{"secondary limit longer than the transport waits", githubtest.Fault{PathPattern: "/repos/octo/hello", Status: 403,
			Header: http.Header{"Retry-After": {"3600"}}}, time.Hour},
		{"429 with Retry-After", githubtest.Fault{PathPattern: "/repos/octo/hello", Status: 429, Times: 1,
			Header: http.Header{"Retry-After": {"1"}}}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			reports = nil
			mu.Unlock()
			srv.ClearFaults()
			srv.InjectFault(tc.fault)
			app := newApp(t)
			c, err := app.Installation(limited)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.DefaultBranch(context.Background(), owner, repo)
			other, err := app.Installation(calm)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.DefaultBranch(context.Background(), "other", "calm"); err != nil {
				t.Fatalf("the other installation: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != 1 || reports[0].id != limited || reports[0].wait < tc.want-time.Second || reports[0].wait > tc.want {
				t.Fatalf("reports %+v, want one for installation %d asking %s", reports, limited, tc.want)
			}
		})
	}
}
