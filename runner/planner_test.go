package runner

import (
	"strings"
	"testing"
)

func TestExtractPlan(t *testing.T) {
	tests := []struct {
		name, answer string
		tasks        int
		why          string
	}{
		{"fenced", "Here:\n\n```markdown\n- [ ] 1 A\n  verify: true\n- [ ] 2 B\n```\nDone.", 2, ""},
		{"last fenced block with boxes wins", "```\n- [ ] 1 Old\n```\n\n~~~md\n- [ ] 1 New\n- [ ] 2 Newer\n~~~\n", 2, ""},
		{"a code block without boxes is not the plan", "```go\nfunc main() {}\n```\n- [ ] 1 A\n", 1, ""},
		{"no fence", "Plan:\n## Phase 1\n- [ ] 1 A\n- [ ] 2 B\nThat is all.", 2, ""},
		{"nothing", "I would rather not.", 0, "no task checkboxes"},
		{"all done", "```\n- [x] 1 A\n```", 0, "no task checkboxes"},
		{"duplicate ids", "```\n- [ ] 1 A\n- [ ] 1 B\n```", 0, "1"},
		{"too large", "```\n- [ ] 1 " + strings.Repeat("x", maxPlanBytes) + "\n```", 0, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, n, why := ExtractPlan(tt.answer)
			if n != tt.tasks || (tt.why == "") != (why == "") || !strings.Contains(why, tt.why) {
				t.Fatalf("ExtractPlan = %q, %d, %q; want %d tasks, why %q", plan, n, why, tt.tasks, tt.why)
			}
			if why == "" && !strings.HasSuffix(plan, "\n") {
				t.Errorf("plan %q does not end with a newline", plan)
			}
		})
	}
}
