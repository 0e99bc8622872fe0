package config

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/akira-bot/akira/runner/egress"
)

// PriceTable is the one table a profile's tokens are priced with: the operator's top-level prices
// with own's (a profile's or the judge's) over them. The built-in list prices lie under both (see
// llm.PriceOf). Every way of getting a profile goes through it, so that `akira run` and the
// workers of `akira serve` price the same tokens the same.
func (o Operator) PriceTable(own map[string]Price) map[string]Price {
	if len(o.Prices) == 0 && len(own) == 0 {
		return nil
	}
	table := make(map[string]Price, len(o.Prices)+len(own))
	for m, p := range o.Prices {
		table[m] = p
	}
	for m, p := range own {
		table[m] = p
	}
	return table
}

// JudgeProfile is the operator's acceptance judge with the one price table; nil when there is none.
func (o Operator) JudgeProfile() *JudgeProfile {
	if o.Judge == nil {
		return nil
	}
	j := *o.Judge
	j.Prices = o.PriceTable(j.Prices)
	return &j
}

// AgentModelEnv are the variables a CLI of a model API reads its models from, which Akira sets to
// the profile's model besides AKIRA_MODEL. Anthropic's are Claude Code's (2.1.330, as pinned in
// deploy/Dockerfile): ANTHROPIC_MODEL is its main model (its --model flag wins over it, and over the
// repository's .claude/settings.json); the side requests go to ANTHROPIC_SMALL_FAST_MODEL; the
// aliases its Agent tool offers the model for subagents (sonnet, opus, haiku, fable) resolve through
// the ANTHROPIC_DEFAULT_*_MODEL variables, which otherwise name models of its own choosing.
// Codex reads no variable for its model (only -m or -c model=…): its command passes $AKIRA_MODEL.
func AgentModelEnv(protocol string) []string {
	if protocol == "anthropic" {
		return []string{"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
			"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL"}
	}
	return nil
}

// checkPrices says which prices of a table are not prices.
func checkPrices(key string, table map[string]Price) []error {
	models := make([]string, 0, len(table))
	for m := range table {
		models = append(models, m)
	}
	sort.Strings(models)
	var errs []error
	for _, m := range models {
		p := table[m]
		if m == "" {
			errs = append(errs, fmt.Errorf("%s: a price without a model name", key))
			continue
		}
		if !validRate(p.InputPerMTok) || !validRate(p.OutputPerMTok) {
			errs = append(errs, fmt.Errorf("%s.%s: input_per_mtok and output_per_mtok must be numbers of USD per million tokens, not negative", key, m))
		}
		known := egress.KnownServerTools("")
		for _, tool := range sortedKeys(p.PerUse) {
			switch {
			case !slices.Contains(known, tool):
				errs = append(errs, fmt.Errorf("%s.%s.per_use: %q is not a provider-side tool Akira knows (%s)", key, m, tool, strings.Join(known, ", ")))
			case !validRate(p.PerUse[tool]):
				errs = append(errs, fmt.Errorf("%s.%s.per_use.%s: must be a number of USD per use, not negative", key, m, tool))
			}
		}
		for _, tier := range sortedKeys(p.Tiers) {
			tp := p.Tiers[tier]
			switch {
			case !tierName.MatchString(tier):
				errs = append(errs, fmt.Errorf("%s.%s.tiers: %q is not a service tier's name (lower case letters, digits, _ and -)", key, m, tier))
			case standardTiers[tier]:
				errs = append(errs, fmt.Errorf("%s.%s.tiers.%s: the standard tier is priced by input_per_mtok and output_per_mtok", key, m, tier))
			case !validRate(tp.InputPerMTok) || !validRate(tp.OutputPerMTok):
				errs = append(errs, fmt.Errorf("%s.%s.tiers.%s: input_per_mtok and output_per_mtok must be numbers of USD per million tokens, not negative", key, m, tier))
			}
		}
	}
	return errs
}

var tierName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// standardTiers are the names providers give the tier input_per_mtok and output_per_mtok price.
var standardTiers = map[string]bool{"auto": true, "default": true, "standard": true, "standard_only": true}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validRate(usd float64) bool { return usd >= 0 && !math.IsInf(usd, 0) && !math.IsNaN(usd) }
