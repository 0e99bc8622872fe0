// Package gh is how Akira talks to GitHub: installation clients (ghinstallation + go-github), a transport
// that retries what GitHub asks to be retried and serialises mutating calls, and the small operations the
// jobs layer needs (comments, check runs, pull requests, reactions, contents, refs, permissions).
//
// *Client implements the small interfaces package jobs declares, with jobs' own types; nothing of
// go-github leaks out of this package.
package gh

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs"
)

// DefaultBaseURL is the REST API of github.com.
const DefaultBaseURL = "https://api.github.com/"

// AppConfig configures an App.
type AppConfig struct {
	AppID         int64
	PrivateKeyPEM []byte
	// BaseURL is the REST API root (GITHUB_API_URL), e.g. https://api.github.com/ or
	// https://ghes.example.com/api/v3/. A missing trailing slash is added.
	BaseURL string
	// HTTPClient supplies the base transport (only its Transport is used: deadlines come from the
	// contexts and RetryPolicy.AttemptTimeout); nil means http.DefaultTransport.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Retry tunes the retry transport; zero fields take the defaults.
	Retry RetryPolicy
	// OnRateLimit, when set, hears of every rate limit (429, 403 with Retry-After or an exhausted
	// primary limit, a secondary limit) an installation's calls meet, with the wait GitHub asked
	// for: the fair gate pauses that installation's new runs (jobs.Fair.Pause), and only its.
	OnRateLimit func(installationID int64, wait time.Duration)
}

// App is a GitHub App: it mints installation tokens and hands out one Client per installation.
type App struct {
	cfg     AppConfig
	base    *url.URL
	graphql string
	upload  *url.URL
	atr     *ghinstallation.AppsTransport
	log     *slog.Logger

	appClient *github.Client // authenticated as the app (JWT)

	mu       sync.Mutex
	clients  map[int64]*Client
	recent   []int64 // installation ids of clients, least recently used first
	botLogin string
}

// NewApp checks the configuration and parses the private key.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("gh: app id is required")
	}
	if len(cfg.PrivateKeyPEM) == 0 {
		return nil, errors.New("gh: private key is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(cfg.BaseURL, "/") {
		cfg.BaseURL += "/"
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("gh: base url %q is not an http(s) URL", cfg.BaseURL)
	}
	tr := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		tr = cfg.HTTPClient.Transport
	}
	atr, err := ghinstallation.NewAppsTransport(tr, cfg.AppID, cfg.PrivateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("gh: app key: %w", err)
	}
	// ghinstallation appends /app/installations/... itself, so it wants the root without the slash.
	atr.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	upload, _ := url.Parse(uploadURL(base))
	a := &App{
		cfg: cfg, base: base, graphql: GraphQLURL(cfg.BaseURL), upload: upload, atr: atr,
		log: log, clients: map[int64]*Client{},
	}
	a.appClient = a.newGitHub(&retryTransport{next: atr, policy: cfg.Retry.withDefaults(), sem: make(chan struct{}, 1), log: log})
	return a, nil
}

func (a *App) newGitHub(rt http.RoundTripper) *github.Client {
	gc := github.NewClient(&http.Client{Transport: rt})
	base, upload := *a.base, *a.upload
	gc.BaseURL, gc.UploadURL = &base, &upload
	gc.UserAgent = "akira"
	return gc
}

// BotLogin is the login of the app's bot user ("<slug>[bot]"), the author of what Akira posts. It is
// asked once (GET /app) and cached.
func (a *App) BotLogin(ctx context.Context) (string, error) {
	a.mu.Lock()
	login := a.botLogin
	a.mu.Unlock()
	if login != "" {
		return login, nil
	}
	app, _, err := a.appClient.Apps.Get(ctx, "")
	if err != nil {
		return "", apiErr("get app", err)
	}
	if app.GetSlug() == "" {
		return "", errors.New("gh: get app: GitHub returned no slug")
	}
	login = app.GetSlug() + "[bot]"
	a.mu.Lock()
	a.botLogin = login
	a.mu.Unlock()
	return login, nil
}

// GraphQLURL derives the GraphQL endpoint from the REST root: api.github.com/graphql on github.com,
// <host>/api/graphql on GitHub Enterprise Server (whose REST root is <host>/api/v3/), and <root>graphql
// otherwise.
func GraphQLURL(restBase string) string {
	u, err := url.Parse(restBase)
	if err != nil {
		return strings.TrimSuffix(restBase, "/") + "/graphql"
	}
	p := strings.TrimSuffix(u.Path, "/")
	if strings.HasSuffix(p, "/api/v3") {
		u.Path = strings.TrimSuffix(p, "/v3") + "/graphql"
	} else {
		u.Path = p + "/graphql"
	}
	u.RawPath = ""
	return u.String()
}

func uploadURL(base *url.URL) string {
	u := *base
	switch {
	case u.Host == "api.github.com":
		return "https://uploads.github.com/"
	case strings.HasSuffix(u.Path, "/api/v3/"):
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "uploads/"
	}
	return u.String()
}

// maxCachedInstallations bounds the client cache. Installation ids come from webhook payloads: without
// a bound, every delivery naming a made-up installation kept its client (about 10 KiB) forever.
const maxCachedInstallations = 64

