package runner

import (
	"bytes"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// An agent in the sandbox that uses its placeholder key on the model route for what the meter
// cannot count (an upload to files, a batch spelled with a path trick, deleting a model) gets the
// provider-shaped refusal, nothing of it reaches the model server, and each refusal rides on the
// attempt's agent_finished with its method and path and is printed by akira run with what would
// allow it; its message call in the same attempt still goes through and is metered.
func TestModelRouteRefusalsThroughTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	fake := modeltest.NewAnthropic(t, "sk-real")
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 One\n"})
	key := `-H "x-api-key: $ANTHROPIC_API_KEY"`
	ag := f.agent(`curl -s ` + key + ` -F purpose=x -F file=@ROADMAP.md "$ANTHROPIC_BASE_URL/v1/files"; echo
curl -s --path-as-is ` + key + ` -d '{"requests":[]}' "$ANTHROPIC_BASE_URL/v1/messages/../messages/batches"; echo
curl -s -X DELETE ` + key + ` "$ANTHROPIC_BASE_URL/v1/models/claude-x"; echo
curl -sf ` + key + ` -H 'content-type: application/json' -d '{"model":"m","stream":false}' "$ANTHROPIC_BASE_URL/v1/messages?beta=true" > /dev/null &&
echo done > "$AKIRA_TASK_ID.txt"`)
	ag.Model = &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: fake.BaseURL(), Key: "sk-real", KeyEnv: "AKIRA_TEST_REAL_KEY",
		KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: "m",
		Price: func(string, egress.Tokens) (float64, bool) { return 1, true }}
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, Egress: egress.New(egress.Config{})}
	var printed bytes.Buffer
	out, rec, err := f.run(t, Options{Hooks: Hooks{Reporter: NewTerminal(&printed, false)}, Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusSucceeded {
		t.Fatalf("run %s: the message call did not go through", out.Status)
	}
	for _, r := range fake.Requests() {
		if r.Method != "POST" || r.Path != "/v1/messages" {
			t.Errorf("the model server got %s %s", r.Method, r.Path)
		}
	}
	fin := rec.of(EventAgentFinished, "1.1")
	if len(fin) != 1 || fin[0].Usage == nil || fin[0].Usage.InputTokens != fake.Usage.Input || fin[0].Usage.CostUSD != 1 {
		t.Fatalf("agent_finished = %+v: want the message call metered", fin)
	}
	for _, want := range []string{"akira egress proxy: POST /v1/files refused", "akira egress proxy: POST /v1/messages/batches refused",
		"akira egress proxy: DELETE /v1/models/claude-x refused", `"type":"permission_error"`} {
		if !strings.Contains(fin[0].Output, want) {
			t.Errorf("the agent did not see %q:\n%s", want, fin[0].Output)
		}
	}
	u, _ := url.Parse(fake.BaseURL())
	port, _ := strconv.Atoi(u.Port())
	var refused []string
	for _, b := range fin[0].Blocked {
		if b.Host != u.Hostname() || b.Port != port || b.Reason != egress.ReasonUnmetered {
			t.Errorf("refusal %+v: want the model endpoint %s, %q", b, u.Host, egress.ReasonUnmetered)
		}
		refused = append(refused, b.Method+" "+b.Path)
	}
	if want := []string{"POST /v1/files", "POST /v1/messages/batches", "DELETE /v1/models/claude-x"}; !slices.Equal(refused, want) {
		t.Errorf("refusals on agent_finished = %q, want %q", refused, want)
	}
	for _, want := range []string{u.Host + " POST /v1/files ×1: not a model call Akira meters",
		`api_paths: ["DELETE /v1/models/claude-x"] in the agent's profile`} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("akira run's output lacks %q:\n%s", want, printed.String())
		}
	}
}
