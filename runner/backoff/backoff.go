// Package backoff holds the one retry-timing policy of Akira's HTTP clients: how long to wait before
// retrying (exponential with jitter, or what the server asked for in Retry-After), and a wait that
// ends with its context. The GitHub transport (app/gh) and the LLM providers' client
// (runner/agent/llm) both use it, so a rate limit is read the same way wherever it comes from.
package backoff

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Exponential is the wait before retry number attempt (0 for the first retry): base doubled each
// time, capped at maxDelay, then jittered into [d/2, d] so that several workers that failed together
// do not retry in step, and so that no retry comes back instantly.
func Exponential(base, maxDelay time.Duration, attempt int) time.Duration {
	d := base << min(max(attempt, 0), 20)
	if d <= 0 || d > maxDelay {
		d = maxDelay
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// RetryAfter reads how long a server asked the client to wait: Retry-After-Ms (OpenAI's, more
// precise) or Retry-After, in seconds (fractions allowed) or as an HTTP date, relative to now. ok is
// false when the answer carries no usable hint.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Sleep waits d, or returns the context's error as soon as it ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
