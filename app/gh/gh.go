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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
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
	// Clock is what installation tokens' expiry is judged by; nil means time.Now. Tests of long runs
	// share one with the fake GitHub to live through hours of token lifetimes in seconds.
	Clock func() time.Time
	// OnRateLimit, when set, hears of every rate limit (429, 403 with Retry-After or an exhausted
	// primary limit, a secondary limit) an installation's calls meet, with the wait GitHub asked
	// for: the fair gate pauses that installation's new runs (fair.Gate.Pause), and only its.
	OnRateLimit func(installationID int64, wait time.Duration)
}

// App is a GitHub App: it mints installation tokens and hands out one Client per installation.
type App struct {
	cfg     AppConfig
	base    *url.URL
	graphql string
	upload  *url.URL
	atr     *ghinstallation.AppsTransport
	// appsRoundTripper is what App-authenticated transports send through.
	appsRoundTripper http.RoundTripper
	log              *slog.Logger

	appClient *github.Client // authenticated as the app (JWT)

	// reads holds the last answers of the installations' GETs, for conditional requests.
	reads *readCache

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
		cfg: cfg, base: base, graphql: GraphQLURL(cfg.BaseURL), upload: upload, atr: atr, appsRoundTripper: tr,
		log: log, clients: map[int64]*Client{}, reads: newReadCache(),
	}
	a.appClient = a.newGitHub(&retryTransport{next: atr, policy: cfg.Retry.withDefaults(), sem: make(chan struct{}, 1), log: log})
	return a, nil
}

// newAppsTransport is an App-authenticated transport of its own (see tokenSource.apps). The key was
// parsed once already by NewApp, so this cannot fail.
func (a *App) newAppsTransport() *ghinstallation.AppsTransport {
	atr, err := ghinstallation.NewAppsTransport(a.appsRoundTripper, a.cfg.AppID, a.cfg.PrivateKeyPEM)
	if err != nil {
		panic("gh: the app key parsed once and not again: " + err.Error())
	}
	atr.BaseURL = a.atr.BaseURL
	return atr
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
	now := a.cfg.Clock
	if now == nil {
		now = time.Now
	}
	tokens := &tokenSource{apps: a.newAppsTransport, base: a.appsRoundTripper, id: id, baseURL: a.atr.BaseURL, log: a.log, now: now}
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
	cond := &conditionalTransport{next: rt, cache: a.reads, scope: strconv.FormatInt(id, 10)}
	c := &Client{id: id, app: a, gh: a.newGitHub(cond), tokens: tokens, graphql: a.graphql, log: a.log.With("installation", id)}
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
func (a *App) Installations() ports.Installations {
	return ports.InstallationsFunc(func(_ context.Context, id int64) (ports.GitHub, error) {
		return a.Installation(id)
	})
}

var _ ports.GitHub = (*Client)(nil)

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

// Token returns an installation token for git: the one the API calls use while it has at least
// gitTokenMargin left, else a newly minted one. A run asks before every clone, fetch and push, so a run
// longer than a token's life (one hour) goes on pushing with a valid token, and a run of many short
// tasks costs one token per hour, not one per push. A token GitHub revoked early is replaced at the
// next API call that meets its 401 (see retryTransport).
func (c *Client) Token(ctx context.Context) (string, error) {
	tok, err := c.tokens.token(ctx, gitTokenMargin)
	if err != nil {
		return "", fmt.Errorf("gh: installation %d token: %w", c.id, err)
	}
	return tok, nil
}

// WorkflowsGranted implements ports.Grants: whether the installation holds the workflows permission
// (write), read from what GitHub said of the token it minted, so it costs no call of its own. An
// installation that has not accepted the permission yet (the App asked for it after it was installed)
// does not hold it.
func (c *Client) WorkflowsGranted(ctx context.Context) (bool, error) {
	level, err := c.tokens.workflows(ctx)
	if err != nil {
		return false, fmt.Errorf("gh: installation %d permissions: %w", c.id, err)
	}
	return level == "write", nil
}

// GitAuthHeader returns a complete header line, "Authorization: Basic <base64(x-access-token:<token>)>",
// with a token valid for a while yet (see Token): the value for git's http.extraheader.
func (c *Client) GitAuthHeader(ctx context.Context) (string, error) {
	tok, err := c.Token(ctx)
	if err != nil {
		return "", err
	}
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)), nil
}

// Token margins: how much life a token must have left to be used. GitHub checks a token when each
// request starts; one git command is a few requests over seconds (the transfer streams on), and one
// API call is one request, retries aside. A margin is at most a quarter of the token's whole life, so
// that short-lived tokens are still reused for a while.
const (
	gitTokenMargin  = 5 * time.Minute
	restTokenMargin = time.Minute
)

