package profiles

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
)

func TestResolve(t *testing.T) {
	op := config.Operator{
		DefaultAgent: "claude",
		Agents: map[string]config.AgentProfile{
			"claude": {Kind: "exec", Command: "claude -p"},
			"openai": {Kind: "openai", Model: "gpt-4.1", Prices: map[string]config.Price{"gpt-4.1": {InputPerMTok: 9}}},
		},
		Prices: map[string]config.Price{"gpt-4.1": {InputPerMTok: 1}, "local": {OutputPerMTok: 2}},
	}
	tests := []struct {
		name, want, wantKind, wantErr string
	}{
		{name: "", want: "claude", wantKind: "exec"},
		{name: "openai", want: "openai", wantKind: "openai"}, // the operator's profile wins over the built-in one
		{name: "anthropic", want: "anthropic", wantKind: "anthropic"},
		{name: "rogue", wantErr: `agent "rogue" is not a profile of the configuration nor a built-in agent (claude, openai, openai, anthropic)`},
	}
	for _, tt := range tests {
		name, p, err := Resolve(op, tt.name)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Resolve(%q) error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || name != tt.want || p.Kind != tt.wantKind {
			t.Errorf("Resolve(%q) = %q %+v %v", tt.name, name, p, err)
		}
		if p.Prices["local"].OutputPerMTok != 2 {
			t.Errorf("Resolve(%q): operator prices not merged: %+v", tt.name, p.Prices)
		}
	}
	if _, p, _ := Resolve(op, "openai"); p.Prices["gpt-4.1"].InputPerMTok != 9 {
		t.Errorf("the profile's own price must win: %+v", p.Prices)
	}
}

func TestNew(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
	getenv := func(k string) string { return env[k] }

	a, err := New("claude", config.AgentProfile{Kind: "exec", Command: "claude -p", Env: []string{"ANTHROPIC_API_KEY"}, Timeout: config.Duration(time.Minute)},
		Options{PassEnv: []string{"EXTRA"}, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	ex, ok := a.(*agent.Exec)
	if !ok || ex.Command != "claude -p" || ex.Timeout != time.Minute || strings.Join(ex.PassEnv, ",") != "ANTHROPIC_API_KEY,EXTRA" {
		t.Fatalf("exec agent = %#v", a)
	}
	if _, err := New("o", Builtin["openai"], Options{Model: "m", Getenv: getenv}); err != nil {
		t.Fatalf("built-in openai with --model: %v", err)
	}
	errs := []struct {
		p    config.AgentProfile
		o    Options
		want string
	}{
		{config.AgentProfile{Kind: "exec"}, Options{}, "command: required"},
		{Builtin["openai"], Options{Getenv: getenv}, "no model"},
		{config.AgentProfile{Kind: "llama"}, Options{}, `kind "llama"`},
		// The providers' own endpoint needs a key; the message names the variable, never a value.
		{Builtin["anthropic"], Options{Model: "m", Getenv: getenv}, "$ANTHROPIC_API_KEY"},
	}
	for _, tt := range errs {
		if _, err := New("x", tt.p, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.p, err, tt.want)
		}
	}
}

// TestModelKeys: the configuration's model key variables are withheld with their values, and so is
// any variable passed with --env, a profile's env or the operator's env that holds one of those
// values under a name of its own; a variable that holds no key is not.
func TestModelKeys(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-real-0123456789", "GATEWAY_KEY": "gw-real-0123456789",
		"TEAM_TOKEN": "sk-ant-real-0123456789", "PROXY_URL": "https://x:gw-real-0123456789@gw.example", "VERIFY_ALIAS": "gw-real-0123456789",
		"GOPROXY": "https://proxy.golang.org", "UNSET_ALIAS": "",
	}
	getenv := func(k string) string { return env[k] }
	op := config.Operator{
		Agents: map[string]config.AgentProfile{"gw": {Kind: "exec", Command: "c", API: "openai", APIKeyEnv: "GATEWAY_KEY", Env: []string{"PROXY_URL"}}},
		Env:    []string{"VERIFY_ALIAS", "GOPROXY"},
	}
	keys := ModelKeys(op, getenv, []string{"TEAM_TOKEN", "GOPROXY", "UNSET_ALIAS"})
	for _, name := range []string{"ANTHROPIC_API_KEY", "GATEWAY_KEY", "TEAM_TOKEN", "PROXY_URL", "VERIFY_ALIAS"} {
		if !keys.Withholds(name, getenv(name)) || !slices.Contains(keys.Names, name) {
			t.Errorf("%s is not withheld: %v", name, keys.Names)
		}
	}
	for _, name := range []string{"GOPROXY", "UNSET_ALIAS", "PATH"} {
		if keys.Withholds(name, getenv(name)) {
			t.Errorf("%s is withheld", name)
		}
	}
	if !slices.Equal(keys.Values, []string{"sk-ant-real-0123456789", "gw-real-0123456789"}) {
		t.Errorf("values = %q", keys.Values)
	}
}

