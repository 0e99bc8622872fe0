package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStartTimeout bounds the check at start that Redis answers: a Redis that does not answer in
// this long is taken for absent, rather than leaving the command hanging.
const redisStartTimeout = 5 * time.Second

// redisConnect opens REDIS_URL and checks that Redis answers, for a command that cannot work
// without it. Its error names the address tried and the fix, and exits 2, never go-redis's own
// pool lines.
func redisConnect(ctx context.Context, raw, password string) (redis.UniversalClient, error) {
	quietRedis()
	rdb, err := redisClient(raw, password)
	if err != nil {
		return nil, withExit(2, err)
	}
	pctx, cancel := context.WithTimeout(ctx, redisStartTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, withExit(2, fmt.Errorf("redis: no answer at %s (REDIS_URL): %v: start Redis or set REDIS_URL (and REDIS_PASSWORD)", redisAddr(raw), err))
	}
	return rdb, nil
}

// redisAddr is the address REDIS_URL names, without its password.
func redisAddr(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" && u.Path == "" {
		return "an unreadable URL"
	}
	if u.Host == "" {
		return u.Path // redis-socket:///path/to/socket
	}
	return u.Host
}

var quietOnce sync.Once

// quietRedis sends go-redis's own log lines ("redis: connection pool: failed to dial ...", one per
// dial) to slog at debug level: what they say reaches the user once, in the command's error or in
// the server's lost/back lines.
func quietRedis() {
	quietOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "go-redis")
}

// redisWatch says when a server loses Redis and when Redis is back, once per change, and holds
// back meanwhile the warnings and errors of the parts that poll it (asynq, the reaper, the relay,
// the fair gate), which would otherwise repeat the same connection error several times a second.
type redisWatch struct {
	ping func(context.Context) error
	addr string
	log  *slog.Logger // the unfiltered logger the lost and back lines go to

	mu    sync.Mutex
	down  bool
	since time.Time
	held  atomic.Int64
}

func newRedisWatch(rdb redis.UniversalClient, addr string, log *slog.Logger) *redisWatch {
	return &redisWatch{ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }, addr: addr, log: log}
}

// Run pings Redis every interval until ctx ends, and says when it is lost and when it is back.
func (w *redisWatch) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := w.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.lost(err.Error())
		} else {
			w.back()
		}
	}
}

func (w *redisWatch) lost(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return
	}
	w.down, w.since = true, time.Now()
	w.log.Error("redis: connection lost; the errors of its pollers are held until it is back: start Redis or check REDIS_URL",
		"addr", w.addr, "err", why)
}

func (w *redisWatch) back() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.down {
		return
	}
	w.down = false
	w.log.Info("redis: back", "addr", w.addr, "down_for", time.Since(w.since).Round(time.Millisecond).String(), "held_lines", w.held.Swap(0))
}

func (w *redisWatch) isDown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// Handler wraps next: a warning or error about the connection to Redis marks Redis lost (said once)
// and, while it is lost, such lines are counted, not written.
func (w *redisWatch) Handler(next slog.Handler) slog.Handler { return &redisGate{w: w, next: next} }

type redisGate struct {
	w    *redisWatch
	next slog.Handler
}

func (g *redisGate) Enabled(ctx context.Context, l slog.Level) bool { return g.next.Enabled(ctx, l) }

func (g *redisGate) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && connectionTrouble(r, g.w.addr) {
		if !g.w.isDown() {
			g.w.lost(recordText(r))
		}
		g.w.held.Add(1)
		return nil
	}
	return g.next.Handle(ctx, r)
}

func (g *redisGate) WithAttrs(as []slog.Attr) slog.Handler {
	return &redisGate{w: g.w, next: g.next.WithAttrs(as)}
}

func (g *redisGate) WithGroup(name string) slog.Handler {
	return &redisGate{w: g.w, next: g.next.WithGroup(name)}
}

// connectionMarkers are what a failed connection to Redis says in go-redis's and asynq's errors.
var connectionMarkers = []string{"connection refused", "dial tcp", "i/o timeout", "connection reset", "broken pipe",
	"no route to host", "use of closed network connection", "connection pool", "LOADING", "unexpected EOF", ": EOF"}

// connectionTrouble reports a line about a failed connection to Redis at addr; one about another
// host (GitHub, a model API) is not, though it may say "dial tcp" too.
func connectionTrouble(r slog.Record, addr string) bool {
	text := recordText(r)
	if !strings.Contains(text, addr) && !strings.Contains(strings.ToLower(text), "redis") {
		return false
	}
	for _, m := range connectionMarkers {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

func recordText(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" ")
		b.WriteString(a.Value.String())
		return true
	})
	return b.String()
}
