package mdtest

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name, md, outside string
		bodies            []string
	}{
		{"a fence and the rest", "# A\n\n```json\n{}\n```\nafter", "# A\n\nafter", []string{"{}"}},
		{"a shorter run does not close", "````\n```\n## Rules\n````\nafter", "after", []string{"```\n## Rules"}},
		{"tildes do not close backticks", "```\n~~~\nx\n```\n", "", []string{"~~~\nx"}},
		{"text after a run is no close", "```\n``` not a close\n```", "", []string{"``` not a close"}},
		{"indented four spaces is no fence", "    ```\nx", "    ```\nx", nil},
		{"an unclosed fence runs to the end", "a\n```\nb\n## c", "a", []string{"b\n## c"}},
		{"a backtick info string with a backtick is no fence", "```a`b\nx", "```a`b\nx", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outside, blocks := Split(tt.md)
			var bodies []string
			for _, b := range blocks {
				bodies = append(bodies, b.Body)
			}
			if outside != tt.outside || strings.Join(bodies, "|") != strings.Join(tt.bodies, "|") {
				t.Errorf("Split = %q, %q; want %q, %q", outside, bodies, tt.outside, tt.bodies)
			}
		})
	}
	if _, blocks := Split("## Notes\n\n```json\n{}\n```\n"); len(blocks) != 1 || blocks[0].Heading != "## Notes" || blocks[0].Info != "json" {
		t.Errorf("blocks = %+v; want one json block under ## Notes", blocks)
	}
	if got := Section("x\n## A\none\n## B\ntwo\n", "## A"); got != "one" {
		t.Errorf("Section = %q", got)
	}
}
