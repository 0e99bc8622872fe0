package templates

import "time"

// EnvCheckRun is the text of a run's environment check runs: `akira / setup` (Kind "setup") and
// `akira / base` (Kind "base").
type EnvCheckRun struct {
	Kind   string
	Passed bool
	// Steps are the setup's commands as they ran (setup), or the repository-wide verify commands (base).
	Steps []EnvStep
	// Failed is the command that failed; Limit the limit it hit ("timeout of 10m0s"), ExitCode its
	// exit code, Tail the end of its output.
	Failed   string
	Limit    string
	ExitCode int
	Tail     string
	// Detected names the file an auto-setup's install command was chosen from.
	Detected string
	// Commit is the base commit checked (base); AllowRedBase says the run went on although it is red.
	Commit       string
	AllowRedBase bool
	LogURL       string
	// Snapshot is the setup snapshot restored in place of the commands, or saved after them.
	Snapshot *EnvSnapshot
}

// EnvSnapshot is a setup snapshot: what a setup added to the work tree, kept for the next runs.
type EnvSnapshot struct {
	Restored bool
	Taken    time.Time
	Files    int
}

// EnvStep is one command of a setup.
type EnvStep struct {
	Command  string
	ExitCode int
	Limit    string
	Duration time.Duration
}

// EnvSummary is the summary's line about the run's environment.
type EnvSummary struct {
	// Setup is nil when the run had no setup.
	Setup *EnvLine
	Base  *EnvLine
}

// EnvLine is one environment step in the summary.
type EnvLine struct {
	Passed      bool
	Detail      string
	Duration    time.Duration
	CheckRunURL string
	LogURL      string
	// Allowed says a red base did not stop the run (--allow-red-base).
	Allowed bool
	// Proposed says nothing ran (a detected install command without auto-setup).
	Proposed bool
}
