package config

import (
	"fmt"
	"time"
)

// What `ci.watch` may say.
const (
	// CIWatchLast waits for the pull request's own CI after the last task (the default).
	CIWatchLast = "last"
	// CIWatchOff marks the pull request ready when the tasks are done, whatever its CI says.
	CIWatchOff = "off"
	// CIWatchEach waits for the CI after every checkpoint (after every wave of tasks run at once) and
	// fixes what it fails before the next task starts: slower, but a red check points at one task.
	CIWatchEach = "each"
)

// CI says how a run watches its pull request's own CI (the checks and statuses of other apps on the
// commits Akira pushes) before it marks the pull request ready.
type CI struct {
	// Watch is CIWatchLast, CIWatchEach or CIWatchOff; the operator's off wins over a repository's choice.
	Watch string `yaml:"watch"`
	// Timeout bounds the wait for the checks of one commit (default 30m).
	Timeout Duration `yaml:"timeout"`
	// Grace is how long a commit may show no check at all before the run says it has no CI (default 2m).
	Grace Duration `yaml:"grace"`
	// MaxFixRounds is how many times Akira pushes a fix for a red check before it escalates (default 2).
	MaxFixRounds int `yaml:"max_fix_rounds"`
	// RerunFlaky re-runs a failed GitHub Actions job once before Akira tries to fix it.
	RerunFlaky bool `yaml:"rerun_flaky"`
}

// Defaults of CI.
const (
	DefaultCITimeout      = 30 * time.Minute
	DefaultCIGrace        = 2 * time.Minute
	DefaultCIMaxFixRounds = 2
)

// CIFor is a run's CI watch: the repository's settings over the operator's, with the defaults; the
// operator's watch: off turns it off everywhere.
func (o Operator) CIFor(r Repo) CI {
	ci := o.CI
	if r.CI.Watch != "" && ci.Watch != CIWatchOff {
		ci.Watch = r.CI.Watch
	}
	if r.CI.Timeout > 0 {
		ci.Timeout = r.CI.Timeout
	}
	if r.CI.Grace > 0 {
		ci.Grace = r.CI.Grace
	}
	if r.CI.MaxFixRounds > 0 {
		ci.MaxFixRounds = r.CI.MaxFixRounds
	}
	ci.RerunFlaky = ci.RerunFlaky || r.CI.RerunFlaky
	if ci.Watch == "" {
		ci.Watch = CIWatchLast
	}
	if ci.Timeout <= 0 {
		ci.Timeout = Duration(DefaultCITimeout)
	}
	if ci.Grace <= 0 {
		ci.Grace = Duration(DefaultCIGrace)
	}
	if ci.MaxFixRounds <= 0 {
		ci.MaxFixRounds = DefaultCIMaxFixRounds
	}
	return ci
}

// check names what is wrong with ci: (key is where it stands).
func (c CI) check(key string) error {
	switch {
	case c.Watch != "" && c.Watch != CIWatchLast && c.Watch != CIWatchEach && c.Watch != CIWatchOff:
		return fmt.Errorf("%s.watch: %q is not %q, %q or %q", key, c.Watch, CIWatchLast, CIWatchEach, CIWatchOff)
	case c.Timeout < 0 || c.Grace < 0:
		return fmt.Errorf("%s: durations must not be negative", key)
	case c.MaxFixRounds < 0 || c.MaxFixRounds > 10:
		return fmt.Errorf("%s.max_fix_rounds: %d is out of range (1 to 10)", key, c.MaxFixRounds)
	}
	return nil
}