// Installation returns the client of an installation, created once and cached (the least recently
// used beyond maxCachedInstallations are dropped): its token is cached and refreshed by ghinstallation,
// and its mutating calls are serialised.
func (a *App) Installation(id int64) (*Client, error) {
	if id <= 0 {
		return nil, fmt.Errorf("gh: installation id %d is not valid", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.clients[id]; c != nil {
		a.touch(id)
		return c, nil
	}
	tokens := &tokenSource{atr: a.atr, id: id, baseURL: a.atr.BaseURL, log: a.log}
	tokens.reset()
	rt := &retryTransport{
		next:   tokens,
		policy: a.cfg.Retry.withDefaults(),
		sem:    make(chan struct{}, 1),
		log:    a.log.With("installation", id),
		reset:  tokens.reset,
	}
	if on := a.cfg.OnRateLimit; on != nil {
		rt.limited = func(wait time.Duration) { on(id, wait) }
	}
	c := &Client{id: id, app: a, gh: a.newGitHub(rt), tokens: tokens, graphql: a.graphql, log: a.log.With("installation", id)}
	a.clients[id] = c
	a.touch(id)
	for len(a.recent) > maxCachedInstallations {
		delete(a.clients, a.recent[0])
		a.recent = a.recent[1:]
	}
	return c, nil
}

// touch makes id the most recently used installation. The list is short and bounded; a linear scan
// is cheaper than the bookkeeping of a linked list.
func (a *App) touch(id int64) {
	if i := slices.Index(a.recent, id); i >= 0 {
		a.recent = append(a.recent[:i], a.recent[i+1:]...)
	}
	a.recent = append(a.recent, id)
}

// Installations hands the jobs the clients of this app's installations.
func (a *App) Installations() jobs.Installations {
	return jobs.InstallationsFunc(func(_ context.Context, id int64) (jobs.GitHub, error) {
		return a.Installation(id)
	})
}

var _ jobs.GitHub = (*Client)(nil)

// Client is the GitHub client of one installation, implementing the interfaces jobs declares. It is
// safe for concurrent use.
type Client struct {
	id      int64
	app     *App
	gh      *github.Client
	tokens  *tokenSource
	graphql string
	log     *slog.Logger
}

// InstallationID is the installation this client acts as.
func (c *Client) InstallationID() int64 { return c.id }

// Token mints a fresh installation token, for git. A new token is minted on every call instead of reusing
// the cached one, so a push never starts with a token that is about to expire or that GitHub has already
// revoked; the API calls that follow use the new token too.
func (c *Client) Token(ctx context.Context) (string, error) {
	tok, err := c.tokens.fresh(ctx)
	if err != nil {
		return "", fmt.Errorf("gh: installation %d token: %w", c.id, err)
	}
	return tok, nil
}

// GitAuthHeader returns a complete header line, "Authorization: Basic <base64(x-access-token:<token>)>",
// with a freshly minted token: the value for git's http.extraheader.
func (c *Client) GitAuthHeader(ctx context.Context) (string, error) {
	tok, err := c.Token(ctx)
	if err != nil {
		return "", err
	}
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)), nil
}

// tokenSource is the installation's authenticating transport. It wraps a ghinstallation.Transport that can
// be replaced, which is how a token is forced to refresh: ghinstallation itself only refreshes a token a
// minute before the expiry it was told, and cannot know that GitHub revoked it earlier.
type tokenSource struct {
	atr     *ghinstallation.AppsTransport
	id      int64
	baseURL string
	log     *slog.Logger

	mu  sync.Mutex
	cur *ghinstallation.Transport
}

func (t *tokenSource) reset() {
	tr := ghinstallation.NewFromAppsTransport(t.atr, t.id)
	tr.BaseURL = t.baseURL
	t.mu.Lock()
	t.cur = tr
	t.mu.Unlock()
}

func (t *tokenSource) current() *ghinstallation.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

func (t *tokenSource) fresh(ctx context.Context) (string, error) {
	t.reset()
	cur := t.current()
	tok, err := cur.Token(ctx)
	if err != nil {
		return "", err
	}
	if exp, _, err := cur.Expiry(); err == nil {
		t.log.Debug("gh: minted installation token", "installation", t.id, "expires_at", exp.Format(time.RFC3339))
	}
	return tok, nil
}

func (t *tokenSource) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.current().RoundTrip(req)
}

// ListDeliveries implements jobs.Deliveries: one page of the App's webhook deliveries, newest first
// (GET /app/hook/deliveries, as the App), and the cursor of the next page ("" on the last).
func (a *App) ListDeliveries(ctx context.Context, cursor string) ([]jobs.Delivery, string, error) {
	ds, resp, err := a.appClient.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 100, Cursor: cursor})
	if err != nil {
		return nil, "", apiErr("list deliveries", err)
	}
	out := make([]jobs.Delivery, 0, len(ds))
	for _, d := range ds {
		out = append(out, jobs.Delivery{ID: d.GetID(), GUID: d.GetGUID(), StatusCode: d.GetStatusCode(),
			Redelivery: d.GetRedelivery(), Event: d.GetEvent(), DeliveredAt: d.GetDeliveredAt().Time})
	}
	return out, resp.Cursor, nil
}

// Redeliver implements jobs.Deliveries: it asks GitHub to send a delivery again
// (POST /app/hook/deliveries/{id}/attempts).
func (a *App) Redeliver(ctx context.Context, id int64) error {
	if _, _, err := a.appClient.Apps.RedeliverHookDelivery(ctx, id); err != nil {
		// GitHub answers 202 Accepted, which go-github reports as an AcceptedError: that is success.
		if _, ok := errors.AsType[*github.AcceptedError](err); ok {
			return nil
		}
		return apiErr(fmt.Sprintf("redeliver %d", id), err)
	}
	return nil
}
