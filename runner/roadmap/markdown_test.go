package roadmap

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *Roadmap {
	t.Helper()
	r, err := ParseMarkdown("ROADMAP.md", []byte(src))
	if err != nil {
		t.Fatalf("parse:\n%s\nerror: %v", src, err)
	}
	return r
}

// summary renders tasks compactly so tables can state expectations in one string each.
func summary(r *Roadmap) []string {
	var out []string
	for _, t := range r.Tasks {
		s := t.ID + " " + t.Title
		if t.Done {
			s = "x " + s
		}
		out = append(out, s)
	}
	return out
}

func TestTaskDetection(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // "[x ]id title"
	}{
		{"dash", "- [ ] a", []string{"1.1 a"}},
		{"star", "* [ ] a", []string{"1.1 a"}},
		{"plus", "+ [ ] a", []string{"1.1 a"}},
		{"ordered dot", "1. [ ] a\n2. [x] b", []string{"1.1 a", "x 1.2 b"}},
		{"ordered paren", "1) [ ] a", []string{"1.1 a"}},
		{"upper X", "- [X] a", []string{"x 1.1 a"}},
		{"tab after marker", "-\t[ ]\ta", []string{"1.1 a"}},
		{"emoji in list", "- ✅ a\n- ⬜ b\n- ☐ c", []string{"x 1.1 a", "1.2 b", "1.3 c"}},
		{"bare emoji lines", "✅ a\n⬜ b\n☐ c", []string{"x 1.1 a", "1.2 b", "1.3 c"}},
		{"emoji with variation selector", "- ⬜\ufe0f a", []string{"1.1 a"}},
		{"nested in a plain list item", "- Phase one\n  - [ ] a\n  - [x] b", []string{"1.1 a", "x 1.2 b"}},
		{"indented task", "   - [ ] a", []string{"1.1 a"}},
		{"no space after marker", "-[ ] a", nil},
		{"no space after box", "- [ ]a", nil},
		{"other letter", "- [y] a", nil},
		{"empty brackets", "- [] a", nil},
		{"box without list marker", "[ ] a", nil},
		{"link reference", "- [x]: https://example.com", nil},
		{"plain list", "- a\n- b", nil},
		{"emoji not at start", "- done ✅", nil},
		{"other emoji", "- 🔄 a", nil},
		{"CRLF", "- [ ] a\r\n- [x] b\r\n", []string{"1.1 a", "x 1.2 b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(mustParse(t, tt.src))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSubtasks(t *testing.T) {
	src := `- [ ] 1 Parent
  - [x] first
    - [ ] deeper still counts
  - plain item is a note
  1. [ ] ordered sub
- [ ] 2 Sibling
`
	r := mustParse(t, src)
	if got := summary(r); !reflect.DeepEqual(got, []string{"1 Parent", "2 Sibling"}) {
		t.Fatalf("tasks = %q", got)
	}
	want := []Subtask{{"first", true}, {"deeper still counts", false}, {"ordered sub", false}}
	if got := r.Tasks[0].Subtasks; !reflect.DeepEqual(got, want) {
		t.Errorf("subtasks = %+v, want %+v", got, want)
	}
	if got := r.Tasks[0].Notes; got != "- plain item is a note" {
		t.Errorf("notes = %q", got)
	}
	if got := r.Tasks[1].Subtasks; got == nil || len(got) != 0 {
		t.Errorf("sibling subtasks = %#v, want empty non-nil", got)
	}
}

func TestPhasesAndTitle(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		title     string
		phases    []string // phase of each task
		wantIDs   []string
		wantTasks int
	}{
		{
			name:   "nearest level-2 heading",
			src:    "# Title\n## One\n- [ ] a\n## Two\n- [ ] b\n- [ ] c",
			title:  "Title",
			phases: []string{"One", "Two", "Two"},
		},
		{
			name:   "level-1 heading when there is no level-2 above",
			src:    "# Title\n- [ ] a\n## One\n- [ ] b",
			title:  "Title",
			phases: []string{"Title", "One"},
		},
		{
			name:   "no heading",
			src:    "- [ ] a",
			phases: []string{""},
		},
		{
			name:   "deeper headings are sections",
			src:    "## One\n### Tests\n- [ ] a\n#### Deep\n- [ ] b",
			phases: []string{"One", "One"},
		},
		{
			name:   "the nearest level-2 heading wins over a later level-1 heading",
			src:    "# A\n## One\n- [ ] a\n# B\n- [ ] b",
			title:  "A",
			phases: []string{"One", "One"},
		},
		{
			name:   "level-1 heading is the phase until a level-2 heading appears",
			src:    "# A\n- [ ] a\n# B\n- [ ] b\n## Two\n- [ ] c",
			title:  "A",
			phases: []string{"A", "B", "Two"},
		},
		{
			name:   "closing hashes and spaces",
			src:    "#   Title   ##\n##  One #\n- [ ] a",
			title:  "Title",
			phases: []string{"One"},
		},
		{
			name:   "hash inside heading text",
			src:    "## Issue #12\n- [ ] a",
			phases: []string{"Issue #12"},
		},
		{
			name:   "not headings",
			src:    "#hashtag\n####### seven\n    ## indented code\n- [ ] a",
			phases: []string{""},
		},
		{
			name:   "setext headings",
			src:    "The title\n=========\n\nPhase\none\n---\n- [ ] a",
			title:  "The title",
			phases: []string{"Phase one"},
		},
		{
			name:   "thematic break is not a heading",
			src:    "## One\n- [ ] a\n\n---\n\n- [ ] b",
			phases: []string{"One", "One"},
		},
		{
			name:   "front matter is not a setext heading",
			src:    "---\ntitle: x\n---\n# Real\n- [ ] a",
			title:  "Real",
			phases: []string{"Real"},
		},
		{
			name:   "headings in code blocks are ignored",
			src:    "## One\n```\n## Not a phase\n```\n- [ ] a",
			phases: []string{"One"},
		},
		{
			name:   "title is the first level-1 heading",
			src:    "## Intro\n# First\n# Second\n- [ ] a",
			title:  "First",
			phases: []string{"Intro"}, // a level-2 heading above wins, however far up
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, tt.src)
			if r.Title != tt.title {
				t.Errorf("title = %q, want %q", r.Title, tt.title)
			}
			var phases []string
			for _, task := range r.Tasks {
				phases = append(phases, task.Phase)
			}
			if !reflect.DeepEqual(phases, tt.phases) {
				t.Errorf("phases = %q, want %q", phases, tt.phases)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	tests := []struct {
		line, id, title string
	}{
		{"- [ ] 1 Setup", "1", "Setup"},
		{"- [ ] 1.2 Setup", "1.2", "Setup"},
		{"- [ ] 2.3.1 Setup", "2.3.1", "Setup"},
		{"- [ ] T001 Setup", "T001", "Setup"},
		{"- [ ] T-7 Setup", "T-7", "Setup"},
		{"- [ ] task-001 Setup", "task-001", "Setup"},
		{"- [ ] AUTH-12 Setup", "AUTH-12", "Setup"},
		{"- [ ] 01-02 Setup", "01-02", "Setup"},
		{"- [ ] 1.2: Setup", "1.2", "Setup"},
		{"- [ ] 1.2. Setup", "1.2", "Setup"},
		{"- [ ] 1. Setup", "1", "Setup"},
		{"- [ ] 1.2 - Setup", "1.2", "Setup"},
		{"- [ ] T001 — Setup", "T001", "Setup"},
		{"- [ ] T001:\tSetup", "T001", "Setup"},
		{"- [ ] **1.2** Setup", "1.2", "Setup"},
		{"- [ ] **T001**: Setup", "T001", "Setup"},
		{"- [ ] **T001:** Setup", "T001", "Setup"},
		{"- [ ] [T001] Setup", "T001", "Setup"},
		{"- [ ] [1.2]: Setup", "1.2", "Setup"},
		{"- [ ] T001:", "T001", ""},
		// Not ids: an automatic id is given and the text stays in the title.
		{"- [ ] Setup the repo", "1.1", "Setup the repo"},
		{"- [ ] 1.2.x release", "1.1", "1.2.x release"},
		{"- [ ] T001:Setup", "1.1", "T001:Setup"},
		{"- [ ] T001", "1.1", "T001"},
		{"- [ ] 1.2-beta", "1.1", "1.2-beta"},
		{"- [ ] T Setup", "1.1", "T Setup"},
		// A GSD phase overview entry whose phase lists no plans is the phase's one task.
		{"- [ ] **Phase 1: Foundation** - the base", "1", "Foundation"},
		{"- [ ] [link](https://x) Setup", "1.1", "[link](https://x) Setup"},
		{"- [ ] ÅB1 Setup", "1.1", "ÅB1 Setup"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := mustParse(t, tt.line)
			if len(r.Tasks) != 1 {
				t.Fatalf("got %d tasks", len(r.Tasks))
			}
			if got := r.Tasks[0]; got.ID != tt.id || got.Title != tt.title {
				t.Errorf("got id %q title %q, want id %q title %q", got.ID, got.Title, tt.id, tt.title)
			}
		})
	}
}

func TestAutoIDs(t *testing.T) {
	src := `# Title
Intro without tasks.
## Empty phase
Nothing here.
## Phase A
- [ ] a1
- [ ] T9 explicit id still counts for the position
- [ ] a3
## Phase A
- [ ] same heading text, different phase
### Section
- [ ] still phase A (2)
`
	r := mustParse(t, src)
	want := []string{"1.1 a1", "T9 explicit id still counts for the position", "1.3 a3",
		"2.1 same heading text, different phase", "2.2 still phase A (2)"}
	if got := summary(r); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}

	// Tasks above every heading form their own phase.
	r = mustParse(t, "- [ ] before\n## One\n- [ ] after")
	if got := summary(r); !reflect.DeepEqual(got, []string{"1.1 before", "2.1 after"}) {
		t.Errorf("got %q", got)
	}
}

func TestMarkers(t *testing.T) {
	tests := []struct {
		line     string
		title    string
		parallel bool
		labels   []string
	}{
		{"- [ ] T001 [P] Configure linting", "Configure linting", true, []string{}},
		{"- [ ] T002 [US1] Create model", "Create model", false, []string{"US1"}},
		{"- [ ] T003 [P] [US2] Create model", "Create model", true, []string{"US2"}},
		{"- [ ] T003 [US2] [P] Create model", "Create model", true, []string{"US2"}},
		{"- [ ] T004 [P][US1][FR-3] Tight", "Tight", true, []string{"US1", "FR-3"}},
		{"- [ ] [P] No id", "No id", true, []string{}},
		{"- [ ] T005 Title with [P] inside", "Title with [P] inside", false, []string{}},
		{"- [ ] T006 [WIP] Not a tag", "[WIP] Not a tag", false, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			task := mustParse(t, tt.line).Tasks[0]
			if task.Title != tt.title || task.Parallel != tt.parallel || !reflect.DeepEqual(task.Labels, tt.labels) {
				t.Errorf("got title %q parallel %v labels %q; want %q %v %q", task.Title, task.Parallel, task.Labels, tt.title, tt.parallel, tt.labels)
			}
		})
	}
}

