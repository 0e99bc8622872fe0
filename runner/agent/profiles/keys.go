package profiles

import (
	"fmt"
	"slices"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/sandbox"
)

// ModelKeys are the model keys in Akira's environment, which no command (agent, setup,
// verification, service) is ever given: the variables the operator's configuration counts as model
// keys (config.Operator.ModelKeyVars) with their values, and every variable of passed (--env), of a
// profile's env or of the operator's env whose value is, or holds, one of those values. A key under
// another name is still a key: a repository that asks its users to pass TEAM_TOKEN gets nothing
// when TEAM_TOKEN holds their model key.
func ModelKeys(op config.Operator, getenv func(string) string, passed []string) sandbox.Withheld {
	keys := sandbox.Withheld{}.Merge(sandbox.Withheld{Names: op.ModelKeyVars()})
	for _, n := range keys.Names {
		keys = keys.Merge(sandbox.Withheld{Values: []string{getenv(n)}})
	}
	candidates := append(slices.Clone(passed), op.Env...)
	for _, name := range op.AgentNames() {
		candidates = append(candidates, op.Agents[name].Env...)
	}
	for _, n := range candidates {
		if !slices.Contains(keys.Names, n) && keys.Holds(getenv(n)) {
			keys.Names = append(keys.Names, n)
		}
	}
	return keys
}

// KeyOf names the model key variable whose value the variable name holds: name itself when it is
// one of the configuration's, else the variable it is an alias of.
func KeyOf(name string, op config.Operator, getenv func(string) string) string {
	vars := op.ModelKeyVars()
	if slices.Contains(vars, name) {
		return name
	}
	v := getenv(name)
	for _, k := range vars {
		if kv := getenv(k); kv != "" && (sandbox.Withheld{Values: []string{kv}}).Holds(v) {
			return k
		}
	}
	return name
}

// AgentKeys says what becomes of the model keys given to the agent of profile p (named name): its
// profile's env and flagEnv (akira run --env) are checked against keys (see ModelKeys). The key of
// the profile's api stays with the egress proxy, which gives the agent a placeholder; a built-in
// agent reads its own key itself. Every other model key is withheld from the agent, and returned
// so that the caller can say so. An exec profile without an api cannot hold any: that is an error
// naming the profile and the fix.
func AgentKeys(name string, p config.AgentProfile, flagEnv []string, op config.Operator, keys sandbox.Withheld, getenv func(string) string) ([]string, error) {
	type given struct{ name, how string }
	var all []given
	for _, n := range p.Env {
		all = append(all, given{n, "env: " + n})
	}
	for _, n := range flagEnv {
		all = append(all, given{n, "--env " + n})
	}
	m, hasAPI := p.ModelAPI()
	var withheld []string
	for _, g := range all {
		if !keys.Withholds(g.name, getenv(g.name)) || slices.Contains(withheld, g.name) {
			continue
		}
		switch {
		case hasAPI && (g.name == m.KeyEnv || g.name == m.AgentKeyEnv):
			continue // the proxy holds it; the agent gets the placeholder
		case p.Kind == "openai" || p.Kind == "anthropic":
			if g.name == builtinKeyEnv(p) {
				continue // the built-in agent's own key, which Akira's process reads
			}
		case !hasAPI:
			key := KeyOf(g.name, op, getenv)
			what := g.how + " is a model key"
			if key != g.name {
				what = fmt.Sprintf("%s holds a model key (the value of $%s)", g.how, key)
			}
			fix := fmt.Sprintf("set api: %s in agents.%s of the configuration, so that the egress proxy holds $%s and the agent gets a placeholder", config.KeyAPI(key), name, key)
			if config.KeyAPI(key) == "" {
				fix = "the egress proxy holds keys of the anthropic and openai APIs only (a profile's api: and base_url)"
			}
			return nil, fmt.Errorf("agent %s: %s, which never enters the sandbox, and the profile has no api to hold it: %s, or leave out %s", name, what, fix, g.how)
		}
		withheld = append(withheld, g.name)
	}
	return withheld, nil
}

// builtinKeyEnv is the variable the built-in agent of profile p reads its key from.
func builtinKeyEnv(p config.AgentProfile) string {
	if p.APIKeyEnv != "" {
		return p.APIKeyEnv
	}
	return Builtin[p.Kind].APIKeyEnv
}
