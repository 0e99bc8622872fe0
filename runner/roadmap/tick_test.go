package roadmap

import (
	"bytes"
	"strings"
	"testing"
)

func TestTickMarkdown(t *testing.T) {
	tests := []struct {
		name string
		src  string
		ids  []string
		want string
	}{
		{"one box", "- [ ] 1 a\n- [ ] 2 b\n", []string{"2"}, "- [ ] 1 a\n- [x] 2 b\n"},
		{"CRLF, tabs, trailing spaces, no final newline",
			"# T\r\n\t- [ ]\t1 a  \r\n- [ ] 2 b \t", []string{"1", "2"},
			"# T\r\n\t- [x]\t1 a  \r\n- [x] 2 b \t"},
		{"tab inside the box", "- [\t] 1 a", []string{"1"}, "- [x] 1 a"},
		{"subtasks too", "- [ ] 1 a\n  - [ ] s1\n  - [X] s2\n    * ⬜ s3\n- [ ] 2 b\n  - [ ] s4",
			[]string{"1"}, "- [x] 1 a\n  - [x] s1\n  - [X] s2\n    * ✅ s3\n- [ ] 2 b\n  - [ ] s4"},
		{"emoji", "⬜ 1 a\n- ☐ 2 b\n⬜\ufe0f 3 c\n", []string{"1", "2", "3"}, "✅ 1 a\n- ✅ 2 b\n✅\ufe0f 3 c\n"},
		{"done task: only open subtasks change", "- [X] 1 a\n  - [ ] s", []string{"1"}, "- [X] 1 a\n  - [x] s"},
		{"lookalikes in code and comments stay", "- [ ] 1 a\n  ```\n  - [ ] code\n  ```\n<!-- - [ ] 1 a -->\n",
			[]string{"1"}, "- [x] 1 a\n  ```\n  - [ ] code\n  ```\n<!-- - [ ] 1 a -->\n"},
		{"automatic id", "## One\n- [ ] a\n- [ ] b\n", []string{"1.2"}, "## One\n- [ ] a\n- [x] b\n"},
		{"BOM", "\ufeff- [ ] 1 a", []string{"1"}, "\ufeff- [x] 1 a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.src)
			r := mustParse(t, tt.src)
			got, err := Tick(r, data, tt.ids...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if string(data) != tt.src {
				t.Errorf("input was modified")
			}
			r2 := mustParse(t, string(got))
			for _, id := range tt.ids {
				task := r2.Task(id)
				if !task.Done {
					t.Errorf("task %s not done after tick", id)
				}
				for _, s := range task.Subtasks {
					if !s.Done {
						t.Errorf("subtask %q of %s not done after tick", s.Title, id)
					}
				}
			}
		})
	}
}

func TestTickNoIDsIsIdentical(t *testing.T) {
	for _, src := range []string{"", "- [ ] a", "tasks: []\n"} {
		r := &Roadmap{Source: "x"}
		got, err := Tick(r, []byte(src))
		if err != nil || string(got) != src || got == nil {
			t.Errorf("Tick(%q) = %q, %v", src, got, err)
		}
	}
	data := []byte("- [ ] a")
	got, _ := Tick(&Roadmap{}, data)
	got[0] = '*'
	if data[0] != '-' {
		t.Errorf("Tick returned the input's backing array")
	}
}

