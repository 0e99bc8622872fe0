package config

import (
	"slices"
	"strings"
	"testing"
)

// TestOperatorModelKeys: a model key named where a command would get it is an error at load that
// names the place and the fix, under every network; the key an exec profile's api holds is not.
func TestOperatorModelKeys(t *testing.T) {
	const claude = "agents:\n  c:\n    kind: exec\n    command: claude -p\n"
	tests := []struct {
		name, yaml string
		wantErr    []string
	}{
		{name: "key without api under allowlist", yaml: claude + "    env: [ANTHROPIC_API_KEY]\n",
			wantErr: []string{"agents.c: env: ANTHROPIC_API_KEY is a model key, which never enters the sandbox: set api: anthropic in the profile"}},
		{name: "key without api, the model host allowed", yaml: "sandbox:\n  egress:\n    allow: [api.anthropic.com]\n" + claude + "    env: [ANTHROPIC_API_KEY]\n",
			wantErr: []string{"agents.c: env: ANTHROPIC_API_KEY is a model key"}},
		{name: "key without api under allow", yaml: claude + "    env: [CODEX_API_KEY]\n    network: allow\n",
			wantErr: []string{"agents.c: env: CODEX_API_KEY is a model key, which never enters the sandbox: set api: openai in the profile"}},
		{name: "a key no api holds", yaml: claude + "    env: [GEMINI_API_KEY]\n",
			wantErr: []string{"agents.c: env: GEMINI_API_KEY is a model key", "keys of the anthropic and openai APIs only"}},
		{name: "the api's own key", yaml: claude + "    api: anthropic\n    env: [ANTHROPIC_API_KEY, GOPROXY]\n"},
		{name: "the CLI's variable of the api's key", yaml: claude + "    api: openai\n    agent_key_env: CODEX_API_KEY\n    env: [CODEX_API_KEY, OPENAI_API_KEY]\n"},
		{name: "another provider's key beside the api", yaml: claude + "    api: anthropic\n    env: [OPENAI_API_KEY, CODEX_API_KEY]\n",
			wantErr: []string{"agents.c: env: OPENAI_API_KEY is a model key, and the egress proxy holds this profile's only ($ANTHROPIC_API_KEY, api: anthropic)",
				"agents.c: env: CODEX_API_KEY is a model key"}},
		{name: "a key the configuration names elsewhere", yaml: claude + "    api: anthropic\n    env: [TEAM_LLM_KEY]\njudge:\n  kind: openai\n  model: m\n  api_key_env: TEAM_LLM_KEY\n",
			wantErr: []string{"agents.c: env: TEAM_LLM_KEY is a model key"}},
		{name: "the built-in agent's commands", yaml: "agents:\n  g:\n    kind: openai\n    model: m\n    env: [OPENAI_API_KEY]\n",
			wantErr: []string{"agents.g: env: OPENAI_API_KEY is a model key: the built-in agent reads its own key itself"}},
		{name: "verification's env", yaml: "env: [GOPROXY, ANTHROPIC_API_KEY]\n",
			wantErr: []string{"env: ANTHROPIC_API_KEY is a model key: verification, setup and services never get one"}},
		{name: "verification's env, a key an agent profile names", yaml: "env: [LOCAL_LLM_KEY]\nagents:\n  l:\n    kind: openai\n    model: m\n    api_key_env: LOCAL_LLM_KEY\n",
			wantErr: []string{"env: LOCAL_LLM_KEY is a model key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOperator([]byte(tt.yaml))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want %q", err, want)
				}
			}
		})
	}
}

// TestModelKeyVars: the providers' variables and every variable the operator's file names as a
// key count as model keys; other variables do not.
func TestModelKeyVars(t *testing.T) {
	op, err := ParseOperator([]byte("agents:\n  c:\n    kind: exec\n    command: c\n    api: openai\n    api_key_env: GATEWAY_KEY\n    agent_key_env: CLI_KEY\n" +
		"judge:\n  kind: anthropic\n  model: m\n  api_key_env: JUDGE_KEY\nmemory:\n  embeddings:\n    model: e\n    api_key_env: EMBED_KEY\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := op.ModelKeyVars()
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "GATEWAY_KEY", "CLI_KEY", "JUDGE_KEY", "EMBED_KEY"} {
		if !slices.Contains(got, want) {
			t.Errorf("ModelKeyVars() lacks %s: %v", want, got)
		}
	}
	for _, not := range []string{"GOPROXY", "GITHUB_TOKEN", "PATH", ""} {
		if slices.Contains(got, not) {
			t.Errorf("ModelKeyVars() holds %q: %v", not, got)
		}
	}
}
