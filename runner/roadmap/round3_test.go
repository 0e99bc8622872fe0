package roadmap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// depsOf lists "id: deps" for each task, to compare a whole plan's reading in one line each.
func depsOf(r *Roadmap) []string {
	var out []string
	for _, t := range r.Tasks {
		out = append(out, t.ID+": "+strings.Join(t.Depends, " "))
	}
	return out
}

func warningsOf(r *Roadmap) string {
	var ws []string
	for _, w := range r.Warnings {
		ws = append(ws, w.Msg)
	}
	return strings.Join(ws, "\n")
}

// The plans below are written in GSD's documented ROADMAP layout: a phase list, "### Phase N"
// details with "**Depends on**" lines and NN-MM plans, milestones as "## vX.Y: Name" sections.
func TestGSDMilestonesRestartPhaseNumbers(t *testing.T) {
	tests := []struct {
		name, src  string
		ids, order []string
		phase      map[string]string // id -> phase
	}{
		{
			name: "each milestone numbers its phases from 1",
			src: `# Roadmap
## v1.0: Core
### Phase 1: Store
Plans:
- [x] 01-01: Files
### Phase 2: API
**Depends on**: Phase 1
Plans:
- [ ] 02-01: Routes
## v2.0: Sync
### Phase 1: Protocol
**Depends on**: Nothing
Plans:
- [ ] 01-01: Messages (Wave 1)
- [ ] 01-02: Framing (Wave 2)
### Phase 2: Client
**Depends on**: Phase 1
Plans:
- [ ] 02-01: Connect
`,
			ids:   []string{"v1.0/01-01: ", "v1.0/02-01: v1.0/01-01", "v2.0/01-01: ", "v2.0/01-02: v2.0/01-01", "v2.0/02-01: v2.0/01-01 v2.0/01-02"},
			order: []string{"v1.0/01-01", "v1.0/02-01", "v2.0/01-01", "v2.0/01-02", "v2.0/02-01"},
			phase: map[string]string{"v2.0/02-01": "v2.0 / Phase 2: Client", "v1.0/01-01": "v1.0 / Phase 1: Store"},
		},
		{
			name: "a dependency naming another milestone's phase",
			src: `# Roadmap
## v1.3: Import
### Phase 1: Reader
Plans:
- [ ] 01-01: Read
### Phase 2: Screen
Plans:
- [ ] 02-01: Upload
## v1.4: Export
### Phase 1: Writer
**Depends on**: Phase 2 of v1.3
Plans:
- [ ] 01-01: Write
### Phase 2: Round trip
**Depends on**: Phase 1, v1.3 Phase 1, Phase 2 (v1.3)
Plans:
- [ ] 02-01: Both ways
`,
			ids: []string{"v1.3/01-01: ", "v1.3/02-01: ", "v1.4/01-01: v1.3/02-01",
				"v1.4/02-01: v1.4/01-01 v1.3/01-01 v1.3/02-01"},
			order: []string{"v1.3/01-01", "v1.3/02-01", "v1.4/01-01", "v1.4/02-01"},
		},
		{
			name: "phase overview entries without plans are tasks of their milestone",
			src: `# Roadmap
## v1: First
- [x] **Phase 1: Spike** - try it
### Phase 1: Spike
**Plans**: TBD
## v2: Second
- [ ] **Phase 1: Build** - for real
- [ ] **Phase 2: Ship** - release
### Phase 2: Ship
**Depends on**: Phase 1
`,
			ids:   []string{"v1/1: ", "v2/1: ", "v2/2: v2/1"},
			order: []string{"v1/1", "v2/1", "v2/2"},
			phase: map[string]string{"v2/2": "v2 / Phase 2: Ship"},
		},
		{
			name: "milestones that number on keep their ids",
			src: `# Roadmap
## v1.0: MVP
### Phase 1: A
Plans:
- [x] 01-01: a
## v1.1: More
### Phase 2: B
**Depends on**: Phase 1
Plans:
- [ ] 02-01: b
`,
			ids:   []string{"01-01: ", "02-01: 01-01"},
			order: []string{"01-01", "02-01"},
		},
		{
			name: "an archived milestone in a details block",
			src: `# Roadmap
<details>
<summary>✅ v1.0 MVP (Phases 1-2) — SHIPPED</summary>

### Phase 1: A
Plans:
- [x] 01-01: a

</details>

### 🚧 v1.1 Next

### Phase 1: B
Plans:
- [ ] 01-01: b
`,
			ids:   []string{"v1.0/01-01: ", "v1.1/01-01: "},
			order: []string{"v1.0/01-01", "v1.1/01-01"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if r.Convention != ConventionGSD {
				t.Fatalf("read as %s", r.Convention)
			}
			if got := depsOf(r); !slices.Equal(got, tt.ids) {
				t.Errorf("tasks:\n%q\nwant\n%q", got, tt.ids)
			}
			if !slices.Equal(r.Order, tt.order) {
				t.Errorf("order %q, want %q", r.Order, tt.order)
			}
			for id, phase := range tt.phase {
				if task := r.Task(id); task == nil || task.Phase != phase {
					t.Errorf("phase of %s = %+v, want %q", id, task, phase)
				}
			}
			// The scoped ids are what Tick finds.
			if _, err := Tick(r, []byte(tt.src), r.Order...); err != nil {
				t.Errorf("tick: %v", err)
			}
		})
	}
}

