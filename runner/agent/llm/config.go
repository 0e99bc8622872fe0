// Package llm is Akira's built-in coding agent: a tool-calling loop against a model API (OpenAI Chat
// Completions and every server that speaks it, or Anthropic Messages) with tools confined to the
// workspace, limits on turns, tokens, time and cost, and token and cost accounting.
package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/agent"
)

// Default endpoints; OPENAI_BASE_URL / ANTHROPIC_BASE_URL are read by the caller, not here.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// Defaults for zero Config fields.
const (
	DefaultMaxTurns       = 50
	DefaultTimeout        = 30 * time.Minute
	DefaultCommandTimeout = 10 * time.Minute
	// DefaultOutputCap bounds what one run_command returns to the model: output is paid for as
	// input tokens on every later turn.
	DefaultOutputCap = 32 << 10
)

// Config is one agent profile, resolved.
type Config struct {
	Provider string // "openai" | "anthropic"
	Model    string
	// BaseURL defaults to DefaultOpenAIBaseURL or DefaultAnthropicBaseURL.
	BaseURL string
	// APIKey is already resolved from the environment variable the profile names; it is never
	// logged and is redacted from error messages. It may be empty for a local OpenAI-compatible
	// server (Ollama, vLLM) but not for the providers' own endpoints.
	APIKey string

	// MaxTurns bounds model calls per attempt (0: DefaultMaxTurns).
	MaxTurns int
	// MaxTokens bounds input+output tokens summed over the attempt (0: no limit).
	MaxTokens int64
	// Timeout bounds the attempt's wall-clock time (0: DefaultTimeout).
	Timeout time.Duration
	// MaxCostUSD bounds the attempt's cost (0: no limit); the model must then have a price.
	MaxCostUSD float64
	// MaxOutputTokens bounds each response (0: the provider's default; 8192 for Anthropic,
	// which requires a value).
	MaxOutputTokens int

	// Prices extends and overrides DefaultPrices, keyed by model name.
	Prices map[string]Price

	// For run_command.
	CommandTimeout time.Duration // 0: DefaultCommandTimeout
	OutputCap      int           // 0: DefaultOutputCap
	EnvPassthrough []string      // names passed to commands besides proc.DefaultAllowEnv

	HTTPClient *http.Client // optional
	Logger     *slog.Logger // optional
}

// String and LogValue keep the API key out of anything that prints or logs a Config.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{Provider:%s Model:%s BaseURL:%s APIKey:%s MaxTurns:%d MaxTokens:%d Timeout:%s MaxCostUSD:%g}",
		c.Provider, c.Model, c.BaseURL, redactedKey(c.APIKey), c.MaxTurns, c.MaxTokens, c.Timeout, c.MaxCostUSD)
}

// GoString is used by %#v.
func (c Config) GoString() string { return c.String() }

func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", c.Provider), slog.String("model", c.Model), slog.String("base_url", c.BaseURL),
		slog.String("api_key", redactedKey(c.APIKey)), slog.Int("max_turns", c.MaxTurns), slog.Int64("max_tokens", c.MaxTokens),
		slog.Duration("timeout", c.Timeout), slog.Float64("max_cost", c.MaxCostUSD))
}

func redactedKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return "[redacted]"
}

// Price is a model's list price in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
}

// DefaultPrices holds a few well-known models. The figures are the providers' list prices as of
// writing (standard tier, no caching or batch discounts); prices change, so operators should
// check them and override or extend the table in their configuration. A dated snapshot such as
// "gpt-4o-2024-08-06" or "claude-sonnet-4-5-20250929" uses the price of its base name.
var DefaultPrices = map[string]Price{
	"gpt-5":        {InputPerMTok: 1.25, OutputPerMTok: 10},
	"gpt-5-mini":   {InputPerMTok: 0.25, OutputPerMTok: 2},
	"gpt-5-nano":   {InputPerMTok: 0.05, OutputPerMTok: 0.40},
	"gpt-4.1":      {InputPerMTok: 2, OutputPerMTok: 8},
	"gpt-4.1-mini": {InputPerMTok: 0.40, OutputPerMTok: 1.60},
	"gpt-4.1-nano": {InputPerMTok: 0.10, OutputPerMTok: 0.40},
	"gpt-4o":       {InputPerMTok: 2.50, OutputPerMTok: 10},
	"gpt-4o-mini":  {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"o3":           {InputPerMTok: 2, OutputPerMTok: 8},
	"o4-mini":      {InputPerMTok: 1.10, OutputPerMTok: 4.40},

	"claude-opus-4-5":   {InputPerMTok: 5, OutputPerMTok: 25},
	"claude-opus-4-1":   {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-opus-4":     {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-sonnet-4":   {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-haiku-4-5":  {InputPerMTok: 1, OutputPerMTok: 5},
	"claude-3-5-haiku":  {InputPerMTok: 0.80, OutputPerMTok: 4},
}

// lookupPrice finds a model's price: the exact name, then the name without a router prefix
// ("openai/gpt-4o"), then a base name followed by a date or "latest" suffix. Anything looser
// would price a new model version at an old version's rate.
func lookupPrice(table map[string]Price, model string) (Price, bool) {
	entry, ok := lookupEntry(table, model)
	return table[entry], ok
}

// lookupEntry is the name of the table's entry that lookupPrice prices model with.
func lookupEntry(table map[string]Price, model string) (string, bool) {
	names := []string{model}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		names = append(names, model[i+1:])
	}
	for _, n := range names {
		if _, ok := table[n]; ok {
			return n, true
		}
	}
	for _, n := range names {
		best, found := "", false
		for k := range table {
			rest, ok := strings.CutPrefix(n, k+"-")
			if ok && snapshotSuffix(rest) && len(k) > len(best) {
				best, found = k, true
			}
		}
		if found {
			return best, true
		}
	}
	return "", false
}

func snapshotSuffix(s string) bool {
	if s == "latest" {
		return true
	}
	digits := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '-':
		default:
			return false
		}
	}
	return digits >= 6
}