func TestDependencies(t *testing.T) {
	const head = "- [ ] a First\n- [ ] b Second\n- [ ] c Third\n"
	tests := []struct {
		name  string
		task  string
		title string
		deps  []string
	}{
		{"inline depends", "- [ ] T1 Do it (depends: 1.1, 1.2)", "Do it", []string{"1.1", "1.2"}},
		{"inline depends on", "- [ ] T1 Do it (depends on 1.1)", "Do it", []string{"1.1"}},
		{"inline depends on colon", "- [ ] T1 Do it (depends on: 1.1 and 1.2)", "Do it", []string{"1.1", "1.2"}},
		{"inline after", "- [ ] T1 Do it (after: 1.3)", "Do it", []string{"1.3"}},
		{"inline in the middle", "- [ ] T1 Do (Depends: 1.1) it", "Do it", []string{"1.1"}},
		{"two inline groups", "- [ ] T1 Do it (depends: 1.1) (after: 1.2)", "Do it", []string{"1.1", "1.2"}},
		{"inline none", "- [ ] T1 Do it (depends: none)", "Do it", []string{}},
		{"not a dependency", "- [ ] T1 Deploy (after lunch)", "Deploy (after lunch)", []string{}},
		{"inside a code span", "- [ ] T1 Document `(after: x)`", "Document `(after: x)`", []string{}},
		{"sub-item depends", "- [ ] T1 Do it\n  - depends: 1.1, 1.2", "Do it", []string{"1.1", "1.2"}},
		{"sub-item depends on", "- [ ] T1 Do it\n  - Depends on: 1.2", "Do it", []string{"1.2"}},
		{"sub-item after", "- [ ] T1 Do it\n  * after: `1.3`", "Do it", []string{"1.3"}},
		{"sub-item bold key", "- [ ] T1 Do it\n  - **Depends on**: 1.1", "Do it", []string{"1.1"}},
		{"sub-item list", "- [ ] T1 Do it\n  - depends:\n    - 1.1\n    - 1.2", "Do it", []string{"1.1", "1.2"}},
		{"inline and sub-item, deduplicated", "- [ ] T1 Do it (depends: 1.1)\n  - depends: 1.1, 1.3", "Do it", []string{"1.1", "1.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, head+tt.task)
			task := r.Task("T1")
			if task == nil {
				t.Fatalf("no task T1 in %q", summary(r))
			}
			if task.Title != tt.title || !reflect.DeepEqual(task.Depends, tt.deps) {
				t.Errorf("got title %q deps %q; want %q %q", task.Title, task.Depends, tt.title, tt.deps)
			}
		})
	}
}

