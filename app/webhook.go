package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// Results reported in the JSON body of every webhook answer, and in the result label of its metric.
const (
	resultAccepted     = "accepted"     // an intake task is queued
	resultIgnored      = "ignored"      // nothing Akira acts on; the reason says why
	resultAcknowledged = "acknowledged" // ping, installation: nothing to do but say so
	resultRejected     = "rejected"     // not from GitHub, or malformed
	resultUnavailable  = "unavailable"  // the queue did not take the task
)

// answer is the webhook server's answer to one delivery.
type answer struct {
	status int
	result string
	reason string
	err    error // logged, never sent
}

func accepted(reason string) answer { return answer{http.StatusAccepted, resultAccepted, reason, nil} }
func ignored(reason string) answer  { return answer{http.StatusOK, resultIgnored, reason, nil} }
func rejected(status int, reason string) answer {
	return answer{status, resultRejected, reason, nil}
}

// unavailable is a failure of the queue: a 503 GitHub records as a failed delivery, which can be
// redelivered.
func unavailable(reason string, err error) answer {
	return answer{http.StatusServiceUnavailable, resultUnavailable, reason, err}
}

// deliveryKey holds the *delivery in the gin context, for the recovery middleware's log line.
const deliveryKey = "akira.delivery"

// delivery is one webhook being handled.
type delivery struct {
	id    string
	event string
	env   envelope
	ev    any // the decoded payload (*issueCommentEvent, ...), nil for events Akira does not act on
}

// deliveryAttrs are the four fields every intake log line has, empty until they are known. They are
// put on the one line a delivery logs rather than on a logger made for it (slog.With copies them
// for every delivery, logged or not).
func deliveryAttrs(id, event string, installation int64, repo string) []any {
	return []any{"delivery", id, "event", event, "installation", installation, "repo", repo}
}

func (d *delivery) attrs() []any {
	return deliveryAttrs(d.id, d.event, d.env.installationID(), d.env.repoFullName())
}

func (s *server) webhook(c *gin.Context) {
	start := time.Now()
	r := c.Request
	d := &delivery{id: r.Header.Get("X-GitHub-Delivery"), event: r.Header.Get("X-GitHub-Event")}
	c.Set(deliveryKey, d)
	ans := s.intake(r, c.Writer, d)
	if r.ContentLength > largeBody {
		// The body is garbage now. Left to the runtime, the memory of a few large bodies stays with
		// the process for minutes (the heap goal doubles with them); given back at once, a stream of
		// large malformed deliveries cannot grow the process. Large deliveries are rare (big pushes).
		debug.FreeOSMemory()
	}
	s.respond(c, d, ans)
	if s.obs != nil {
		s.obs(metricEvent(d.event), ans.result, time.Since(start))
	}
}

// metricEvent bounds the event label of metrics to the events GitHub sends an App like Akira.
func metricEvent(event string) string {
	switch event {
	case "issue_comment", "push", "pull_request", "check_run", "check_suite", "installation",
		"installation_repositories", "ping", "issues", "pull_request_review", "pull_request_review_comment",
		"pull_request_review_thread":
		return event
	}
	return "other"
}

