package config

import (
	"strings"
	"testing"
)

// TestServerToolsAndTariffs: the provider-side tools a profile allows, and what the price table
// says of a model beyond its tokens (per use of a tool, per service tier), are checked when the
// file is loaded; an error names the key and what is wrong.
func TestServerToolsAndTariffs(t *testing.T) {
	const claude = "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: anthropic\n"
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "allowed tools", yaml: claude + "    server_tools: [web_search, web_fetch]\n"},
		{name: "a tool of the other api", yaml: claude + "    server_tools: [file_search]\n",
			wantErr: `agents.c: server_tools: "file_search" is not a provider-side tool Akira knows for api anthropic (code_execution, mcp, web_fetch, web_search)`},
		{name: "a type, not a name", yaml: claude + "    server_tools: [web_search_20250305]\n",
			wantErr: `agents.c: server_tools: "web_search_20250305" is not a provider-side tool`},
		{name: "without api", yaml: "agents:\n  c:\n    kind: exec\n    command: codex exec\n    server_tools: [web_search]\n",
			wantErr: "agents.c: server_tools: needs api"},
		{name: "the built-in agent", yaml: "agents:\n  g:\n    kind: openai\n    model: gpt-5\n    server_tools: [web_search]\n",
			wantErr: "agents.g: server_tools: only for kind exec with api"},
		{name: "prices per use and tier", yaml: "prices:\n  gpt-5: {input_per_mtok: 1.25, output_per_mtok: 10, per_use: {web_search: 0.01}, tiers: {priority: {input_per_mtok: 2.5, output_per_mtok: 20}, flex: {input_per_mtok: 0.625, output_per_mtok: 5}}}\n"},
		{name: "a use of no tool", yaml: "prices:\n  m: {per_use: {websearch: 0.01}}\n",
			wantErr: `prices.m.per_use: "websearch" is not a provider-side tool Akira knows`},
		{name: "a negative use", yaml: claude + "    prices: {m: {per_use: {web_fetch: -1}}}\n",
			wantErr: "agents.c.prices.m.per_use.web_fetch: must be a number of USD per use, not negative"},
		{name: "a tier's bad name", yaml: "prices:\n  m: {tiers: {Priority: {input_per_mtok: 1}}}\n",
			wantErr: `prices.m.tiers: "Priority" is not a service tier's name`},
		{name: "the standard tier apart", yaml: "prices:\n  m: {tiers: {default: {input_per_mtok: 1}}}\n",
			wantErr: "prices.m.tiers.default: the standard tier is priced by input_per_mtok and output_per_mtok"},
		{name: "a tier's negative price", yaml: "prices:\n  m: {tiers: {priority: {output_per_mtok: -5}}}\n",
			wantErr: "prices.m.tiers.priority: input_per_mtok and output_per_mtok must be numbers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOperator([]byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
