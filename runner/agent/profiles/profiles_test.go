package profiles

import (
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
