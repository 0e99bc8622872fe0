package githubtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// newRepoServer starts a server with one installed repository, octo/hello, holding a roadmap.
func newRepoServer(t *testing.T, opts ...Option) (*Server, Repo) {
	t.Helper()
	s := New(t, opts...)
	repo := s.CreateRepo("octo", "hello", map[string]string{
		"README.md":        "# hello\n",
		"ROADMAP.md":       "# Roadmap\n\n- [ ] first task\n",
		"docs/guide/a.txt": "a\n",
	})
	return s, repo
}

func baseURL(t *testing.T, s *Server) *url.URL {
	t.Helper()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// appClient authenticates as the app with a JWT, the way Akira does.
func appClient(t *testing.T, s *Server) *github.Client {
	t.Helper()
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, s.AppID(), s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = strings.TrimSuffix(s.URL(), "/")
	c := github.NewClient(&http.Client{Transport: tr})
	c.BaseURL = baseURL(t, s)
	return c
}

// installationClient authenticates as an installation, minting tokens through ghinstallation.
func installationClient(t *testing.T, s *Server, installationID int64) (*github.Client, *ghinstallation.Transport) {
	t.Helper()
	itr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), installationID, s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimSuffix(s.URL(), "/")
	c := github.NewClient(&http.Client{Transport: itr})
	c.BaseURL = baseURL(t, s)
	return c, itr
}

// tokenClient uses a fixed installation token.
func tokenClient(t *testing.T, s *Server, tok string) *github.Client {
	t.Helper()
	c := github.NewClient(nil).WithAuthToken(tok)
	c.BaseURL = baseURL(t, s)
	return c
}

func statusOf(t *testing.T, err error) int {
	t.Helper()
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	var ar *github.AbuseRateLimitError
	if errors.As(err, &ar) {
		return ar.Response.StatusCode
	}
	t.Fatalf("error %v (%T) carries no GitHub response", err, err)
	return 0
}

// runGit runs the git CLI with no user or system config, the identity given by env.
func runGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// basicAuthHeader is the http.extraheader value git sends with an installation token.
func basicAuthHeader(tok string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))
}

func ptr[T any](v T) *T { return &v }
