package egress_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/runner/egress"
)

// provider is a scripted model provider that keeps every request's method and request line exactly
// as it arrived. Its model calls answer as the real APIs do, stating their usage; every other path
// answers 200 with what a paid endpoint that states no tokens returns (an id), so that a call
// forwarded there would look like a success to the agent.
type provider struct {
	srv  *httptest.Server
	port int

	mu   sync.Mutex
	seen []string // "METHOD request-uri" of the requests received whole
	keys []string
	cut  int // requests whose body ended early
	// overrides are the headers received that some servers read as another method or path.
	overrides []string
}

func newProvider(t *testing.T, protocol string) *provider {
	t.Helper()
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			// A body cut short is no request a provider acts on.
			p.mu.Lock()
			p.cut++
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.RequestURI)
		p.keys = append(p.keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
		for _, h := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override", "X-Original-Url", "X-Rewrite-Url",
			"X-Original-Uri", "X-Forwarded-Prefix", "X-Forwarded-Path"} {
			if v := r.Header.Get(h); v != "" {
				p.overrides = append(p.overrides, h+": "+v)
			}
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch path := r.URL.Path; {
		case r.Method == http.MethodPost && path == "/v1/messages" && protocol == egress.ProtocolAnthropic:
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1000,"output_tokens":100}}`)
		case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
			fmt.Fprint(w, `{"input_tokens":10}`)
		case r.Method == http.MethodPost && path == "/v1/chat/completions":
			fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
		case r.Method == http.MethodPost && path == "/v1/responses":
			fmt.Fprint(w, `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[],"usage":{"input_tokens":1000,"output_tokens":100}}`)
		case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/models"):
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		default:
			fmt.Fprint(w, `{"id":"file-abc123","object":"file","status":"processed"}`)
		}
	}))
	t.Cleanup(p.srv.Close)
	p.port = p.srv.Listener.Addr().(*net.TCPAddr).Port
	return p
}

// base is the provider's endpoint as an operator configures it: OpenAI's base URL holds /v1,
// Anthropic's does not.
func (p *provider) base(protocol string) string {
	if protocol == egress.ProtocolOpenAI {
		return p.srv.URL + "/v1"
	}
	return p.srv.URL
}

func (p *provider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// rawCall sends a request line exactly as written (no client cleans or re-escapes it) to the
// session, with the placeholder in the protocol's header, and returns the answer.
func rawCall(t *testing.T, s *egress.Session, protocol, method, target string) (int, http.Header, string) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := "X-Api-Key: " + s.Placeholder()
	if protocol == egress.ProtocolOpenAI {
		key = "Authorization: Bearer " + s.Placeholder()
	}
	body := ""
	if method == http.MethodPost {
		body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, target, s.Addr(), key, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func openRoute(t *testing.T, protocol, base string, extra ...egress.Route) *egress.Session {
	t.Helper()
	s, err := egress.New(egress.Config{}).Open(egress.SessionConfig{TCP: true, Model: &egress.Model{Protocol: protocol, BaseURL: base,
		Key: "sk-real", KeyVar: "K", BaseURLVar: "B", Price: price, ExtraRoutes: extra}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checkRefused checks that a call was refused in the provider's own error shape (which the CLI
// shows the agent), naming the call, and that nothing of it reached the provider.
func checkRefused(t *testing.T, protocol string, code int, h http.Header, body, shown string) {
	t.Helper()
	if code != http.StatusForbidden || h.Get("X-Akira-Egress") != "refused" {
		t.Errorf("status %d, X-Akira-Egress %q: want 403 refused (%s)", code, h.Get("X-Akira-Egress"), body)
	}
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type != "permission_error" ||
		(protocol == egress.ProtocolAnthropic) != (e.Type == "error") {
		t.Errorf("the refusal is not the %s API's error shape: %s", protocol, body)
	}
	if !strings.Contains(e.Error.Message, "akira egress proxy") || !strings.Contains(e.Error.Message, shown) || !strings.Contains(e.Error.Message, "api_paths") {
		t.Errorf("the refusal does not say what was refused (%s) and how to allow it: %q", shown, e.Error.Message)
	}
}

// The model route forwards only what the meter can count: every endpoint family a provider bills
// (or that shows the account) without stating tokens in its answer is refused, whatever the
// method, nothing of it reaches the provider, and each refusal is in the session's report with its
// method and path, so that the attempt's report shows it. Every metered call still goes through,
// exactly as asked (query included) with the real key, and is metered; the free ones (token counts,
// model lists) pass unmetered.
func TestModelRouteRefusesWhatItCannotMeter(t *testing.T) {
	forwarded := map[string]struct {
		calls, want []string // METHOD path relative to the base URL; what the provider saw
		metered     int
	}{
		egress.ProtocolAnthropic: {
			[]string{"POST /v1/messages", "POST /v1/messages?beta=true", "POST /v1/messages/count_tokens?beta=true", "GET /v1/models", "GET /v1/models/claude-sonnet-4-5"},
			[]string{"POST /v1/messages", "POST /v1/messages?beta=true", "POST /v1/messages/count_tokens?beta=true", "GET /v1/models", "GET /v1/models/claude-sonnet-4-5"}, 2},
		egress.ProtocolOpenAI: {
			[]string{"POST /chat/completions", "POST /responses", "GET /models?client_version=0.169.0", "GET /models/gpt-5"},
			[]string{"POST /v1/chat/completions", "POST /v1/responses", "GET /v1/models?client_version=0.169.0", "GET /v1/models/gpt-5"}, 2},
	}
	refused := map[string][]string{
		egress.ProtocolAnthropic: {
			"POST /v1/messages/batches", "GET /v1/messages/batches", "GET /v1/messages/batches/msgbatch_01/results",
			"POST /v1/messages/batches/msgbatch_01/cancel", "POST /v1/files", "GET /v1/files", "GET /v1/files/file_01/content",
			"DELETE /v1/files/file_01", "POST /v1/complete", "POST /v1/skills", "GET /v1/organizations/api_keys",
			"GET /v1/organizations/usage_report/messages", "GET /v1/organizations/cost_report", "POST /v1/organizations/invites",
			"POST /v1/messages/cache_touch", "POST /v1/sessions", "POST /v1/agents", "GET /api/oauth/profile",
			// The metered paths with methods they do not take.
			"GET /v1/messages", "PUT /v1/messages", "DELETE /v1/models/claude-sonnet-4-5", "POST /v1/models",
			"GET /v1/messages/count_tokens", "HEAD /v1/models",
		},
		egress.ProtocolOpenAI: {
			"POST /images/generations", "POST /images/edits", "POST /audio/speech", "POST /audio/transcriptions",
			"POST /embeddings", "POST /moderations", "POST /completions", "POST /fine_tuning/jobs", "GET /fine_tuning/jobs",
			"POST /batches", "GET /batches", "POST /files", "GET /files", "GET /files/file-abc/content", "POST /uploads",
			"POST /vector_stores", "POST /assistants", "POST /threads/runs", "POST /realtime/sessions",
			"POST /realtime/client_secrets", "POST /videos", "POST /containers", "GET /organization/costs",
			"GET /organization/admin_api_keys", "GET /responses/resp_01", "DELETE /responses/resp_01",
			"POST /responses/resp_01/cancel", "GET /responses/resp_01/input_items", "POST /responses/compact",
			"GET /chat/completions", "GET /chat/completions/chatcmpl-1", "POST /chat/completions/chatcmpl-1",
			"POST /conversations", "DELETE /models/ft:gpt-4o:acme:x:abc", "POST /models",
		},
	}
	for _, protocol := range []string{egress.ProtocolAnthropic, egress.ProtocolOpenAI} {
		t.Run(protocol, func(t *testing.T) {
			up := newProvider(t, protocol)
			s := openRoute(t, protocol, up.base(protocol))
			for _, call := range refused[protocol] {
				method, path, _ := strings.Cut(call, " ")
				code, h, body := rawCall(t, s, protocol, method, egress.ModelPath+path)
				if method == http.MethodHead { // an answer without a body
					if code != http.StatusForbidden || h.Get("X-Akira-Egress") != "refused" {
						t.Errorf("%s: %d", call, code)
					}
					continue
				}
				checkRefused(t, protocol, code, h, body, path)
			}
			if got := up.requests(); len(got) != 0 {
				t.Errorf("the provider got %q", got)
			}
			fw := forwarded[protocol]
			for _, call := range fw.calls {
				method, path, _ := strings.Cut(call, " ")
				if code, _, body := rawCall(t, s, protocol, method, egress.ModelPath+path); code != http.StatusOK {
					t.Errorf("%s: %d %s", call, code, body)
				}
			}
			if got := up.requests(); strings.Join(got, "\n") != strings.Join(fw.want, "\n") {
				t.Errorf("the provider got %q, want %q", got, fw.want)
			}
			for _, k := range up.keys {
				if k != "sk-real" && k != "Bearer sk-real" {
					t.Errorf("the provider got the key %q", k)
				}
			}
			rep := s.Close()
			if rep.Calls != fw.metered || rep.Tokens.Input != int64(fw.metered)*1000 || rep.Tokens.Output != int64(fw.metered)*100 || rep.Estimated {
				t.Errorf("report = %+v, want the %d metered calls and nothing else", rep, fw.metered)
			}
			if want, _ := price("m", egress.Tokens{Input: int64(fw.metered) * 1000, Output: int64(fw.metered) * 100}); rep.CostUSD != want {
				t.Errorf("cost = %v, want %v", rep.CostUSD, want)
			}
			listed := map[string]egress.Blocked{}
			for _, b := range rep.Blocked {
				listed[b.Method+" "+b.Path] = b
			}
			for _, call := range refused[protocol] {
				b, ok := listed[call]
				if !ok {
					t.Errorf("%s is not in the report: %+v", call, rep.Blocked)
					continue
				}
				if b.Host != "127.0.0.1" || b.Port != up.port || b.Count != 1 || b.Reason != egress.ReasonUnmetered {
					t.Errorf("%s reported as %+v, want the model endpoint 127.0.0.1:%d, once, %q", call, b, up.port, egress.ReasonUnmetered)
				}
			}
			if len(rep.Blocked) != len(refused[protocol]) {
				t.Errorf("%d refusals listed, want %d", len(rep.Blocked), len(refused[protocol]))
			}
		})
	}
}

// The route decides on the path cleaned (escapes decoded, dot segments resolved, empty segments and
// a trailing slash dropped) and forwards that path and nothing else: no spelling the provider, or a
// CDN in front of it, would resolve to another endpoint gets past it, and a spelling of a metered
// call reaches the provider as that call, exactly.
func TestModelRoutePathTricks(t *testing.T) {
	refused := []struct{ method, target, shown, reason string }{
		{"POST", "/model/v1/messages/../files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages/%2e%2e/files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages/%2E%2E/files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages/.%2e/files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages/..%2ffiles", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1%2fmessages%2f..%2f..%2fv1%2ffiles", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages/count_tokens/../../files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model//v1/files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1//files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/files/", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/./files", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/V1/FILES", "/V1/FILES", egress.ReasonUnmetered},
		{"POST", "/model/v1/Messages/batches", "/v1/Messages/batches", egress.ReasonUnmetered},
		{"POST", "/model/V1/messages", "/V1/messages", egress.ReasonUnmetered},
		{"POST", "/model/v1/files?/v1/messages", "/v1/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/files;/v1/messages", "/v1/files;/v1/messages", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages;batches", "/v1/messages;batches", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages%3B/batches", "/v1/messages;/batches", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages%3F/../../files", "/files", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages%23/../batches", "/v1/batches", egress.ReasonUnmetered},
		{"POST", `/model/v1/messages\..\files`, `/v1/messages%5C..%5Cfiles`, egress.ReasonUnmetered},
		{"POST", "/model/v1/messages%00", "/v1/messages%00", egress.ReasonUnmetered},
		{"POST", "/model/v1/messages%252f..%252f..%252ffiles", "/v1/messages%252f..%252f..%252ffiles", egress.ReasonUnmetered},
		{"GET", "/model/v1/models/..%2f..%2fv1%2ffiles", "/v1/files", egress.ReasonUnmetered},
		{"GET", "/model/v1/models/%252e%252e%252ffiles", "/v1/models/%252e%252e%252ffiles", egress.ReasonUnmetered},
		{"GET", "/model/v1/models/claude;x=1", "/v1/models/claude;x=1", egress.ReasonUnmetered},
		{"GET", "/model/v1/models/a/b", "/v1/models/a/b", egress.ReasonUnmetered},
		{"POST", "/model/../v1/files", "/../v1/files", egress.ReasonOffRoute},
		{"POST", "/model/%2e%2e/v1/messages", "/../v1/messages", egress.ReasonOffRoute},
		{"POST", "/model/../modelx/v1/messages", "/../modelx/v1/messages", egress.ReasonOffRoute},
		{"POST", "/model", "/", egress.ReasonUnmetered},
		{"POST", "/model/", "/", egress.ReasonUnmetered},
	}
	up := newProvider(t, egress.ProtocolAnthropic)
	s := openRoute(t, egress.ProtocolAnthropic, up.base(egress.ProtocolAnthropic))
	for _, tt := range refused {
		code, h, body := rawCall(t, s, egress.ProtocolAnthropic, tt.method, tt.target)
		checkRefused(t, egress.ProtocolAnthropic, code, h, body, tt.shown)
	}
	// The same tricks, absolute-form, as a client that takes the proxy for a proxy sends them.
	code, h, body := rawCall(t, s, egress.ProtocolAnthropic, "POST", "http://"+s.Addr()+"/model/v1/messages/%2e%2e/files")
	checkRefused(t, egress.ProtocolAnthropic, code, h, body, "/v1/files")
	if got := up.requests(); len(got) != 0 {
		t.Fatalf("the provider got %q", got)
	}
	listed := map[string]egress.Blocked{}
	for _, b := range s.Report().Blocked {
		listed[b.Method+" "+b.Path] = b
	}
	for _, tt := range refused {
		if b, ok := listed[tt.method+" "+tt.shown]; !ok || b.Reason != tt.reason {
			t.Errorf("%s %s: listed as %+v, want %s %s (%s)", tt.method, tt.target, b, tt.method, tt.shown, tt.reason)
		}
	}

	// Spellings of metered calls go out as the call decided on, the query as the client sent it.
	forwarded := []struct{ method, target, want string }{
		{"POST", "/model/v1/messages?beta=true", "POST /v1/messages?beta=true"},
		{"POST", "/model/v1/messages/", "POST /v1/messages"},
		{"POST", "/model//v1//messages", "POST /v1/messages"},
		{"POST", "/model/v1/files/../messages", "POST /v1/messages"},
		{"POST", "/model/v1/%6d%65ssages", "POST /v1/messages"},
		{"POST", "/model/v1/messages%2fcount_tokens", "POST /v1/messages/count_tokens"},
		{"GET", "/model/v1/models/claude-sonnet-4-5@20250929", "GET /v1/models/claude-sonnet-4-5@20250929"},
	}
	for _, tt := range forwarded {
		before := len(up.requests())
		code, _, body := rawCall(t, s, egress.ProtocolAnthropic, tt.method, tt.target)
		got := up.requests()[before:]
		if code != http.StatusOK || len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s %s: status %d (%s), the provider got %q, want %q", tt.method, tt.target, code, body, got, tt.want)
		}
	}
	// Nor may a header tell a server in front of the provider that the call is another one.
	req := modelRequest(t, s, egress.ProtocolAnthropic, "/v1/messages", `{"model":"m"}`)
	for h, v := range map[string]string{"X-HTTP-Method-Override": "DELETE", "X-HTTP-Method": "DELETE", "X-Method-Override": "DELETE",
		"X-Original-URL": "/v1/files", "X-Rewrite-URL": "/v1/files", "X-Original-URI": "/v1/files", "X-Forwarded-Prefix": "/v1/files",
		"X-Forwarded-Path": "/v1/files"} {
		req.Header.Set(h, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	up.mu.Lock()
	overrides := slices.Clone(up.overrides)
	up.mu.Unlock()
	if resp.StatusCode != http.StatusOK || len(overrides) != 0 {
		t.Errorf("status %d; the provider got %q", resp.StatusCode, overrides)
	}
	if rep := s.Close(); rep.Calls != 6 || rep.Tokens.Input != 6000 || rep.Tokens.Output != 600 {
		t.Errorf("the six messages calls were not metered: %+v", rep)
	}
}

// An operator can let a CLI reach one more call (a profile's api_paths), and that call only: with
// the method given and the path as written, "*" standing for one plain segment.
func TestModelRouteExtraRoutes(t *testing.T) {
	extra, err := egress.ParseRoutes([]string{"POST /v1/messages/batches", "GET /v1/messages/batches/*"})
	if err != nil {
		t.Fatal(err)
	}
	up := newProvider(t, egress.ProtocolAnthropic)
	s := openRoute(t, egress.ProtocolAnthropic, up.base(egress.ProtocolAnthropic), extra...)
	for _, call := range []string{"POST /v1/messages/batches", "GET /v1/messages/batches/msgbatch_01"} {
		method, path, _ := strings.Cut(call, " ")
		if code, _, body := rawCall(t, s, egress.ProtocolAnthropic, method, egress.ModelPath+path); code != http.StatusOK {
			t.Errorf("%s: %d %s", call, code, body)
		}
	}
	for _, tt := range []struct{ method, path, shown string }{
		{"DELETE", "/v1/messages/batches/msgbatch_01", "/v1/messages/batches/msgbatch_01"},
		{"GET", "/v1/messages/batches/msgbatch_01/results", "/v1/messages/batches/msgbatch_01/results"},
		{"GET", "/v1/messages/batches/..%2f..%2ffiles", "/v1/files"},
		{"GET", "/v1/messages/batches/%2e%2e", "/v1/messages"},
		{"POST", "/v1/files", "/v1/files"},
	} {
		code, h, body := rawCall(t, s, egress.ProtocolAnthropic, tt.method, egress.ModelPath+tt.path)
		checkRefused(t, egress.ProtocolAnthropic, code, h, body, tt.method+" "+tt.shown)
	}
	if got := up.requests(); strings.Join(got, ",") != "POST /v1/messages/batches,GET /v1/messages/batches/msgbatch_01" {
		t.Errorf("the provider got %q", got)
	}
	// Without the operator's word, the same call is refused.
	plain := openRoute(t, egress.ProtocolAnthropic, up.base(egress.ProtocolAnthropic))
	code, h, body := rawCall(t, plain, egress.ProtocolAnthropic, "POST", egress.ModelPath+"/v1/messages/batches")
	checkRefused(t, egress.ProtocolAnthropic, code, h, body, "/v1/messages/batches")
}

func TestParseRoutes(t *testing.T) {
	for _, line := range []string{"POST /v1/messages/batches", "GET /v1/models/*", " GET  /v1/files/*/content ", "POST /responses/compact",
		"GET /models/ft:gpt-4o:acme:x@1.0~2"} {
		if _, err := egress.ParseRoutes([]string{line}); err != nil {
			t.Errorf("%q: %v", line, err)
		}
	}
	for _, line := range []string{"", "POST", "/v1/messages", "post /v1/messages", "POST v1/messages", "POST /", "POST /v1/messages/",
		"POST /v1//messages", "POST /v1/../files", "POST /v1/./messages", "POST /v1/messages;x", "POST /v1/messages?beta=true",
		"POST /v1/%2e%2e/files", "POST /v1/mess*ges", "POST /v1/**", `POST /v1\files`, "POST /v1/messages#x", "P0ST /v1/messages"} {
		if _, err := egress.ParseRoutes([]string{line}); err == nil {
			t.Errorf("%q: parsed, want an error", line)
		} else if !strings.Contains(err.Error(), strconv.Quote(line)) {
			t.Errorf("%q: the error does not name the route: %v", line, err)
		}
	}
	// The built-in routes are written in the same syntax.
	for protocol, routes := range egress.MeteredRoutes {
		if _, err := egress.ParseRoutes(routes); err != nil {
			t.Errorf("%s: %v", protocol, err)
		}
	}
}

// What an agent can make a session list as refused is bounded: each refusal is an entry of the
// attempt's report, and an agent chooses the paths.
func TestRefusalsBounded(t *testing.T) {
	up := newProvider(t, egress.ProtocolOpenAI)
	s := openRoute(t, egress.ProtocolOpenAI, up.base(egress.ProtocolOpenAI))
	long := strings.Repeat("a", 4096)
	client := &http.Client{}
	for i := range 300 {
		req := modelRequest(t, s, egress.ProtocolOpenAI, "/files/"+strconv.Itoa(i)+long, "")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("call %d: %d", i, resp.StatusCode)
		}
	}
	rep := s.Close()
	if len(rep.Blocked) == 0 || len(rep.Blocked) >= 300 {
		t.Errorf("%d refusals listed: want a bound below the 300 made", len(rep.Blocked))
	}
	for _, b := range rep.Blocked {
		if len(b.Path) > 300 {
			t.Errorf("a listed path of %d bytes: want it cut short", len(b.Path))
			break
		}
	}
	if len(up.requests()) != 0 {
		t.Errorf("the provider got %d requests", len(up.requests()))
	}
}

// A Responses call in background mode answers before the model generates anything, stating no
// usage, and the provider goes on generating, and billing, where the proxy never sees it. The route
// refuses it: the body is cut before the member's value goes out, whatever came before it (a
// megabyte of input, a body of unknown length), so the provider never gets a request it can act
// on; the agent gets the refusal and the report lists it. The same call without background goes
// through and is metered. A body the route could not read as it passes (compressed, a form) is
// refused too.
func TestModelRouteRefusesBackgroundResponses(t *testing.T) {
	up := newProvider(t, egress.ProtocolOpenAI)
	s := openRoute(t, egress.ProtocolOpenAI, up.base(egress.ProtocolOpenAI))
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name, body, contentType, encoding string
		unknownLength                     bool
		status                            int
		reason                            string
	}{
		{name: "background", body: `{"model":"m","background":true,"input":"hi"}`, status: http.StatusForbidden, reason: egress.ReasonBackground},
		{name: "after a megabyte of input", body: `{"model":"m","input":"` + big + `","background":true}`, status: http.StatusForbidden, reason: egress.ReasonBackground},
		{name: "of unknown length, spelled otherwise", body: `{"model":"m","input":"` + big + `","stream":true,"Backgr\u006fund" : 1}`,
			unknownLength: true, status: http.StatusForbidden, reason: egress.ReasonBackground},
		{name: "compressed", body: `{"model":"m","input":"hi"}`, encoding: "gzip", status: http.StatusUnsupportedMediaType, reason: egress.ReasonUnreadable},
		{name: "a form", body: `background=true&model=m`, contentType: "application/x-www-form-urlencoded", status: http.StatusUnsupportedMediaType, reason: egress.ReasonUnreadable},
		{name: "not in background", body: `{"model":"m","background":false,"input":"hi","metadata":{"background":"yes"}}`, status: http.StatusOK},
	}
	for _, tt := range tests {
		req := modelRequest(t, s, egress.ProtocolOpenAI, "/responses", tt.body)
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		if tt.encoding != "" {
			req.Header.Set("Content-Encoding", tt.encoding)
		}
		if tt.unknownLength {
			req.ContentLength, req.Body = -1, io.NopCloser(struct{ io.Reader }{strings.NewReader(tt.body)})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tt.status != http.StatusOK {
			if resp.StatusCode != tt.status || !strings.Contains(string(body), "akira egress proxy: POST /responses refused: "+tt.reason) {
				t.Errorf("%s: %d %s, want %d refused: %s", tt.name, resp.StatusCode, body, tt.status, tt.reason)
			}
		} else if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", tt.name, resp.StatusCode, body)
		}
	}
	if got := up.requests(); len(got) != 1 || got[0] != "POST /v1/responses" {
		t.Errorf("the provider got %q whole, want only the call without background", got)
	}
	rep := s.Close()
	if rep.Calls != 1 || rep.Tokens.Input != 1000 || rep.Tokens.Output != 100 {
		t.Errorf("report = %+v, want the one call without background metered", rep)
	}
	counts := map[string]int{}
	for _, b := range rep.Blocked {
		if b.Method != "POST" || b.Path != "/responses" {
			t.Errorf("refusal %+v", b)
		}
		counts[b.Reason] += b.Count
	}
	if counts[egress.ReasonBackground] != 3 || counts[egress.ReasonUnreadable] != 2 || len(counts) != 2 {
		t.Errorf("refusals by reason = %v, want 3 in background and 2 unreadable", counts)
	}
}
