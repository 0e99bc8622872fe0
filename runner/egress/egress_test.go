package egress_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/runner/egress"
)

func TestParseAllowlist(t *testing.T) {
	a, err := egress.ParseAllowlist([]string{"npm", "Example.com", "*.corp.example", "api.internal:8443", "10.0.0.0/8", "127.0.0.1:5000", "[fd00::1]:443"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"registry.npmjs.org", 443, true}, {"registry.npmjs.org", 22, false}, {"example.com", 80, true},
		{"www.example.com", 443, false}, {"a.b.corp.example", 443, true}, {"corp.example", 443, false},
		{"api.internal", 8443, true}, {"api.internal", 443, false}, {"10.9.9.9", 6379, true},
		{"127.0.0.1", 5000, true}, {"127.0.0.1", 6379, false}, {"fd00::1", 443, true}, {"evil.example", 443, false},
	}
	for _, tt := range tests {
		if got := a.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	for _, bad := range []string{"", "exa mple.com", "10.0.0.0/99", "host:99999", "-bad.com"} {
		if _, err := egress.ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("ParseAllowlist(%q) accepted", bad)
		}
	}
	ceiling := egress.MustAllowlist("npm", "*.corp.example", "10.0.0.0/8")
	asked := egress.MustAllowlist("npm", "x.corp.example", "*.a.corp.example", "10.1.0.0/16", "pypi", "*.example", "11.0.0.1")
	got := asked.Within(ceiling)
	if strings.Join(got, ",") != "pypi,*.example,11.0.0.1" {
		t.Errorf("Within = %v", got)
	}
}

