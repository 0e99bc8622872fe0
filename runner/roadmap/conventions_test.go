package roadmap

import (
	"slices"
	"strings"
	"testing"
)

// gsdRoadmap is written in GSD's layout: a phase overview, "### Phase N" details, plans named by
// their files, waves, and "Depends on" lines per phase.
const gsdRoadmap = `# Roadmap: Ledger

## Phases

- [x] **Phase 1: Storage** — Keep entries on disk. *(completed 2026-05-01)*
- [ ] **Phase 2: API** — Serve entries over HTTP.
- [ ] **Phase 2.1: Hotfix (INSERTED)** — Fix the overflow.
- [ ] **Phase 3: Reports** — Monthly summaries.

## Phase Details

### Phase 1: Storage
**Goal:** entries survive a restart.
**Depends on:** Nothing (foundation)
**Plans:** 2 plans

Plans:
- [x] 01-01-PLAN.md — Failing tests for the store (Wave 1)
- [x] 01-02-PLAN.md — The store itself (Wave 2)

### Phase 2: API
**Depends on:** Phase 1
**Plans:** 3 plans

Plans:
**Wave 1**
- [ ] 02-01-PLAN.md — Routes and handlers
- [ ] 02-02-PLAN.md — Auth middleware

**Wave 2** *(blocked on Wave 1 completion)*
- [ ] 02-03-PLAN.md — Pagination

### Phase 2.1: Hotfix (INSERTED)
**Depends on:** Phase 2
**Plans:** 1 plan

Plans:
- [ ] 02.1-01: Clamp the page size

### Phase 3: Reports
**Depends on:** Phases 1–2
**Plans:** TBD

## Progress

| Phase | Plans Complete | Status |
|-------|----------------|--------|
| 1. Storage | 2/2 | Complete |
`

func TestGSDRoadmap(t *testing.T) {
	r, err := Parse("ROADMAP.md", []byte(gsdRoadmap))
	if err != nil {
		t.Fatal(err)
	}
	if r.Convention != ConventionGSD {
		t.Fatalf("read as %s", r.Convention)
	}
	type want struct {
		id, phase, title string
		done             bool
		deps, context    []string
	}
	wants := []want{
		// Phase 3 lists no plans yet: its overview entry is its one task, after the phases it depends on.
		{"3", "Phase 3: Reports", "Reports", false, []string{"01-01", "01-02", "02-01", "02-02", "02-03"}, nil},
		{"01-01", "Phase 1: Storage", "Failing tests for the store (Wave 1)", true, nil, []string{"01-01-PLAN.md"}},
		{"01-02", "Phase 1: Storage", "The store itself (Wave 2)", true, []string{"01-01"}, []string{"01-02-PLAN.md"}},
		{"02-01", "Phase 2: API", "Routes and handlers", false, []string{"01-01", "01-02"}, []string{"02-01-PLAN.md"}},
		{"02-02", "Phase 2: API", "Auth middleware", false, []string{"01-01", "01-02"}, []string{"02-02-PLAN.md"}},
		{"02-03", "Phase 2: API", "Pagination", false, []string{"02-01", "02-02"}, []string{"02-03-PLAN.md"}},
		{"02.1-01", "Phase 2.1: Hotfix (INSERTED)", "Clamp the page size", false, []string{"02-01", "02-02", "02-03"}, nil},
	}
	if len(r.Tasks) != len(wants) {
		var got []string
		for _, t := range r.Tasks {
			got = append(got, t.ID+" "+t.Title)
		}
		t.Fatalf("tasks %q; want %d (the overview's planned phases are not tasks)", got, len(wants))
	}
	for i, w := range wants {
		got := r.Tasks[i]
		if got.ID != w.id || got.Phase != w.phase || got.Title != w.title || got.Done != w.done ||
			!slices.Equal(got.Depends, append([]string{}, w.deps...)) || !slices.Equal(got.Context, append([]string{}, w.context...)) {
			t.Errorf("task %d = %s %q %q done=%v deps=%v context=%v\nwant %s %q %q done=%v deps=%v context=%v", i,
				got.ID, got.Phase, got.Title, got.Done, got.Depends, got.Context, w.id, w.phase, w.title, w.done, w.deps, w.context)
		}
	}
	// Forced to a plain checklist, the same file reads as every checkbox in it.
	plain, err := ParseAs("ROADMAP.md", []byte(gsdRoadmap), ConventionChecklist)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Convention != ConventionChecklist || len(plain.Tasks) != 10 {
		t.Errorf("as a checklist: %s, %d tasks", plain.Convention, len(plain.Tasks))
	}
	if _, err := ParseAs("ROADMAP.md", []byte(gsdRoadmap), "gsdd"); err == nil || !strings.Contains(err.Error(), "gsd, spec-kit") {
		t.Errorf("unknown convention: %v", err)
	}
	ticked, err := Tick(r, []byte(gsdRoadmap), "02-01", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ticked), "- [x] 02-01-PLAN.md") || !strings.Contains(string(ticked), "- [x] **Phase 3: Reports**") {
		t.Errorf("ticked:\n%s", ticked)
	}
}

const kiroTasks = `# Implementation Plan

- [x] 1. Set up the project structure
  - Create the module and the CI workflow
  - _Requirements: 1.1_

- [ ] 2. Build the parser
  - [x] 2.1 Write the tokenizer
    - Handle quoted strings
    - _Requirements: 2.1, 2.2_
  - [ ] 2.2 Write the grammar
    - _Requirements: 2.3_
  - [ ]* 2.3 Write property tests for the grammar
    - _Requirements: 2.3_

- [ ] 3. Checkpoint - make sure all tests pass
`

func TestKiroTasks(t *testing.T) {
	r, err := Parse("tasks.md", []byte(kiroTasks))
	if err != nil {
		t.Fatal(err)
	}
	if r.Convention != ConventionKiro {
		t.Fatalf("read as %s", r.Convention)
	}
	var got []string
	for _, task := range r.Tasks {
		s := task.ID + " " + task.Title
		if task.Done {
			s += " [done]"
		}
		if task.Optional {
			s += " [optional]"
		}
		if task.Phase != "" {
			s += " @" + task.Phase
		}
		got = append(got, s)
	}
	want := []string{
		"1 Set up the project structure [done] @Implementation Plan",
		"2.1 Write the tokenizer [done] @2. Build the parser",
		"2.2 Write the grammar @2. Build the parser",
		"2.3 Write property tests for the grammar [optional] @2. Build the parser",
		"3 Checkpoint - make sure all tests pass @Implementation Plan",
	}
	if !slices.Equal(got, want) {
		t.Errorf("tasks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := r.Task("2.2"); len(d.Depends) != 0 || !strings.Contains(d.Notes, "_Requirements: 2.3_") {
		t.Errorf("requirements are references in the notes, not dependencies: %+v", d)
	}
	// The parent's box is ticked with its last sub-task.
	ticked, err := Tick(r, []byte(kiroTasks), "2.2", "2.3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ticked), "- [x] 2. Build the parser") || !strings.Contains(string(ticked), "- [x]* 2.3") {
		t.Errorf("ticked:\n%s", ticked)
	}
}
