package roadmap

import (
	"strings"
	"testing"
)

func TestPriority(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             map[string]int
		err              string
	}{
		{"markdown sub-items", "ROADMAP.md", "- [ ] 1 A\n  - priority: low\n- [ ] 2 B\n  - **Priority:** high\n- [ ] 3 C\n",
			map[string]int{"1": PriorityLow, "2": PriorityHigh, "3": PriorityNormal}, ""},
		{"spec-kit labels", "tasks.md", "- [ ] T001 [P1] A\n- [ ] T002 [P3] B\n- [ ] T003 [US1] C\n",
			map[string]int{"T001": PriorityHigh, "T002": PriorityLow, "T003": PriorityNormal}, ""},
		{"yaml", "tasks.yml", "tasks:\n  - id: a\n    title: A\n    priority: P1\n  - id: b\n    title: B\n",
			map[string]int{"a": PriorityHigh, "b": PriorityNormal}, ""},
		{"unknown", "ROADMAP.md", "- [ ] 1 A\n  - priority: urgent\n", nil, `priority "urgent" is not high`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, err := Parse(tt.file, []byte(tt.data))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), ":2") {
					t.Fatalf("Parse = %v, want an error about %q on line 2", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for id, want := range tt.want {
				if got := rm.Task(id); got == nil || got.Priority != want {
					t.Errorf("task %s priority = %+v, want %d", id, got, want)
				}
			}
		})
	}
}
