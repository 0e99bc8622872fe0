package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxSetupTimeout is the longest one setup command of a repository may ask for.
const MaxSetupTimeout = 2 * time.Hour

// Setup is a repository's `setup:`: commands run once per run, in the sandbox, after the clone and
// before the first task (installing dependencies, generating code). It is written either as a list of
// commands or as a mapping with commands, timeout, network and snapshot.
type Setup struct {
	Commands []string `yaml:"commands"`
	// Timeout bounds each command; zero means the verification timeout.
	Timeout Duration `yaml:"timeout"`
	// Network is what the commands may reach: empty means what verification may reach; a repository
	// may ask for less (none), never for more than the operator gives verification.
	Network string `yaml:"network"`
	// Snapshot is how long what setup added to the work tree is restored instead of running setup
	// again: zero means the default (a day), SnapshotOff never.
	Snapshot SnapshotAge `yaml:"snapshot"`
}

// SnapshotAge is `snapshot:` of setup: off, or the longest a setup snapshot is used, e.g. 12h.
type SnapshotAge time.Duration

// SnapshotOff is `snapshot: off`.
const SnapshotOff = SnapshotAge(-1)

// UnmarshalYAML accepts off or a positive duration.
func (a *SnapshotAge) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "off" || n.Value == "false" {
			*a = SnapshotOff
			return nil
		}
		if d, err := time.ParseDuration(n.Value); err == nil && d > 0 {
			*a = SnapshotAge(d)
			return nil
		}
	}
	return fmt.Errorf("line %d: setup.snapshot: %q: want off or how long a snapshot is used, like 12h", n.Line, n.Value)
}

// MarshalYAML writes the age back as it is written.
func (a SnapshotAge) MarshalYAML() (any, error) {
	if a == SnapshotOff {
		return "off", nil
	}
	return time.Duration(a).String(), nil
}

// UnmarshalYAML accepts a list of commands or the full mapping.
func (s *Setup) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var cmds []string
		if err := n.Decode(&cmds); err != nil {
			return fmt.Errorf("line %d: setup: want a list of commands: %w", n.Line, err)
		}
		*s = Setup{Commands: cmds}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: setup: want a list of commands or a mapping with commands, timeout, network and snapshot", n.Line)
	}
	type plain Setup
	var p plain
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "commands", "timeout", "network", "snapshot":
		default:
			return fmt.Errorf("line %d: setup: unknown key %q (want commands, timeout, network, snapshot)", n.Content[i].Line, k)
		}
	}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Setup(p)
	return nil
}

func (s Setup) check() error {
	var errs []error
	for _, c := range s.Commands {
		if strings.TrimSpace(c) == "" {
			errs = append(errs, errors.New("setup: empty command"))
		}
	}
	if t := time.Duration(s.Timeout); t > MaxSetupTimeout {
		errs = append(errs, fmt.Errorf("setup.timeout: %s is more than %s", t, MaxSetupTimeout))
	}
	switch s.Network {
	case "", "none", "allowlist", "allow":
	default:
		errs = append(errs, fmt.Errorf("setup.network: %q: want allowlist, none or allow", s.Network))
	}
	return errors.Join(errs...)
}
