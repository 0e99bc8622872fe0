package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Each example roadmap in examples/ ships with the `akira plan` output it produces (plan.txt beside it),
// so the README's examples cannot drift from what the parser does.
func TestExamplesPlanOutput(t *testing.T) {
	examples := map[string]string{ // roadmap → its expected output
		"examples/gsd/ROADMAP.md":       "examples/gsd/plan.txt",
		"examples/spec-kit/tasks.md":    "examples/spec-kit/plan.txt",
		"examples/issue-body/issue.md":  "examples/issue-body/plan.txt",
		"examples/task-list/tasks.yaml": "examples/task-list/plan.txt",
		// Not beside the roadmap: everything in repo/ is copied into the demo repository.
		"examples/demo/repo/ROADMAP.md": "examples/demo/plan.txt",
	}
	t.Chdir(filepath.Join("..", ".."))
	for ex, want := range examples {
		t.Run(ex, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, "plan", ex)
			if code != 0 {
				t.Fatalf("akira plan %s: exit %d\n%s", ex, code, stderr)
			}
			if *update {
				if err := os.WriteFile(want, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			raw, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/akira -run TestExamples -update)", err)
			}
			if stdout != string(raw) {
				t.Errorf("akira plan %s differs from %s:\n--- got\n%s\n--- want\n%s", ex, want, stdout, raw)
			}
		})
	}
}
