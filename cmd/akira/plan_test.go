package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// runCmd runs akira in-process, like main does, and returns stdout, stderr and the exit code.
func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.Execute()
	code := 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			stderr.WriteString("akira: " + err.Error() + "\n") // what main prints
		}
	}
	return stdout.String(), stderr.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "plan", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestPlanGolden reads every plan in testdata/plan — plans written for these tests in each
// convention people use (GSD, spec-kit, Kiro, OpenSpec, checklists, issue templates) — and compares
// what akira plan prints with its golden files, each checked by reading it: tasks, ids, phases, done
// state, dependencies. A plan named invalid* must be refused (exit 2); warnings go to
// <plan>.stderr.golden.
func TestPlanGolden(t *testing.T) {
	t.Setenv("AKIRA_CONFIG", "") // a developer's planner agent would add the --normalize hint
	plans, err := filepath.Glob(filepath.Join("testdata", "plan", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range plans {
		file := filepath.Base(p)
		if strings.HasSuffix(file, ".golden") {
			continue
		}
		n++
		code := 0
		if strings.HasPrefix(file, "invalid") {
			code = 2
		}
		for _, mode := range []string{"txt", "json"} {
			t.Run(file+"/"+mode, func(t *testing.T) {
				args := []string{"plan", filepath.Join("testdata", "plan", file)}
				if mode == "json" {
					args = append(args, "--json")
				}
				stdout, stderr, got := runCmd(t, args...)
				if got != code {
					t.Fatalf("exit code %d, want %d; stderr:\n%s", got, code, stderr)
				}
				if code != 0 {
					// A plan with no tasks still prints its (empty) JSON document for scripts.
					if mode == "json" && stdout != "" && strings.HasPrefix(file, "invalid-unread") {
						golden(t, file+".json.golden", stdout)
					} else if stdout != "" {
						t.Errorf("stdout = %q, want nothing", stdout)
					}
					golden(t, file+".stderr.golden", stderr)
					return
				}
				if _, err := os.Stat(filepath.Join("testdata", "plan", file+".stderr.golden")); stderr != "" || err == nil {
					golden(t, file+".stderr.golden", stderr)
				}
				golden(t, file+"."+mode+".golden", stdout)
			})
		}
	}
	if n < 30 {
		t.Errorf("%d plans in testdata/plan; the conventions need at least 30", n)
	}
}

// TestPlanExplainGolden: --explain shows, for each task, its source line, how it was read and the
// words each dependency was read from.
func TestPlanExplainGolden(t *testing.T) {
	for _, file := range []string{"gsd-milestones.md", "gsd-inserted.md", "speckit-ranges.md", "after-no-colon.md", "status-marks.md", "pr-choice.md"} {
		t.Run(file, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, "plan", "--explain", filepath.Join("testdata", "plan", file))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden(t, file+".explain.golden", stdout)
		})
	}
	stdout, _, code := runCmd(t, "plan", "--explain", "--json", filepath.Join("testdata", "plan", "speckit-ranges.md"))
	if code != 0 || !strings.Contains(stdout, `"source_text": "- [ ] T004 Database schema for reports in src/db/schema.sql (depends on T001–T003)"`) ||
		!strings.Contains(stdout, `{
          "id": "T002",
          "line": 19,
          "text": "(depends on T001–T003)"
        }`) || !strings.Contains(stdout, `"read_as": "a spec-kit task line"`) {
		t.Errorf("--explain --json: exit %d\n%s", code, stdout)
	}
	// Marks, guesses and the lines not read as tasks, for a script.
	var doc struct {
		Marks []struct {
			Mark, Reading string
			Guess         bool
		}
		NotTasks []struct{ Line int } `json:"not_tasks"`
		Tasks    []struct {
			ID          string
			MarkReading string   `json:"mark_reading"`
			Guesses     []string `json:"guesses"`
		}
	}
	for _, file := range []string{"status-marks.md", "pr-choice.md"} {
		stdout, _, code := runCmd(t, "plan", "--explain", "--json", filepath.Join("testdata", "plan", file))
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v", file, code, err)
		}
	}
	if len(doc.NotTasks) != 4 || doc.NotTasks[3].Line != 20 {
		t.Errorf("pr-choice.md not_tasks = %+v", doc.NotTasks)
	}
	stdout, _, _ = runCmd(t, "plan", "--explain", "--json", filepath.Join("testdata", "plan", "status-marks.md"))
	doc.NotTasks = nil
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	guessed := map[string]bool{}
	for _, m := range doc.Marks {
		guessed[m.Mark+" "+m.Reading] = m.Guess
	}
	if g, ok := guessed["[/] not done"]; !ok || !g || guessed["[~] not done"] {
		t.Errorf("marks = %+v", doc.Marks)
	}
	for _, task := range doc.Tasks {
		if task.ID == "1.4" && (len(task.Guesses) != 1 || !strings.Contains(task.MarkReading, "a guess")) {
			t.Errorf("task 1.4: %+v", task)
		}
	}
}

