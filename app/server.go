// Package app is Akira's GitHub edge: the webhook server (signature check, event routing, slash commands,
// permission checks) and the configuration of the GitHub App.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// MaxWebhookBytes is GitHub's own cap on a webhook payload (25 MB); anything larger is not from GitHub.
const MaxWebhookBytes = 25 << 20

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
	// HandlerTimeout bounds the work done before answering GitHub, which gives up after 10 s; 0 means 8 s.
	HandlerTimeout time.Duration
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
	GitHub   GitHub
	// Readiness lists what /readyz checks; empty means always ready.
	Readiness []ReadinessCheck
	// Logger receives every log line; nil means slog.Default().
	Logger *slog.Logger
	// Observe, when set, is told the event and the result (accepted, ignored, refused, rejected, ...) of
	// every delivery, for metrics. Event names outside the ones Akira handles are reported as "other", so
	// that unauthenticated requests cannot blow up a metric's label set.
	Observe func(event, result string)
}

type server struct {
	cfg ServerConfig
	enq Enqueuer
	gh  GitHub
	rdy []ReadinessCheck
	log *slog.Logger
	obs func(event, result string)
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
	case deps.GitHub == nil:
		return nil, errors.New("app: no GitHub client")
	}
	for _, rc := range deps.Readiness {
		if rc.Name == "" || rc.Check == nil {
			return nil, errors.New("app: readiness check without a name or a function")
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = MaxWebhookBytes
	}
	if cfg.HandlerTimeout <= 0 {
		cfg.HandlerTimeout = 8 * time.Second
	}
	if cfg.ReadinessTimeout <= 0 {
		cfg.ReadinessTimeout = 2 * time.Second
	}
	s := &server{cfg: cfg, enq: deps.Enqueuer, gh: deps.GitHub, rdy: deps.Readiness, log: deps.Logger, obs: deps.Observe}
	if s.log == nil {
		s.log = slog.Default()
	}

	// Debug mode prints every route at start; the intake logs through slog only.
	setGinMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(s.recoverJSON)
	r.POST("/webhook", s.webhook)
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
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
		log := s.deliveryLogger(c.GetHeader("X-GitHub-Delivery"), c.GetHeader("X-GitHub-Event"), 0, "")
		if v, ok := c.Get(deliveryKey); ok {
			log = v.(*delivery).log
		}
		log.ErrorContext(c.Request.Context(), "panic in handler",
			"path", c.Request.URL.Path, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
	}()
	c.Next()
}

func (s *server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

func (s *server) readyz(c *gin.Context) {
	failed := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rc := range s.rdy {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ReadinessTimeout)
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
		s.log.WarnContext(c.Request.Context(), "not ready", "failed", failed)
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "failed": failed})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// ListenAndServe listens on addr and serves h until ctx is done; see Serve.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, grace time.Duration) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("app: listen: %w", err)
	}
	return Serve(ctx, ln, h, grace)
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
