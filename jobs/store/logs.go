package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/runner/timeline"
)

// An attempt's log is everything its agent printed and its verification commands wrote, kept after
// the workspace is gone: check runs show only the end. Logs are capped, compressed, masked and expire.
const (
	// MaxLogBytes caps one attempt's log before compression; the middle goes.
	MaxLogBytes = 2 << 20
	// DefaultLogRetention is how long logs are kept when the operator sets nothing.
	DefaultLogRetention = 14 * 24 * time.Hour
)

// ErrNoLog is returned for an attempt without a kept log (never written, or expired).
var ErrNoLog = errors.New("jobs: no log")

func (s *Logs) logKey(runID, taskID string, attempt int) string {
	return s.prefix + "log:" + runID + ":" + taskID + ":" + strconv.Itoa(attempt)
}

// SaveLog keeps an attempt's log for retention, masked with mask first.
func (s *Logs) SaveLog(ctx context.Context, runID, taskID string, attempt int, text string, retention time.Duration) error {
	if len(text) > MaxLogBytes {
		half := MaxLogBytes / 2
		text = text[:half] + fmt.Sprintf("\n[… %d bytes not kept …]\n", len(text)-MaxLogBytes) + text[len(text)-half:]
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, text); err != nil {
		return fmt.Errorf("jobs: log: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("jobs: log: %w", err)
	}
	if retention <= 0 {
		retention = DefaultLogRetention
	}
	if err := s.rdb.Set(ctx, s.logKey(runID, taskID, attempt), b.Bytes(), retention).Err(); err != nil {
		return fmt.Errorf("jobs: log: %w", err)
	}
	return nil
}

// Log reads an attempt's log.
func (s *Logs) Log(ctx context.Context, runID, taskID string, attempt int) (string, error) {
	data, err := s.rdb.Get(ctx, s.logKey(runID, taskID, attempt)).Bytes()
	if errors.Is(err, redis.Nil) {
		return "", ErrNoLog
	}
	if err != nil {
		return "", fmt.Errorf("jobs: log: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("jobs: log: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxLogBytes+1<<10))
	if err != nil {
		return "", fmt.Errorf("jobs: log: %w", err)
	}
	return string(out), nil
}

// Masker replaces the secrets Akira knows (API keys, tokens, webhook secrets) in what it keeps:
// the one masker of logs and timelines alike (package timeline's).
type Masker = timeline.Masker

// NewMasker masks each secret of at least 6 characters (shorter ones would mask ordinary words).
func NewMasker(secrets ...string) *Masker { return timeline.NewMasker(secrets...) }
