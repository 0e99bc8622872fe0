// Package profiles builds a coding agent from an operator's agent profile: an external command (exec)
// or the built-in agent against a model API (openai, anthropic). The CLI and the worker share it, so
// a profile means the same thing on a laptop and in the GitHub App.
package profiles

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/llm"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/lessons"
)

// Builtin are the profiles that exist without any configuration file: `akira run --agent openai`.
var Builtin = map[string]config.AgentProfile{
	"openai":    {Kind: "openai", APIKeyEnv: "OPENAI_API_KEY"},
	"anthropic": {Kind: "anthropic", APIKeyEnv: "ANTHROPIC_API_KEY"},
}

// Options are what the caller knows besides the profile.
type Options struct {
	// Model overrides the profile's model (akira run --model).
	Model string
	// PassEnv adds environment variable names passed to the agent (akira run --env).
	PassEnv []string
	// Getenv reads Akira's own environment (API keys, *_BASE_URL); nil means os.Getenv.
	Getenv func(string) string
	// Stream receives an exec agent's output live; TempDir holds its prompt files.
	Stream  io.Writer
	TempDir string
	Logger  *slog.Logger
}

// Resolve finds a profile by name among the operator's, then the built-in ones, with the one price
// table (the operator's prices under the profile's own, see config.Operator.PriceTable).
func Resolve(op config.Operator, name string) (string, config.AgentProfile, error) {
	switch builtin, isBuiltin := Builtin[name]; {
	case name == "" || op.Agents[name].Kind != "":
		return op.Agent(name)
	case isBuiltin:
		builtin.Prices = op.PriceTable(builtin.Prices)
		return name, builtin, nil
	default:
		known := append(op.AgentNames(), "openai", "anthropic")
		return "", config.AgentProfile{}, fmt.Errorf("agent %q is not a profile of the configuration nor a built-in agent (%s)", name, strings.Join(known, ", "))
	}
}

// New builds the agent of profile p (named name, for messages).
func New(name string, p config.AgentProfile, o Options) (agent.Agent, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	passEnv := append(append([]string{}, p.Env...), o.PassEnv...)
	switch p.Kind {
	case "exec":
		if strings.TrimSpace(p.Command) == "" {
			return nil, fmt.Errorf("agent %s: command: required for kind exec", name)
		}
		model, err := ModelRoute(name, p, o)
		if err != nil {
			return nil, err
		}
		if model != nil {
			// The proxy holds the key: neither the real key's variable nor the CLI's own may pass.
			passEnv = slices.DeleteFunc(passEnv, func(n string) bool { return n == model.KeyEnv || n == model.KeyVar })
		}
		return &agent.Exec{Command: p.Command, PassEnv: passEnv, Env: ModelEnv(p, cmp.Or(o.Model, p.Model)), Timeout: time.Duration(p.Timeout),
			OutputCap: p.OutputCap, Stream: o.Stream, TempDir: o.TempDir, UsageFrom: p.UsageFrom, Model: model}, nil
	case "openai", "anthropic":
		model := p.Model
		if o.Model != "" {
			model = o.Model
		}
		if model == "" {
			return nil, fmt.Errorf("agent %s: no model: set model in the profile or pass --model", name)
		}
		keyEnv := p.APIKeyEnv
		if keyEnv == "" {
			keyEnv = strings.ToUpper(p.Kind) + "_API_KEY"
		}
		baseURL := p.BaseURL
		if baseURL == "" {
			baseURL = getenv(strings.ToUpper(p.Kind) + "_BASE_URL")
		}
		prices := map[string]llm.Price{}
		for m, pr := range p.Prices {
			prices[m] = llm.Price{InputPerMTok: pr.InputPerMTok, OutputPerMTok: pr.OutputPerMTok}
		}
		a, err := llm.New(llm.Config{
			Provider: p.Kind, Model: model, BaseURL: baseURL, APIKey: getenv(keyEnv),
			MaxTurns: p.MaxTurns, MaxTokens: p.MaxTokens, Timeout: time.Duration(p.Timeout), MaxCostUSD: p.MaxCost,
			MaxOutputTokens: p.MaxOutputTokens, Prices: prices,
			CommandTimeout: time.Duration(p.CommandTimeout), OutputCap: p.OutputCap, EnvPassthrough: passEnv,
			Logger: o.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w (the API key is read from $%s)", name, err, keyEnv)
		}
		return a, nil
	default:
		return nil, fmt.Errorf("agent %s: kind %q is not exec, openai or anthropic", name, p.Kind)
	}
}

// ModelRoute is the model endpoint the egress proxy holds for an exec profile with an api: the
// real key read from the environment, and the profile's model and prices (over the built-in table)
// to price what it meters. nil for a profile without one. Without a base_url the endpoint is the
// one Akira's environment names in ANTHROPIC_BASE_URL or OPENAI_BASE_URL, as for the built-in
// agents, else the provider's.
func ModelRoute(name string, p config.AgentProfile, o Options) (*egress.Model, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	m, ok := p.ModelAPI()
	if !ok {
		return nil, nil
	}
	if baseVar := strings.ToUpper(m.Protocol) + "_BASE_URL"; p.BaseURL == "" && getenv(baseVar) != "" {
		m.BaseURL = getenv(baseVar)
		if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("agent %s: $%s: %q is not an http(s) URL", name, baseVar, m.BaseURL)
		}
	}
	key := getenv(m.KeyEnv)
	if key == "" && (m.Host() == "api.anthropic.com" || m.Host() == "api.openai.com") {
		return nil, fmt.Errorf("agent %s: the API key is empty: set $%s (the egress proxy holds it; the agent gets a placeholder)", name, m.KeyEnv)
	}
	extra, err := egress.ParseRoutes(p.APIPaths)
	if err != nil {
		return nil, fmt.Errorf("agent %s: api_paths: %w", name, err)
	}
	model := cmp.Or(o.Model, p.Model)
	return &egress.Model{Protocol: m.Protocol, BaseURL: m.BaseURL, Key: key, KeyEnv: m.KeyEnv,
		KeyVar: m.AgentKeyEnv, BaseURLVar: m.AgentBaseURLEnv, Model: model, Price: Pricer(p.Prices), ExtraRoutes: extra,
		ServerTools: p.ServerTools, Tariff: Tariffs(p.Prices)}, nil
}

