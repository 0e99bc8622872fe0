package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/akira-bot/akira/jobs/store"
)

// Stream is the audit stream as the relay reads it (store.AuditTrail).
type Stream interface {
	AuditGroup(ctx context.Context, group string) error
	ReadAudit(ctx context.Context, group, consumer string, n int64, block time.Duration) ([]store.AuditRecord, error)
	AckAudit(ctx context.Context, group, id string) error
	AuditBacklog(ctx context.Context, group string) (int64, error)
}

// Defaults of the Relay.
const (
	DefaultGroup      = "audit-sink"
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = time.Minute
	DefaultBlock      = 2 * time.Second
	// leaseName is the lock the delivering relay holds.
	leaseName = "audit-relay"
)

// Relay delivers the audit stream to a sink. Every serve process with a sink runs one; they share
// the stream's consumer group, and a lease (a store lock) lets one deliver at a time, so the sink
// receives events in the stream's order. When the holder dies its lease lapses, another relay takes
// it and claims the entries the dead one read and never acknowledged, first. An entry is
// acknowledged once the sink has it, and never delivered again after that.
type Relay struct {
	Stream Stream
	Locker *store.Locker
	Sink   Sink
	// Group is the consumer group (DefaultGroup when empty); Consumer names this relay in it (host
	// and pid when empty).
	Group, Consumer string
	// Backoff is the first wait after a failed delivery, doubled up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Block is how long a read waits for new entries, and a standby relay between tries at the lease.
	Block  time.Duration
	Logger *slog.Logger

	delivered, failures atomic.Int64
	mu                  sync.Mutex
	downSince           time.Time
}

func (r *Relay) group() string {
	if r.Group != "" {
		return r.Group
	}
	return DefaultGroup
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (r *Relay) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// Delivered and Failures count deliveries made and failed since the relay started.
func (r *Relay) Delivered() int64 { return r.delivered.Load() }

// Failures counts the failed deliveries (each retry is one).
func (r *Relay) Failures() int64 { return r.failures.Load() }

// Run delivers until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	if r.Consumer == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		r.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	block := orDuration(r.Block, DefaultBlock)
	for ctx.Err() == nil {
		if err := r.Stream.AuditGroup(ctx, r.group()); err != nil {
			r.log().Debug("audit relay: make the consumer group", "err", err)
			sleep(ctx, block)
			continue
		}
		break
	}
	r.log().Info("audit relay started", "sink", r.Sink.String(), "consumer", r.Consumer)
	for ctx.Err() == nil {
		lk, err := r.Locker.Acquire(ctx, leaseName)
		if err != nil {
			// Another relay delivers (or Redis is away, which the Redis watch reports): stand by.
			sleep(ctx, block)
			continue
		}
		r.deliverWhileHeld(lk.Context(), block)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = lk.Release(rctx)
		cancel()
	}
}

// deliverWhileHeld reads and delivers until the lease is lost or released.
func (r *Relay) deliverWhileHeld(ctx context.Context, block time.Duration) {
	for ctx.Err() == nil {
		recs, err := r.Stream.ReadAudit(ctx, r.group(), r.Consumer, 100, block)
		if err != nil {
			r.log().Debug("audit relay: read", "err", err)
			sleep(ctx, block)
			continue
		}
		for _, rec := range recs {
			if !r.deliver(ctx, rec) {
				return
			}
		}
	}
}

// deliver hands one entry to the sink until it takes it, then acknowledges it; false when ctx ended
// first (the entry stays pending, for whichever relay holds the lease next).
func (r *Relay) deliver(ctx context.Context, rec store.AuditRecord) bool {
	if rec.Entry.Action == "" && rec.Entry.Time.IsZero() {
		// Trimmed from the stream while pending: nothing left to send.
		r.log().Error("audit relay: an entry was trimmed from the stream before the sink had it", "id", rec.ID)
		r.ack(ctx, rec.ID)
		return true
	}
	wait := orDuration(r.Backoff, DefaultBackoff)
	for {
		err := r.Sink.Deliver(ctx, Event{ID: rec.ID, AuditEntry: rec.Entry})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		r.failures.Add(1)
		r.down(err)
		if !sleep(ctx, wait) {
			return false
		}
		wait = min(wait*2, orDuration(r.MaxBackoff, DefaultMaxBackoff))
	}
	r.up()
	r.delivered.Add(1)
	r.ack(ctx, rec.ID)
	return true
}

// ack acknowledges a delivered entry even when the lease has just been lost: the sink has it. An
// ack that fails leaves it pending, delivered again later; the receiver drops the copy by its id.
func (r *Relay) ack(ctx context.Context, id string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.Stream.AckAudit(actx, r.group(), id); err != nil {
		r.log().Warn("audit relay: acknowledge a delivered entry (it will be delivered again)", "id", id, "err", err)
	}
}

// down and up log the sink's state once per change, not once per retry.
func (r *Relay) down(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.downSince.IsZero() {
		r.downSince = time.Now()
		r.log().Warn("audit sink down: entries are kept in Redis and retried", "sink", r.Sink.String(), "err", err)
	}
}

func (r *Relay) up() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.downSince.IsZero() {
		r.log().Info("audit sink up", "sink", r.Sink.String(), "down_for", time.Since(r.downSince).Round(time.Millisecond).String())
		r.downSince = time.Time{}
	}
}

// Down says the last delivery failed.
func (r *Relay) Down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.downSince.IsZero()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Register adds the relay's metrics: akira_audit_sink_pending (entries not yet acknowledged,
// read on scrape), akira_audit_sink_delivered_total and akira_audit_sink_failures_total.
func (r *Relay) Register(reg prometheus.Registerer) error {
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "akira_audit_sink_pending",
		Help: "Audit entries the sink has not acknowledged yet."}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := r.Stream.AuditBacklog(ctx, r.group())
		if err != nil {
			return -1
		}
		return float64(n)
	})
	delivered := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "akira_audit_sink_delivered_total",
		Help: "Audit entries this process delivered to the sink."}, func() float64 { return float64(r.Delivered()) })
	failures := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "akira_audit_sink_failures_total",
		Help: "Failed deliveries to the audit sink (every retry counts)."}, func() float64 { return float64(r.Failures()) })
	for _, c := range []prometheus.Collector{pending, delivered, failures} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("audit: metrics: %w", err)
		}
	}
	return nil
}
