package profiles

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
)

// The routes an operator adds to a profile's model route (api_paths) reach the egress proxy's model.
func TestModelRouteCarriesAPIPaths(t *testing.T) {
	p := config.AgentProfile{Kind: "exec", Command: "claude -p", API: "anthropic", APIPaths: []string{"POST /v1/messages/batches"}}
	getenv := func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "sk-1"}[k] }
	m, err := ModelRoute("claude", p, Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ExtraRoutes) != 1 || m.ExtraRoutes[0].String() != "POST /v1/messages/batches" {
		t.Errorf("extra routes = %v", m.ExtraRoutes)
	}
	p.APIPaths = []string{"POST /v1/%2e%2e/files"}
	if _, err := ModelRoute("claude", p, Options{Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "agent claude: api_paths") {
		t.Errorf("a route that is no plain path: %v", err)
	}
}

// The provider-side tools a profile allows reach the egress proxy's model, and so does what the
// price table says beyond tokens: the entry that prices a model's tokens (a dated snapshot takes its
// base name's) gives its per-use and tier prices.
func TestModelRouteCarriesServerToolsAndTariff(t *testing.T) {
	p := config.AgentProfile{Kind: "exec", Command: "codex exec", API: "openai", Model: "gpt-5", ServerTools: []string{"web_search"},
		Prices: map[string]config.Price{"gpt-5": {InputPerMTok: 1.25, OutputPerMTok: 10, PerUse: map[string]float64{"web_search": 0.01},
			Tiers: map[string]config.TierPrice{"priority": {InputPerMTok: 2.5, OutputPerMTok: 20}}}}}
	getenv := func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-1"}[k] }
	m, err := ModelRoute("codex", p, Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ServerTools) != 1 || m.ServerTools[0] != "web_search" {
		t.Errorf("server tools = %v", m.ServerTools)
	}
	for _, model := range []string{"gpt-5", "gpt-5-2025-08-07"} {
		tr := m.Tariff(model)
		if tr.PerUse["web_search"] != 0.01 || tr.Tiers["priority"] != (egress.TierPrice{InputPerMTok: 2.5, OutputPerMTok: 20}) {
			t.Errorf("%s: tariff = %+v", model, tr)
		}
	}
	if tr := m.Tariff("gpt-5-mini"); len(tr.PerUse) != 0 || len(tr.Tiers) != 0 {
		t.Errorf("gpt-5-mini has its own entry, without per-use or tier prices: %+v", tr)
	}
}
