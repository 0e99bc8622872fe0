package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/app/gh"
)

// `akira setup` registers the GitHub App through GitHub's manifest flow: a local page posts the
// manifest to GitHub, GitHub creates the App once a person confirms, redirects back with a code,
// and the code buys the App's credentials, which are written to an env file and a PEM file.

//go:embed setuppage/*.html
var setupPages embed.FS

// DefaultGitHubURL is github.com's web root.
const DefaultGitHubURL = "https://github.com"

// SetupConfig is what `akira setup` was asked for.
type SetupConfig struct {
	// WebhookURL is where GitHub will deliver the App's webhooks (https://<host>/webhook).
	WebhookURL string
	// Name is the App's name; GitHub lets the person change it before creating it.
	Name string
	// GitHubURL is GitHub's web root (GitHub Enterprise Server: https://<host>); APIURL its REST
	// root, by default derived from it.
	GitHubURL, APIURL string
	// Org, when set, makes the App an organization's instead of the person's.
	Org string
	// RedirectURL is this setup's own callback, where GitHub sends the person back.
	RedirectURL string
	// EnvFile and KeyFile are where the credentials go; Force allows replacing them.
	EnvFile, KeyFile string
	Force            bool
	// Workflows asks GitHub for the workflows permission too, which an App needs to push changes to
	// .github/workflows (the operator's allow_workflows; off by default).
	Workflows  bool
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// SetupResult is how a setup ended.
type SetupResult struct {
	App          *gh.CreatedApp
	InstallURL   string
	StartCommand string
	Err          error
}

// Setup serves the manifest flow's two pages: the start page with its one button, and the callback.
type Setup struct {
	cfg      SetupConfig
	manifest []byte
	state    string
	pages    *template.Template
	once     sync.Once
	done     chan SetupResult
}

// APIURLFor is the REST root of a GitHub web root: api.github.com for github.com, /api/v3/ on
// GitHub Enterprise Server.
func APIURLFor(githubURL string) string {
	u, err := url.Parse(githubURL)
	if err == nil && (u.Host == "github.com" || u.Host == "www.github.com") {
		return gh.DefaultBaseURL
	}
	return strings.TrimSuffix(githubURL, "/") + "/api/v3/"
}

// NewSetup checks cfg and the files it would write, and returns the setup's pages.
func NewSetup(cfg SetupConfig) (*Setup, error) {
	if cfg.GitHubURL == "" {
		cfg.GitHubURL = DefaultGitHubURL
	}
	cfg.GitHubURL = strings.TrimSuffix(cfg.GitHubURL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = APIURLFor(cfg.GitHubURL)
	}
	if cfg.Name == "" {
		cfg.Name = "Akira"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	for _, f := range []struct{ name, value string }{{"--github-url", cfg.GitHubURL}, {"--webhook-url", cfg.WebhookURL}, {"redirect URL", cfg.RedirectURL}} {
		if u, err := url.Parse(f.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not an http(s) URL", f.name, f.value))
		}
	}
	if cfg.Org != "" && strings.ContainsAny(cfg.Org, "/?#% ") {
		errs = append(errs, fmt.Errorf("--org: %q is not an organization login", cfg.Org))
	}
	if cfg.EnvFile == "" || cfg.KeyFile == "" {
		errs = append(errs, errors.New("setup: an env file and a key file are needed"))
	} else if !cfg.Force {
		for _, f := range []string{cfg.EnvFile, cfg.KeyFile} {
			if _, err := os.Lstat(f); err == nil {
				errs = append(errs, fmt.Errorf("%s exists; move it away or pass --force to replace it", f))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m, err := AppManifest()
	if err != nil {
		return nil, err
	}
	m.Name, m.HookAttributes.URL, m.RedirectURL = cfg.Name, cfg.WebhookURL, cfg.RedirectURL
	if cfg.Workflows {
		m.DefaultPermissions["workflows"] = "write"
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("setup: manifest: %w", err)
	}
	pages, err := template.ParseFS(setupPages, "setuppage/*.html")
	if err != nil {
		return nil, fmt.Errorf("setup: pages: %w", err)
	}
	state := make([]byte, 16)
	if _, err := rand.Read(state); err != nil {
		return nil, fmt.Errorf("setup: state: %w", err)
	}
	return &Setup{cfg: cfg, manifest: manifest, state: hex.EncodeToString(state), pages: pages, done: make(chan SetupResult, 1)}, nil
}

// Done yields the setup's result once the callback has been handled.
func (s *Setup) Done() <-chan SetupResult { return s.done }

// Handler serves the start page at / and GitHub's redirect at the redirect URL's path.
func (s *Setup) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.start)
	cb, _ := url.Parse(s.cfg.RedirectURL)
	mux.HandleFunc("GET "+cmpOr(cb.Path, "/callback"), s.callback)
	return mux
}

func cmpOr(a, b string) string {
	if a == "" || a == "/" {
		return b
	}
	return a
}

// newAppURL is GitHub's "new GitHub App" page for the person or the organization.
func (s *Setup) newAppURL() string {
	path := "/settings/apps/new"
	if s.cfg.Org != "" {
		path = "/organizations/" + url.PathEscape(s.cfg.Org) + "/settings/apps/new"
	}
	return s.cfg.GitHubURL + path + "?state=" + s.state
}

func (s *Setup) start(w http.ResponseWriter, r *http.Request) {
	host := s.cfg.GitHubURL
	if u, err := url.Parse(host); err == nil {
		host = u.Host
	}
	s.render(w, http.StatusOK, "start", map[string]any{
		"Name": s.cfg.Name, "Action": s.newAppURL(), "Manifest": string(s.manifest), "Host": host,
		"WebhookURL": s.cfg.WebhookURL, "Org": s.cfg.Org, "EnvFile": s.cfg.EnvFile, "KeyFile": s.cfg.KeyFile,
	})
}

func (s *Setup) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// The state proves the redirect answers this setup's own form: another page cannot make it
	// redeem a code of its choosing.
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(s.state)) != 1 {
		s.render(w, http.StatusBadRequest, "failed", "This answer does not come from the form this setup served (its state does not match).")
		return
	}
	code := q.Get("code")
	if code == "" {
		s.render(w, http.StatusBadRequest, "failed", "GitHub sent no code back.")
		return
	}
	res := s.complete(r.Context(), code)
	if res.Err != nil {
		s.render(w, http.StatusBadGateway, "failed", res.Err.Error())
	} else {
		s.render(w, http.StatusOK, "done", map[string]any{
			"Name": res.App.Name, "ID": res.App.ID, "EnvFile": s.cfg.EnvFile, "KeyFile": s.cfg.KeyFile,
			"InstallURL": res.InstallURL, "StartCommand": res.StartCommand,
		})
	}
	s.once.Do(func() { s.done <- res })
}

// complete redeems the code and writes the App's credentials.
func (s *Setup) complete(ctx context.Context, code string) SetupResult {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	created, err := gh.CompleteManifest(ctx, s.cfg.HTTPClient, s.cfg.APIURL, code)
	if err != nil {
		return SetupResult{Err: fmt.Errorf("setup: %w", err)}
	}
	res := SetupResult{App: created, InstallURL: strings.TrimSuffix(created.HTMLURL, "/") + "/installations/new",
		StartCommand: "akira serve --env-file " + shellQuote(s.cfg.EnvFile)}
	if err := s.writeFiles(created); err != nil {
		res.Err = fmt.Errorf("setup: the App %s exists but its credentials could not be saved (generate a new private key in its settings): %w", created.HTMLURL, err)
	}
	s.cfg.Logger.Info("github app registered", "app_id", created.ID, "slug", created.Slug)
	return res
}

// writeFiles writes the key, then the env file naming it, both readable by their owner only.
func (s *Setup) writeFiles(a *gh.CreatedApp) error {
	keyPath, err := filepath.Abs(s.cfg.KeyFile)
	if err != nil {
		return err
	}
	if err := writeSecretFile(s.cfg.KeyFile, []byte(a.PrivateKeyPEM), s.cfg.Force); err != nil {
		return err
	}
	var env bytes.Buffer
	fmt.Fprintf(&env, "# The GitHub App %s (%s), registered by akira setup on %s.\n", a.Name, a.HTMLURL, time.Now().UTC().Format(time.DateOnly))
	fmt.Fprintf(&env, "# Secrets: keep this file out of version control. Start Akira with: akira serve --env-file %s\n", shellQuote(s.cfg.EnvFile))
	for _, kv := range [][2]string{
		{"GITHUB_APP_ID", fmt.Sprint(a.ID)},
		{"GITHUB_WEBHOOK_SECRET", a.WebhookSecret},
		{"GITHUB_CLIENT_ID", a.ClientID},
		{"GITHUB_CLIENT_SECRET", a.ClientSecret},
		{"GITHUB_PRIVATE_KEY_PATH", keyPath},
		{"GITHUB_API_URL", s.cfg.APIURL},
		{"AKIRA_BOT_LOGIN", a.Slug + "[bot]"},
	} {
		if kv[1] != "" && kv[1] != "[bot]" {
			fmt.Fprintf(&env, "%s=%s\n", kv[0], kv[1])
		}
	}
	return writeSecretFile(s.cfg.EnvFile, env.Bytes(), s.cfg.Force)
}

// writeSecretFile writes data to path with mode 0600. Without force an existing file (or a link
// planted there since the start) is an error; with force the file is replaced whole.
func writeSecretFile(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists; pass --force to replace it", path)
			}
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".akira-setup-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600 already; the chmod says so where a umask or platform differs.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (s *Setup) render(w http.ResponseWriter, status int, page string, data any) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, page, data); err != nil {
		http.Error(w, "setup: page "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// shellQuote quotes a path for a command to copy into a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
