// Package app is Akira's GitHub edge: the webhook server, which only verifies a delivery, drops what
// Akira never acts on and enqueues one intake task (package jobs does everything that talks to GitHub),
// the health endpoints, and the GitHub App's configuration. app/gh is the GitHub client that implements
// the interfaces jobs declares; internal/githubtest is a fake GitHub for tests.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/semaphore"
)

// MaxWebhookBytes is GitHub's own cap on a webhook payload (25 MB); anything larger is not from GitHub.
const MaxWebhookBytes = 25 << 20

// DefaultUnverifiedBytes is how much memory the bodies of deliveries whose signature is not checked
// yet may hold at once: one delivery of GitHub's largest size and room for the usual small ones.
const DefaultUnverifiedBytes = 32 << 20

// ServerConfig configures the webhook server.
type ServerConfig struct {
	// AppID is this GitHub App's id; check runs of other apps are ignored.
	AppID int64
	// WebhookSecret is the secret GitHub signs deliveries with.
	WebhookSecret []byte
	// BotLogin is the app's bot user ("<slug>[bot]"), optional.
	BotLogin string
	// MaxBodyBytes caps a webhook body; 0 means MaxWebhookBytes.
	MaxBodyBytes int64
	// UnverifiedBytes caps the memory held at once by the bodies of deliveries whose signature is not
	// checked yet (anyone can send those): a delivery waits for room before its body is read, at most
	// BodyWait, then is answered 503. 0 means DefaultUnverifiedBytes; never less than MaxBodyBytes.
	UnverifiedBytes int64
	// BodyWait bounds that wait; 0 means 2 s (GitHub gives up at 10 s).
	BodyWait time.Duration
	// EnqueueTimeout bounds the one thing done before answering GitHub (which gives up after 10 s):
	// handing the delivery to the queue. 0 means 5 s.
	EnqueueTimeout time.Duration
	// ReadinessTimeout bounds each readiness check; 0 means 2 s.
	ReadinessTimeout time.Duration
}

// ReadinessCheck is one dependency /readyz checks, e.g. Redis.
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the server's collaborators.
type Deps struct {
	Enqueuer Enqueuer
	// Readiness lists what /readyz checks; empty means always ready.
	Readiness []ReadinessCheck
	// Logger receives every log line; nil means slog.Default().
	Logger *slog.Logger
	// Observe, when set, is told the event and the result (accepted, ignored, refused, rejected, ...) of
	// every delivery, and how long the server held it (from the handler's start, the request's headers
	// read, to its answer written), for metrics. Event names outside the ones Akira handles are
	// reported as "other", so that unauthenticated requests cannot blow up a metric's label set.
	Observe func(event, result string, took time.Duration)
}

type server struct {
	cfg    ServerConfig
	enq    Enqueuer
	health *Health
	log    *slog.Logger
	obs    func(event, result string, took time.Duration)
	// unverified counts the bytes of bodies being read whose signature is not checked yet.
	unverified *semaphore.Weighted
}

var setGinMode sync.Once

// NewServer returns the HTTP handler of the webhook server: POST /webhook, GET /healthz, GET /readyz.
func NewServer(cfg ServerConfig, deps Deps) (http.Handler, error) {
	switch {
	case len(cfg.WebhookSecret) == 0:
		return nil, errors.New("app: webhook secret is empty")
	case cfg.AppID <= 0:
		return nil, errors.New("app: app id must be positive")
	case deps.Enqueuer == nil:
		return nil, errors.New("app: no enqueuer")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = MaxWebhookBytes
	}
	if cfg.EnqueueTimeout <= 0 {
		cfg.EnqueueTimeout = 5 * time.Second
	}
	if cfg.UnverifiedBytes <= 0 {
		cfg.UnverifiedBytes = DefaultUnverifiedBytes
	}
	cfg.UnverifiedBytes = max(cfg.UnverifiedBytes, cfg.MaxBodyBytes)
	if cfg.BodyWait <= 0 {
		cfg.BodyWait = 2 * time.Second
	}
	s := &server{cfg: cfg, enq: deps.Enqueuer, log: deps.Logger, obs: deps.Observe,
		unverified: semaphore.NewWeighted(cfg.UnverifiedBytes)}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.health, err = NewHealth(deps.Readiness, cfg.ReadinessTimeout, s.log); err != nil {
		return nil, err
	}

	// Debug mode prints every route at start; the intake logs through slog only.
	setGinMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(s.recoverJSON)
	r.POST("/webhook", s.webhook)
	r.GET("/healthz", gin.WrapF(s.health.Live))
	r.GET("/readyz", gin.WrapF(s.health.Ready))
	r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "not found"}) })
	r.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "method not allowed"}) })
	return r, nil
}

// recoverJSON turns a panic into a logged 500 so one bad delivery never takes the server down.
func (s *server) recoverJSON(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			panic(rec)
		}
		attrs := deliveryAttrs(c.GetHeader("X-GitHub-Delivery"), c.GetHeader("X-GitHub-Event"), 0, "")
		if v, ok := c.Get(deliveryKey); ok {
			attrs = v.(*delivery).attrs()
		}
		s.log.ErrorContext(c.Request.Context(), "panic in handler",
			append(attrs, "path", c.Request.URL.Path, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))...)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
	}()
	c.Next()
}

// Health answers the liveness and readiness probes of every process (web and worker alike).
type Health struct {
	checks  []ReadinessCheck
	timeout time.Duration
	log     *slog.Logger
}

// NewHealth checks each of checks on GET /readyz, each within timeout (2 s when zero).
func NewHealth(checks []ReadinessCheck, timeout time.Duration, log *slog.Logger) (*Health, error) {
	for _, rc := range checks {
		if rc.Name == "" || rc.Check == nil {
			return nil, errors.New("app: readiness check without a name or a function")
		}
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Health{checks: checks, timeout: timeout, log: log}, nil
}

// Handler serves GET /healthz and GET /readyz, for a process without the webhook server.
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", h.Live)
	mux.HandleFunc("GET /readyz", h.Ready)
	return mux
}

// Live says the process serves HTTP.
func (h *Health) Live(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Ready runs every check at once and names the ones that failed.
func (h *Health) Ready(w http.ResponseWriter, r *http.Request) {
	failed := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rc := range h.checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
			defer cancel()
			if err := rc.Check(ctx); err != nil {
				mu.Lock()
				failed[rc.Name] = err.Error()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		h.log.WarnContext(r.Context(), "not ready", "failed", failed)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failed": failed})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves h on ln until ctx is done, then shuts down, giving requests in flight up to grace to finish
// (a webhook half answered is a delivery GitHub marks failed).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("app: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("app: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("app: serve: %w", err)
	}
	return nil
}