func (p Price) cost(t tokens) float64 {
	return float64(t.in)*p.InputPerMTok/1e6 + float64(t.out)*p.OutputPerMTok/1e6
}

// Cost is what input and output tokens cost at p.
func (p Price) Cost(input, output int64) float64 { return p.cost(tokens{in: input, out: output}) }

// PriceOf finds a model's price as the built-in agents do: in DefaultPrices extended and
// overridden by extra (the operator's and the profile's prices), by exact name, then without a
// router prefix, then by base name before a snapshot suffix.
func PriceOf(extra map[string]Price, model string) (Price, bool) {
	return lookupPrice(priceTable(extra), model)
}

// PriceEntry is the name of the entry PriceOf prices model with: the operator's prices that go
// with it beyond tokens (a service tier's, a tool's use) are that entry's.
func PriceEntry(extra map[string]Price, model string) (string, bool) {
	return lookupEntry(priceTable(extra), model)
}

func priceTable(extra map[string]Price) map[string]Price {
	table := make(map[string]Price, len(DefaultPrices)+len(extra))
	for k, v := range DefaultPrices {
		table[k] = v
	}
	for k, v := range extra {
		table[k] = v
	}
	return table
}

// New validates cfg and returns the agent. Errors name the profile field at fault.
func New(cfg Config) (agent.Agent, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	cfg.Provider = strings.ToLower(strings.TrimSpace(cfg.Provider))
	defaultBase := ""
	switch cfg.Provider {
	case "openai":
		defaultBase = DefaultOpenAIBaseURL
	case "anthropic":
		defaultBase = DefaultAnthropicBaseURL
	case "":
		bad("kind is empty: want openai or anthropic")
	default:
		bad("kind %q is not an LLM provider: want openai or anthropic", cfg.Provider)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		bad("model is empty")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultBase
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("base_url %q is not an http(s) URL", cfg.BaseURL)
	} else if u.User != nil {
		bad("base_url must not contain credentials: use api_key_env")
	} else if h := u.Hostname(); cfg.APIKey == "" && (h == "api.openai.com" || h == "api.anthropic.com") {
		// Local compatible servers may need no key; the providers' own endpoints always do.
		bad("api key is empty: set the environment variable named by the profile's api_key_env")
	}
	if cfg.MaxTurns < 0 {
		bad("max_turns must not be negative, got %d", cfg.MaxTurns)
	}
	if cfg.MaxTokens < 0 {
		bad("max_tokens must not be negative, got %d", cfg.MaxTokens)
	}
	if cfg.Timeout < 0 {
		bad("timeout must not be negative, got %s", cfg.Timeout)
	}
	if cfg.MaxCostUSD < 0 {
		bad("max_cost must not be negative, got %g", cfg.MaxCostUSD)
	}
	if cfg.MaxOutputTokens < 0 {
		bad("max_output_tokens must not be negative, got %d", cfg.MaxOutputTokens)
	}
	if cfg.CommandTimeout < 0 {
		bad("command_timeout must not be negative, got %s", cfg.CommandTimeout)
	}
	if cfg.OutputCap < 0 {
		bad("output_cap must not be negative, got %d", cfg.OutputCap)
	}
	prices := make(map[string]Price, len(DefaultPrices)+len(cfg.Prices))
	for k, v := range DefaultPrices {
		prices[k] = v
	}
	for k, v := range cfg.Prices {
		if v.InputPerMTok < 0 || v.OutputPerMTok < 0 {
			bad("prices[%q] must not be negative", k)
		}
		prices[k] = v
	}
	price, priced := lookupPrice(prices, cfg.Model)
	if cfg.MaxCostUSD > 0 && !priced && cfg.Model != "" {
		bad("max_cost is set but model %q has no price: add it to prices", cfg.Model)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("llm: invalid agent profile: %w", errors.Join(errs...))
	}

	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	if cfg.OutputCap == 0 {
		cfg.OutputCap = DefaultOutputCap
	}
	if cfg.HTTPClient == nil {
		// No client-wide timeout: the attempt's context bounds each request, and a long
		// completion must not be cut by a shorter fixed limit.
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hc := &httpClient{provider: cfg.Provider, client: cfg.HTTPClient, secret: cfg.APIKey, retry: defaultRetryPolicy(), log: cfg.Logger}
	a := &llmAgent{cfg: cfg, price: price, priced: priced, http: hc}
	var err error
	switch cfg.Provider {
	case "openai":
		a.provider, err = newOpenAI(cfg, hc)
	case "anthropic":
		a.provider, err = newAnthropic(cfg, hc)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}
