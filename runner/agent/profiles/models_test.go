package profiles

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
)

// An exec agent is told its model: AKIRA_MODEL for any command, and for api: anthropic the
// variables Claude Code reads its main, side and subagent models from; --model wins over the
// profile's model.
func TestModelEnv(t *testing.T) {
	getenv := func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o"}[k]
	}
	tests := []struct {
		name    string
		p       config.AgentProfile
		model   string
		want    []string
		without []string
	}{
		{name: "claude", p: config.AgentProfile{Kind: "exec", Command: "claude -p", API: "anthropic", Model: "claude-sonnet-4-5"},
			want: []string{"AKIRA_MODEL=claude-sonnet-4-5", "ANTHROPIC_MODEL=claude-sonnet-4-5", "ANTHROPIC_SMALL_FAST_MODEL=claude-sonnet-4-5",
				"ANTHROPIC_DEFAULT_HAIKU_MODEL=claude-sonnet-4-5", "ANTHROPIC_DEFAULT_OPUS_MODEL=claude-sonnet-4-5",
				"ANTHROPIC_DEFAULT_SONNET_MODEL=claude-sonnet-4-5", "ANTHROPIC_DEFAULT_FABLE_MODEL=claude-sonnet-4-5"}},
		{name: "--model wins", p: config.AgentProfile{Kind: "exec", Command: "claude -p", API: "anthropic", Model: "claude-sonnet-4-5"}, model: "claude-haiku-4-5",
			want: []string{"AKIRA_MODEL=claude-haiku-4-5", "ANTHROPIC_MODEL=claude-haiku-4-5"}, without: []string{"AKIRA_MODEL=claude-sonnet-4-5"}},
		{name: "codex", p: config.AgentProfile{Kind: "exec", Command: `codex exec -m "$AKIRA_MODEL" -`, API: "openai", Model: "gpt-5"},
			want: []string{"AKIRA_MODEL=gpt-5"}, without: []string{"ANTHROPIC_MODEL=gpt-5"}},
		{name: "a script", p: config.AgentProfile{Kind: "exec", Command: "./agent.sh", Model: "local"}, want: []string{"AKIRA_MODEL=local"}},
		{name: "no model", p: config.AgentProfile{Kind: "exec", Command: "claude -p", API: "anthropic"}, without: []string{"AKIRA_MODEL=", "ANTHROPIC_MODEL="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New("x", tt.p, Options{Model: tt.model, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			env := a.(*agent.Exec).Env
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("the agent's environment %q lacks %s", env, w)
				}
			}
			for _, w := range tt.without {
				if slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, w) }) {
					t.Errorf("the agent's environment %q has %s", env, w)
				}
			}
		})
	}
}

// CheckModel names what a budget could not bind: a metered model without a price in the one
// table, or a metered profile without a model (its CLI runs one of its own).
func TestCheckModel(t *testing.T) {
	op := config.Operator{Prices: map[string]config.Price{"house-model": {InputPerMTok: 1}},
		Agents: map[string]config.AgentProfile{
			"claude":  {Kind: "exec", Command: "claude", API: "anthropic", Model: "claude-sonnet-4-5"},
			"house":   {Kind: "exec", Command: "cli", API: "openai", Model: "house-model"},
			"codex":   {Kind: "exec", Command: "codex", API: "openai", Model: "gpt-6.1-sol"},
			"bare":    {Kind: "exec", Command: "codex", API: "openai"},
			"script":  {Kind: "exec", Command: "./agent.sh", Model: "whatever"},
			"builtin": {Kind: "anthropic", Model: "claude-opus-5-5"},
		}}
	tests := []struct{ name, model, want string }{
		{name: "claude"},                      // the built-in list price
		{name: "house"},                       // the operator's prices:
		{name: "house", model: "house-model"}, // --model, priced
		{name: "claude", model: "claude-opus-5-5", want: `agent claude: model "claude-opus-5-5" has no price: add it to prices:`},
		{name: "codex", want: `agent codex: model "gpt-6.1-sol" has no price`},
		{name: "bare", want: "agent bare: no model: its CLI runs a default model of its own"},
		{name: "script"}, // nothing of it is metered
		{name: "builtin", want: `agent builtin: model "claude-opus-5-5" has no price`},
	}
	for _, tt := range tests {
		name, p, err := Resolve(op, tt.name)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckModel(name, p, tt.model)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckModel(%s, %q) = %v, want %q", tt.name, tt.model, err, tt.want)
		}
		// The agent built from the profile says the same (what akira run checks).
		if p.Kind != "exec" {
			continue
		}
		keys := func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") {
				return "sk-key"
			}
			return ""
		}
		a, err := New(name, p, Options{Model: tt.model, Getenv: keys})
		if err != nil {
			t.Fatal(err)
		}
		if got := CheckAgent(name, a); (got == nil) != (tt.want == "") || got != nil && !strings.Contains(got.Error(), tt.want) {
			t.Errorf("CheckAgent(%s, %q) = %v, want %q", tt.name, tt.model, got, tt.want)
		}
	}
}