func TestSubItems(t *testing.T) {
	src := "## One\n" +
		"- [ ] 1.1 Build it\n" +
		"  - verify: `go test ./...`\n" +
		"  - Verify: go vet ./...\n" +
		"  - verify: ``echo `date` ``\n" +
		"  - accept: it builds\n" +
		"  - **accept:** it is tested\n" +
		"  - verify:\n" +
		"    - make lint\n" +
		"\n" +
		"  Some notes about the task,\n" +
		"    indented further,\n" +
		"\n" +
		"  ```sh\n" +
		"  - [ ] not a subtask, code\n" +
		"  ```\n" +
		"  - verifying: is a note\n" +
		"\n" +
		"- [ ] 1.2 Next\n"
	r := mustParse(t, src)
	task := r.Task("1.1")
	wantVerify := []string{"go test ./...", "go vet ./...", "echo `date`", "make lint"}
	if !reflect.DeepEqual(task.Verify, wantVerify) {
		t.Errorf("verify = %q, want %q", task.Verify, wantVerify)
	}
	if want := []string{"it builds", "it is tested"}; !reflect.DeepEqual(task.Accept, want) {
		t.Errorf("accept = %q, want %q", task.Accept, want)
	}
	wantNotes := "Some notes about the task,\n  indented further,\n\n```sh\n- [ ] not a subtask, code\n```\n- verifying: is a note"
	if task.Notes != wantNotes {
		t.Errorf("notes = %q\nwant    %q", task.Notes, wantNotes)
	}
	if len(task.Subtasks) != 0 {
		t.Errorf("subtasks = %+v", task.Subtasks)
	}
	if len(r.Tasks) != 2 {
		t.Errorf("tasks = %q", summary(r))
	}
}

