package config

import (
	"errors"
	"slices"
	"testing"
)

func TestProgramOf(t *testing.T) {
	tests := []struct{ command, want string }{
		{"claude -p --permission-mode acceptEdits", "claude"},
		{"  codex exec --json", "codex"},
		{"FOO=1 BAR=2 aider --yes", "aider"},
		{"exec /usr/local/bin/agent run", "/usr/local/bin/agent"},
		{`sh "$AKIRA_TEST_AGENT"`, "sh"},
		{`"$AGENT_BIN" --flag`, ""},
		{"cd sub && make agent", ""},
		{"(agent)", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ProgramOf(tt.command); got != tt.want {
			t.Errorf("ProgramOf(%q) = %q; want %q", tt.command, got, tt.want)
		}
	}
}

func TestMissingPrograms(t *testing.T) {
	op := &Operator{Agents: map[string]AgentProfile{
		"claude":  {Kind: "exec", Command: "claude -p"},
		"codex":   {Kind: "exec", Command: "codex exec"},
		"shell":   {Kind: "exec", Command: `"$X"`},
		"builtin": {Kind: "anthropic", Model: "m"},
	}}
	installed := func(p string) (string, error) {
		if p == "codex" {
			return "/usr/bin/codex", nil
		}
		return "", errors.New("not found")
	}
	got := op.MissingPrograms(installed)
	want := []string{`agent "claude": claude is not installed (not found on PATH): install claude: npm i -g @anthropic-ai/claude-code`}
	if !slices.Equal(got, want) {
		t.Errorf("MissingPrograms = %q; want %q", got, want)
	}
}
