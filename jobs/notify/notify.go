// Package notify sends Akira's notifications to the places on-call people watch: Slack and Discord
// incoming webhooks, ntfy (phone push) and a generic JSON webhook signed with HMAC-SHA256. Each sink
// speaks its service's documented protocol; which events go where is decided by the caller.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/akira-bot/akira/runner/config"
)

// Kinds of sink.
const (
	KindSlack   = "slack"
	KindDiscord = "discord"
	KindNtfy    = "ntfy"
	KindWebhook = "webhook"
)

// Events a sink may receive.
const (
	EventEscalation    = "escalation"
	EventRunFinished   = "run_finished"
	EventRunFailed     = "run_failed"
	EventBudgetReached = "budget_reached"
	EventStalled       = "stalled"
	// EventSpendWarning: an installation's month has spent 80% of its cap (once a month).
	EventSpendWarning = "spend_warning"
)

// Events lists every event, in the order the README documents them.
var Events = []string{EventEscalation, EventRunFinished, EventRunFailed, EventBudgetReached, EventStalled, EventSpendWarning}

// Message is one notification. It is also the body of a generic webhook (see Payload).
type Message struct {
	Event  string    `json:"event"`
	Time   time.Time `json:"time"`
	Repo   string    `json:"repo"`
	RunID  string    `json:"run_id"`
	TaskID string    `json:"task_id,omitempty"`
	// Title is one line; Text says what happened and what to do.
	Title string `json:"title"`
	Text  string `json:"text"`
	// URL is the pull request (or issue) to go to; Reply is what a person may answer there.
	URL   string `json:"url,omitempty"`
	Reply string `json:"reply,omitempty"`
}

// Urgent says the message asks a person to act.
func (m Message) Urgent() bool {
	return m.Event == EventEscalation || m.Event == EventBudgetReached || m.Event == EventStalled
}

// Sink is one destination the operator configured.
type Sink struct {
	Name string
	Kind string
	// URL is the incoming webhook (Slack, Discord, webhook) or the ntfy server with its topic
	// (https://ntfy.sh/akira-alerts).
	URL string
	// Token is ntfy's access token; Secret signs generic webhooks.
	Token  string
	Secret string
}

// Validate says what is wrong with a sink's configuration.
func (s Sink) Validate() error {
	switch s.Kind {
	case KindSlack, KindDiscord, KindNtfy, KindWebhook:
	default:
		return fmt.Errorf("kind %q is not slack, discord, ntfy or webhook", s.Kind)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("url: not an http(s) URL (set url or url_env)")
	}
	if s.Kind == KindNtfy && strings.Trim(u.Path, "/") == "" {
		return errors.New("url: name the ntfy topic, e.g. https://ntfy.sh/akira-alerts")
	}
	if s.Kind == KindWebhook && s.Secret == "" {
		return errors.New("secret_env: a generic webhook is signed, so it needs a secret")
	}
	return nil
}

// SendError is a delivery the service refused or did not answer.
type SendError struct {
	Sink   string
	Status int // 0 when no answer came
	// Retry says a later try may succeed (5xx, 429, no answer); RetryAfter is the service's own wait.
	Retry      bool
	RetryAfter time.Duration
	Msg        string
}

func (e *SendError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("notify %s: %s", e.Sink, e.Msg)
	}
	return fmt.Sprintf("notify %s: HTTP %d: %s", e.Sink, e.Status, e.Msg)
}

