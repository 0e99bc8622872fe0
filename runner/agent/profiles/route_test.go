package profiles

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/config"
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
