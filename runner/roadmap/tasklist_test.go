package roadmap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestTaskListFields(t *testing.T) {
	yml := `title: Engine
tasks:
  - id: 1.10
    title: "  First  "
    description: |
      Line one.
      Line two.
    verify: go test ./...
    accept: it works
    done: yes
    phase: Setup
    labels: [US1]
    parallel: true
    notes: keep it small
  - id: 2
    title: Second
    depends: "1.10, 3"
    verify: [go vet ./..., go test ./...]
    accept:
      - fast
      - correct
  - title: No id gets an automatic one
    dependencies: [2]
    phase: Setup
  - id: 3
    title: Third
    depends: ~
`
	r, err := Parse("tasks.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if r.Title != "Engine" || r.Format != FormatYAML {
		t.Errorf("title %q format %v", r.Title, r.Format)
	}
	first := r.Tasks[0]
	want := &Task{
		ID: "1.10", Title: "First", Phase: "Setup", Line: 3, Done: true, Parallel: true,
		Labels: []string{"US1"}, Depends: []string{}, Verify: []string{"go test ./..."}, Accept: []string{"it works"},
		Subtasks: []Subtask{}, Notes: "keep it small", Description: "Line one.\nLine two.", Context: []string{},
		ReadAs: "an entry of the task list", DependsFrom: []DepSource{},
	}
	if !reflect.DeepEqual(first, want) {
		t.Errorf("first task\n got %+v\nwant %+v", first, want)
	}
	second := r.Task("2")
	if !reflect.DeepEqual(second.Depends, []string{"1.10", "3"}) || !reflect.DeepEqual(second.Verify, []string{"go vet ./...", "go test ./..."}) ||
		!reflect.DeepEqual(second.Accept, []string{"fast", "correct"}) || second.Line != 15 {
		t.Errorf("second task %+v", second)
	}
	// Phases of task lists come from "phase": Setup is phase 1, the phase-less tasks phase 2.
	if got := r.Tasks[2]; got.ID != "1.2" || !reflect.DeepEqual(got.Depends, []string{"2"}) {
		t.Errorf("third task %+v", got)
	}
	if got := r.Order; !reflect.DeepEqual(got, []string{"1.10", "3", "2", "1.2"}) {
		t.Errorf("order = %q", got)
	}
}

func TestTaskListJSONWithTabs(t *testing.T) {
	src := "{\n\t\"title\": \"T\",\n\t\"tasks\": [\n\t\t{\"id\": \"a\", \"title\": \"A \\u00e9\", \"verify\": \"make\"},\n\t\t{\"id\": \"b\", \"title\": \"B\", \"depends\": [\"a\"], \"done\": false}\n\t]\n}"
	r, err := Parse("tasks.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Task("a"); got.Title != "A é" || got.Line != 4 || !reflect.DeepEqual(got.Verify, []string{"make"}) {
		t.Errorf("task a = %+v", got)
	}
	if got := r.Task("b"); got.Line != 5 || !reflect.DeepEqual(got.Depends, []string{"a"}) {
		t.Errorf("task b = %+v", got)
	}
}

