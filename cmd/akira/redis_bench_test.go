package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkRedisGate: what the lost/back gate adds to each log line of akira serve, against the JSON
// handler alone: an ordinary line (looked at, written) and a poller's connection error while Redis
// is lost (held, not written).
func BenchmarkRedisGate(b *testing.B) {
	base := slog.NewJSONHandler(io.Discard, nil)
	w := &redisWatch{ping: func(context.Context) error { return nil }, addr: "127.0.0.1:6379", log: slog.New(base)}
	connErr := errors.New("UNKNOWN: redis eval error: dial tcp 127.0.0.1:6379: connect: connection refused")
	for _, bc := range []struct {
		name string
		log  *slog.Logger
		down bool
		err  error
	}{
		{"json alone, ordinary line", slog.New(base), false, errors.New("gh: 502 from GitHub")},
		{"gated, ordinary line", slog.New(w.Handler(base)), false, errors.New("gh: 502 from GitHub")},
		{"gated, held while lost", slog.New(w.Handler(base)), true, connErr},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w.mu.Lock()
			w.down = bc.down
			w.mu.Unlock()
			for b.Loop() {
				bc.log.Warn("reaper: sweep", "component", "asynq", "err", bc.err)
			}
		})
	}
}
