package roadmap

import (
	"strings"
	"testing"
)

func TestAssess(t *testing.T) {
	tests := []struct {
		name, source, src string
		confident         bool
		closest, problem  string
	}{
		{"a read plan", "ROADMAP.md", "- [ ] 1 a\n- [ ] 2 b (after: 1)\n", true, ConventionChecklist, ""},
		{"a plan without dependencies", "ROADMAP.md", "- [ ] a\n- [ ] b\n", true, ConventionChecklist, ""},
		{"GSD phases without checkboxes", "ROADMAP.md",
			"# R\n## Phases\n- **Phase 1: A** - a\n- **Phase 2: B** - b\n### Phase 1: A\nPlans:\n- 01-01: x\n", false, ConventionGSD,
			`no format reads this plan: no tasks found reading it as a checklist, a GSD roadmap, spec-kit tasks, Kiro tasks, an OpenSpec change. The closest is a GSD roadmap: it has 3 "Phase N" headings or entries and 1 GSD plan lines`},
		{"spec-kit ids without checkboxes", "tasks.md", "## Phase 1\n- T001 a\n- T002 b\n- T003 c\n", false, ConventionSpecKit, "The closest is spec-kit tasks: it has 3 spec-kit task ids"},
		{"prose", "ROADMAP.md", "We should build a parser, then a CLI.\n", false, ConventionChecklist, "it has no list items at all"},
		{"code only", "ROADMAP.md", "```\n- [ ] not a task\n```\n", false, ConventionChecklist, "no list items at all"},
		{"every dependency in words", "ROADMAP.md", "- [ ] 1 a (depends on the parser work)\n- [ ] 2 b\n  - depends: whatever the team decides\n", false, ConventionChecklist,
			"read as a checklist, but not one of its"},
		{"every dependency names no task", "ROADMAP.md", "- [ ] 1 a (after: 7)\n- [ ] 2 b (after: 8)\n", false, ConventionChecklist, "not one of its 2 dependencies names a task"},
		{"one dependency, a typo", "ROADMAP.md", "- [ ] 1 a (after: 7)\n- [ ] 2 b\n", true, ConventionChecklist, ""},
		{"one dependency read", "ROADMAP.md", "- [ ] 1 a (after: 7)\n- [ ] 2 b (after: 1)\n", true, ConventionChecklist, ""},
		{"an empty task list", "tasks.yaml", "tasks: []\n", false, ConventionTaskList, "reading it as a YAML/JSON task list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Assess(tt.source, []byte(tt.src), "")
			if a.Confident != tt.confident || a.Closest != tt.closest {
				t.Errorf("Assess = %+v; want confident %v, closest %s", a, tt.confident, tt.closest)
			}
			if p := a.Problem(tt.source); (tt.problem == "") != (p == "") || !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q\nwant %q", p, tt.problem)
			}
		})
	}
	// A forced convention is the only one tried.
	if a := Assess("ROADMAP.md", []byte("text\n"), ConventionKiro); len(a.Tried) != 1 || a.Tried[0] != ConventionKiro {
		t.Errorf("tried %q", a.Tried)
	}
}
