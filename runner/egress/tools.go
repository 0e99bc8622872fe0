package egress

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Provider-side ("server") tools run on the provider's machines, not the agent's: web search and
// fetch, code execution, remote MCP servers reach whatever they are told to from outside the
// sandbox, past the egress allowlist (a way to carry the repository's code out), and most bill per
// use, beyond tokens. A request's tools are read as it passes (see bodyScan): a client tool (one the
// CLI runs itself, in the sandbox) passes; a server tool passes only when the operator allows it by
// name in the agent's profile (server_tools); any tool type Akira does not know is refused.
var serverTools = map[string][]string{
	ProtocolAnthropic: {"web_search", "web_fetch", "code_execution", "mcp"},
	ProtocolOpenAI:    {"web_search", "file_search", "code_interpreter", "image_generation", "computer_use", "mcp"},
}

// KnownServerTools are the names of a protocol's provider-side tools an operator may allow
// (server_tools of a profile), sorted; with protocol "" those of every protocol.
func KnownServerTools(protocol string) []string {
	var names []string
	for p, list := range serverTools {
		if protocol == "" || p == protocol {
			for _, n := range list {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

// CheckServerTools says which of names are not provider-side tools of protocol.
func CheckServerTools(protocol string, names []string) error {
	known := KnownServerTools(protocol)
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("%q is not a provider-side tool Akira knows for api %s (%s)", n, protocol, strings.Join(known, ", "))
		}
	}
	return nil
}

// DefaultToolPrices are the providers' list prices of a use of their server tools, in USD, as of
// writing: Anthropic's web search ($10 per 1,000 searches) and web fetch (no charge beyond its
// tokens). A model's per_use prices (prices: of the operator's file) win over them.
var DefaultToolPrices = map[string]map[string]float64{
	ProtocolAnthropic: {"web_search": 0.01, "web_fetch": 0},
}

// classifyTool names the tool a request's tools entry of type typ (lower case; "" when it has
// none) stands for: plain for a tool the client runs (the CLI's own functions, and the
// provider-defined tools that the client executes: Anthropic's bash, text editor, computer and
// memory; OpenAI's local shell, shell and apply_patch), else the server tool's name, or "" for a
// type Akira does not know.
func classifyTool(protocol, typ string) (name string, plain bool) {
	if protocol == ProtocolAnthropic {
		switch {
		case typ == "" || typ == "custom":
			return "", true
		case hasAnyPrefix(typ, "bash_", "text_editor_", "computer_", "memory_"):
			return "", true
		case strings.HasPrefix(typ, "web_search_"):
			return "web_search", false
		case strings.HasPrefix(typ, "web_fetch_"):
			return "web_fetch", false
		case strings.HasPrefix(typ, "code_execution_"):
			return "code_execution", false
		case typ == "mcp_toolset":
			return "mcp", false
		}
		return "", false
	}
	switch {
	case typ == "" || typ == "function" || typ == "custom" || typ == "namespace" || typ == "local_shell" || typ == "shell" || typ == "apply_patch":
		// A namespace only groups tools: those it holds are read as the request's own.
		return "", true
	case typ == "web_search" || strings.HasPrefix(typ, "web_search_"):
		return "web_search", false
	case typ == "file_search", typ == "code_interpreter", typ == "image_generation", typ == "mcp":
		return typ, false
	case strings.HasPrefix(typ, "computer_use"):
		return "computer_use", false
	}
	return "", false
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// countedUses says whether the answers of a route state how often a server tool was used, so that
// its uses are metered: Anthropic's usage.server_tool_use (web search and fetch), the items a
// Responses answer lists (web_search_call, file_search_call).
func countedUses(protocol, route, tool string) bool {
	switch protocol {
	case ProtocolAnthropic:
		return strings.HasSuffix(route, "/messages") && (tool == "web_search" || tool == "web_fetch")
	case ProtocolOpenAI:
		return strings.HasSuffix(route, "/responses") && (tool == "web_search" || tool == "file_search")
	}
	return false
}

// tokensOnly says whether a server tool bills nothing beyond the tokens the answer states: remote
// MCP servers (the operator's own), computer use (which runs on the client).
func tokensOnly(tool string) bool { return tool == "mcp" || tool == "computer_use" }

// outputItemTools are the items of a Responses answer that each stand for one use of a server tool.
var outputItemTools = map[string]string{"web_search_call": "web_search", "file_search_call": "file_search"}

// standardTier says whether a service tier, as a request asks for it or an answer states it, is
// the one the price table's token prices are for: the default (OpenAI's "auto" and "default",
// Anthropic's "auto", "standard_only" and "standard").
func standardTier(tier string) bool {
	switch tier {
	case "", "auto", "default", "standard", "standard_only":
		return true
	}
	return false
}

// Tariff is what the price table says a model costs besides its tokens at the standard tier: its
// tokens at other service tiers (priority, flex), and a use of each server tool.
type Tariff struct {
	Tiers  map[string]TierPrice
	PerUse map[string]float64
}

// TierPrice is a model's price at a service tier, in USD per million tokens.
type TierPrice struct {
	InputPerMTok, OutputPerMTok float64
}

func (p TierPrice) cost(t Tokens) float64 {
	return float64(t.Input)*p.InputPerMTok/1e6 + float64(t.Output)*p.OutputPerMTok/1e6
}

// tariff is the model's, from the profile's table; empty without one.
func (m *Model) tariff(model string) Tariff {
	if m.Tariff == nil {
		return Tariff{}
	}
	return m.Tariff(model)
}

// perUse is the price of one use of a server tool with model: the table's, else the provider's
// list price.
func (m *Model) perUse(model, tool string) (float64, bool) {
	if usd, ok := m.tariff(model).PerUse[tool]; ok {
		return usd, true
	}
	usd, ok := DefaultToolPrices[m.Protocol][tool]
	return usd, ok
}
