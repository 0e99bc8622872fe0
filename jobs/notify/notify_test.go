package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// receiver is a local stand-in for a service: it records each request and answers with status.
type receiver struct {
	*httptest.Server
	reqs   []*http.Request
	bodies [][]byte
	status []int // answered in turn; 200 (204 for discord) once they run out
}

func newReceiver(t *testing.T, ok int, status ...int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.reqs, r.bodies = append(r.reqs, req), append(r.bodies, body)
		code := ok
		if len(r.status) > 0 {
			code, r.status = r.status[0], r.status[1:]
		}
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

var msg = Message{Event: EventEscalation, Time: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), Repo: "octo/demo", RunID: "r-1",
	TaskID: "1.2", Title: "Akira needs a decision on 1.2 in octo/demo", Text: "Task 1.2 (Add <!channel> @everyone) needs a person.",
	URL: "https://github.com/octo/demo/pull/3", Reply: "/akira approve, /akira retry <guidance>, /akira skip or /akira abort"}

func TestSinkPayloads(t *testing.T) {
	ctx := context.Background()
	t.Run("slack", func(t *testing.T) {
		r := newReceiver(t, 200)
		s := Sink{Name: "team", Kind: KindSlack, URL: r.URL + "/services/T0/B0/XYZ"}
		if err := s.Send(ctx, http.DefaultClient, "d1", msg); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(r.bodies[0], &body); err != nil || len(body) != 1 || r.reqs[0].Header.Get("Content-Type") != "application/json" {
			t.Fatalf("slack body %s (%v)", r.bodies[0], err)
		}
		text := body["text"].(string)
		for _, want := range []string{"*Akira needs a decision on 1.2 in octo/demo*", "&lt;!channel&gt;", "<https://github.com/octo/demo/pull/3|Open the pull request>", "/akira retry &lt;guidance&gt;"} {
			if !strings.Contains(text, want) {
				t.Errorf("slack text lacks %q:\n%s", want, text)
			}
		}
	})
	t.Run("discord", func(t *testing.T) {
		r := newReceiver(t, 204)
		s := Sink{Name: "team", Kind: KindDiscord, URL: r.URL + "/api/webhooks/1/tok"}
		if err := s.Send(ctx, http.DefaultClient, "d1", msg); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Content         string `json:"content"`
			AllowedMentions struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}
		if err := json.Unmarshal(r.bodies[0], &body); err != nil || !strings.Contains(body.Content, "**Akira needs a decision") ||
			body.AllowedMentions.Parse == nil || len(body.AllowedMentions.Parse) != 0 {
			t.Fatalf("discord body %s (%v)", r.bodies[0], err)
		}
	})
	t.Run("ntfy", func(t *testing.T) {
		r := newReceiver(t, 200)
		s := Sink{Name: "phone", Kind: KindNtfy, URL: r.URL + "/akira-alerts", Token: "tk_secret"}
		if err := s.Send(ctx, http.DefaultClient, "d1", msg); err != nil {
			t.Fatal(err)
		}
		h := r.reqs[0].Header
		if r.reqs[0].URL.Path != "/akira-alerts" || h.Get("Title") != msg.Title || h.Get("Priority") != "high" ||
			h.Get("Click") != msg.URL || h.Get("Authorization") != "Bearer tk_secret" || h.Get("Tags") != "escalation" {
			t.Errorf("ntfy request %s %v", r.reqs[0].URL.Path, h)
		}
		if !strings.Contains(string(r.bodies[0]), "Reply with: /akira approve") {
			t.Errorf("ntfy body %q", r.bodies[0])
		}
		done := msg
		done.Event = EventRunFinished
		if err := s.Send(ctx, http.DefaultClient, "d2", done); err != nil || r.reqs[1].Header.Get("Priority") != "default" {
			t.Errorf("a finished run is not default priority: %v %v", err, r.reqs[1].Header)
		}
	})
	t.Run("webhook", func(t *testing.T) {
		r := newReceiver(t, 200)
		s := Sink{Name: "pager", Kind: KindWebhook, URL: r.URL + "/hook", Secret: "s3cret"}
		if err := s.Send(ctx, http.DefaultClient, "notify:pager:r-1:escalation:1.2-1", msg); err != nil {
			t.Fatal(err)
		}
		req, body := r.reqs[0], r.bodies[0]
		mac := hmac.New(sha256.New, []byte("s3cret"))
		mac.Write(body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); req.Header.Get("X-Akira-Signature-256") != want {
			t.Errorf("signature %q, want %q", req.Header.Get("X-Akira-Signature-256"), want)
		}
		if req.Header.Get("X-Akira-Event") != "escalation" || req.Header.Get("X-Akira-Delivery") != "notify:pager:r-1:escalation:1.2-1" {
			t.Errorf("headers %v", req.Header)
		}
		var got Message
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || got != msg {
			t.Errorf("payload %s (%v)", body, err)
		}
	})
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retry      bool
		retryAfter time.Duration
	}{{503, true, 0}, {500, true, 0}, {429, true, 7 * time.Second}, {404, false, 0}, {400, false, 0}} {
		r := newReceiver(t, 200, tc.status)
		s := Sink{Name: "team", Kind: KindSlack, URL: r.URL + "/secret-path"}
		err := s.Send(context.Background(), http.DefaultClient, "d", msg)
		se, ok := errors.AsType[*SendError](err)
		if !ok || se.Status != tc.status || se.Retry != tc.retry || se.RetryAfter != tc.retryAfter {
			t.Errorf("HTTP %d: %#v", tc.status, err)
		}
	}
	// No answer: retried, and the URL (a credential) is not in the error.
	s := Sink{Name: "team", Kind: KindSlack, URL: "http://127.0.0.1:1/services/SECRET"}
	err := s.Send(context.Background(), http.DefaultClient, "d", msg)
	if se, ok := errors.AsType[*SendError](err); !ok || !se.Retry || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestSinkValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Sink
		want string
	}{
		{Sink{Kind: "email", URL: "https://x"}, "not slack"},
		{Sink{Kind: KindSlack}, "not an http(s) URL"},
		{Sink{Kind: KindNtfy, URL: "https://ntfy.sh/"}, "name the ntfy topic"},
		{Sink{Kind: KindWebhook, URL: "https://x/hook"}, "needs a secret"},
	} {
		if err := tc.s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}

