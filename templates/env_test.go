package templates

import (
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// The environment's templates join the golden cases of TestGolden.
func init() {
	cases = append(cases, []struct {
		golden   string
		template string
		data     any
	}{
		{"env_checkrun_setup_passed", "env_checkrun", EnvCheckRun{Kind: "setup", Passed: true,
			Steps:  []EnvStep{{Command: "npm ci", Duration: 12 * time.Second}, {Command: "npm run build", Duration: 3 * time.Second}},
			LogURL: "https://akira.example/api/v1/runs/r1/tasks/_setup/attempts/1/log"}},
		{"env_checkrun_setup_restored", "env_checkrun", EnvCheckRun{Kind: "setup", Passed: true,
			Snapshot: &EnvSnapshot{Restored: true, Taken: time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC), Files: 1042},
			LogURL:   "https://akira.example/api/v1/runs/r1/tasks/_setup/attempts/1/log"}},
		{"env_checkrun_setup_saved", "env_checkrun", EnvCheckRun{Kind: "setup", Passed: true,
			Steps:    []EnvStep{{Command: "npm ci", Duration: 12 * time.Second}},
			Snapshot: &EnvSnapshot{Taken: time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC), Files: 1042}}},
		{"env_checkrun_setup_failed", "env_checkrun", EnvCheckRun{Kind: "setup",
			Steps:  []EnvStep{{Command: "npm ci", Duration: 12 * time.Second}, {Command: "npm run gen | tee x", ExitCode: 1, Duration: time.Second}},
			Failed: "npm run gen | tee x", ExitCode: 1, Tail: "npm ERR! missing script: gen\n```\n"}},
		{"env_checkrun_setup_limit", "env_checkrun", EnvCheckRun{Kind: "setup", Detected: "package.json + package-lock.json",
			Steps:  []EnvStep{{Command: "npm ci", ExitCode: -1, Limit: "timeout of 10m0s", Duration: 10 * time.Minute}},
			Failed: "npm ci", Limit: "timeout of 10m0s", ExitCode: -1, Tail: "added 1 package\n[akira: timeout of 10m0s]"}},
		{"env_checkrun_base_red", "env_checkrun", EnvCheckRun{Kind: "base", Commit: sha1,
			Failed: "go test ./...", ExitCode: 1, Tail: "--- FAIL: TestSum\nFAIL"}},
		{"env_checkrun_base_allowed", "env_checkrun", EnvCheckRun{Kind: "base", Commit: sha1, AllowRedBase: true,
			Failed: "go test ./...", ExitCode: 1, Tail: "FAIL"}},
		{"env_checkrun_base_green", "env_checkrun", EnvCheckRun{Kind: "base", Passed: true, Commit: sha1}},
		{"env_summary", "env_summary", EnvSummary{
			Setup: &EnvLine{Passed: true, Detail: "passed (2 commands)", Duration: 15 * time.Second,
				CheckRunURL: "https://github.com/o/r/runs/9", LogURL: "https://akira.example/log"},
			Base: &EnvLine{Passed: false, Allowed: true, Detail: "red at `3f2a9c1`, allowed", CheckRunURL: "https://github.com/o/r/runs/10"}}},
		{"env_summary_base_only", "env_summary", EnvSummary{Base: &EnvLine{Passed: true, Detail: "green at `3f2a9c1`"}}},
		{"env_summary_proposed", "env_summary", EnvSummary{Setup: &EnvLine{Passed: true, Proposed: true,
			Detail: "none: `npm ci` detected from package.json + package-lock.json would run with the operator's auto_setup (or setup: in .github/akira.yml)"}}},
		{"summary_red_base", "summary", Summary{RunID: "r11", State: "failed",
			Error:       "the base branch fails `go test ./...` before any change: exit code 1",
			Tasks:       []Task{{ID: "1", Title: "Add login", Status: lifecycle.TaskStatusPending}},
			Environment: &EnvSummary{Base: &EnvLine{Detail: "red at `3f2a9c1`", CheckRunURL: "https://github.com/o/r/runs/10"}}}},
		{"summary_environment", "summary", Summary{RunID: "r10", State: "failed",
			Error:       "setup failed: `npm ci` failed (exit code 1)",
			Tasks:       []Task{{ID: "1", Title: "Add login", Status: lifecycle.TaskStatusPending}},
			Environment: &EnvSummary{Setup: &EnvLine{Detail: "`npm ci` failed (exit code 1)", CheckRunURL: "https://github.com/o/r/runs/9"}}}},
	}...)
}
