package roadmap

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var fuzzNames = [...]string{FormatMarkdown: "ROADMAP.md", FormatYAML: "tasks.yaml", FormatJSON: "tasks.json"}

// FuzzParse checks, for any input in any of the three formats: parsing never panics and returns
// exactly one of a roadmap or errors; Tick with no ids returns identical bytes; ticking markdown
// changes only bytes inside the checkboxes of the ticked tasks and their subtasks, and the result
// reads back as the same roadmap with those tasks done; ticking a valid task list yields the same
// tasks, all done.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(FormatOf(name)))
	}
	for _, s := range []string{
		"- [ ] 1 a\r\n\t- [ ] s  \r\n* ⬜ b (depends: 1)",
		"## P\n- [ ] a\n  ```\n- [ ] b\n<!--\n- [x] c\n-->\n✅ d\n☐\ufe0f e",
		"---\nx: 1\n---\nT\n===\n1. [X] **T-1:** a [P] [US1] (after: 2)\n2) [ ] [2] b\n  - depends:\n    - 1\n  - verify: `x`",
		// The notations of real plans (see patterns_test.go).
		"- [x] [P1] WP-01: a\n- [ ] D1 Configs\n- [ ] D1 Settings (dep: WP-01)\n- [ ] **T1.1.1**: b [AUTH-US1] (Wave 2, depends on 01-03)\n",
		"### [x] CLI\n### [ ] API\n- 🚧 c\n- 🔲 d\n📋 e\n- [ ] t001 f blocked-by:t000\n  - **Dependencies**: Task 1.1, IApplyStep extraction\n",
		// GSD milestones that restart phase numbers, inserted phases out of order, forward "Depends on".
		"## v1.3: A\n- [x] **Phase 1: a**\n### Phase 1: a\nPlans:\n- [x] 01-01: x\n## v1.4: B\n### Phase 01.1: b (INSERTED)\n**Depends on:** Phase 1 of v1.3, Phase 2 (v1.4)\nPlans:\n- [ ] 01-01: y (Wave 2)\n",
		"<details>\n<summary>✅ v1.0 x</summary>\n### Phase 02.13.1: c\nPlans:\n- [ ] 02.13.1-01: z\n</details>\n### 🚧 v1.1 y\n### Phase 02.9: d\n**Depends on:** Phases 02.13..3, before Phase 1\n- [ ] 02.1-01 w\n",
		// Ranges and "(after …)" without a colon.
		"- [ ] T001 a\n- [ ] T002 b (depends on T001–T001)\n- [ ] T1.2.2 c (dep: T1.2.2-T1.2.4)\n- [ ] 3 d (after 1 to 2, T001 .. T002)\n- [ ] 4 e (after lunch) (after 9)\n  - depends: 01-02..01-04, Tasks 3 to 5, T9-X9, T0-T99999\n",
		// Status marks and legends, status fields under headings, wrapped titles, prose (issue 45).
		"Legend: [x] done · [~] deployed but not verified · [-] dropped · [+] shipped\n- [~] 1 a\n  - [+] s\n  - [/] t\n- [-] 2 b\n- [>] 3 c, and\n  more **bold** words\n",
		"## Legend\n- [~] = in progress\n## Work\n#### Task 17: Export\n**Status**: Not started\n- **Blocked by**: Task 12\n#### Task 12: Login\nStatus: ✅ Complete\n### T-3: x\n- **Status**: Weird\n",
		"## Phase 1: Setup\n- [ ] T001 a\n- [ ] T002 [P] b\n## Phase 2: Foundational\n- [ ] T003 [P] c\n## Phase 3: User Story 1\n- [ ] T004 [P] [US1] d (depends on T001; not T002)\n## Dependencies & Execution Order\n- US1: Depends on Setup, in parallel with Phase 2\n",
		"### Phase 3: X\n**Depends on:** Phases 1, 2 (hard), 2.1 (soft); independent of Phase 4.\nPlans:\n- [ ] 03-01: a (wave 1)\n- [ ] 03-02: b (wave 2, depends on 01)\n- [ ]* 1. k\n  - [ ]* 1.1 m\n  - Depends on tasks 1–3\n",
	} {
		f.Add([]byte(s), uint8(FormatMarkdown))
	}
	f.Add([]byte("tasks: [{id: a, title: A}, {id: b, title: B, depends: a, done: false}]"), uint8(FormatYAML))
	f.Add([]byte("{\"tasks\":[{\"id\":\"a\",\"title\":\"A\"},\n\t{\"id\":\"b\",\"title\":\"B\",\"done\":false}]}"), uint8(FormatJSON))

	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		format := Format(kind % 3)
		name := fuzzNames[format]
		r, err := Parse(name, data)
		if (r == nil) == (err == nil) {
			t.Fatalf("Parse returned roadmap %v and error %v", r, err)
		}
		same, err := tick(format, "", data, nil)
		if err != nil || !bytes.Equal(same, data) {
			t.Fatalf("tick without ids changed the input (err %v)", err)
		}
		if format == FormatMarkdown {
			checkMarkdownTick(t, data)
			return
		}
		if r == nil {
			return
		}
		var ids []string
		for _, task := range r.Tasks {
			ids = append(ids, task.ID)
		}
		out, err := Tick(r, data, ids...)
		if err != nil {
			t.Fatalf("tick: %v", err)
		}
		after, err := Parse(name, out)
		if err != nil {
			t.Fatalf("ticked task list does not parse: %v\n%s", err, out)
		}
		if len(after.Tasks) != len(r.Tasks) {
			t.Fatalf("ticking changed the number of tasks: %d -> %d", len(r.Tasks), len(after.Tasks))
		}
		for i, task := range after.Tasks {
			want, got := withoutLines(r.Tasks[i]), withoutLines(task)
			want.Done = true
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("task %d after tick:\n got %+v\nwant %+v", i, got, want)
			}
		}
	})
}