// Tariffs reads what the price table's entry for a model says beyond its tokens at the standard
// tier (per_use, tiers): the entry Pricer prices the model's tokens with.
func Tariffs(prices map[string]config.Price) func(model string) egress.Tariff {
	extra := map[string]llm.Price{}
	for m, pr := range prices {
		extra[m] = llm.Price{InputPerMTok: pr.InputPerMTok, OutputPerMTok: pr.OutputPerMTok}
	}
	return func(model string) egress.Tariff {
		entry, ok := llm.PriceEntry(extra, model)
		pr, own := prices[entry]
		if !ok || !own {
			return egress.Tariff{}
		}
		t := egress.Tariff{PerUse: pr.PerUse}
		if len(pr.Tiers) > 0 {
			t.Tiers = make(map[string]egress.TierPrice, len(pr.Tiers))
			for tier, tp := range pr.Tiers {
				t.Tiers[tier] = egress.TierPrice{InputPerMTok: tp.InputPerMTok, OutputPerMTok: tp.OutputPerMTok}
			}
		}
		return t
	}
}

// Pricer prices metered tokens with the built-in agents' table extended by prices.
func Pricer(prices map[string]config.Price) func(model string, t egress.Tokens) (float64, bool) {
	extra := map[string]llm.Price{}
	for m, pr := range prices {
		extra[m] = llm.Price{InputPerMTok: pr.InputPerMTok, OutputPerMTok: pr.OutputPerMTok}
	}
	return func(model string, t egress.Tokens) (float64, bool) {
		pr, ok := llm.PriceOf(extra, model)
		if !ok {
			return 0, false
		}
		return pr.Cost(t.Input, t.Output), true
	}
}

// NewJudge builds the operator's acceptance judge; nil when none is configured.
func NewJudge(p *config.JudgeProfile, o Options) (*llm.Judge, error) {
	if p == nil {
		return nil, nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	keyEnv := cmp.Or(p.APIKeyEnv, strings.ToUpper(p.Kind)+"_API_KEY")
	prices := map[string]llm.Price{}
	for m, pr := range p.Prices {
		prices[m] = llm.Price{InputPerMTok: pr.InputPerMTok, OutputPerMTok: pr.OutputPerMTok}
	}
	j, err := llm.NewJudge(llm.Config{
		Provider: p.Kind, Model: p.Model, BaseURL: cmp.Or(p.BaseURL, getenv(strings.ToUpper(p.Kind)+"_BASE_URL")), APIKey: getenv(keyEnv),
		Timeout: time.Duration(p.Timeout), MaxOutputTokens: p.MaxOutputTokens, Prices: prices, Logger: o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("judge: %w (the API key is read from $%s)", err, keyEnv)
	}
	return j, nil
}

// NewSemantic builds the lesson ranker of the operator's embeddings endpoint; nil when none is
// configured (lessons are then ranked by keywords).
func NewSemantic(m config.Memory, o Options) (*lessons.Semantic, error) {
	p := m.Embeddings
	if p == nil {
		return nil, nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	keyEnv := cmp.Or(p.APIKeyEnv, "OPENAI_API_KEY")
	e, err := llm.NewEmbedder(llm.EmbeddingsConfig{Model: p.Model, BaseURL: cmp.Or(p.BaseURL, getenv("OPENAI_BASE_URL")), APIKey: getenv(keyEnv), Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("memory.embeddings: %w (the API key is read from $%s)", err, keyEnv)
	}
	return &lessons.Semantic{Embedder: e, MinSimilarity: p.MinSimilarity}, nil
}
