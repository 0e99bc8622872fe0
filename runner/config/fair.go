package config

import (
	"fmt"
	"time"
)

// Fair is how the App shares its workers between installations (the operator's `fair:`; see
// jobs/fair). Zero values take the defaults.
type Fair struct {
	// MaxRunsPerInstallation caps the run jobs one installation has at once (default: half of all
	// workers, at least one), so one installation's backlog never takes every worker.
	MaxRunsPerInstallation int `yaml:"max_runs_per_installation"`
	// Installations overrides the cap for some installations, by installation id.
	Installations map[int64]int `yaml:"installations"`
	// UsageHalfLife is how fast past worker time stops counting when the gate picks who goes next
	// (default 30m).
	UsageHalfLife Duration `yaml:"usage_half_life"`
}

func (f Fair) check(key string) []error {
	var errs []error
	if f.MaxRunsPerInstallation < 0 {
		errs = append(errs, fmt.Errorf("%s.max_runs_per_installation: %d is negative", key, f.MaxRunsPerInstallation))
	}
	for id, n := range f.Installations {
		if id <= 0 {
			errs = append(errs, fmt.Errorf("%s.installations: %d is not an installation id", key, id))
		}
		if n < 1 {
			errs = append(errs, fmt.Errorf("%s.installations.%d: cap %d is below 1", key, id, n))
		}
	}
	if f.UsageHalfLife < 0 {
		errs = append(errs, fmt.Errorf("%s.usage_half_life: %s is negative", key, time.Duration(f.UsageHalfLife)))
	}
	return errs
}
