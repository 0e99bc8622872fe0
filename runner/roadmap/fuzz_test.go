package roadmap

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
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

// checkMarkdownTick ticks every other task of any markdown input, valid or not.
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
		if _, n := emojiBox(s); b.emoji && n == 0 || !b.emoji && !(len(s) >= 3 && s[0] == '[' && s[2] == ']') {
			t.Fatalf("box at %d is not a checkbox: %q", b.off, s[:min(len(s), 8)])
		}
	}
	out, err := tick(FormatMarkdown, before.convention, data, ids)
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	if len(out) != len(data) {
		t.Fatalf("tick changed the length: %d -> %d", len(data), len(out))
	}
	for i := range data {
		if data[i] == out[i] {
			continue
		}
		inside := false
		for _, b := range boxes {
			width := 3 // "[ ]", or a 3-byte mark; 🔲 🚧 📋 are 4
			if _, n := emojiBox(string(data[b.off:])); b.emoji && n > 0 {
				width = n
			}
			if i >= b.off && i < b.off+width {
				inside = true
			}
		}
		if !inside {
			t.Fatalf("byte %d changed outside the ticked checkboxes: %q -> %q", i, data[i], out[i])
		}
	}
	after := scanMarkdown(out, before.convention)
	if after.title != before.title || len(after.items) != len(before.items) {
		t.Fatalf("ticking changed the roadmap: %d tasks -> %d", len(before.items), len(after.items))
	}
	for i, it := range before.items {
		want := *it.task
		want.Subtasks = append([]Subtask{}, want.Subtasks...)
		if ticked[it] {
			want.Done = true
			for j := range want.Subtasks {
				want.Subtasks[j].Done = true
			}
		}
		if got := after.items[i].task; !reflect.DeepEqual(&want, got) {
			t.Fatalf("task %d after tick:\n got %+v\nwant %+v", i, got, &want)
		}
	}
}