// fixedResolver maps every name to one address.
type fixedResolver map[string]string

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// proxied is an HTTP client that goes through a TCP session.
func proxied(t *testing.T, s *egress.Session) *http.Client {
	t.Helper()
	u, _ := url.Parse("http://" + s.Addr())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

func TestSessionDecides(t *testing.T) {
	up := listen(t, "127.0.0.1:0") // stands for a public server the test may reach
	p := egress.New(egress.Config{Resolver: fixedResolver{"ok.example": "127.0.0.1", "meta.example": "169.254.169.254", "pub.example": "192.0.2.10"}})
	s, err := p.Open(egress.SessionConfig{TCP: true, Allow: egress.MustAllowlist(
		"ok.example:"+strconv.Itoa(up.port()), "127.0.0.1:"+strconv.Itoa(up.port()), "meta.example", "gone.example")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := proxied(t, s)
	get := func(u string) int {
		resp, err := c.Get(u)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("http://ok.example:" + strconv.Itoa(up.port()) + "/"); code != 200 {
		t.Errorf("allowed name: %d", code)
	}
	for _, u := range []string{"http://meta.example/", "http://gone.example/", "http://unlisted.example/", "http://8.8.8.8/", "http://127.0.0.1:1/"} {
		if code := get(u); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", u, code)
		}
	}
	rep := s.Report()
	reasons := map[string]string{}
	for _, b := range rep.Blocked {
		reasons[b.Host] = b.Reason
	}
	want := map[string]string{"meta.example": "resolves to link-local address 169.254.169.254", "gone.example": "name does not resolve",
		"unlisted.example": "not on the allowlist", "127.0.0.1": "loopback address"}
	for h, r := range want {
		if reasons[h] != r {
			t.Errorf("%s: reason %q, want %q", h, reasons[h], r)
		}
	}
	if !strings.HasPrefix(reasons["8.8.8.8"], "address not on the allowlist") {
		t.Errorf("a public address literal: %q", reasons["8.8.8.8"])
	}
	if rep.Allowed["ok.example"] != 1 {
		t.Errorf("allowed = %v", rep.Allowed)
	}
	allowed, refused := p.Counts()
	if allowed["ok.example"] != 1 || refused["unlisted.example"] != 1 {
		t.Errorf("proxy counts: %v %v", allowed, refused)
	}
}

// The model route: the placeholder in, the real key out, every response's usage metered and priced,
// streamed or not, for the three APIs; the cost cap refuses calls once reached.
func TestModelRoute(t *testing.T) {
	const real = "sk-real"
	price := func(model string, tk egress.Tokens) (float64, bool) {
		if model != "m" {
			return 0, false
		}
		return float64(tk.Input)/1e6*1 + float64(tk.Output)/1e6*10, true
	}
	tests := []struct {
		name, protocol, path, body string
	}{
		{"anthropic json", egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","stream":false}`},
		{"anthropic sse", egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","stream":true}`},
		{"responses json", egress.ProtocolOpenAI, "/responses", `{"model":"m","stream":false}`},
		{"responses sse", egress.ProtocolOpenAI, "/responses", `{"model":"m","stream":true}`},
		{"chat json", egress.ProtocolOpenAI, "/chat/completions", `{"model":"m","stream":false}`},
		{"chat sse", egress.ProtocolOpenAI, "/chat/completions", `{"model":"m","stream":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fake *modeltest.Server
			if tt.protocol == egress.ProtocolAnthropic {
				fake = modeltest.NewAnthropic(t, real)
			} else {
				fake = modeltest.NewOpenAI(t, real)
			}
			p := egress.New(egress.Config{})
			m := &egress.Model{Protocol: tt.protocol, BaseURL: fake.BaseURL(), Key: real, KeyVar: "K", BaseURLVar: "B", Price: price}
			s, err := p.Open(egress.SessionConfig{TCP: true, Model: m, MaxCostUSD: 0.0015})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			base := ""
			for _, kv := range s.Env() {
				if v, ok := strings.CutPrefix(kv, "B="); ok {
					base = v
				}
			}
			call := func(key string) (int, string) {
				req, _ := http.NewRequest("POST", base+tt.path, strings.NewReader(tt.body))
				if tt.protocol == egress.ProtocolAnthropic {
					req.Header.Set("X-Api-Key", key)
				} else {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var b strings.Builder
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					b.WriteString(sc.Text() + "\n")
				}
				return resp.StatusCode, b.String()
			}
			if code, _ := call("guessed"); code != http.StatusUnauthorized {
				t.Fatalf("without the placeholder: %d", code)
			}
			if code, body := call(s.Placeholder()); code != 200 || body == "" {
				t.Fatalf("with the placeholder: %d %s", code, body)
			}
			for _, r := range fake.Requests() {
				if r.Key != real {
					t.Errorf("the model server got %q", r.Key)
				}
			}
			rep := s.Report()
			if rep.Calls != 1 || rep.Estimated || rep.EstimatedCalls != 0 || rep.Tokens.Input != fake.Usage.Input || rep.Tokens.Output != fake.Usage.Output || rep.Tokens.CacheRead != fake.Usage.CacheRead {
				t.Fatalf("report = %+v, want the usage %+v", rep, fake.Usage)
			}
			if want := 1200.0/1e6 + 80*10/1e6; rep.CostUSD < want*0.999 || rep.CostUSD > want*1.001 {
				t.Errorf("cost = %v, want %v", rep.CostUSD, want)
			}
			// The first call spent $0.002 of the $0.0015 cap: the next is refused.
			if code, body := call(s.Placeholder()); code != http.StatusForbidden || !strings.Contains(body, "budget") {
				t.Errorf("over the cap: %d %s", code, body)
			}
		})
	}
}

func TestModelRouteNamesUnpricedModels(t *testing.T) {
	fake := modeltest.NewOpenAI(t, "k")
	p := egress.New(egress.Config{})
	s, err := p.Open(egress.SessionConfig{TCP: true, Model: &egress.Model{Protocol: egress.ProtocolOpenAI, BaseURL: fake.BaseURL(), Key: "k", KeyVar: "K", BaseURLVar: "B"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req, _ := http.NewRequest("POST", "http://"+s.Addr()+egress.ModelPath+"/responses", strings.NewReader(`{"model":"new-model"}`))
	req.Header.Set("Authorization", "Bearer "+s.Placeholder())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if rep := s.Report(); rep.Calls != 1 || len(rep.Unpriced) != 1 || rep.Unpriced[0] != "new-model" || rep.CostUSD != 0 {
		t.Errorf("report = %+v: an unpriced model must be named", rep)
	}
}

// A tunnel does not outlive its session: a process the attempt left behind loses it.
func TestCloseEndsTunnels(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	port := echo.Addr().(*net.TCPAddr).Port
	p := egress.New(egress.Config{})
	s, err := p.Open(egress.SessionConfig{TCP: true, Allow: egress.MustAllowlist("127.0.0.1:" + strconv.Itoa(port))})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT 127.0.0.1:"+strconv.Itoa(port)+" HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	if !strings.Contains(line, "200") {
		t.Fatalf("CONNECT: %q", line)
	}
	br.ReadString('\n')
	io.WriteString(c, "ping\n")
	if got, _ := br.ReadString('\n'); got != "ping\n" {
		t.Fatalf("through the tunnel: %q", got)
	}
	s.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a timing assertion
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("the tunnel outlived its session")
	}
}

// The real key goes out in the one header its provider reads (x-api-key for Anthropic, a bearer
// token for OpenAI) and the placeholder never leaves the proxy, whichever header the client put it
// in: a key in the other header would be sent where it does not belong, and a placeholder passed
// on would tell the provider (or whoever runs the endpoint) what the sandbox holds.
func TestModelRouteKeyHeaders(t *testing.T) {
	const real = "sk-real-key-of-the-operator"
	tests := []struct {
		name, protocol, path string
		sent                 func(placeholder string) http.Header
	}{
		{"anthropic x-api-key", egress.ProtocolAnthropic, "/v1/messages",
			func(p string) http.Header { return http.Header{"X-Api-Key": {p}} }},
		{"anthropic bearer", egress.ProtocolAnthropic, "/v1/messages",
			func(p string) http.Header { return http.Header{"Authorization": {"Bearer " + p}} }},
		{"anthropic both", egress.ProtocolAnthropic, "/v1/messages",
			func(p string) http.Header { return http.Header{"X-Api-Key": {p}, "Authorization": {"Bearer " + p}} }},
		{"openai bearer", egress.ProtocolOpenAI, "/chat/completions",
			func(p string) http.Header { return http.Header{"Authorization": {"Bearer " + p}} }},
		{"openai both", egress.ProtocolOpenAI, "/responses",
			func(p string) http.Header { return http.Header{"Authorization": {"Bearer " + p}, "X-Api-Key": {p}} }},
		{"openai azure-style api-key too", egress.ProtocolOpenAI, "/responses",
			func(p string) http.Header { return http.Header{"Authorization": {"Bearer " + p}, "Api-Key": {p}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fake *modeltest.Server
			if tt.protocol == egress.ProtocolAnthropic {
				fake = modeltest.NewAnthropic(t, real)
			} else {
				fake = modeltest.NewOpenAI(t, real)
			}
			p := egress.New(egress.Config{})
			s, err := p.Open(egress.SessionConfig{TCP: true, Model: &egress.Model{Protocol: tt.protocol, BaseURL: fake.BaseURL(), Key: real, KeyVar: "K", BaseURLVar: "B"}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			req, _ := http.NewRequest("POST", "http://"+s.Addr()+egress.ModelPath+tt.path, strings.NewReader(`{"model":"m"}`))
			for k, v := range tt.sent(s.Placeholder()) {
				req.Header[k] = v
			}
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := fake.Requests()
			if len(got) != 1 {
				t.Fatalf("the model server saw %d requests", len(got))
			}
			h := got[0].Header
			if tt.protocol == egress.ProtocolAnthropic {
				if v := h.Values("X-Api-Key"); len(v) != 1 || v[0] != real {
					t.Errorf("x-api-key = %q, want the real key alone", v)
				}
				if v := h.Values("Authorization"); len(v) != 0 {
					t.Errorf("authorization = %q: Anthropic reads x-api-key only", v)
				}
			} else {
				if v := h.Values("Authorization"); len(v) != 1 || v[0] != "Bearer "+real {
					t.Errorf("authorization = %q, want the real key as a bearer token alone", v)
				}
				if v := h.Values("X-Api-Key"); len(v) != 0 {
					t.Errorf("x-api-key = %q: OpenAI reads the bearer token only", v)
				}
			}
			for k, vs := range h {
				for _, v := range vs {
					if strings.Contains(v, s.Placeholder()) {
						t.Errorf("the placeholder left the proxy in %s: %q", k, v)
					}
				}
			}
			if h.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("the client's other headers were not passed on: %v", h)
			}
		})
	}
}