func TestCodeBlocksAndComments(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"backtick fence", "```\n- [ ] no\n```\n- [ ] yes", []string{"1.1 yes"}},
		{"tilde fence", "~~~md\n- [ ] no\n~~~\n- [ ] yes", []string{"1.1 yes"}},
		{"longer fence needs a longer close", "````\n```\n- [ ] no\n````\n- [ ] yes", []string{"1.1 yes"}},
		{"close with other char does not close", "```\n~~~\n- [ ] no\n```\n- [ ] yes", []string{"1.1 yes"}},
		{"unclosed fence runs to the end", "- [ ] yes\n\n```\n- [ ] no", []string{"1.1 yes"}},
		{"indented fence in a list", "- Notes\n  ```\n  - [ ] no\n  ```\n- [ ] yes", []string{"1.1 yes"}},
		{"inline code is not a fence", "``` not a fence ```\n- [ ] yes", []string{"1.1 yes"}},
		{"one-line comment", "<!-- - [ ] no -->\n- [ ] yes", []string{"1.1 yes"}},
		{"multi-line comment", "<!--\n- [ ] no\n- [x] no\n-->\n- [ ] yes", []string{"1.1 yes"}},
		{"unclosed comment runs to the end", "- [ ] yes\n<!--\n- [ ] no", []string{"1.1 yes"}},
		{"comment opened mid-line", "Text <!-- begin\n- [ ] no\nend -->\n- [ ] yes", []string{"1.1 yes"}},
		{"comment at the end of a task line", "- [ ] yes <!-- a note -->\n- [ ] yes too", []string{"1.1 yes <!-- a note -->", "1.2 yes too"}},
		{"comment marker in a code span", "- [ ] Strip `<!--` markers\n- [ ] yes", []string{"1.1 Strip `<!--` markers", "1.2 yes"}},
		{"fence inside a comment", "<!--\n```\n-->\n- [ ] yes\n```", []string{"1.1 yes"}},
		{"comment inside a fence", "```\n<!--\n```\n- [ ] yes\n-->", []string{"1.1 yes"}},
		{"code block in a task body keeps the body open", "- [ ] yes\n  ```\n- [ ] no\n  ```\n- [ ] yes too", []string{"1.1 yes", "1.2 yes too"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(mustParse(t, tt.src)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string   // Error() of each error
		ids  [][]string // IDs of each error
	}{
		{
			name: "duplicate id",
			src:  "- [ ] 1.2 a\n- [ ] 1.3 b\n- [ ] 1.2 c",
			want: []string{"ROADMAP.md:3: duplicate task id 1.2 (first at line 1)"},
			ids:  [][]string{{"1.2"}},
		},
		{
			name: "self cycle",
			src:  "- [ ] 1 a (depends: 1)",
			want: []string{"ROADMAP.md:1: dependency cycle: 1 -> 1"},
			ids:  [][]string{{"1"}},
		},
		{
			name: "three-task cycle starts at the first task in the document",
			src:  "- [ ] 0 free\n- [ ] 1 a (depends: 3)\n- [ ] 2 b (depends: 1)\n- [ ] 3 c (depends: 2, 0)",
			want: []string{"ROADMAP.md:2: dependency cycle: 1 -> 3 -> 2 -> 1"},
			ids:  [][]string{{"1", "3", "2"}},
		},
		{
			name: "all errors are reported, sorted by line",
			src:  "- [ ] 1 a (after: 2)\n- [ ] 2 b (after: 1)\n- [ ] 3 c (after: 9)\n- [ ] 3 d\n- [ ] 4 e (after: 5)\n- [ ] 5 f (after: 4)",
			want: []string{
				"ROADMAP.md:1: dependency cycle: 1 -> 2 -> 1",
				"ROADMAP.md:4: duplicate task id 3 (first at line 3)",
				"ROADMAP.md:5: dependency cycle: 4 -> 5 -> 4",
			},
			ids: [][]string{{"1", "2"}, {"3"}, {"4", "5"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseMarkdown("ROADMAP.md", []byte(tt.src))
			if r != nil || err == nil {
				t.Fatalf("got roadmap %v, err %v; want nil and errors", r, err)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T is not Errors", err)
			}
			var got []string
			var ids [][]string
			for _, e := range errs {
				got = append(got, e.Error())
				ids = append(ids, e.IDs)
				if e.File != "ROADMAP.md" {
					t.Errorf("file = %q", e.File)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !reflect.DeepEqual(ids, tt.ids) {
				t.Errorf("ids = %q, want %q", ids, tt.ids)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q", err.Error())
			}
			var one *Error
			if !errors.As(err, &one) || one != errs[0] {
				t.Errorf("errors.As(*Error) did not find the first error")
			}
		})
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"document order without dependencies", "- [ ] 3 a\n- [ ] 1 b\n- [ ] 2 c", []string{"3", "1", "2"}},
		{"dependency moves a task later", "- [ ] 1 a (after: 3)\n- [ ] 2 b\n- [ ] 3 c", []string{"2", "3", "1"}},
		{"earliest ready task first", "- [ ] 1 a (after: 4)\n- [ ] 2 b (after: 4)\n- [ ] 3 c\n- [ ] 4 d", []string{"3", "4", "1", "2"}},
		{"done tasks are ordered too", "- [x] 1 a\n- [ ] 2 b (after: 1)", []string{"1", "2"}},
		{"diamond", "- [ ] d (after: 1.2, 1.3)\n- [ ] a\n- [ ] b (after: 1.2)\n- [ ] c (after: 1.2)", []string{"1.2", "1.3", "1.1", "1.4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustParse(t, tt.src).Order; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNeverNil(t *testing.T) {
	r := mustParse(t, "- [ ] a")
	task := r.Tasks[0]
	if task.Labels == nil || task.Depends == nil || task.Verify == nil || task.Accept == nil || task.Subtasks == nil {
		t.Errorf("nil slice in %#v", task)
	}
	empty := mustParse(t, "# Nothing to do\n")
	if empty.Tasks == nil || empty.Order == nil || len(empty.Tasks) != 0 {
		t.Errorf("empty roadmap: tasks %#v order %#v", empty.Tasks, empty.Order)
	}
}

func TestParseByExtension(t *testing.T) {
	md := []byte("# T\n- [ ] a\n")
	for _, name := range []string{"ROADMAP.md", "tasks.markdown", "plan.txt", "README"} {
		r, err := Parse(name, md)
		if err != nil || r.Format != FormatMarkdown || r.Source != name {
			t.Errorf("Parse(%q) = %+v, %v", name, r, err)
		}
	}
	yml := []byte("tasks:\n  - {id: a, title: A}\n")
	for _, name := range []string{"tasks.yml", "TASKS.YAML"} {
		if r, err := Parse(name, yml); err != nil || r.Format != FormatYAML {
			t.Errorf("Parse(%q) = %+v, %v", name, r, err)
		}
	}
	if r, err := Parse("tasks.json", []byte(`{"tasks":[{"id":"a","title":"A"}]}`)); err != nil || r.Format != FormatJSON {
		t.Errorf("Parse(json) = %+v, %v", r, err)
	}
	// ParseMarkdown ignores the extension: an issue body is markdown whatever it is called.
	if r, err := ParseMarkdown("issue.json", md); err != nil || len(r.Tasks) != 1 {
		t.Errorf("ParseMarkdown = %+v, %v", r, err)
	}
}

func TestTaskLookup(t *testing.T) {
	r := mustParse(t, "- [ ] T1 a\n- [ ] T2 b")
	if got := r.Task("T2"); got == nil || got.Title != "b" {
		t.Errorf("Task(T2) = %+v", got)
	}
	if got := r.Task("T3"); got != nil {
		t.Errorf("Task(T3) = %+v", got)
	}
}
