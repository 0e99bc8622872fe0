package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// Sweeper defaults.
const (
	// SweepWindow is how far back a sweep looks. GitHub keeps deliveries for redelivery for 3 days;
	// what failed longer ago than this was either redelivered already or given up.
	SweepWindow = 6 * time.Hour
	// MaxRedeliveries caps the attempts of one delivery (the original included): a delivery that
	// keeps failing is an outage or a bug, and hammering GitHub helps neither.
	MaxRedeliveries = 5
)

// SweepResult counts what a sweep did.
type SweepResult struct {
	Seen        int // deliveries (GUIDs) looked at
	Redelivered int
	GivenUp     int // failed MaxRedeliveries times
}

// Sweep asks GitHub to redeliver every delivery of the window whose attempts all failed with a 5xx
// or no answer. A delivery Akira answered with a 4xx (bad signature, malformed, unknown repository)
// is never redelivered: it would fail the same way. Akira drops duplicate deliveries by GUID, so a
// redelivery of something that did arrive after all does no harm.
func Sweep(ctx context.Context, deliveries ports.Deliveries, now time.Time, m *metrics.Metrics, log *slog.Logger) (SweepResult, error) {
	type history struct {
		latest   ports.Delivery
		attempts int
		ok, bad  bool // an attempt succeeded; an attempt was refused with a 4xx
	}
	window, err := deliveriesSince(ctx, deliveries, now.Add(-SweepWindow))
	if err != nil {
		return SweepResult{}, fmt.Errorf("jobs: sweep: %w", err)
	}
	byGUID := map[string]*history{}
	var order []string
	for _, d := range window {
		hs := byGUID[d.GUID]
		if hs == nil {
			hs = &history{latest: d}
			byGUID[d.GUID] = hs
			order = append(order, d.GUID)
		}
		hs.attempts++
		switch {
		case d.StatusCode >= 200 && d.StatusCode < 300:
			hs.ok = true
		case d.StatusCode >= 400 && d.StatusCode < 500:
			hs.bad = true
		}
	}
	res := SweepResult{Seen: len(order)}
	for _, guid := range order {
		hs := byGUID[guid]
		if hs.ok || hs.bad {
			continue
		}
		if hs.attempts >= MaxRedeliveries {
			res.GivenUp++
			m.Redelivery("given_up")
			continue
		}
		if err := deliveries.Redeliver(ctx, hs.latest.ID); err != nil {
			return res, fmt.Errorf("jobs: redeliver %s: %w", guid, err)
		}
		res.Redelivered++
		m.Redelivery("requested")
		log.Info("sweep: asked GitHub to redeliver", "delivery", guid, "event", hs.latest.Event,
			"attempts", hs.attempts, "last_status", hs.latest.StatusCode)
	}
	return res, nil
}

// deliveriesSince lists the deliveries GitHub made since cutoff, newest first (at most 100 pages).
func deliveriesSince(ctx context.Context, deliveries ports.Deliveries, cutoff time.Time) ([]ports.Delivery, error) {
	var out []ports.Delivery
	cursor := ""
	for page := 0; page < 100; page++ {
		ds, next, err := deliveries.ListDeliveries(ctx, cursor)
		if err != nil {
			return nil, err
		}
		old := false
		for _, d := range ds {
			if d.DeliveredAt.Before(cutoff) {
				old = true
				continue
			}
			out = append(out, d)
		}
		if next == "" || old {
			break
		}
		cursor = next
	}
	return out, nil
}

// HandleSweep runs one sweep.
func (h *Recovery) HandleSweep(ctx context.Context, _ *asynq.Task) error {
	if h.d.Deliveries == nil {
		return nil
	}
	res, err := Sweep(ctx, h.d.Deliveries, time.Now(), h.d.Metrics, h.log)
	if err != nil {
		h.d.Metrics.Job(queue.TypeSweep, metrics.ResultRetry)
		return err
	}
	h.d.Metrics.Job(queue.TypeSweep, metrics.ResultSucceeded)
	if res.Redelivered > 0 || res.GivenUp > 0 {
		b, _ := json.Marshal(res)
		h.log.Info("sweep: done", "result", string(b))
	}
	return nil
}