func (s *server) intake(r *http.Request, w http.ResponseWriter, d *delivery) answer {
	// A missing or malformed signature is refused before the body is read into memory.
	sig, reason := signatureOf(r.Header)
	if sig == nil {
		return rejected(http.StatusUnauthorized, reason)
	}
	// The signature covers the whole body, so the body is in memory before anything says it is
	// GitHub's: what anyone can make the server hold is bounded by the room for unverified bodies,
	// taken for the length declared before a byte is read, and given back once the signature is
	// checked. GitHub always declares the length; a body without one would have to be read to learn it.
	switch {
	case r.ContentLength < 0:
		return rejected(http.StatusLengthRequired, "Content-Length is required")
	case r.ContentLength > s.cfg.MaxBodyBytes:
		return rejected(http.StatusRequestEntityTooLarge, "body larger than GitHub's 25 MB cap")
	}
	if !s.unverified.TryAcquire(r.ContentLength) {
		wait, cancel := context.WithTimeout(r.Context(), s.cfg.BodyWait)
		err := s.unverified.Acquire(wait, r.ContentLength)
		cancel()
		if err != nil {
			return unavailable("too many deliveries being read at once", err)
		}
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	verified := err == nil && s.signatureMatches(sig, body)
	s.unverified.Release(r.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return rejected(http.StatusRequestEntityTooLarge, "body larger than GitHub's 25 MB cap")
		}
		return rejected(http.StatusBadRequest, "could not read body")
	}
	if !verified {
		return rejected(http.StatusUnauthorized, "signature does not match")
	}
	if d.event == "" {
		return rejected(http.StatusBadRequest, "missing X-GitHub-Event header")
	}
	if d.id == "" {
		return rejected(http.StatusBadRequest, "missing X-GitHub-Delivery header")
	}
	payload, err := payloadOf(r.Header.Get("Content-Type"), body)
	if err != nil {
		return rejected(http.StatusBadRequest, err.Error())
	}
	if d.env, d.ev, err = decodeEvent(d.event, payload); err != nil {
		return rejected(http.StatusBadRequest, err.Error())
	}

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.EnqueueTimeout)
	defer cancel()
	return s.route(ctx, d)
}

// largeBody is the size above which a delivery's memory is given back to the system when it is done.
const largeBody = 4 << 20

// readBody reads a webhook body of at most max bytes, of a declared length, into one buffer of that
// size: growing a buffer while reading would allocate about twice the body, and a fuzzer's large
// bodies would leave the process that much bigger.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max || r.ContentLength < 0 {
		return nil, &http.MaxBytesError{Limit: max}
	}
	rd := http.MaxBytesReader(w, r.Body, max)
	// net/http stops the body at its Content-Length, so the buffer cannot overflow.
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(rd, body); err != nil {
		return nil, err
	}
	return body, nil
}

// signatureOf reads X-Hub-Signature-256, or says what is wrong with it. The SHA-1 X-Hub-Signature alone
// is not enough: GitHub sends both, and SHA-1 is only there for old receivers.
func signatureOf(h http.Header) ([]byte, string) {
	sig := h.Get("X-Hub-Signature-256")
	if sig == "" {
		if h.Get("X-Hub-Signature") != "" {
			return nil, "X-Hub-Signature-256 is required; SHA-1 signatures are not accepted"
		}
		return nil, "missing X-Hub-Signature-256 header"
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return nil, "X-Hub-Signature-256 is not sha256=<64 hex digits>"
	}
	return got, ""
}

// signatureMatches checks the signature over the raw body in constant time.
func (s *server) signatureMatches(sig, body []byte) bool {
	mac := hmac.New(sha256.New, s.cfg.WebhookSecret)
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// payloadOf returns the JSON payload: the body itself, or its payload field when the webhook was set up
// with the form content type.
func payloadOf(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || !form.Has("payload") {
		return nil, errors.New("form body without a payload field")
	}
	return []byte(form.Get("payload")), nil
}

func (s *server) respond(c *gin.Context, d *delivery, out answer) {
	level := slog.LevelInfo
	switch {
	case out.status >= 500:
		level = slog.LevelError
	case out.status >= 400:
		level = slog.LevelWarn
	}
	if s.log.Enabled(c.Request.Context(), level) {
		attrs := append(d.attrs(), "status", out.status, "result", out.result, "reason", out.reason, "action", d.env.Action)
		if out.err != nil {
			attrs = append(attrs, "err", out.err.Error())
		}
		s.log.Log(c.Request.Context(), level, "webhook handled", attrs...)
	}
	c.JSON(out.status, ackBody{Result: out.result, Reason: out.reason})
}

// ackBody is the JSON answer to a delivery: a struct, not a map, so that encoding it neither sorts
// keys nor reflects over a map for each delivery.
type ackBody struct {
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
}
