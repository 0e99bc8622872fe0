// Package gittest builds real git repositories for tests: a bare "remote" and a user's working clone
// of it, with git made deterministic (no global or system config, a fixed identity).
package gittest

import (
	"context"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/proc"
)

// Isolate makes every git command of the test (the test's own and the code's) independent of the
// machine's git configuration.
func Isolate(t testing.TB) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", empty)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test User")
	t.Setenv("GIT_AUTHOR_EMAIL", "user@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test User")
	t.Setenv("GIT_COMMITTER_EMAIL", "user@example.com")
}

// Git runs git in dir and returns its trimmed output, failing the test on a non-zero exit.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, code := TryGit(t, dir, args...)
	if code != 0 {
		t.Fatalf("git %s in %s: exit %d: %s", strings.Join(args, " "), dir, code, out)
	}
	return out
}

// TryGit runs git in dir and returns its trimmed output and exit code.
func TryGit(t testing.TB, dir string, args ...string) (string, int) {
	t.Helper()
	env := proc.Environ([]string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME",
		"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}, "LC_ALL=C")
	res, err := proc.Run(context.Background(), proc.Cmd{
		Args: append([]string{"git"}, args...), Dir: dir, Env: env, Timeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(res.Output)), res.ExitCode
}

// Repo is a bare remote and a user's working clone of it, on branch main.
type Repo struct {
	Remote string
	Work   string
}

// New creates a bare remote whose main branch holds files (one initial commit), and a working clone
// of it. It calls Isolate.
func New(t testing.TB, files map[string]string) Repo {
	t.Helper()
	Isolate(t)
	root := t.TempDir()
	r := Repo{Remote: filepath.Join(root, "remote.git"), Work: filepath.Join(root, "work")}
	Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", r.Remote)
	Git(t, root, "init", "--quiet", "--initial-branch=main", r.Work)
	WriteFiles(t, r.Work, files)
	Git(t, r.Work, "add", "--all")
	Git(t, r.Work, "commit", "--quiet", "--allow-empty", "-m", "initial")
	Git(t, r.Work, "remote", "add", "origin", r.Remote)
	Git(t, r.Work, "push", "--quiet", "origin", "main")
	Git(t, r.Work, "branch", "--quiet", "--set-upstream-to=origin/main")
	return r
}

// WriteFiles writes files (path -> content) under dir, creating directories.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(files[name]), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// Snapshot is the state of a working clone a run must never touch: its branch, head, index and
// status (including untracked files).
func Snapshot(t testing.TB, work string) string {
	t.Helper()
	return strings.Join([]string{
		Git(t, work, "symbolic-ref", "HEAD"),
		Git(t, work, "rev-parse", "HEAD"),
		Git(t, work, "ls-files", "--stage"),
		Git(t, work, "status", "--porcelain=v1", "--untracked-files=all"),
		Git(t, work, "diff"),
	}, "\n--\n")
}

// AuthServer serves a bare repository over git's smart HTTP (git http-backend) and answers 401 to
// any request without the Authorization header it expects.
type AuthServer struct {
	// URL is the repository's clone URL.
	URL string
	// Served and Refused count requests let through and turned away.
	Served, Refused atomic.Int32
}

// ServeWithAuth starts an AuthServer for the bare repository at remote that accepts only header
// ("Authorization: Basic ..."), pushes included; it stops with the test.
func ServeWithAuth(t testing.TB, remote, header string) *AuthServer {
	t.Helper()
	Git(t, remote, "config", "http.receivepack", "true")
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH")
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(remote), "GIT_HTTP_EXPORT_ALL=1"},
	}
	s := &AuthServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != strings.TrimPrefix(header, "Authorization: ") {
			s.Refused.Add(1)
			rw.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.Served.Add(1)
		backend.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/" + filepath.Base(remote)
	return s
}
