package lifecycle

import (
	"slices"
	"testing"
)

// TestEditTask: EditTask puts a copy of the task in the run's list and leaves the task as it was to
// whoever shares it, also when the copy's slices are appended to.
func TestEditTask(t *testing.T) {
	shared := &TaskState{ID: "1.2", Status: TaskStatusRunning, Attempts: 1, Interrupted: make([]int, 1, 8)}
	other := &TaskState{ID: "1.1", Status: TaskStatusPassed}
	run := &Run{Tasks: []*TaskState{other, shared}}
	reader := &Run{Tasks: slices.Clone(run.Tasks)} // another holder of the same tasks

	edit := run.EditTask("1.2")
	if edit == nil || edit == shared || run.Tasks[1] != edit || run.Task("1.2") != edit {
		t.Fatalf("EditTask returned %p, the list holds %p, the shared task is %p", edit, run.Tasks[1], shared)
	}
	edit.Attempts = 2
	edit.Interrupted = append(edit.Interrupted, 7) // room left in the shared array: must not be used
	if shared.Attempts != 1 || len(shared.Interrupted) != 1 || shared.Interrupted[:2][1] != 0 {
		t.Errorf("the shared task changed: %+v (array %v)", shared, shared.Interrupted[:2])
	}
	if reader.Task("1.2") != shared || run.Tasks[0] != other {
		t.Error("EditTask touched another holder's list or another task")
	}
	if got := run.EditTask("9.9"); got != nil {
		t.Errorf("EditTask of a task the run does not have = %+v", got)
	}
}