// tokenSource is the installation's authenticating transport. It wraps a ghinstallation.Transport that
// it replaces when the token runs short by its own clock (ghinstallation only knows time.Now) and when
// GitHub answers 401 (reset): ghinstallation cannot know that GitHub revoked a token early.
type tokenSource struct {
	// apps makes the App-authenticated transport a new installation transport mints its token with.
	// Each gets its own: ghinstallation writes the fields of the AppsTransport it was made from on
	// every refresh, a data race when transports of several installations (or an old and a new one
	// of the same) share it.
	apps func() *ghinstallation.AppsTransport
	// base sends the requests RoundTrip has given a token.
	base    http.RoundTripper
	id      int64
	baseURL string
	log     *slog.Logger
	now     func() time.Time

	mu  sync.Mutex
	cur *ghinstallation.Transport
	// life is the whole lifetime of the tokens GitHub hands out, learnt from the last one minted
	// (0 until then).
	life time.Duration
	// minted is when cur's token was first seen, zero while it has none.
	minted time.Time
}

func (t *tokenSource) reset() {
	t.mu.Lock()
	t.resetLocked()
	t.mu.Unlock()
}

func (t *tokenSource) resetLocked() {
	tr := ghinstallation.NewFromAppsTransport(t.apps(), t.id)
	tr.BaseURL = t.baseURL
	t.cur, t.minted = tr, time.Time{}
}

// token returns the installation's token, minting a new one when the current one has no more than
// margin (at most a quarter of a token's life) left. Every use of the ghinstallation transport happens
// here, under mu: its Expiry reads the token its refresh writes without a lock of its own, so API
// calls and git asking at once would race. Callers that find a mint under way wait for it rather than
// mint one more.
func (t *tokenSource) token(ctx context.Context, margin time.Duration) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tokenLocked(ctx, margin)
}

func (t *tokenSource) tokenLocked(ctx context.Context, margin time.Duration) (string, error) {
	if exp, ok := t.observeLocked(); ok {
		if t.life > 0 {
			margin = min(margin, t.life/4)
		}
		if exp.Sub(t.now()) <= margin {
			t.resetLocked()
		}
	}
	tok, err := t.cur.Token(ctx)
	if err != nil {
		return "", err
	}
	t.observeLocked()
	return tok, nil
}

// workflows is the installation's workflows permission as GitHub stated it when it minted the token
// in use ("write", "read", or "" without it), minting one first when there is none.
func (t *tokenSource) workflows(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.tokenLocked(ctx, restTokenMargin); err != nil {
		return "", err
	}
	p, err := t.cur.Permissions()
	if err != nil {
		return "", err
	}
	return p.GetWorkflows(), nil
}

// observeLocked returns the expiry of the current token, recording the life of one not seen before;
// ok is false while there is no token.
func (t *tokenSource) observeLocked() (exp time.Time, ok bool) {
	exp, _, err := t.cur.Expiry()
	if err != nil {
		return time.Time{}, false
	}
	if t.minted.IsZero() {
		t.minted = t.now()
		if life := exp.Sub(t.minted); life > 0 {
			t.life = life
		}
		t.log.Debug("gh: minted installation token", "installation", t.id, "expires_at", exp.Format(time.RFC3339))
	}
	return exp, true
}

// RoundTrip sends req with the installation's token, as ghinstallation's transport would, but with the
// token taken through token (see there).
func (t *tokenSource) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.token(req.Context(), restTokenMargin)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	creq := req.Clone(req.Context())
	creq.Header.Set("Authorization", "token "+tok)
	if creq.Header.Get("Accept") == "" {
		creq.Header.Set("Accept", "application/vnd.github.v3+json")
	}
	return t.base.RoundTrip(creq)
}

// ListDeliveries implements ports.Deliveries: one page of the App's webhook deliveries, newest first
// (GET /app/hook/deliveries, as the App), and the cursor of the next page ("" on the last).
func (a *App) ListDeliveries(ctx context.Context, cursor string) ([]ports.Delivery, string, error) {
	ds, resp, err := a.appClient.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 100, Cursor: cursor})
	if err != nil {
		return nil, "", apiErr("list deliveries", err)
	}
	out := make([]ports.Delivery, 0, len(ds))
	for _, d := range ds {
		out = append(out, ports.Delivery{ID: d.GetID(), GUID: d.GetGUID(), StatusCode: d.GetStatusCode(),
			Redelivery: d.GetRedelivery(), Event: d.GetEvent(), Action: d.GetAction(), DeliveredAt: d.GetDeliveredAt().Time})
	}
	return out, resp.Cursor, nil
}

// Redeliver implements ports.Deliveries: it asks GitHub to send a delivery again
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