// Send delivers m. delivery identifies the notification (the generic webhook's X-Akira-Delivery), so a
// receiver can drop a retried duplicate.
func (s Sink) Send(ctx context.Context, client *http.Client, delivery string, m Message) error {
	req, err := s.request(ctx, delivery, m)
	if err != nil {
		return fmt.Errorf("notify %s: %w", s.Name, err)
	}
	req.Header.Set("User-Agent", "Akira")
	resp, err := client.Do(req)
	if err != nil {
		// The URL is a credential (Slack, Discord): never let it into an error.
		return &SendError{Sink: s.Name, Retry: true, Msg: "no answer: " + redactURL(err.Error(), s.URL)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &SendError{Sink: s.Name, Status: resp.StatusCode, Msg: strings.TrimSpace(string(body)),
		Retry: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
	if secs, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs * float64(time.Second))
	}
	return e
}

func redactURL(s, u string) string {
	if u == "" {
		return s
	}
	return strings.ReplaceAll(s, u, "[sink url]")
}

func (s Sink) request(ctx context.Context, delivery string, m Message) (*http.Request, error) {
	switch s.Kind {
	case KindSlack:
		// Incoming webhooks take {"text"} in Slack's mrkdwn: <url|label> links, *bold*. Each field
		// holds text others wrote (task titles, a handed-off plan's path and base branch in the URL),
		// so each stays on its own line and none can open a link or a mention.
		text := fmt.Sprintf("*%s*\n%s", slackLine(m.Title), slackLine(m.Text))
		if link := slackLink(m.URL); link != "" {
			text += "\n<" + link + "|Open the pull request>"
		}
		if m.Reply != "" {
			text += "\nReply there with: " + slackLine(m.Reply)
		}
		return jsonRequest(ctx, s.URL, map[string]any{"text": text})
	case KindDiscord:
		content := fmt.Sprintf("**%s**\n%s", m.Title, m.Text)
		if m.URL != "" {
			content += "\n<" + m.URL + ">"
		}
		if m.Reply != "" {
			content += "\nReply there with: " + m.Reply
		}
		if r := []rune(content); len(r) > 2000 { // Discord's limit for content
			content = string(r[:1999]) + "…"
		}
		// No mention may ping anyone: the text holds task titles written by others.
		return jsonRequest(ctx, s.URL, map[string]any{"content": content, "allowed_mentions": map[string]any{"parse": []string{}}})
	case KindNtfy:
		body := m.Text
		if m.Reply != "" {
			body += "\nReply with: " + m.Reply
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Title", headerSafe(m.Title))
		req.Header.Set("Tags", m.Event)
		req.Header.Set("Priority", "default")
		if m.Urgent() {
			req.Header.Set("Priority", "high")
		}
		if m.URL != "" {
			req.Header.Set("Click", m.URL)
		}
		if s.Token != "" {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
		return req, nil
	case KindWebhook:
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Akira-Event", m.Event)
		req.Header.Set("X-Akira-Delivery", delivery)
		req.Header.Set("X-Akira-Signature-256", Sign(s.Secret, data))
		return req, nil
	}
	return nil, fmt.Errorf("kind %q is not slack, discord, ntfy or webhook", s.Kind)
}

// Sign is the X-Akira-Signature-256 of a generic webhook's body: "sha256=" and the hex HMAC-SHA256
// of the body with the sink's secret, as GitHub signs its own webhooks.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func jsonRequest(ctx context.Context, u string, v any) (*http.Request, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// slackLine is a field as one line of Slack mrkdwn text: the three characters Slack gives meaning to
// are escaped as Slack documents (so a task title cannot make a link or a mention such as
// <!channel>), and line breaks and other control characters become spaces (so it cannot start a
// line of its own that reads as Akira's, "Reply there with: ...").
func slackLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// slackLink is the URL as the target of a <url|label> link, or "" when it is not an http(s) URL.
// Inside the brackets '|' would end the target and start the label, and '>' the link itself, so
// both are percent-encoded, with '<', spaces and anything outside printable ASCII; '&' is written
// &amp; as Slack wants it.
func slackLink(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	var b strings.Builder
	for _, c := range []byte(u.String()) {
		switch {
		case c == '&':
			b.WriteString("&amp;")
		case c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '|' || c == '"':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// headerSafe keeps a header value on one line of printable ASCII (ntfy reads UTF-8 titles only
// RFC 2047-encoded; plain ASCII is what every proxy passes).
func headerSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// Sinks resolves the operator's notification sinks: URLs, tokens and secrets come from the
// environment variables the configuration names, and each sink is checked as its service needs.
func Sinks(n config.Notify, getenv func(string) string) (map[string]Sink, error) {
	sinks := map[string]Sink{}
	var errs []error
	for name, c := range n.Sinks {
		s := Sink{Name: name, Kind: c.Kind, URL: c.URL}
		if c.URLEnv != "" {
			s.URL = getenv(c.URLEnv)
		}
		if c.TokenEnv != "" {
			s.Token = getenv(c.TokenEnv)
		}
		if c.SecretEnv != "" {
			s.Secret = getenv(c.SecretEnv)
		}
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("notify.sinks.%s: %w", name, err))
		}
		sinks[name] = s
	}
	return sinks, errors.Join(errs...)
}
