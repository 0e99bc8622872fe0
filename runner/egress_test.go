package runner

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
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
	out, rec, err := f.run(t, Options{Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist, Budget: Budget{CostUSD: 1}})
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