func TestGSDInsertedPhases(t *testing.T) {
	tests := []struct {
		name, src  string
		ids, order []string
		warning    string
	}{
		{
			name: "zero-padded decimals",
			src: `# Roadmap
### Phase 01: Base
Plans:
- [x] 01-01-PLAN.md — base
### Phase 01.1: Fix (INSERTED)
**Depends on:** Phase 01
Plans:
- [ ] 01.1-01-PLAN.md — fix
### Phase 02: Next
**Depends on:** Phase 1.1
Plans:
- [ ] 02-01-PLAN.md — next
`,
			ids:   []string{"01-01: ", "01.1-01: 01-01", "02-01: 01.1-01"},
			order: []string{"01-01", "01.1-01", "02-01"},
		},
		{
			name: "nested inserted phases written out of order run by number",
			src: `# Roadmap
### Phase 02.13.1: Docs (INSERTED)
Plans:
- [ ] 02.13.1-01: docs
### Phase 02.10: Tracing (INSERTED)
Plans:
- [ ] 02.10-01: tracing
### Phase 02.9: Metrics (INSERTED)
Plans:
- [ ] 02.9-01: metrics
### Phase 02.13: Backpressure (INSERTED)
Plans:
- [ ] 02.13-01: backpressure
### Phase 02: Routing
Plans:
- [ ] 02-01: routing
`,
			ids:   []string{"02.13.1-01: ", "02.10-01: ", "02.9-01: ", "02.13-01: ", "02-01: "},
			order: []string{"02-01", "02.9-01", "02.10-01", "02.13-01", "02.13.1-01"},
		},
		{
			name: "a plan written under another phase belongs to the phase its id names",
			src: `# Roadmap
### Phase 2: API
Plans:
- [ ] 02-01: routes
### Phase 2.1: Hotfix (INSERTED)
**Depends on:** Phase 2
### Phase 3: Reports
**Depends on:** Phase 2.1
Plans:
- [ ] 02.1-01: clamp the page size
- [ ] 03-01: reports
`,
			ids:   []string{"02-01: ", "02.1-01: 02-01", "03-01: 02.1-01"},
			order: []string{"02-01", "02.1-01", "03-01"},
		},
		{
			name: "a Depends on line naming a later phase is words, not a cycle",
			src: `# Roadmap
- [ ] **Phase 5: Cluster** - several nodes
- [ ] **Phase 5.1: Fencing (INSERTED)** - split brain
- [ ] **Phase 6: Release** - ship
### Phase 5: Cluster
Plans:
- [ ] 05-01: membership
### Phase 5.1: Fencing (INSERTED)
**Depends on:** Phase 5, Phase 6 as it will be
Plans:
- [ ] 05.1-01: tokens
### Phase 6: Release
**Depends on:** Phase 5.1
`,
			ids:     []string{"6: 05.1-01", "05-01: ", "05.1-01: 05-01"},
			order:   []string{"05-01", "05.1-01", "6"},
			warning: `phase 5.1: "**Depends on:** Phase 5, Phase 6 as it will be" names phase 6, which is not before it`,
		},
		{
			name: "prose after before is not a dependency",
			src: `# Roadmap
### Phase 5: Cluster
Plans:
- [ ] 05-01: membership
### Phase 5.1: Fencing (INSERTED)
**Depends on:** Phase 5, must land before Phase 6
Plans:
- [ ] 05.1-01: tokens
### Phase 6: Release
**Depends on:** Phase 5.1
Plans:
- [ ] 06-01: ship
`,
			ids:   []string{"05-01: ", "05.1-01: 05-01", "06-01: 05.1-01"},
			order: []string{"05-01", "05.1-01", "06-01"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("ROADMAP.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := depsOf(r); !slices.Equal(got, tt.ids) {
				t.Errorf("tasks:\n%q\nwant\n%q", got, tt.ids)
			}
			if !slices.Equal(r.Order, tt.order) {
				t.Errorf("order %q, want %q", r.Order, tt.order)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
}

func TestCompareDotted(t *testing.T) {
	sorted := []string{"1", "01.1", "02", "02.9", "02.10", "02.13", "02.13.1", "2.14", "3"}
	for i := range sorted {
		for j := range sorted {
			got := compareDotted(sorted[i], sorted[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("compareDotted(%s, %s) = %d", sorted[i], sorted[j], got)
			}
		}
	}
}

// Ranges as people write them in spec-kit, Kiro and checklist plans.
func TestDependencyRanges(t *testing.T) {
	speckit := "## Phase 1\n- [ ] T001 a\n- [ ] T002 b\n- [ ] T003 c\n- [ ] T004 d\n"
	dotted := "- [ ] T1.2.1 a\n- [ ] T1.2.2 b\n- [ ] T1.2.3 c\n- [ ] T1.2.4 d\n"
	numbered := "- [ ] 1 a\n- [ ] 2 b\n- [ ] 3 c\n- [ ] 4 d\n- [ ] 5 e\n"
	gsd := "### Phase 1: A\nPlans:\n- [ ] 01-01: a\n- [ ] 01-02: b\n- [ ] 01-03: c\n- [ ] 01-04: d\n"
	tests := []struct {
		name, plan, last string
		deps             []string
		err              string
	}{
		{"en dash", speckit, "- [ ] T005 e (depends on T001–T003)", []string{"T001", "T002", "T003"}, ""},
		{"en dash with spaces", speckit, "- [ ] T005 e (depends on T002 – T004)", []string{"T002", "T003", "T004"}, ""},
		{"dash between dotted ids", dotted, "- [ ] T1.3.1 e (dep: T1.2.2-T1.2.4)", []string{"T1.2.2", "T1.2.3", "T1.2.4"}, ""},
		{"two dots", gsd, "- [ ] 01-05: e (depends on 01-02..01-04)", []string{"01-02", "01-03", "01-04"}, ""},
		{"to, in words", numbered, "- [ ] 6 f (depends on Tasks 3 to 5)", []string{"3", "4", "5"}, ""},
		{"a dash between bare numbers", numbered, "- [ ] 6 f (depends: 2-4)", []string{"2", "3", "4"}, ""},
		{"a range and an id", speckit, "- [ ] T005 e (depends: T001..T002, T004)", []string{"T001", "T002", "T004"}, ""},
		{"in a sub-item", speckit, "- [ ] T005 e\n  - depends: T003 to T004", []string{"T003", "T004"}, ""},
		{"ignoring case", speckit, "- [ ] T005 e (depends on t001–t002)", []string{"T001", "T002"}, ""},
		{"ends without a shared prefix", speckit, "- [ ] T005 e (depends on T001–X003)", nil, "dependency range T001–X003 is not one kind of id: T001 and X003 do not share a prefix"},
		{"dotted ends in different groups", dotted, "- [ ] T1.3.1 e (dep: T1.2.2-T1.3.1)", nil, "T1.2.2 and T1.3.1 do not share a prefix"},
		{"missing tasks", speckit, "- [ ] T005 e (depends on T003–T007)", nil, "dependency range T003–T007 names tasks T006, T007, which the plan does not have"},
		{"backwards", speckit, "- [ ] T005 e (depends on T003..T001)", nil, "runs backwards"},
		{"widths differ", speckit, "- [ ] T005 e (depends on T01 to T003)", nil, "T01 and T003 differ in width"},
		{"too long", speckit, "- [ ] T005 e (depends on T1-T5000)", nil, "spans 5000 tasks, more than 1000"},
		{"a GSD plan id is never a range", gsd, "- [ ] 01-05: e (depends on 01-07)", nil, "depends on unknown task 01-07"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("tasks.md", []byte(tt.plan+tt.last+"\n"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			last := r.Tasks[len(r.Tasks)-1]
			if !slices.Equal(last.Depends, tt.deps) {
				t.Errorf("depends %q, want %q", last.Depends, tt.deps)
			}
			for _, d := range last.DependsFrom {
				if d.Text == "" || d.Line == 0 {
					t.Errorf("dependency %s has no source: %+v", d.ID, d)
				}
			}
		})
	}
}

func TestSplitIDsKeepsRanges(t *testing.T) {
	tests := map[string][]string{
		"T001 – T005, T007":   {"T001 – T005", "T007"},
		"Tasks 3 to 5":        {"3 to 5"},
		"1.1 -":               {"1.1"},
		"due to 1.2":          {"due", "to", "1.2"},
		"01-02..01-04":        {"01-02..01-04"},
		"1.1 .. 1.3 and 2":    {"1.1 .. 1.3", "2"},
		"T1 to the end":       {"T1", "to", "the", "end"},
		"none":                nil,
		"T001-T003; T004–T5,": {"T001-T003", "T004–T5"},
	}
	for in, want := range tests {
		if got := splitIDs(in); !slices.Equal(got, want) {
			t.Errorf("splitIDs(%q) = %q, want %q", in, got, want)
		}
	}
}

// "(after 1.1)" without a colon is a dependency when every id it names is a task; otherwise it
// stays in the title, with a warning when it names something shaped like an id.
func TestAfterWithoutColon(t *testing.T) {
	plan := "- [ ] 1.1 First\n- [ ] 1.2 Second\n"
	tests := []struct {
		name, last, title string
		deps              []string
		warning           string
	}{
		{"one id", "- [ ] 1.3 Third (after 1.1)", "Third", []string{"1.1"}, ""},
		{"several ids", "- [ ] 1.3 Third (after 1.1, 1.2)", "Third", []string{"1.1", "1.2"}, ""},
		{"a range", "- [ ] 1.3 Third (after 1.1 to 1.2)", "Third", []string{"1.1", "1.2"}, ""},
		{"with a colon, as before", "- [ ] 1.3 Third (after: 1.2)", "Third", []string{"1.2"}, ""},
		{"words", "- [ ] 1.3 Third (after lunch)", "Third (after lunch)", nil, ""},
		{"an id that is no task", "- [ ] 1.3 Third (after 1.9)", "Third (after 1.9)", nil, `"(after 1.9)" looks like a dependency but is not read as one`},
		{"an id among words", "- [ ] 1.3 Third (after 1.1 is merged)", "Third (after 1.1 is merged)", nil, `write "(after: 1.1)" for a dependency`},
		{"in a code span", "- [ ] 1.3 Document `(after 1.1)`", "Document `(after 1.1)`", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, plan+tt.last+"\n")
			last := r.Tasks[2]
			if last.Title != tt.title || !slices.Equal(last.Depends, append([]string{}, tt.deps...)) {
				t.Errorf("task %q after %q, want %q after %q", last.Title, last.Depends, tt.title, tt.deps)
			}
			if w := warningsOf(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
}

// Each dependency keeps the words it was read from, for akira plan --explain.
func TestDependsFrom(t *testing.T) {
	src := `# Roadmap
### Phase 1: A
Plans:
- [ ] 01-01: a (Wave 1)
- [ ] 01-02: b (Wave 2)
### Phase 2: B
**Depends on:** Phase 1
Plans:
- [ ] 02-01: c
- [ ] 02-02: d (depends on 01-01..01-02)
  - verify: true
- [ ] 02-03: e
  - depends: 02-01
`
	r, err := Parse("ROADMAP.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]DepSource{
		"01-02": {{"01-01", 5, "wave 2 of phase 1 comes after its wave 1", false}},
		"02-01": {{"01-01", 7, "**Depends on:** Phase 1", false}, {"01-02", 7, "**Depends on:** Phase 1", false}},
		"02-02": {{"01-01", 10, "(depends on 01-01..01-02)", false}, {"01-02", 10, "(depends on 01-01..01-02)", false}},
		"02-03": {{"02-01", 13, "- depends: 02-01", false}},
	}
	for id, w := range want {
		if got := r.Task(id).DependsFrom; !slices.Equal(got, w) {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
	}
	if got := r.Task("01-01").ReadAs; got != "a checkbox line of a GSD roadmap" {
		t.Errorf("ReadAs = %q", got)
	}
}

// A hostile plan cannot turn a few bytes of ranges into millions of dependencies.
func TestRangeBudget(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "- [ ] T%03d a\n", i)
	}
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "- [ ] U%03d b (depends on T001–T200)\n", i)
	}
	_, err := Parse("tasks.md", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 100000 dependencies") {
		t.Fatalf("err = %.300v", err)
	}
}
