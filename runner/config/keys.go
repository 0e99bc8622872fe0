package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// KnownModelKeyVars are the variables model providers' SDKs and the coding-agent CLIs read a key or
// token from. Each is a model key wherever it is named: the egress proxy holds the one an agent's
// api uses, and no command (agent, setup, verification, service) is given any.
var KnownModelKeyVars = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY",
	"GEMINI_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY",
	"XAI_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY", "COHERE_API_KEY",
}

// KeyAPI is the api (egress.ProtocolAnthropic or egress.ProtocolOpenAI) whose CLIs read a key from
// the variable name, "" for a variable the egress proxy cannot hold a key of.
func KeyAPI(name string) string {
	switch name {
	case "ANTHROPIC_API_KEY":
		return egress.ProtocolAnthropic
	case "OPENAI_API_KEY", "CODEX_API_KEY":
		return egress.ProtocolOpenAI
	}
	return ""
}

// ModelKeyVars are the variables that hold a model key: KnownModelKeyVars and every variable the
// operator's file names as one (a profile's api_key_env and agent_key_env, the judge's and the
// embeddings' api_key_env).
func (o Operator) ModelKeyVars() []string {
	names := slices.Clone(KnownModelKeyVars)
	add := func(n string) {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, name := range o.AgentNames() {
		p := o.Agents[name]
		add(p.APIKeyEnv)
		add(p.AgentKeyEnv)
	}
	if o.Judge != nil {
		add(o.Judge.APIKeyEnv)
	}
	if e := o.Memory.Embeddings; e != nil {
		add(e.APIKeyEnv)
	}
	return names
}

// KeyFix is how to give an exec agent the model key in name without it entering the sandbox.
func KeyFix(name string) string {
	if api := KeyAPI(name); api != "" {
		return fmt.Sprintf("set api: %s in the profile, so that the egress proxy holds $%s and the agent gets a placeholder", api, name)
	}
	return "the egress proxy holds keys of the anthropic and openai APIs only (api: anthropic or openai, base_url for a compatible server)"
}

// checkModelKeys says why a profile would hand its agent a model key (keys are the variables that
// hold one), or could not reach its model under its network.
func (p AgentProfile) checkModelKeys(keys []string) []error {
	m, hasAPI := p.ModelAPI()
	if hasAPI && p.AgentNetwork() == sandbox.NetNone {
		return []error{fmt.Errorf("network: none: the model host %s is unreachable under network none (use allowlist, the default)", m.Host())}
	}
	var errs []error
	for _, name := range p.Env {
		if !slices.Contains(keys, name) {
			continue
		}
		switch {
		case hasAPI && (name == m.KeyEnv || name == m.AgentKeyEnv):
			// The key the proxy holds: the agent gets its placeholder.
		case hasAPI:
			errs = append(errs, fmt.Errorf("env: %s is a model key, and the egress proxy holds this profile's only ($%s, api: %s): remove it from env", name, m.KeyEnv, p.API))
		case p.Kind == "exec":
			errs = append(errs, fmt.Errorf("env: %s is a model key, which never enters the sandbox: %s (or remove it from env)", name, KeyFix(name)))
		default:
			errs = append(errs, fmt.Errorf("env: %s is a model key: the built-in agent reads its own key itself and its commands never get one: remove it from env", name))
		}
	}
	return errs
}

// checkVerifyEnv says which names of the operator's env (passed to verification, setup and
// services) are model keys, which none of them ever gets.
func checkVerifyEnv(env, keys []string) []error {
	var errs []error
	for _, name := range env {
		if slices.Contains(keys, name) {
			errs = append(errs, fmt.Errorf("env: %s is a model key: verification, setup and services never get one (the egress proxy holds the agent's): remove it from env", name))
		}
	}
	return errs
}
