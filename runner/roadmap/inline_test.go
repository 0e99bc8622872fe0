package roadmap

import "testing"

func TestInlinePlan(t *testing.T) {
	tests := []struct {
		name, comment string
		plan          string
		line          int
	}{
		{"a checklist under the command",
			"/akira run\n- [ ] 1 Add the flag\n- [ ] 2 Document it (after: 1)\n",
			"- [ ] 1 Add the flag\n- [ ] 2 Document it (after: 1)\n", 2},
		{"a fenced block, with words around it",
			"Please do this.\r\n\r\n/akira run --budget 5\r\n\r\n```markdown\r\n## Phase 1\r\n- [ ] 1 a\r\n  - verify: make test\r\n```\r\nThanks!\r\n",
			"## Phase 1\n- [ ] 1 a\n  - verify: make test\n", 6},
		{"the checklist ends at the next command",
			"/akira run\n\n- [ ] a\n  notes\n\n/akira status\n",
			"- [ ] a\n  notes\n", 3},
		{"headings and prose stay with the plan",
			"/AKIRA RUN\n## Setup\n- [ ] T001 a\nSome words.\n- [ ] T002 b (depends on T001)\n",
			"## Setup\n- [ ] T001 a\nSome words.\n- [ ] T002 b (depends on T001)\n", 2},
		{"no plan under the command", "/akira run\n\nthanks", "", 0},
		{"a command alone", "/akira run", "", 0},
		{"a fence without a checkbox", "/akira run\n```\nmake test\n```\n", "", 0},
		{"a quoted command is not one", "> /akira run\n> - [ ] a\n", "", 0},
		{"a command in a code block is not one", "```\n/akira run\n- [ ] a\n```\n", "", 0},
		{"another command word", "/akira runner\n- [ ] a\n", "", 0},
		{"checkboxes only inside a code example", "/akira run\nlike this:\n```\n- [ ] a\n```\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, line, ok := InlinePlan(tt.comment, "/akira run")
			if plan != tt.plan || line != tt.line || ok != (tt.plan != "") {
				t.Fatalf("InlinePlan = %q, %d, %v; want %q, %d", plan, line, ok, tt.plan, tt.line)
			}
			if ok {
				if _, err := ParseMarkdown("comment", []byte(plan)); err != nil {
					t.Errorf("the plan does not parse: %v", err)
				}
			}
		})
	}
}
