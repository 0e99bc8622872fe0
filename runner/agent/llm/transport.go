package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/backoff"
)

// Why a hand-written client over net/http and not the official SDKs (openai-go, anthropic-sdk-go):
//   - The SDKs bring their own retry loops (2 retries by default, their own backoff and Retry-After
//     rules) that would sit under ours; the issue asks for exact control of retries, Retry-After
//     capping against the attempt's deadline, and no retry on 4xx, which is simplest to get right,
//     and to test, when there is only one loop.
//   - OpenAI-compatible servers (Ollama, vLLM, LiteLLM, OpenRouter, Azure) differ in small ways
//     (max_tokens vs max_completion_tokens, api-key header, arguments sent as an object, error bodies
//     that are plain strings) that are easier to tolerate on hand-written structs than through an
//     SDK's strict generated types.
//   - We use one endpoint per provider and a handful of fields; two small files of wire structs
//     are less code than adapting two SDKs, and keep runner/ on the standard library as DESIGN.md asks.
//   - Tests drive the real wire protocol through httptest servers either way.

// maxResponseBytes bounds what is read from a provider; a chat completion is far smaller.
const maxResponseBytes = 32 << 20

// APIError is a provider's error response (after any retries).
type APIError struct {
	Provider   string // "openai" or "anthropic"
	StatusCode int
	// Type is the provider's error type (e.g. "invalid_request_error", "rate_limit_error").
	Type string
	// Code is OpenAI's error code, or Anthropic's error.details.error_code, when present.
	Code    string
	Message string
	// Retries is how many times the request was retried before giving up.
	Retries int
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Provider, e.StatusCode)
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Code != "" && e.Code != e.Type {
		b.WriteString(" (" + e.Code + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Retries > 0 {
		fmt.Fprintf(&b, " (after %d retries)", e.Retries)
	}
	return b.String()
}

// retryPolicy says how transient failures are retried.
type retryPolicy struct {
	maxRetries int
	// baseDelay and maxDelay bound the exponential backoff (with full jitter) used when the
	// server gives no Retry-After.
	baseDelay, maxDelay time.Duration
	// maxRetryAfter caps a server's Retry-After: a provider asking for an hour is treated as a
	// failure of this attempt rather than a reason to hold a worker.
	maxRetryAfter time.Duration
	// sleep waits d or until ctx ends; tests replace it to record the waits instead of taking them.
	sleep func(ctx context.Context, d time.Duration) error
}

func defaultRetryPolicy() retryPolicy {
	return retryPolicy{maxRetries: 5, baseDelay: time.Second, maxDelay: 30 * time.Second, maxRetryAfter: 60 * time.Second, sleep: backoff.Sleep}
}

// httpClient posts JSON to one provider with retries.
type httpClient struct {
	provider string
	client   *http.Client
	// secret is removed from every error text, whatever the server echoes back.
	secret string
	retry  retryPolicy
	log    *slog.Logger
	// parseError turns an error response body into an APIError (without Provider and StatusCode).
	parseError func(body []byte) *APIError
}

func (c *httpClient) redact(s string) string {
	if c.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, c.secret, "[redacted]")
}

// postJSON sends in to url and decodes a 2xx answer into out. 408, 409, 429 and 5xx (529 included)
// are retried with Retry-After or backoff; other 4xx are returned at once because they will not change.
func (c *httpClient) postJSON(ctx context.Context, url string, header http.Header, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", c.provider, err)
	}
	for retry := 0; ; retry++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s: build request: %w", c.provider, err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")

		var (
			lastErr    error
			retryable  bool
			retryAfter time.Duration
			hasAfter   bool
		)
		resp, err := c.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", c.provider, ctx.Err())
			}
			lastErr = fmt.Errorf("%s: %s", c.provider, c.redact(err.Error()))
			retryable = true
		} else {
			data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
			resp.Body.Close()
			switch {
			case rerr != nil && ctx.Err() != nil:
				return fmt.Errorf("%s: %w", c.provider, ctx.Err())
			case rerr != nil:
				lastErr = fmt.Errorf("%s: read response: %s", c.provider, c.redact(rerr.Error()))
				retryable = true
			case resp.StatusCode >= 200 && resp.StatusCode < 300:
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("%s: decode response: %w (body starts %q)", c.provider, err, snippet(c.redact(string(data)), 200))
				}
				return nil
			default:
				apiErr := c.parseError(data)
				apiErr.Provider, apiErr.StatusCode, apiErr.Retries = c.provider, resp.StatusCode, retry
				apiErr.Message = c.redact(apiErr.Message)
				if apiErr.Message == "" && apiErr.Type == "" {
					apiErr.Message = snippet(c.redact(strings.TrimSpace(string(data))), 500)
				}
				lastErr = apiErr
				retryable = retryableStatus(resp.StatusCode, apiErr)
				// The providers' own hint wins over our status rules, as in their SDKs.
				switch resp.Header.Get("X-Should-Retry") {
				case "true":
					retryable = true
				case "false":
					retryable = false
				}
				retryAfter, hasAfter = backoff.RetryAfter(resp.Header, time.Now())
			}
		}
		if !retryable || retry >= c.retry.maxRetries {
			return lastErr
		}
		wait := backoff.Exponential(c.retry.baseDelay, c.retry.maxDelay, retry)
		if hasAfter {
			wait = min(retryAfter, c.retry.maxRetryAfter)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("%w (not retried: waiting %s would pass the deadline)", lastErr, wait.Round(time.Millisecond))
		}
		c.log.Warn("llm request failed, retrying", "provider", c.provider, "retry", retry+1, "wait", wait, "error", lastErr)
		if err := c.retry.sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w (while waiting to retry after: %v)", c.provider, err, lastErr)
		}
	}
}

func retryableStatus(status int, e *APIError) bool {
	switch {
	case status == http.StatusTooManyRequests:
		// A spent quota answers 429 too, but waiting will not refill it.
		return e.Code != "insufficient_quota" && e.Type != "insufficient_quota" && e.Code != "enforced_spend_limit_reached"
	case status == http.StatusRequestTimeout, status == http.StatusConflict:
		return true
	case status >= 500: // includes Anthropic's 529 overloaded_error
		return true
	}
	return false
}

func snippet(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// jsonString renders a JSON scalar (string, number) as text; error codes are strings in OpenAI's
// API but numbers on some compatible servers.
func jsonString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

var errEmptyResponse = errors.New("response has no choices")