// TestSlackFieldsStayInPlace: fields written by others (a task title, a failure's reason, the URL
// of a handed-off plan whose path and base branch came through the API) neither start lines of
// their own, nor open a link or a mention, nor leave the one link's target.
func TestSlackFieldsStayInPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
		// link is the one <target|label> link the text must hold ("" for none).
		link string
	}{
		{"mention and a forged line in the title", Message{Title: "Akira needs a decision on 1.2\nReply there with: <!channel> approve",
			Text: "Task 1.2 needs a person.", URL: "https://github.com/octo/demo/pull/3"},
			"https://github.com/octo/demo/pull/3"},
		{"line separators in the text", Message{Title: "t", Text: "Task (x\r\n<!here>\u2028*Reply there with:* /akira approve\u0085end)",
			URL: "https://github.com/octo/demo/pull/3"}, "https://github.com/octo/demo/pull/3"},
		{"a plan path that ends the link and opens another", Message{Title: "t", Text: "x",
			URL: "https://github.com/octo/demo/blob/main/plan|Approve here><!channel><https://evil.example|PR"},
			"https://github.com/octo/demo/blob/main/plan%7CApprove%20here%3E%3C%21channel%3E%3Chttps://evil.example%7CPR"},
		{"a query with & and a space", Message{Title: "t", Text: "x", URL: "https://github.com/octo/demo/pull/3?a=1&b=c d"},
			"https://github.com/octo/demo/pull/3?a=1&amp;b=c%20d"},
		{"not an http URL", Message{Title: "t", Text: "x", URL: "javascript:alert(1)|Open"}, ""},
		{"a newline in the URL", Message{Title: "t", Text: "x", URL: "https://github.com/o/r/pull/3\n<!channel>"}, ""},
		{"a reply with a line break", Message{Title: "t", Text: "x", Reply: "/akira approve\n<!everyone> or else"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, 200)
			s := Sink{Name: "team", Kind: KindSlack, URL: r.URL + "/services/T0/B0/XYZ"}
			if err := s.Send(context.Background(), http.DefaultClient, "d1", tc.m); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(r.bodies[0], &body); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(body.Text, "\n")
			want := 2
			if tc.link != "" {
				want++
			}
			if tc.m.Reply != "" {
				want++
			}
			if len(lines) != want || !strings.HasPrefix(lines[0], "*") || !strings.HasSuffix(lines[0], "*") {
				t.Fatalf("%d lines, want %d (title, text, link, reply):\n%s", len(lines), want, body.Text)
			}
			if tc.m.Reply != "" && (!strings.HasPrefix(lines[want-1], "Reply there with: ") || strings.Count(body.Text, "Reply there with:") != 1) {
				t.Errorf("the reply line is not the last and only one:\n%s", body.Text)
			}
			// The one '<' Slack reads is the link's; every other is escaped as &lt;.
			if n := strings.Count(body.Text, "<"); tc.link == "" && n != 0 || tc.link != "" && n != 1 {
				t.Errorf("%d '<' in the text, want %d:\n%s", n, min(1, len(tc.link)), body.Text)
			}
			if tc.link != "" {
				if want := "<" + tc.link + "|Open the pull request>"; lines[2] != want {
					t.Errorf("link line = %q, want %q", lines[2], want)
				}
			}
			if strings.ContainsAny(body.Text, "\r\u2028\u2029\u0085") {
				t.Errorf("a line break left in the text: %q", body.Text)
			}
		})
	}
}
