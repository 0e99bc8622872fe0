package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

func TestAllowLine(t *testing.T) {
	tests := []struct {
		b    egress.Blocked
		want string
	}{
		{egress.Blocked{Host: "pypi.org", Port: 443}, `network: {allow: ["pypi.org"]} in .github/akira.yml`},
		{egress.Blocked{Host: "git.corp.example", Port: 8443}, `network: {allow: ["git.corp.example:8443"]} in .github/akira.yml`},
		{egress.Blocked{Host: "10.1.2.3", Port: 6379}, `sandbox.egress.allow: ["10.1.2.3:6379"] in the operator's config`},
		{egress.Blocked{Host: "fd00::1", Port: 443}, `sandbox.egress.allow: ["[fd00::1]:443"] in the operator's config`},
		{egress.Blocked{Host: "api.anthropic.com", Port: 443, Method: "POST", Path: "/v1/messages/batches", Reason: egress.ReasonUnmetered},
			`api_paths: ["POST /v1/messages/batches"] in the agent's profile, in the operator's config (for a call whose cost the proxy meters)`},
		{egress.Blocked{Host: "api.anthropic.com", Port: 443, Method: "POST", Path: "/v1/messages;x", Reason: egress.ReasonUnmetered},
			"nothing: the model route forwards plain paths only"},
		{egress.Blocked{Host: "api.anthropic.com", Port: 443, Method: "POST", Path: "/../v1/files", Reason: egress.ReasonOffRoute},
			"nothing: the model route forwards plain paths only"},
		{egress.Blocked{Host: "api.openai.com", Port: 443, Method: "POST", Path: "/responses", Reason: egress.ReasonBackground},
			"nothing: the model route forwards only what it can meter"},
		// What the proxy says would let a call through, when it refused it for what its body asked.
		{egress.Blocked{Host: "api.anthropic.com", Port: 443, Method: "POST", Path: "/v1/messages", Reason: "provider-side tool web_search (web_search_20250305): …",
			Fix: `server_tools: ["web_search"] in the agent's profile, in the operator's config`},
			`server_tools: ["web_search"] in the agent's profile, in the operator's config`},
	}
	for _, tt := range tests {
		if got := AllowLine(tt.b); got != tt.want {
			t.Errorf("AllowLine(%+v) = %s, want %s", tt.b, got, tt.want)
		}
	}
}

// akira run's terminal output names what the proxy refused and how to allow it.
func TestTerminalShowsBlocked(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out, false)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_ = term.Report(ctx, Event{Type: EventTaskStarted, TaskID: "1.1", TaskTitle: "T", Time: now})
	_ = term.Report(ctx, Event{Type: EventAgentFinished, TaskID: "1.1", Time: now, Blocked: []egress.Blocked{
		{Host: "evil.example", Port: 443, Count: 3, First: now, Reason: "not on the allowlist"},
		{Host: "169.254.169.254", Port: 80, Count: 1, First: now, Reason: "link-local address"},
	}})
	term.Close()
	got := out.String()
	for _, want := range []string{"the network refused agent 2 destination(s)", "evil.example:443 ×3: not on the allowlist",
		`network: {allow: ["evil.example"]} in .github/akira.yml`, "169.254.169.254:80 ×1: link-local address"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, got)
		}
	}
}

// An attempt's agent and verification go out through egress sessions of their own: what the proxy
// refuses rides on agent_finished and verify_finished, and the model calls the proxy metered are
// the attempt's usage, priced, whatever the agent says of itself; the budget then binds.
func TestAttemptThroughTheProxy(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	fake := modeltest.NewAnthropic(t, "sk-real")
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 One\n  - verify: `curl -sf https://verify-only.example/ || true`\n- [ ] 1.2 Two\n"})
	model := &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: fake.BaseURL(), Key: "sk-real", KeyEnv: "AKIRA_TEST_REAL_KEY",
		KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: "m",
		Price: func(string, egress.Tokens) (float64, bool) { return 1, true }}
	ag := f.agent(`curl -sf https://not-listed.example/ ; ` +
		`curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -d '{"model":"m","stream":true}' "$ANTHROPIC_BASE_URL/v1/messages" > /dev/null && ` +
		`echo "$AKIRA_TASK_ID" > "$AKIRA_TASK_ID.txt" && echo '{"input_tokens":1,"output_tokens":1,"cost_usd":0.0001}' > "$AKIRA_USAGE_FILE"`)
	ag.Model = model
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetAllowlist, Egress: egress.New(egress.Config{})}
	out, rec, err := f.run(t, Options{Limits: Limits{Budget: Budget{CostUSD: 1}}, Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist})
	if err != nil {
		t.Fatal(err)
	}
	fin := rec.of(EventAgentFinished, "1.1")
	if len(fin) != 1 || fin[0].Usage == nil {
		t.Fatalf("agent_finished = %+v", fin)
	}
	if u := *fin[0].Usage; u.InputTokens != fake.Usage.Input || u.OutputTokens != fake.Usage.Output || u.CostUSD != 1 {
		t.Errorf("usage = %+v, want the metered call (%+v, $1)", u, fake.Usage)
	}
	if b := fin[0].Blocked; len(b) != 1 || b[0].Host != "not-listed.example" || b[0].Port != 443 {
		t.Errorf("agent's blocked = %+v", b)
	}
	if b := rec.of(EventVerifyFinished, "1.1")[0].Blocked; len(b) != 1 || b[0].Host != "verify-only.example" {
		t.Errorf("verification's blocked = %+v", b)
	}
	// $1 of the $1 budget is spent: 1.2 never starts.
	if out.Status != StatusParked || len(rec.of(EventAttemptStarted, "1.2")) != 0 {
		t.Errorf("the budget did not bind: %s, %d attempts of 1.2", out.Status, len(rec.of(EventAttemptStarted, "1.2")))
	}
	for _, r := range fake.Requests() {
		if r.Key != "sk-real" {
			t.Errorf("the model server got %q", r.Key)
		}
	}
}

