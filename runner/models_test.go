package runner

import (
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// housePrices prices priced-model only: house-model, the agent's own, has no price.
func housePrices(model string, t egress.Tokens) (float64, bool) {
	if model != "priced-model" {
		return 0, false
	}
	return float64(t.Input)*3/1e6 + float64(t.Output)*15/1e6, true
}

// TestModelCallsAkiraCannotPrice: an agent in the sandbox, steered by whatever text, calls its
// model through the proxy three times: for its own model (which has no price: the operator was
// warned at start), for another model with a price, and for another model without one. The proxy
// forwards the first two and refuses the third, which never reaches the model server; the attempt
// is recorded at the metered tokens of the two calls, priced by Akira, whatever the agent says it
// cost in its usage file.
func TestModelCallsAkiraCannotPrice(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	fake := modeltest.NewAnthropic(t, "sk-real")
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 Call\n  - verify: `test \"$(cat codes.txt)\" = '200 200 403'`\n"})
	ag := f.agent(`call() { curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $ANTHROPIC_API_KEY" ` +
		`-d "{\"model\":\"$1\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$ANTHROPIC_BASE_URL/v1/messages"; } && ` +
		`echo $(call house-model) $(call priced-model) $(call dear-unpriced-model) > codes.txt && ` +
		`echo '{"input_tokens":1,"output_tokens":1,"cost_usd":5}' > "$AKIRA_USAGE_FILE"`)
	ag.Model = &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: fake.BaseURL(), Key: "sk-real", KeyEnv: "AKIRA_TEST_REAL_KEY",
		KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: "house-model", Price: housePrices}
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, Egress: egress.New(egress.Config{})}
	out, rec, err := f.run(t, Options{Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusSucceeded {
		t.Errorf("status %s: the calls were not answered 200, 200, 403: %+v", out.Status, rec.of(EventVerifyFinished, "1.1"))
	}
	var models []string
	for _, r := range fake.Requests() {
		models = append(models, r.Model)
	}
	if strings.Join(models, ",") != "house-model,priced-model" {
		t.Errorf("the model server got calls for %v; want house-model and priced-model only", models)
	}
	fin := rec.of(EventAgentFinished, "1.1")
	if len(fin) != 1 || fin[0].Usage == nil {
		t.Fatalf("agent_finished = %+v", fin)
	}
	want, _ := housePrices("priced-model", egress.Tokens{Input: fake.Usage.Input, Output: fake.Usage.Output})
	if u := *fin[0].Usage; u.InputTokens != 2*fake.Usage.Input || u.OutputTokens != 2*fake.Usage.Output || math.Abs(u.CostUSD-want) > 1e-12 {
		t.Errorf("usage = %+v; want the two calls' tokens at $%v (the priced one), not the agent's own $5", u, want)
	}
	// The refused call is in the attempt's report, naming the model it asked for and the fix.
	var listed []egress.Blocked
	for _, b := range fin[0].Blocked {
		if strings.Contains(b.Reason, `"dear-unpriced-model"`) {
			listed = append(listed, b)
		}
	}
	if len(listed) != 1 || listed[0].Path != "/v1/messages" || !strings.Contains(listed[0].Fix, "prices:") {
		t.Errorf("refusals in the attempt's report = %+v; want the call for dear-unpriced-model, with its path and the prices: fix", fin[0].Blocked)
	}
}

// A run with a cost budget does not start with an agent whose tokens it could not price: its
// budget would never bind (the calls would be recorded at $0).
func TestCostBudgetNeedsAPrice(t *testing.T) {
	route := func(model string) *agent.Exec {
		return &agent.Exec{Command: "true", Model: &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: "http://127.0.0.1:1",
			KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: model, Price: housePrices}}
	}
	tests := []struct {
		name   string
		agent  agent.Agent
		budget Budget
		want   string
	}{
		{name: "unpriced model", agent: route("house-model"), budget: Budget{CostUSD: 5}, want: `model "house-model" has no price`},
		{name: "no model", agent: route(""), budget: Budget{CostUSD: 5}, want: "names no model"},
		{name: "priced model", agent: route("priced-model"), budget: Budget{CostUSD: 5}},
		{name: "no cost budget", agent: route("house-model"), budget: Budget{Tokens: 1000}},
		{name: "no model route", agent: &agent.Exec{Command: "true"}, budget: Budget{CostUSD: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := budgetCanBind(tt.agent, tt.budget)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("budgetCanBind = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "prices:") && tt.want != "names no model" {
				t.Fatalf("budgetCanBind = %v, want %q", err, tt.want)
			}
			// And the run says so before it clones anything.
			if _, err := Run(t.Context(), Options{Inputs: Inputs{Repo: "no-such-repository"}, Limits: Limits{Budget: tt.budget}, Agent: tt.agent}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want ErrUsage naming %q", err, tt.want)
			}
		})
	}
}