func TestTaskListErrors(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []string
	}{
		{"unknown task key", "t.yaml", "tasks:\n  - id: a\n    title: A\n    dependson: b\n",
			[]string{`t.yaml:4: task a: unknown key "dependson" (known keys: id, title, description, phase, depends, dependencies, verify, accept, done, parallel, labels, notes, priority, gate)`}},
		{"unknown top-level key", "t.json", `{"tasks": [], "name": "x"}`,
			[]string{`t.json:1: unknown key "name" (known keys: title, tasks)`}},
		{"depends and dependencies", "t.yaml", "tasks:\n  - id: a\n    title: A\n    depends: []\n    dependencies: []\n",
			[]string{`t.yaml:5: task a: use either "depends" or "dependencies", not both`}},
		{"missing title", "t.yaml", "tasks:\n  - id: a\n",
			[]string{"t.yaml:2: task a: missing title"}},
		{"done is not a boolean", "t.json", "{\"tasks\": [\n{\"id\": \"a\", \"title\": \"A\", \"done\": \"yes\"}]}",
			[]string{"t.json:2: task a: done must be true or false"}},
		{"verify is a mapping", "t.yaml", "tasks:\n  - title: A\n    verify: {cmd: x}\n",
			[]string{"t.yaml:3: task #1: verify must be a string or a list of strings"}},
		{"tasks is not a list", "t.yaml", "tasks: {}\n",
			[]string{`t.yaml:1: "tasks" must be a list`}},
		{"no tasks key", "t.yaml", "title: x\n",
			[]string{`t.yaml:1: missing "tasks" list`}},
		{"not a mapping", "t.yaml", "- a\n- b\n",
			[]string{`t.yaml:1: expected a mapping with a "tasks" list`}},
		{"empty file", "t.yaml", "",
			[]string{`t.yaml:1: expected a mapping with a "tasks" list`}},
		{"task is not a mapping", "t.yaml", "tasks:\n  - just text\n",
			[]string{"t.yaml:2: task #1: expected a mapping with id, title, ..."}},
		{"duplicate key", "t.json", `{"tasks": [{"id": "a", "title": "A", "title": "B"}]}`,
			[]string{`t.json:1: task a: duplicate key "title"`}},
		{"yaml syntax", "t.yaml", "tasks:\n  - id: a\n    title: a: b\n",
			[]string{"t.yaml:3: invalid YAML: mapping values are not allowed in this context"}},
		{"json syntax", "t.json", "{\"tasks\": [\n  {\"id\": \"a\",}\n]}",
			[]string{"t.json:2: invalid JSON: invalid character '}' looking for beginning of object key string"}},
		{"same validation as markdown", "t.yaml", "tasks:\n  - {id: a, title: A, depends: b}\n  - {id: a, title: B}\n  - {id: c, title: C, depends: c}\n",
			[]string{
				"t.yaml:2: task a depends on unknown task b",
				"t.yaml:3: duplicate task id a (first at line 2)",
				"t.yaml:4: dependency cycle: c -> c",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.file, []byte(tt.src))
			if r != nil || err == nil {
				t.Fatalf("got %+v, %v", r, err)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T is not Errors", err)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}

func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example roadmaps: %v", err)
	}
	return files
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestExamples pins down what each example roadmap in testdata means.
func TestExamples(t *testing.T) {
	tests := []struct {
		file   string
		title  string
		format Format
		tasks  []string // summary()
		order  []string
	}{
		{"gsd.md", "Roadmap: Akira", FormatMarkdown,
			[]string{"x 01-01 Initialise the Go module and CI", "01-02 Roadmap parser", "02-01 Ephemeral workspace", "02-02 Agent loop with reflection"},
			[]string{"01-01", "01-02", "02-01", "02-02"}},
		{"speckit-tasks.md", "Tasks: Photo albums", FormatMarkdown,
			[]string{"x T001 Create project structure per implementation plan", "T002 Configure linting and formatting tools",
				"T003 Add the CI workflow in .github/workflows/ci.yml",
				"T004 Contract test for POST /albums in tests/contract/test_albums.py",
				"T005 Integration test for album creation in tests/integration/test_albums.py",
				"T006 Create the Album model in src/models/album.py", "T007 Implement POST /albums in src/api/albums.py"},
			[]string{"T001", "T002", "T003", "T004", "T005", "T006", "T007"}},
		{"plain.md", "Website relaunch", FormatMarkdown,
			[]string{"x 1.1 Pick a static site generator", "1.2 Port the blog posts", "1.3 Set up redirects from the old URLs", "1.4 Announce the relaunch"},
			[]string{"1.1", "1.2", "1.3", "1.4"}},
		{"emoji.md", "Release checklist", FormatMarkdown,
			[]string{"x 1.1 Freeze the main branch", "1.2 Write the changelog", "1.3 Bump the version", "2.1 Tag the release", "2.2 Announce it on the mailing list"},
			[]string{"1.1", "1.2", "1.3", "2.1", "2.2"}},
		{"tasks.yaml", "Akira engine", FormatYAML,
			[]string{"x 1 Ephemeral workspace", "2 Agent backends", "3 Run loop"},
			[]string{"1", "2", "3"}},
		{"tasks.json", "Akira engine", FormatJSON,
			[]string{"x 1 Ephemeral workspace", "2 Agent backends", "3 Run loop"},
			[]string{"1", "2", "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			name := filepath.Join("testdata", tt.file)
			r, err := Parse(name, readFile(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if r.Title != tt.title || r.Format != tt.format || r.Source != name {
				t.Errorf("title %q format %v source %q", r.Title, r.Format, r.Source)
			}
			if got := summary(r); !reflect.DeepEqual(got, tt.tasks) {
				t.Errorf("tasks:\n%q\nwant\n%q", got, tt.tasks)
			}
			if !reflect.DeepEqual(r.Order, tt.order) {
				t.Errorf("order = %q, want %q", r.Order, tt.order)
			}
		})
	}
	// The YAML and JSON examples say the same thing.
	y, _ := Parse("tasks.yaml", readFile(t, "testdata/tasks.yaml"))
	j, _ := Parse("tasks.json", readFile(t, "testdata/tasks.json"))
	for i := range y.Tasks {
		a, b := withoutLines(y.Tasks[i]), withoutLines(j.Tasks[i])
		if !reflect.DeepEqual(a, b) {
			t.Errorf("yaml and json differ:\n%+v\n%+v", a, b)
		}
	}
}

func TestInvalidExample(t *testing.T) {
	_, err := Parse("invalid.md", readFile(t, "testdata/invalid.md"))
	want := `invalid.md:5: dependency cycle: 1.1 -> 1.3 -> 1.2 -> 1.1
invalid.md:8: duplicate task id 1.1 (first at line 5)
invalid.md:12: dependency cycle: 2.1 -> 2.1
invalid.md:14: dependency cycle: 2.2 -> 2.3 -> 2.2`
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// withoutLines is a copy of a task without its line numbers, to compare the same plan written
// differently.
func withoutLines(t *Task) Task {
	c := *t
	c.Line = 0
	c.DependsFrom = slices.Clone(c.DependsFrom)
	for i := range c.DependsFrom {
		c.DependsFrom[i].Line = 0
	}
	return c
}