// checkMarkdownTick ticks every other task of any markdown input, valid or not: the output is the
// input with each ticked box made done ("[ ]" or "[~]" to "[x]", a pending emoji to ✅ padded to
// its width, a status field's value to "Done") and nothing else, and it reads back as the same
// tasks with those done.
func checkMarkdownTick(t *testing.T, data []byte) {
	before := scanMarkdown(data, "")
	first := map[string]*item{}
	var ids []string
	for i, it := range before.items {
		if _, ok := first[it.task.ID]; ok {
			continue
		}
		first[it.task.ID] = it
		if i%2 == 0 {
			ids = append(ids, it.task.ID)
		}
	}
	ticked := map[*item]bool{}
	var boxes []box
	for _, id := range ids {
		it := first[id]
		ticked[it] = true
		boxes = append(boxes, it.box)
		boxes = append(boxes, it.subBoxes...)
	}
	for _, b := range boxes {
		s := string(data[b.off:])
		switch {
		case b.status:
			if b.off+b.width > len(data) {
				t.Fatalf("status value at %d runs past the end", b.off)
			}
		case b.emoji:
			if _, n := emojiBox(s); n == 0 {
				t.Fatalf("box at %d is not a checkbox: %q", b.off, s[:min(len(s), 8)])
			}
		case !(len(s) >= 3 && s[0] == '[' && s[2] == ']'):
			t.Fatalf("box at %d is not a checkbox: %q", b.off, s[:min(len(s), 8)])
		}
	}
	out, err := tick(FormatMarkdown, before.convention, data, ids)
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	if want := tickedBytes(data, boxes); !bytes.Equal(out, want) {
		t.Fatalf("tick changed more than the ticked boxes:\n got %q\nwant %q", out, want)
	}
	after := scanMarkdown(out, before.convention)
	if after.title != before.title || len(after.items) != len(before.items) {
		t.Fatalf("ticking changed the roadmap: %d tasks -> %d", len(before.items), len(after.items))
	}
	for i, it := range before.items {
		want := *it.task
		want.Subtasks = append([]Subtask{}, want.Subtasks...)
		got := *after.items[i].task
		if ticked[it] {
			want.Done = true
			for j := range want.Subtasks {
				want.Subtasks[j].Done = true
			}
			// The mark is now a plain done one: what was read from the old mark goes.
			if strings.Contains(want.MarkReading, string(readingDropped)) {
				want.Optional = got.Optional
			}
			want.Mark, want.MarkReading, want.Guesses = "", "", nil
			got.Mark, got.MarkReading, got.Guesses = "", "", nil
		}
		if !reflect.DeepEqual(&want, &got) {
			t.Fatalf("task %d after tick:\n got %+v\nwant %+v", i, &got, &want)
		}
	}
}

// tickedBytes is data with the given boxes made done, written independently of tick.
func tickedBytes(data []byte, boxes []box) []byte {
	sorted := append([]box{}, boxes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].off > sorted[j].off })
	out := bytes.Clone(data)
	seen := map[int]bool{}
	for _, b := range sorted {
		if seen[b.off] || b.done {
			continue
		}
		seen[b.off] = true
		switch {
		case b.status:
			out = append(out[:b.off:b.off], append([]byte("Done"), out[b.off+b.width:]...)...)
		case b.emoji:
			for _, e := range pendingEmoji {
				if strings.HasPrefix(string(out[b.off:]), e) {
					copy(out[b.off:], "✅"+strings.Repeat(" ", len(e)-len("✅")))
					break
				}
			}
		default:
			out[b.off+1] = 'x'
		}
	}
	return out
}