// An exec profile without base_url calls the endpoint Akira's environment names, as the built-in
// agents do; a base_url of the profile wins; a variable that is no URL is an error naming it.
func TestModelRouteBaseURL(t *testing.T) {
	p := config.AgentProfile{Kind: "exec", Command: "claude", API: "anthropic", Model: "m"}
	env := map[string]string{"ANTHROPIC_API_KEY": "sk", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/gateway"}
	getenv := func(k string) string { return env[k] }
	m, err := ModelRoute("claude", p, Options{Getenv: getenv})
	if err != nil || m.BaseURL != "http://127.0.0.1:9/gateway" {
		t.Errorf("route = %+v, %v; want the environment's ANTHROPIC_BASE_URL", m, err)
	}
	p.BaseURL = "https://llm.example/anthropic"
	if m, err := ModelRoute("claude", p, Options{Getenv: getenv}); err != nil || m.BaseURL != p.BaseURL {
		t.Errorf("route = %+v, %v; want the profile's base_url", m, err)
	}
	p.BaseURL = ""
	env["ANTHROPIC_BASE_URL"] = "api.anthropic.com"
	if _, err := ModelRoute("claude", p, Options{Getenv: getenv}); err == nil || !strings.Contains(err.Error(), `$ANTHROPIC_BASE_URL: "api.anthropic.com" is not an http(s) URL`) {
		t.Errorf("a base URL without a scheme: %v", err)
	}
}

// The operator files that ship with Akira run priced models, and their CLIs are told the model
// on their command line, where a repository's own settings cannot override it.
func TestShippedProfiles(t *testing.T) {
	files := map[string][]byte{}
	for _, f := range []string{"../../../examples/akira.yaml", "../../../deploy/akira.yaml", "../../../deploy/helm/akira/values.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "values.yaml") {
			var values struct{ Config string }
			if err := yaml.Unmarshal(data, &values); err != nil {
				t.Fatal(err)
			}
			data = []byte(values.Config)
		}
		files[f] = data
	}
	for f, data := range files {
		op, err := config.ParseOperator(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, name := range op.AgentNames() {
			_, p, _ := op.Agent(name)
			if _, metered := p.ModelAPI(); !metered {
				continue
			}
			if err := CheckModel(name, p, ""); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			if !strings.Contains(p.Command, `"$AKIRA_MODEL"`) {
				t.Errorf("%s: agent %s: the command does not pass \"$AKIRA_MODEL\": %s", f, name, p.Command)
			}
			// Codex offers its model OpenAI's web search in every call unless told not to: the proxy
			// would refuse them all.
			if config.ProgramOf(p.Command) == "codex" && !strings.Contains(p.Command, "-c web_search=disabled") && !slices.Contains(p.ServerTools, "web_search") {
				t.Errorf("%s: agent %s: Codex offers web search, which the profile does not allow: %s", f, name, p.Command)
			}
		}
	}
}
