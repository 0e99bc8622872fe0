package lifecycle

import "regexp"

// A task's status is owned here too, like a run's (status.go): each is a constant and a row of
// taskStatusTable saying how people read it. templates reads these rows for the summary table, the
// check runs and the tallies; TaskTable says which status may follow which.

// A task's statuses (TaskState.Status).
const (
	TaskStatusPending   = "pending"
	TaskStatusRunning   = "running"
	TaskStatusPassed    = "passed"
	TaskStatusFailed    = "failed"
	TaskStatusSkipped   = "skipped"
	TaskStatusEscalated = "escalated"
	TaskStatusAborted   = "aborted"
)

// TaskStatusInfo is what a task's status means to the people who read it.
type TaskStatusInfo struct {
	Status string
	// Emoji marks the status in the summary table and the pull request's task list.
	Emoji string
	// Words and Plural are the status as a person reads it of one task and of several ("needs a
	// decision", "need a decision"); both are the status's own word when it reads as itself.
	Words, Plural string
}

// taskStatusTable is every task status, in the order a tally lists them ("3 passed, 1 needs a
// decision, 2 pending").
var taskStatusTable = []TaskStatusInfo{
	{Status: TaskStatusPassed, Emoji: "✅", Words: TaskStatusPassed, Plural: TaskStatusPassed},
	{Status: TaskStatusFailed, Emoji: "❌", Words: TaskStatusFailed, Plural: TaskStatusFailed},
	{Status: TaskStatusEscalated, Emoji: "✋", Words: "needs a decision", Plural: "need a decision"},
	{Status: TaskStatusSkipped, Emoji: "⏭️", Words: TaskStatusSkipped, Plural: TaskStatusSkipped},
	{Status: TaskStatusAborted, Emoji: "🛑", Words: TaskStatusAborted, Plural: TaskStatusAborted},
	{Status: TaskStatusRunning, Emoji: "🔄", Words: TaskStatusRunning, Plural: TaskStatusRunning},
	{Status: TaskStatusPending, Emoji: "⚪", Words: TaskStatusPending, Plural: TaskStatusPending},
}

// TaskStatusInfos are the task statuses' rows, in the order a tally lists them.
func TaskStatusInfos() []TaskStatusInfo { return append([]TaskStatusInfo(nil), taskStatusTable...) }

// TaskStatusOf says what the task status s means; ok is false for a status this Akira does not know
// (a record from a newer one), which people then read as written.
func TaskStatusOf(s string) (info TaskStatusInfo, ok bool) {
	for _, info := range taskStatusTable {
		if info.Status == s {
			return info, true
		}
	}
	return TaskStatusInfo{Status: s, Words: s, Plural: s}, false
}

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

// IsLogin says s is a GitHub login, which "@" + s mentions.
func IsLogin(s string) bool { return loginRE.MatchString(s) }

// Who names who did something, as a task's note records it: "@alice" for a GitHub login; anything
// else ("ops (API)", an operator token through the API) as written, so that it never mentions a
// GitHub user of the same name.
func Who(s string) string {
	if IsLogin(s) {
		return "@" + s
	}
	return s
}
