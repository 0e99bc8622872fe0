package gh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/akira-bot/akira/runner/backoff"
)

// RetryPolicy says how the transport retries. Zero fields take the defaults.
type RetryPolicy struct {
	// MaxRetries is how many times one request is retried (default 4).
	MaxRetries int
	// BaseDelay is the first backoff for a 5xx answer, doubled on each retry, jittered into its lower
	// half (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps every wait. When GitHub asks for a longer one (Retry-After, a primary rate limit
	// reset) the answer is returned to the caller instead of waiting (default 2m).
	MaxDelay time.Duration
	// SecondaryDelay is the wait after a secondary rate limit that gave no Retry-After; GitHub asks for
	// at least a minute (default 1m).
	SecondaryDelay time.Duration
	// AttemptTimeout bounds one attempt, response body included (default 60s).
	AttemptTimeout time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 2 * time.Minute
	}
	if p.SecondaryDelay <= 0 {
		p.SecondaryDelay = time.Minute
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = 60 * time.Second
	}
	return p
}

// retryTransport retries 5xx answers and rate limits, honouring Retry-After and x-ratelimit-reset, and
// serialises mutating requests: GitHub's guidance for integrations is to make POST, PATCH, PUT and DELETE
// calls one at a time, and secondary rate limits punish concurrent ones.
type retryTransport struct {
	next   http.RoundTripper
	policy RetryPolicy
	sem    chan struct{} // one slot, held for the whole of a mutating request, retries and waits included
	log    *slog.Logger
	// reset forces a new installation token; called once per request on 401 Bad credentials, which is
	// how a token that GitHub revoked or expired early shows itself.
	reset func()
	// limited, when set, is told of each rate limit met and the wait it asks for.
	limited func(wait time.Duration)
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if mutating(req.Method) {
		select {
		case t.sem <- struct{}{}:
			defer func() { <-t.sem }()
		case <-ctx.Done():
			return nil, fmt.Errorf("gh: %s %s: waiting for the installation's previous call: %w", req.Method, req.URL.Path, ctx.Err())
		}
	}
	didReset := false
	for attempt, sent := 0, 0; ; sent++ {
		r, err := t.attemptRequest(req, sent)
		if err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, t.policy.AttemptTimeout)
		resp, err := t.next.RoundTrip(r.WithContext(actx))
		if err != nil {
			cancel()
		} else {
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		}
		replayable := req.Body == nil || req.GetBody != nil
		if resp != nil && resp.StatusCode == http.StatusUnauthorized && !didReset && t.reset != nil && replayable {
			// One retry with a new token; a second 401 is real and goes back to the caller.
			didReset = true
			drain(resp)
			t.log.Info("gh: 401 from GitHub, minting a new installation token", "method", req.Method, "path", req.URL.Path)
			t.reset()
			continue
		}
		wait, why := t.classify(req, resp, err)
		if wait < 0 {
			wait = backoff.Exponential(t.policy.BaseDelay, t.policy.MaxDelay, attempt)
		}
		if t.limited != nil && rateLimited(why) {
			t.limited(wait)
		}
		if why == "" || attempt >= t.policy.MaxRetries || !replayable {
			return resp, err
		}
		if wait > t.policy.MaxDelay {
			t.log.Warn("gh: GitHub asks for a longer wait than allowed, giving up", "method", req.Method,
				"path", req.URL.Path, "reason", why, "wait", wait)
			return resp, err
		}
		if resp != nil {
			drain(resp)
		}
		t.log.Info("gh: retrying", "method", req.Method, "path", req.URL.Path, "reason", why,
			"attempt", attempt+1, "wait", wait)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("gh: %s %s: waiting to retry (%s): %w", req.Method, req.URL.Path, why, err)
		}
		attempt++
	}
}

// attemptRequest returns the request to send: the caller's the first time, a clone with a fresh body
// afterwards (the RoundTripper contract forbids modifying the caller's request).
func (t *retryTransport) attemptRequest(req *http.Request, sent int) (*http.Request, error) {
	if sent == 0 {
		return req, nil
	}
	r := req.Clone(req.Context())
	if req.Body != nil && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("gh: replay request body: %w", err)
		}
		r.Body = body
	}
	return r, nil
}

// rateLimited tells the reasons of classify that are GitHub's rate limits from other retries.
func rateLimited(why string) bool {
	return strings.Contains(why, "rate limit") || why == "status 429"
}

// classify returns why a response should be retried ("" when it should not) and how long to wait (-1 for
// the exponential backoff).
func (t *retryTransport) classify(req *http.Request, resp *http.Response, err error) (time.Duration, string) {
	if err != nil {
		if req.Context().Err() != nil {
			return 0, ""
		}
		// ghinstallation could not mint a token: the API call itself was never sent, so it is safe to
		// retry whatever its method when GitHub answered 5xx.
		var he *ghinstallation.HTTPError
		if errors.As(err, &he) && he.Response != nil {
			if he.Response.StatusCode >= 500 {
				return -1, fmt.Sprintf("token endpoint answered %d", he.Response.StatusCode)
			}
			return 0, "" // 404: no such installation; 401/403: the App's key or access, not a blip
		}
		// A network error on a mutating call may have reached GitHub; retrying could post twice.
		if !mutating(req.Method) {
			return -1, "network error: " + err.Error()
		}
		return 0, ""
	}
	switch resp.StatusCode {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if d, ok := backoff.RetryAfter(resp.Header, time.Now()); ok {
			return d, fmt.Sprintf("status %d", resp.StatusCode)
		}
		return -1, fmt.Sprintf("status %d", resp.StatusCode)
	case http.StatusForbidden, http.StatusTooManyRequests:
		if d, ok := backoff.RetryAfter(resp.Header, time.Now()); ok {
			return d, "secondary rate limit (Retry-After)"
		}
		if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
				return max(0, time.Until(time.Unix(reset, 0))) + time.Second, "primary rate limit exhausted"
			}
		}
		if bodyMentions(resp, "secondary rate limit") {
			return t.policy.SecondaryDelay, "secondary rate limit"
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			return -1, "status 429"
		}
	}
	return 0, ""
}

// bodyMentions peeks at an error body and puts it back for the caller.
func bodyMentions(resp *http.Response, s string) bool {
	if resp.Body == nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), rest), rest}
	if err != nil {
		return false
	}
	return strings.Contains(strings.ToLower(string(data)), s)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

// cancelOnClose ends an attempt's context when the caller is done with the body, not before.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
