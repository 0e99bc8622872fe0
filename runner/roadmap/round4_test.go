package roadmap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Issue 45, cause 3: dependency prose read as meant. Each plan is a minimal file of the shape the
// issue met, written for this test.
func TestDependencyProse(t *testing.T) {
	gsd := func(phase4 string) string {
		return `# Roadmap
### Phase 1: Base
Plans:
- [ ] 01-01: base
### Phase 2: Store
**Depends on:** Phase 1
Plans:
- [ ] 02-01: store
### Phase 3: Sync
**Depends on:** Phase 2
Plans:
- [ ] 03-01: sync
### Phase 4: Reports
**Depends on:** ` + phase4 + `
Plans:
- [ ] 04-01: reports
`
	}
	tests := []struct {
		name, src, task string
		deps            []string
		warning         string // "" for none
	}{
		{"a negation after the dependency", gsd("Phase 2; independent of Phase 3."), "04-01", []string{"02-01"}, ""},
		{"a negation with a range", gsd("Phase 1; independent of Phases 2-3."), "04-01", []string{"01-01"}, ""},
		{"nothing, then a sentence", gsd("Nothing. Phase 2 only shares the schema."), "04-01", []string{}, ""},
		{"a list whose items carry remarks", gsd("Phases 1, 2 (hard: needs the store), 3 (soft: nice to have)"), "04-01",
			[]string{"01-01", "02-01", "03-01"}, ""},
		{"a sub-item that says nothing", "- [ ] 1 a\n- [ ] 2 b\n  - Depends on: nothing (it comes first).\n", "2", []string{}, ""},
		{"a sub-item list with remarks", "- [ ] 1 a\n- [ ] 2 b\n- [ ] 3 c\n  - depends on: 1 (hard: the schema), 2 (soft)\n", "3",
			[]string{"1", "2"}, ""},
		{"a sub-item with a negation", "- [ ] 1 a\n- [ ] 2 b\n- [ ] 3 c\n  - depends: 1; not 2\n", "3", []string{"1"}, ""},
		{"a plan of the same phase by its number alone", `# Roadmap
### Phase 3: Sync
Plans:
- [ ] 03-01: protocol (wave 1)
- [ ] 03-02: client (wave 2, depends on 01)
`, "03-02", []string{"03-01"}, ""},
		{"an unknown reference is a warning on that task", `# Roadmap
### Phase 3: Sync
Plans:
- [ ] 03-01: protocol (wave 1)
- [ ] 03-02: client (wave 2, depends on 07)
- [ ] 03-03: server (depends on 01)
`, "03-02", []string{}, "task 03-02 depends on unknown task 07; kept as a note"},
		{"Kiro: depends on task N", `# Implementation Plan
- [ ] 1. Set up
- [ ] 2. Parser
  - [ ] 2.1 Tokenizer
  - [ ] 2.2 Grammar
- [ ] 3. Printer
  - Depends on task 2
`, "3", []string{"2.1", "2.2"}, ""},
		{"Kiro: depends on tasks N–M, with an en dash", `# Implementation Plan
- [ ] 1. Set up
  - _Requirements: 1.1_
- [ ] 2. Parser
  - [ ] 2.1 Tokenizer
  - [ ] 2.2 Grammar
- [ ] 3. Docs
- [ ] 4. Printer
  - Depends on tasks 1–3
`, "4", []string{"1", "2.1", "2.2", "3"}, ""},
		{"Kiro: a task's dependency is its sub-tasks', and names no optional one", `# Implementation Plan
- [ ] 1. Set up
  - _Requirements: 1.1_
- [ ] 2. Parser
  - [ ] 2.1 Tokenizer
  - [ ]* 2.2 Property tests
- [ ] 3. Printer
  - [ ] 3.1 Layout
  - [ ] 3.2 Colours
  - Depends on task 2
`, "3.2", []string{"2.1"}, ""},
		{"blocked by without a colon", "- [ ] T-1: a\n- [ ] T-2: b\n  - **Blocked by** T-1\n", "T-2", []string{"T-1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			task := r.Task(tt.task)
			if task == nil {
				t.Fatalf("no task %s: %q", tt.task, depsOf(r))
			}
			if !slices.Equal(task.Depends, tt.deps) {
				t.Errorf("task %s depends on %q, want %q", tt.task, task.Depends, tt.deps)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
}

// Issue 45, cause 2: spec-kit's phase rules become dependencies. They hold a task back without
// making a plain task one that may run beside others; a sentence or a task that contradicts them
// is a warning, never a cycle.
func TestSpecKitPhaseOrder(t *testing.T) {
	const plan = `# Tasks
## Phase 1: Setup
- [ ] T001 Create the project
- [ ] T002 [P] Configure the linter
## Phase 2: Foundational
- [ ] T003 [P] Schema
- [ ] T004 Base models
## Phase 3: User Story 1 - Albums (Priority: P1)
- [ ] T005 [P] [US1] Album model
- [ ] T006 [US1] Album service (depends on T005)
## Phase 4: User Story 2 - Sharing (Priority: P2)
- [ ] T007 [P] [US2] Share model
## Phase 5: Polish
- [ ] T008 [P] Docs
`
	tests := []struct {
		name, section string
		deps          []string // "id: deps" of each task
		warning       string
	}{
		{"in the document's order", "", []string{"T001: ", "T002: ", "T003: T001 T002", "T004: T001 T002", "T005: T003 T004",
			"T006: T005", "T007: T006", "T008: T007"}, ""},
		{"stories after Foundational only, Polish after both", `
## Dependencies & Execution Order
- **User Stories (Phase 3+)**: All depend on Foundational phase completion - No dependencies on other stories
- **Polish (Final Phase)**: Depends on all desired user stories being complete
`, []string{"T001: ", "T002: ", "T003: T001 T002", "T004: T001 T002", "T005: T003 T004", "T006: T005", "T007: T003 T004",
			"T008: T006 T007"}, ""},
		{"a sentence naming a later phase is words", `
## Dependencies & Execution Order
- US1: Depends on US2
`, []string{"T001: ", "T002: ", "T003: T001 T002", "T004: T001 T002", "T005: T003 T004", "T006: T005", "T007: T006", "T008: T007"},
			`"US1: Depends on US2": Phase 4: User Story 2 - Sharing (Priority: P2) does not come before Phase 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("tasks.md", []byte(plan+tt.section))
			if err != nil {
				t.Fatal(err)
			}
			if got := depsOf(r); !slices.Equal(got, tt.deps) {
				t.Errorf("tasks:\n%q\nwant\n%q", got, tt.deps)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
			// T004 is a plain task: held back by its phase, it still runs alone; T006 names what it needs.
			if r.Task("T004").MayRunBeside() || !r.Task("T006").MayRunBeside() || !r.Task("T003").MayRunBeside() {
				t.Errorf("may run beside: T003 %v, T004 %v, T006 %v", r.Task("T003").MayRunBeside(), r.Task("T004").MayRunBeside(), r.Task("T006").MayRunBeside())
			}
			for _, d := range r.Task("T003").DependsFrom {
				if !d.PhaseOrder || d.Text == "" {
					t.Errorf("T003's dependency %+v is not marked as the phase order", d)
				}
			}
		})
	}
	// A task that needs a task of a later phase: the phases between them are not kept in order
	// (a warning), and the plan is valid.
	r, err := Parse("tasks.md", []byte(strings.Replace(plan, "T002 [P] Configure the linter", "T002 [P] Configure the linter (depends on T005)", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if w := warningsOf(r); !strings.Contains(w, "task T002 depends on T005 of a later phase, so Phase 2: Foundational is not kept after Phase 1: Setup") {
		t.Errorf("warnings %q", w)
	}
}

// Issue 45, cause 4: whole titles, joined, without markup.
func TestWholeTitles(t *testing.T) {
	tests := []struct {
		name, src, id, title string
		deps                 []string
		notes                string
	}{
		{"a GSD phase name keeps its hyphens", `# Roadmap
## Phases
- [x] **Phase 2: Lists** - shared lists
- [ ] **Phase 2.1: Read-only mode for shared lists (INSERTED 2026-05-02)** - viewers cannot edit
### Phase 2: Lists
Plans:
- [x] 02-01: lists
`, "2.1", "Read-only mode for shared lists (INSERTED 2026-05-02)", nil, "viewers cannot edit"},
		{"a hard-wrapped item", "- [ ] 1 Add token refresh, and\n  rotate the signing keys every day\n  - verify: `make test`\n",
			"1", "Add token refresh, and rotate the signing keys every day", nil, ""},
		{"a wrap without indentation", "- [ ] 1 Cache the\nresponses per user\n- [ ] 2 b\n", "1", "Cache the responses per user", nil, ""},
		{"a wrap over three lines, with its dependency on the last", "- [ ] 1 a\n- [ ] 2 Wire the parser into the\n  command line,\n  then ship it (depends: 1)\n",
			"2", "Wire the parser into the command line, then ship it", []string{"1"}, ""},
		{"a sentence of its own is a note", "- [ ] 1 Create the structure\n  Create the src and tests folders.\n", "1", "Create the structure", nil,
			"Create the src and tests folders."},
		{"a field after the title is not its title", "- [ ] 1 Persist invoices\n  Notes: use the pool,\n", "1", "Persist invoices", nil, "Notes: use the pool,"},
		{"a -- separator", "- [ ] 1.2 -- Add the cache\n", "1.2", "Add the cache", nil, ""},
		{"bold marks", "- [ ] **Add OAuth login** for **all** users\n", "1.1", "Add OAuth login for all users", nil, ""},
		{"bold outside code, a glob inside", "- [ ] 1 Lint `src/**/*.go` with **golangci-lint**\n", "1", "Lint `src/**/*.go` with golangci-lint", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			task := r.Task(tt.id)
			if task == nil {
				t.Fatalf("no task %s: %q", tt.id, summary(r))
			}
			if task.Title != tt.title {
				t.Errorf("title %q, want %q", task.Title, tt.title)
			}
			if !slices.Equal(task.Depends, append([]string{}, tt.deps...)) {
				t.Errorf("depends %q, want %q", task.Depends, tt.deps)
			}
			if task.Notes != tt.notes {
				t.Errorf("notes %q, want %q", task.Notes, tt.notes)
			}
		})
	}
}

// Issue 45, cause 1: unfinished work never reads as done, nor vanishes. Every mark is read as the
// file's legend says, else as not done, and such a reading is a guess.
func TestStatusMarks(t *testing.T) {
	const legendPlan = `# Roadmap

Legend: [x] done · [~] deployed but not verified · [-] dropped · [+] shipped

## Phase 1: Core

- [x] 1.1 Store
- [~] 1.2 Cache
- [-] 1.3 Old importer
- [/] 1.4 Half done
  - [+] the part that shipped
  - [>] the part that waits
- [ ] 1.5 Next
`
	r, err := Parse("ROADMAP.md", []byte(legendPlan))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		done, optional, guess bool
		reading               string
	}
	wants := map[string]want{
		"1.1": {true, false, false, ""},
		"1.2": {false, false, false, `[~] is read as not done: the legend on line 3 says "deployed but not verified"`},
		"1.3": {false, true, false, `[-] is read as dropped (left out of a run, as an optional task): the legend on line 3 says "dropped"`},
		"1.4": {false, false, true, "[/] is read as not done, a guess: no legend in the file says what it means"},
		"1.5": {false, false, false, ""},
	}
	if len(r.Tasks) != len(wants) {
		t.Fatalf("tasks %q: a marked line vanished", summary(r))
	}
	for id, w := range wants {
		task := r.Task(id)
		if task.Done != w.done || task.Optional != w.optional || (len(task.Guesses) > 0) != w.guess || task.MarkReading != w.reading {
			t.Errorf("%s: done %v optional %v guesses %q reading %q; want %+v", id, task.Done, task.Optional, task.Guesses, task.MarkReading, w)
		}
	}
	if subs := r.Task("1.4").Subtasks; len(subs) != 2 || !subs[0].Done || subs[1].Done {
		t.Errorf("subtasks of 1.4: %+v, want [+] done (the legend) and [>] not done", subs)
	}
	if w := warningsOf(r); !strings.Contains(w, "task 1.4: [/] is read as not done, a guess") || strings.Contains(w, "[~]") {
		t.Errorf("warnings %q, want one for [/] only", w)
	}
	var marks []string
	for _, m := range r.Marks {
		marks = append(marks, fmt.Sprintf("%s %s %v", m.Mark, m.Reading, m.Guess))
	}
	if want := []string{"[ ] not done false", "[x] done false", "[+] done false", "[-] dropped false", "[/] not done true",
		"[>] not done true", "[~] not done false"}; !slices.Equal(marks, want) {
		t.Errorf("marks %q, want %q", marks, want)
	}
	// Ticking a task marked [~] makes it [x]; the legend line and the shipped part stay as they are.
	out, err := Tick(r, []byte(legendPlan), "1.2", "1.4")
	if err != nil {
		t.Fatal(err)
	}
	wantOut := strings.NewReplacer("- [~] 1.2", "- [x] 1.2", "- [/] 1.4", "- [x] 1.4", "  - [>] the part", "  - [x] the part").Replace(legendPlan)
	if string(out) != wantOut {
		t.Errorf("ticked:\n%s\nwant:\n%s", out, wantOut)
	}

	// A meaning runs past a comma: "deployed, not verified" is not done.
	if r := mustParse(t, "Legend: [x] done, [~] deployed, not verified\n- [~] 1 a\n"); r.Tasks[0].Done {
		t.Errorf("[~] \"deployed, not verified\" read as done: %q", r.Tasks[0].MarkReading)
	}

	// A Kiro file whose unfinished sub-tasks are marked [~] does not read as all done.
	kiro, err := Parse("tasks.md", []byte("# Implementation Plan\n- [x] 1. Parser\n  - [x] 1.1 Tokenizer\n    - _Requirements: 1.1_\n  - [~] 1.2 Grammar\n    - _Requirements: 1.2_\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(kiro); !slices.Equal(got, []string{"x 1.1 Tokenizer", "1.2 Grammar"}) {
		t.Errorf("kiro tasks %q", got)
	}
}

// A status page: done bullets, and headings whose "Status:" field says where they stand.
func TestStatusFieldHeadings(t *testing.T) {
	const page = `# Status

## Done
- ✅ **Task 12**: Login page

## Remaining

#### Task 17: Export CSV
**Status**: Not started
- **Blocked by**: Task 12
- **Verify**: ` + "`make export-test`" + `
Writes one file per account.

#### Task 18: Import CSV
Status: ✅ Complete

#### Task 19: Audit log
- **Status**: Waiting on legal

#### Task 20: Themes
  **Status**: Someday maybe
`
	r, err := Parse("STATUS.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(r); !slices.Equal(got, []string{"x 12 Login page", "17 Export CSV", "x 18 Import CSV", "19 Audit log", "20 Themes"}) {
		t.Fatalf("tasks %q", got)
	}
	t17 := r.Task("17")
	if !slices.Equal(t17.Depends, []string{"12"}) || !slices.Equal(t17.Verify, []string{"make export-test"}) || t17.Notes != "Writes one file per account." ||
		t17.Phase != "Remaining" || t17.MarkReading != `the status "Not started" is read as not done` {
		t.Errorf("task 17: %+v", t17)
	}
	if g := r.Task("20").Guesses; len(g) != 1 || !strings.Contains(g[0], `"Someday maybe" is read as not done, a guess`) {
		t.Errorf("task 20 guesses %q", g)
	}
	// Ticking writes "Done" into the field and changes nothing else.
	out, err := Tick(r, []byte(page), "17", "19")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("**Status**: Not started", "**Status**: Done", "- **Status**: Waiting on legal", "- **Status**: Done").Replace(page)
	if out, err := Tick(r, []byte(page), "20"); err != nil || !strings.Contains(string(out), "\n  **Status**: Done\n") {
		t.Errorf("an indented field ticked: %q, %v", out, err)
	}
	if string(out) != want {
		t.Errorf("ticked:\n%s", out)
	}
	if after, err := Parse("STATUS.md", out); err != nil || !after.Task("17").Done || !after.Task("19").Done || after.Task("20").Done {
		t.Errorf("after ticking: %v %q", err, summary(after))
	}
}

// Issue 45, cause 5: lines that look like tasks and are not, read as a person reads them.
func TestStrayLines(t *testing.T) {
	tests := []struct {
		name, src string
		tasks     []string // summary
		notTasks  []int    // lines
		warning   string
	}{
		{"a choose-one group in a template", `## Type of change

Choose one:

- [ ] Patch
- [ ] Minor
- [ ] Major

## Checklist

- [ ] Tests added
`, []string{"1.1 Tests added"}, []int{5, 6, 7}, ""},
		{"the choice said in the heading", "## Version bump (select one)\n- [x] Patch\n- [ ] Minor\n## Work\n- [ ] Write the notes\n",
			[]string{"1.1 Write the notes"}, []int{2, 3}, ""},
		{"an orphaned copy after the end of the roadmap", `# Roadmap
## Phase 1: Core
- [x] 1.1 Store
- [ ] 1.2 Add the cache

---

- [ ] 1.2 Add the cache
`, []string{"x 1.1 Store", "1.2 Add the cache"}, []int{8}, "line 8 repeats the task on line 4: read as one task"},
		{"an orphaned copy in a section of its own", "## Phase 1\n- [ ] Add the cache\n- [ ] Ship it\n## Notes\n- [ ] Add the cache\n",
			[]string{"1.1 Add the cache", "1.2 Ship it"}, []int{5}, "repeats the task on line 2"},
		{"a copy with another mark is not done", "## Phase 1\n- [x] 1.1 Add the cache\n- [ ] 1.2 Ship it\n\n- [ ] 1.1 Add the cache\n",
			[]string{"1.1 Add the cache", "1.2 Ship it"}, []int{5}, "with another mark; the task is read as not done"},
		{"the same work in two phases is two tasks", "## Phase 1\n- [ ] Update the docs\n- [ ] Parser\n## Phase 2\n- [ ] Update the docs\n- [ ] Printer\n",
			[]string{"1.1 Update the docs", "1.2 Parser", "2.1 Update the docs", "2.2 Printer"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(r); !slices.Equal(got, tt.tasks) {
				t.Errorf("tasks %q, want %q", got, tt.tasks)
			}
			var lines []int
			for _, n := range r.NotTasks {
				lines = append(lines, n.Line)
			}
			if !slices.Equal(lines, tt.notTasks) {
				t.Errorf("not tasks on lines %v, want %v (%+v)", lines, tt.notTasks, r.NotTasks)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
	// Ticking a task ticks its orphaned copy too, so the file reads the same way after.
	src := "## Phase 1\n- [ ] 1.1 Add the cache\n\n---\n\n- [ ] 1.1 Add the cache\n"
	out, err := Tick(mustParse(t, src), []byte(src), "1.1")
	if err != nil || string(out) != strings.ReplaceAll(src, "[ ]", "[x]") {
		t.Errorf("ticked %q, %v", out, err)
	}
}

// Kiro's optional tasks ("- [ ]*") in a file laid out with "### Phase N" headings: read as Kiro
// tasks, the optional one left out of the run.
func TestKiroWithPhaseHeadings(t *testing.T) {
	r, err := Parse("tasks.md", []byte(`# Implementation Plan

Tasks marked with * are optional and can be skipped for a faster MVP.

### Phase 1: Core

- [ ] 1. Enhance the analyzer
  - [x] 1.1 Add summaries
    - _Requirements: 3.5_
  - [ ]* 1.2 Write a property test for relevance
    - **Validates: Requirements 3.5**

### Phase 2: Formatting

- [ ] 2. Enhance the formatter
  - [ ] 2.1 Add tables
    - _Requirements: 4.1_
`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Convention != ConventionKiro {
		t.Errorf("read as %s", r.Convention)
	}
	if got := summary(r); !slices.Equal(got, []string{"x 1.1 Add summaries", "1.2 Write a property test for relevance", "2.1 Add tables"}) {
		t.Fatalf("tasks %q", got)
	}
	if !r.Task("1.2").Optional || r.Task("2.1").Optional {
		t.Errorf("optional: 1.2 %v, 2.1 %v", r.Task("1.2").Optional, r.Task("2.1").Optional)
	}
}