func TestTickUnknownID(t *testing.T) {
	r := mustParse(t, "- [ ] 1 a")
	_, err := Tick(r, []byte("- [ ] 1 a"), "1", "2")
	if err == nil || !strings.Contains(err.Error(), `no task with id "2"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Tick(nil, nil, "1"); err == nil {
		t.Error("Tick(nil roadmap) succeeded")
	}
}

func TestTickTaskList(t *testing.T) {
	tests := []struct {
		name, file, src, want string
		ids                   []string
	}{
		{
			name: "yaml: replace done value",
			file: "t.yaml",
			src:  "tasks:\n  - id: a\n    done: false # not yet\n    title: A\n",
			ids:  []string{"a"},
			want: "tasks:\n  - id: a\n    done: true # not yet\n    title: A\n",
		},
		{
			name: "yaml: replace no",
			file: "t.yaml",
			src:  "tasks:\n  - id: a\n    title: A\n    done: no\n",
			ids:  []string{"a"},
			want: "tasks:\n  - id: a\n    title: A\n    done: true\n",
		},
		{
			name: "yaml: insert after the first key",
			file: "t.yml",
			src:  "tasks:\n- id: a\n  title: A\n- id: b\n  title: B\n",
			ids:  []string{"b"},
			want: "tasks:\n- id: a\n  title: A\n- id: b\n  done: true\n  title: B\n",
		},
		{
			name: "yaml: insert before a multi-line first value",
			file: "t.yaml",
			src:  "tasks:\n  - title: >\n      Long\n      title\n    id: a\n",
			ids:  []string{"a"},
			want: "tasks:\n  - done: true\n    title: >\n      Long\n      title\n    id: a\n",
		},
		{
			name: "yaml: CRLF",
			file: "t.yaml",
			src:  "tasks:\r\n  - id: a\r\n    title: A\r\n",
			ids:  []string{"a"},
			want: "tasks:\r\n  - id: a\r\n    done: true\r\n    title: A\r\n",
		},
		{
			name: "yaml: flow mapping",
			file: "t.yaml",
			src:  "tasks: [{id: a, title: A}, {id: b, title: B}]\n",
			ids:  []string{"b"},
			want: "tasks: [{id: a, title: A}, {done: true, id: b, title: B}]\n",
		},
		{
			name: "json: replace done value",
			file: "t.json",
			src:  `{"tasks": [{"id": "a", "title": "A", "done": false}]}`,
			ids:  []string{"a"},
			want: `{"tasks": [{"id": "a", "title": "A", "done": true}]}`,
		},
		{
			name: "json: insert, compact",
			file: "t.json",
			src:  `{"tasks":[{"id":"a","title":"A"}]}`,
			ids:  []string{"a"},
			want: `{"tasks":[{"id":"a","title":"A","done":true}]}`,
		},
		{
			name: "json: insert, indented with tabs",
			file: "t.json",
			src:  "{\n\t\"tasks\": [\n\t\t{\n\t\t\t\"id\": \"a\",\n\t\t\t\"title\": \"A\"\n\t\t}\n\t]\n}\n",
			ids:  []string{"a"},
			want: "{\n\t\"tasks\": [\n\t\t{\n\t\t\t\"id\": \"a\",\n\t\t\t\"title\": \"A\",\n\t\t\t\"done\": true\n\t\t}\n\t]\n}\n",
		},
		{
			name: "json: already done stays",
			file: "t.json",
			src:  `{"tasks":[{"id":"a","title":"A","done":true},{"id":"b","title":"B"}]}`,
			ids:  []string{"a", "b"},
			want: `{"tasks":[{"id":"a","title":"A","done":true},{"id":"b","title":"B","done":true}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.file, []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Tick(r, []byte(tt.src), tt.ids...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// An anchor before the first key defeats the in-place edit; the document is re-encoded instead.
func TestTickYAMLReencodes(t *testing.T) {
	src := "# tasks\ntasks:\n  - &first id: a\n    title: A\n  - id: b\n    title: B\n"
	r, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Tick(r, []byte(src), "a")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Parse("t.yaml", got)
	if err != nil {
		t.Fatalf("re-encoded YAML does not parse: %v\n%s", err, got)
	}
	if !r2.Task("a").Done || r2.Task("b").Done {
		t.Errorf("done flags wrong after re-encode:\n%s", got)
	}
	if !bytes.Contains(got, []byte("# tasks")) {
		t.Errorf("comment lost:\n%s", got)
	}
}

func TestTickExamples(t *testing.T) {
	for _, name := range exampleFiles(t) {
		if strings.Contains(name, "invalid") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data := readFile(t, name)
			r, err := Parse(name, data)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, task := range r.Tasks {
				ids = append(ids, task.ID)
			}
			got, err := Tick(r, data, ids...)
			if err != nil {
				t.Fatal(err)
			}
			after, err := Parse(name, got)
			if err != nil {
				t.Fatal(err)
			}
			for i, task := range after.Tasks {
				if !task.Done {
					t.Errorf("task %s not done", task.ID)
				}
				if task.ID != r.Tasks[i].ID || task.Title != r.Tasks[i].Title {
					t.Errorf("task %d changed: %+v -> %+v", i, r.Tasks[i], task)
				}
			}
			if r.Format == FormatMarkdown && len(got) != len(data) {
				t.Errorf("markdown length changed: %d -> %d", len(data), len(got))
			}
		})
	}
}