// TestAgentKeys: the key of a profile's api stays with the proxy, a built-in agent's own key with
// Akira; any other model key given to an agent is withheld; an exec profile without api given a key
// is an error naming the profile and the fix.
func TestAgentKeys(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-real-0123456789", "OPENAI_API_KEY": "sk-oa-real-0123456789",
		"CODEX_API_KEY": "sk-cx-real-0123456789", "TEAM_TOKEN": "sk-ant-real-0123456789", "GEMINI_API_KEY": "g-real-0123456789"}
	getenv := func(k string) string { return env[k] }
	claude := config.AgentProfile{Kind: "exec", Command: "claude -p", API: "anthropic"}
	bare := config.AgentProfile{Kind: "exec", Command: "claude -p"}
	op := config.Operator{Agents: map[string]config.AgentProfile{"claude": claude, "bare": bare}}
	keys := ModelKeys(op, getenv, []string{"TEAM_TOKEN"})
	tests := []struct {
		name         string
		p            config.AgentProfile
		flagEnv      []string
		wantWithheld []string
		wantErr      string
	}{
		{name: "claude", p: claude, flagEnv: []string{"ANTHROPIC_API_KEY", "GOPROXY"}},
		{name: "claude", p: claude, flagEnv: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "TEAM_TOKEN"},
			wantWithheld: []string{"OPENAI_API_KEY", "CODEX_API_KEY", "TEAM_TOKEN"}},
		{name: "openai", p: Builtin["openai"], flagEnv: []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}, wantWithheld: []string{"ANTHROPIC_API_KEY"}},
		{name: "bare", p: bare, flagEnv: []string{"GOPROXY"}},
		{name: "bare", p: bare, flagEnv: []string{"ANTHROPIC_API_KEY"},
			wantErr: "agent bare: --env ANTHROPIC_API_KEY is a model key, which never enters the sandbox, and the profile has no api to hold it: " +
				"set api: anthropic in agents.bare of the configuration, so that the egress proxy holds $ANTHROPIC_API_KEY and the agent gets a placeholder, or leave out --env ANTHROPIC_API_KEY"},
		{name: "bare", p: bare, flagEnv: []string{"TEAM_TOKEN"},
			wantErr: "agent bare: --env TEAM_TOKEN holds a model key (the value of $ANTHROPIC_API_KEY), which never enters the sandbox"},
		{name: "bare", p: config.AgentProfile{Kind: "exec", Command: "gemini", Env: []string{"GEMINI_API_KEY"}},
			wantErr: "agent bare: env: GEMINI_API_KEY is a model key, which never enters the sandbox, and the profile has no api to hold it: the egress proxy holds keys of the anthropic and openai APIs only"},
	}
	for _, tt := range tests {
		withheld, err := AgentKeys(tt.name, tt.p, tt.flagEnv, op, keys, getenv)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s %v: err = %v, want %q", tt.name, tt.flagEnv, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(withheld, tt.wantWithheld) {
			t.Errorf("%s %v: withheld %q, %v; want %q", tt.name, tt.flagEnv, withheld, err, tt.wantWithheld)
		}
	}
}