// TestPlanJSONShape checks the documented JSON keys and that arrays are never null.
func TestPlanJSONShape(t *testing.T) {
	stdout, _, code := runCmd(t, "plan", "--json", filepath.Join("testdata", "plan", "plain.md"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(doc); !reflect.DeepEqual(got, []string{"convention", "order", "source", "tasks", "title"}) {
		t.Errorf("top-level keys = %q", got)
	}
	tasks := doc["tasks"].([]any)
	task := tasks[0].(map[string]any)
	want := []string{"accept", "context", "depends", "done", "id", "labels", "line", "notes", "parallel", "phase", "subtasks", "title", "verify"}
	if got := sortedKeys(task); !reflect.DeepEqual(got, want) {
		t.Errorf("task keys = %q", got)
	}
	for _, k := range []string{"labels", "depends", "verify", "accept", "subtasks", "context"} {
		if _, ok := task[k].([]any); !ok {
			t.Errorf("%s = %#v, want an array", k, task[k])
		}
	}
	if line := task["line"].(float64); line != 3 {
		t.Errorf("line = %v, want 3", line)
	}
	sub := tasks[1].(map[string]any)["subtasks"].([]any)[0].(map[string]any)
	if got := sortedKeys(sub); !reflect.DeepEqual(got, []string{"done", "title"}) {
		t.Errorf("subtask keys = %q", got)
	}

	// An empty roadmap still has arrays.
	dir := t.TempDir()
	path := filepath.Join(dir, "ROADMAP.md")
	if err := os.WriteFile(path, []byte("# Nothing yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ = runCmd(t, "plan", "--json", path)
	if !strings.Contains(stdout, `"order": []`) || !strings.Contains(stdout, `"tasks": []`) {
		t.Errorf("empty roadmap JSON:\n%s", stdout)
	}
}

func sortedKeys(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

func TestPlanDefaultPath(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "plan", "plain.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ROADMAP.md"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	stdout, stderr, code := runCmd(t, "plan")
	if code != 0 || !strings.Contains(stdout, "ROADMAP.md, markdown: 4 tasks, 1 done, 3 pending") {
		t.Errorf("plan in a directory with ROADMAP.md: exit %d\n%s%s", code, stdout, stderr)
	}
	// A directory argument means the ROADMAP.md inside it.
	stdout, _, code = runCmd(t, "plan", ".")
	if code != 0 || !strings.Contains(stdout, "Website relaunch") {
		t.Errorf("plan .: exit %d\n%s", code, stdout)
	}
	// No roadmap: exit 1, not 2.
	t.Chdir(sub)
	_, stderr, code = runCmd(t, "plan")
	if code != 1 || !strings.Contains(stderr, "ROADMAP.md: no such file or directory") {
		t.Errorf("missing roadmap: exit %d, stderr %q", code, stderr)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	_, _, code := runCmd(t, "plan", "a.md", "b.md")
	if code == 0 {
		t.Error("two paths accepted")
	}
	_, _, code = runCmd(t, "plan", "--yaml")
	if code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

// TestPlanWaves: --parallel shows the waves a run goes in; without it the output is unchanged.
func TestPlanWaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ROADMAP.md")
	if err := os.WriteFile(path, []byte("- [ ] T1 [P] a\n- [ ] T2 [P] b\n- [ ] T3 c (depends: T1)\n- [ ] T4 plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "plan", "--parallel", "3", path)
	if code != 0 || !strings.Contains(out, "Waves, up to 3 tasks at once:\n  1. T1, T2\n  2. T3\n  3. T4\n") {
		t.Errorf("exit %d, stderr %q, output:\n%s", code, stderr, out)
	}
	if out, _, _ := runCmd(t, "plan", path); strings.Contains(out, "Waves, up to") {
		t.Errorf("waves shown without --parallel:\n%s", out)
	}
	if _, stderr, code := runCmd(t, "plan", "--parallel", "0", path); code != 2 || !strings.Contains(stderr, "--parallel") {
		t.Errorf("--parallel 0: exit %d, %q", code, stderr)
	}
}

// specKitAlbums is a spec-kit tasks.md of our own writing in the template's shape: Setup,
// Foundational, three user stories and Polish, [P] tasks in each, and the template's "Dependencies &
// Execution Order" section with two sentences about the stories.
const specKitAlbums = `# Tasks: Albums

## Phase 1: Setup

- [ ] T001 Create the project
- [ ] T002 [P] Configure the linter
- [ ] T003 [P] Configure the formatter

## Phase 2: Foundational

- [ ] T004 [P] Database schema
- [ ] T005 [P] Auth middleware
- [ ] T006 Base models

## Phase 3: User Story 1 - Create albums (Priority: P1)

- [ ] T007 [P] [US1] Contract test
- [ ] T008 [P] [US1] Album model
- [ ] T009 [US1] Album service (depends on T008)

## Phase 4: User Story 2 - Share albums (Priority: P2)

- [ ] T010 [P] [US2] Share model
- [ ] T011 [US2] Share service

## Phase 5: User Story 3 - Tag albums (Priority: P3)

- [ ] T012 [P] [US3] Tag model

## Phase 6: Polish

- [ ] T013 [P] Docs
- [ ] T014 [P] Cleanup
`

const specKitAlbumsOrder = `
## Dependencies & Execution Order

- **Setup (Phase 1)**: No dependencies - can start immediately
- **Foundational (Phase 2)**: Depends on Setup completion - BLOCKS all user stories
- **User Stories (Phase 3+)**: All depend on Foundational phase completion
- **Polish (Final Phase)**: Depends on all desired user stories being complete
- US2: Depends on US1
- US3: can run in parallel with US2 after US1
`

// TestPlanSpecKitWaves (issue 45, cause 2): with --parallel 8, spec-kit's phases stay in order —
// Setup, Foundational, the stories, Polish; [P] tasks share a wave only within a phase — and the
// "Dependencies & Execution Order" section's sentences are read: stories that all depend on
// Foundational, US2 after US1, US3 beside US2 after US1, Polish after all of them.
func TestPlanSpecKitWaves(t *testing.T) {
	tests := []struct {
		name, plan, waves string
	}{
		{"phases in the document's order", specKitAlbums, `Waves, up to 8 tasks at once:
  1. T001
  2. T002, T003
  3. T004, T005
  4. T006
  5. T007, T008
  6. T009
  7. T010
  8. T011
  9. T012
  10. T013, T014
`},
		{"phases as the Dependencies & Execution Order section says", specKitAlbums + specKitAlbumsOrder, `Waves, up to 8 tasks at once:
  1. T001
  2. T002, T003
  3. T004, T005
  4. T006
  5. T007, T008
  6. T009
  7. T010, T012
  8. T011
  9. T013, T014
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tasks.md")
			if err := os.WriteFile(path, []byte(tt.plan), 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := runCmd(t, "plan", "--parallel", "8", path)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if _, waves, _ := strings.Cut(out, "\nWaves"); "Waves"+waves != tt.waves {
				t.Errorf("waves:\n%s\nwant:\n%s", "Waves"+waves, tt.waves)
			}
			// Without --parallel the order is the document's, as it always was.
			seq, _, _ := runCmd(t, "plan", path)
			if !strings.Contains(seq, "Execution order: T001, T002, T003, T004, T005, T006, T007, T008, T009, T010, T011, T012, T013, T014\n") {
				t.Errorf("sequential order changed:\n%s", seq)
			}
		})
	}
}