// The proxy meters what the provider bills, whatever the agent in the sandbox does with the answer:
// an Anthropic stream the agent hangs up on before message_delta is read on and metered whole
// (the issue's $0.00 that should have been $15.00); a Chat Completions stream the agent did not ask
// usage for is metered, and the agent's stream has no chunk it did not ask for; a server that never
// states usage is estimated, and the estimate is marked on the attempt's usage, the task's and what
// akira run prints.
func TestAttemptMeteringThroughTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	for _, tool := range []string{"curl", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	price := func(_ string, tk egress.Tokens) (float64, bool) {
		return float64(tk.Input)*3/1e6 + float64(tk.Output)*15/1e6, true
	}
	// The Anthropic server holds its answer after message_start until the agent, having hung up on
	// it, asks for the model list; then the bulk of the answer follows, and the usage last.
	goOn := make(chan struct{})
	var once sync.Once
	anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			once.Do(func() { close(goOn) })
			fmt.Fprint(w, `{"data":[]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-goOn:
		case <-r.Context().Done():
			return
		}
		text := strings.Repeat("x", 4096)
		for range 256 {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
		}
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1000000}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer anthropic.Close()
	openai := modeltest.NewOpenAI(t, "sk-real")
	// An OpenAI-compatible server that never states usage, asked or not.
	const said = "no usage from this server, however it is asked"
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q}}]}\n\n", said)
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer silent.Close()

	const chatBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	chat := `curl -sfN -H "Authorization: Bearer $OPENAI_API_KEY" -H 'content-type: application/json' -d '` + chatBody + `' "$OPENAI_BASE_URL/chat/completions"`
	tests := []struct {
		name, protocol, base, script string
		check                        func(t *testing.T, u agent.Usage, output, printed string)
	}{
		{"anthropic stream hung up on before message_delta", egress.ProtocolAnthropic, anthropic.URL,
			`curl -sN -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' -d '{"model":"claude-x","stream":true}' "$ANTHROPIC_BASE_URL/v1/messages" > "$HOME/stream" &
c=$!
until grep -q message_start "$HOME/stream"; do sleep 0.05; done
kill $c; wait $c
curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/models" > /dev/null`,
			func(t *testing.T, u agent.Usage, _, _ string) {
				if u.InputTokens != 1000 || u.OutputTokens != 1_000_000 || u.Estimated || math.Abs(u.CostUSD-15.003) > 1e-9 {
					t.Errorf("usage = %+v, want 1,000 in and 1,000,000 out as the answer stated: $15.003", u)
				}
			}},
		{"chat completions stream without include_usage", egress.ProtocolOpenAI, openai.BaseURL(), chat,
			func(t *testing.T, u agent.Usage, output, _ string) {
				if u.InputTokens != openai.Usage.Input || u.OutputTokens != openai.Usage.Output || u.Estimated {
					t.Errorf("usage = %+v, want the model's %+v", u, openai.Usage)
				}
				if !strings.Contains(output, "data: [DONE]") || strings.Contains(output, `"choices":[]`) {
					t.Errorf("the agent's stream should end with [DONE] and hold no chunk without choices:\n%s", output)
				}
			}},
		{"a server that states no usage", egress.ProtocolOpenAI, silent.URL, chat,
			func(t *testing.T, u agent.Usage, output, printed string) {
				asked := len(chatBody) + len(`,"stream_options":{"include_usage":true}`)
				if want := (int64(len(said)) + 3) / 4; !u.Estimated || u.OutputTokens != want || u.InputTokens != int64(asked+3)/4 {
					t.Errorf("usage = %+v, want an estimate of %d in and %d out", u, (asked+3)/4, want)
				}
				if !strings.Contains(output, said) {
					t.Errorf("the agent did not get the answer:\n%s", output)
				}
				if !strings.Contains(printed, "(estimated") || !strings.Contains(printed, "~ an estimate") {
					t.Errorf("akira run's output does not say the usage is estimated:\n%s", printed)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyVar, baseVar := "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
			if tt.protocol == egress.ProtocolOpenAI {
				keyVar, baseVar = "OPENAI_API_KEY", "OPENAI_BASE_URL"
			}
			f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 One\n"})
			ag := f.agent(tt.script + "\necho done > \"$AKIRA_TASK_ID.txt\"")
			ag.Model = &egress.Model{Protocol: tt.protocol, BaseURL: tt.base, Key: "sk-real", KeyEnv: "AKIRA_TEST_REAL_KEY",
				KeyVar: keyVar, BaseURLVar: baseVar, Model: "m", Price: price}
			box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, Egress: egress.New(egress.Config{})}
			var printed bytes.Buffer
			out, rec, err := f.run(t, Options{Hooks: Hooks{Reporter: NewTerminal(&printed, false)}, Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist})
			if err != nil {
				t.Fatal(err)
			}
			fin := rec.of(EventAgentFinished, "1.1")
			if len(fin) != 1 || fin[0].Usage == nil {
				t.Fatalf("agent_finished = %+v", fin)
			}
			tt.check(t, *fin[0].Usage, fin[0].Output, printed.String())
			if len(out.Tasks) != 1 || out.Tasks[0].Usage != *fin[0].Usage {
				t.Errorf("the task's usage %+v is not the attempt's %+v", out.Tasks, *fin[0].Usage)
			}
		})
	}
}
