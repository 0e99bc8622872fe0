package roadmap

import (
	"slices"
	"strings"
	"testing"
)

// TestRealPlanPatterns: one minimal line (or few) for each notation seen in public plans that the
// parser used to misread; each now parses, with the ids, done state, labels and dependencies a
// person reading the file would name.
func TestRealPlanPatterns(t *testing.T) {
	type want struct {
		id, title string
		done      bool
		labels    []string
		deps      []string
	}
	for _, tc := range []struct {
		name     string
		src      string
		tasks    []want
		warnings []string
	}{
		{name: "priority tag before the id", src: "- [x] [P1] WP-01: Expose diff\n- [ ] [P2] WP-02: Show it\n",
			tasks: []want{{id: "WP-01", title: "Expose diff", done: true, labels: []string{"P1"}}, {id: "WP-02", title: "Show it", labels: []string{"P2"}}}},
		{name: "counts that repeat are not ids", src: "## Done\n- [x] 6 user stories prioritized\n- [x] 6 endpoints documented\n",
			tasks: []want{{id: "1.1", title: "6 user stories prioritized", done: true}, {id: "1.2", title: "6 endpoints documented", done: true}}},
		{name: "the author's phase number", src: "## Phase 2.7: Polish\n- [ ] Tidy the CLI\n- [ ] Tidy the docs\n",
			tasks: []want{{id: "2.7.1", title: "Tidy the CLI"}, {id: "2.7.2", title: "Tidy the docs"}}},
		{name: "a product name shared by lines is not an id", src: "- [ ] D1 Configs テーブル\n- [ ] D1 Settings page\n",
			tasks: []want{{id: "1.1", title: "D1 Configs テーブル"}, {id: "1.2", title: "D1 Settings page"}}},
		{name: "words in a dependency line", src: "- [ ] 1 Extract the step\n- [ ] 2 Apply it\n  - **Depends on:** IApplyStep extraction\n",
			tasks:    []want{{id: "1", title: "Extract the step"}, {id: "2", title: "Apply it"}},
			warnings: []string{`ROADMAP.md:3: task 2: dependency "IApplyStep extraction" names no task; kept as a note`}},
		{name: "emoji statuses", src: "- ✅ done one\n- 🚧 in progress\n- 🔲 a box\n📋 planned\n",
			tasks: []want{{id: "1.1", title: "done one", done: true}, {id: "1.2", title: "in progress"}, {id: "1.3", title: "a box"}, {id: "1.4", title: "planned"}}},
		{name: "checkboxes in headings", src: "## Features\n### [x] CLI with validate, generate, stats, deps\n### [ ] Web UI\n",
			tasks: []want{{id: "1.1", title: "CLI with validate, generate, stats, deps", done: true}, {id: "1.2", title: "Web UI"}}},
		{name: "dotted and dashed letter ids", src: "- [x] **T1.1.1**: Parse it\n- [x] **T-M1-001** Read it (dep: T1.1.1)\n",
			tasks: []want{{id: "T1.1.1", title: "Parse it", done: true}, {id: "T-M1-001", title: "Read it", done: true, deps: []string{"T1.1.1"}}}},
		{name: "a story label with a prefix", src: "- [ ] T010 [P] [AUTH-US1] Login form\n",
			tasks: []want{{id: "T010", title: "Login form", labels: []string{"AUTH-US1"}}}},
		{name: "dependency after other words in parentheses", src: "- [ ] 01-03 Schema\n- [ ] 02-01 API (Wave 2, depends on 01-03)\n",
			tasks: []want{{id: "01-03", title: "Schema"}, {id: "02-01", title: "API", deps: []string{"01-03"}}}},
		{name: "blocked-by, any case", src: "- [ ] T001 Setup\n- [ ] T002 Build (blocked-by: t001)\n",
			tasks: []want{{id: "T001", title: "Setup"}, {id: "T002", title: "Build", deps: []string{"T001"}}}},
		{name: "Dependencies: Task n", src: "- [ ] 1.1 Model\n- [ ] 1.2 Store\n  - **Dependencies**: Task 1.1\n",
			tasks: []want{{id: "1.1", title: "Model"}, {id: "1.2", title: "Store", deps: []string{"1.1"}}}},
		{name: "Kiro requirements are references, not dependencies", src: "- [ ] 1.1 Build the parser\n  - _Requirements: 1.1, 2.3_\n",
			tasks: []want{{id: "1.1", title: "Build the parser"}}},
		{name: "an automatic id never takes an explicit one", src: "## Prereqs\n- [ ] Install Rust\n## Phase 1\n- [ ] 1.1 Build parser\n",
			tasks: []want{{id: "1.2", title: "Install Rust"}, {id: "1.1", title: "Build parser"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tc.src))
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if len(r.Tasks) != len(tc.tasks) {
				t.Fatalf("%d tasks, want %d: %+v", len(r.Tasks), len(tc.tasks), r.Tasks)
			}
			for i, w := range tc.tasks {
				got := r.Tasks[i]
				if got.ID != w.id || got.Title != w.title || got.Done != w.done {
					t.Errorf("task %d = %s %q done=%v; want %s %q done=%v", i, got.ID, got.Title, got.Done, w.id, w.title, w.done)
				}
				if w.labels != nil && !slices.Equal(got.Labels, w.labels) {
					t.Errorf("task %s labels %v, want %v", got.ID, got.Labels, w.labels)
				}
				if !slices.Equal(got.Depends, append([]string{}, w.deps...)) {
					t.Errorf("task %s depends on %v, want %v", got.ID, got.Depends, w.deps)
				}
			}
			var warnings []string
			for _, w := range r.Warnings {
				warnings = append(warnings, w.Error())
			}
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
			// Ticking changes only checkbox bytes: every task at once, then compare the rest.
			var ids []string
			for _, task := range r.Tasks {
				ids = append(ids, task.ID)
			}
			ticked, err := Tick(r, []byte(tc.src), ids...)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse("ROADMAP.md", ticked)
			if err != nil {
				t.Fatalf("the ticked plan does not parse: %v\n%s", err, ticked)
			}
			for _, task := range again.Tasks {
				if !task.Done {
					t.Errorf("task %s not done after ticking:\n%s", task.ID, ticked)
				}
			}
		})
	}
}

// TestWordsInDependencyKeptAsNote: the words are in the task's notes, where the agent reads them.
func TestWordsInDependencyKeptAsNote(t *testing.T) {
	r, err := Parse("ROADMAP.md", []byte("- [ ] 1 A\n- [ ] 2 B\n  - depends on: 1, the cleanup\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b := r.Task("2"); !slices.Equal(b.Depends, []string{"1"}) || !strings.Contains(b.Notes, "the cleanup") {
		t.Errorf("task 2: depends %v, notes %q", b.Depends, b.Notes)
	}
	// An id-shaped dependency that names no task, when it is the plan's only one, is still a mistake
	// (with another that names a task, it is a warning: see TestDependencyProse).
	if _, err := Parse("ROADMAP.md", []byte("- [ ] 1 A (depends: 7)\n")); err == nil || !strings.Contains(err.Error(), "unknown task 7") {
		t.Errorf("unknown id: %v", err)
	}
	// Ids written as ids that repeat are a real duplicate.
	if _, err := Parse("ROADMAP.md", []byte("- [ ] T1: A\n- [ ] T1: B\n")); err == nil || !strings.Contains(err.Error(), "duplicate task id T1") {
		t.Errorf("duplicate: %v", err)
	}
}
