package config

import (
	"strings"
	"testing"
)

// One price table: every profile the operator's file defines, and its judge, is priced by the
// top-level prices: under its own, however it is looked up.
func TestOperatorPriceTable(t *testing.T) {
	op, err := ParseOperator([]byte(`
default_agent: cli
agents:
  cli: {kind: exec, command: cli, api: anthropic, model: house-model}
  own: {kind: exec, command: cli, api: openai, model: house-model, prices: {house-model: {input_per_mtok: 9, output_per_mtok: 9}}}
judge: {kind: openai, model: judge-model}
prices:
  house-model: {input_per_mtok: 1, output_per_mtok: 2}
  judge-model: {input_per_mtok: 3, output_per_mtok: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lookup    string
		wantInput float64
	}{
		{"", 1}, // the default profile
		{"cli", 1},
		{"own", 9}, // the profile's own price wins
	}
	for _, tt := range tests {
		_, p, err := op.Agent(tt.lookup)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Prices["house-model"]; got.InputPerMTok != tt.wantInput {
			t.Errorf("Agent(%q).Prices[house-model] = %+v, want input %v", tt.lookup, got, tt.wantInput)
		}
	}
	if j := op.JudgeProfile(); j == nil || j.Prices["judge-model"].OutputPerMTok != 4 {
		t.Errorf("JudgeProfile() = %+v, want the top-level price of judge-model", j)
	}
	if op.Agents["cli"].Prices != nil || op.Judge.Prices != nil {
		t.Error("looking a profile up changed the operator's configuration")
	}
}

func TestParseOperatorPriceErrors(t *testing.T) {
	tests := map[string]string{
		"prices: {m: {input_per_mtok: -1}}\n":                                         "prices.m: input_per_mtok and output_per_mtok must be numbers of USD per million tokens, not negative",
		"prices: {m: {output_per_mtok: .nan}}\n":                                      "prices.m:",
		"agents:\n  a: {kind: exec, command: x, prices: {m: {input_per_mtok: -2}}}\n": "agents.a.prices.m:",
		"judge: {kind: openai, model: j, prices: {j: {output_per_mtok: -3}}}\n":       "judge.prices.j:",
		"prices: {m: {input_per_mtok: cheap}}\n":                                      "cannot unmarshal",
	}
	for in, want := range tests {
		if _, err := ParseOperator([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOperator(%q) = %v, want %q", in, err, want)
		}
	}
}
