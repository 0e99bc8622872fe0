package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/akira-bot/akira/runner/sandbox"
)

// Default limits of one attempt's commands, when the operator's file sets none.
const (
	DefaultCPULimit       = time.Hour
	DefaultMemoryLimit    = 8 << 30
	DefaultProcessLimit   = 4096
	DefaultFileSizeLimit  = 2 << 30
	DefaultWorkspaceLimit = 10 << 30
)

// Sandbox is the operator's `sandbox:` setting: a mode alone (`sandbox: bubblewrap`) or a mapping.
type Sandbox struct {
	// Mode is bubblewrap or none; empty means the operator did not choose.
	Mode string `yaml:"mode"`
	// Network is what verification commands may reach: none or allow (default allow: builds fetch
	// dependencies). Each agent profile says its own.
	Network string `yaml:"network"`
	// ReadOnly are more directories commands see read-only (toolchains outside /usr and /opt).
	ReadOnly []string `yaml:"read_only"`
	Limits   Limits   `yaml:"limits"`
}

// UnmarshalYAML accepts the scalar form.
func (s *Sandbox) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Mode = n.Value
		return nil
	}
	type plain Sandbox
	dec := (*plain)(s)
	return n.Decode(dec)
}

// Limits bound each command of an attempt, and the workspace's size after it.
type Limits struct {
	CPU       Duration `yaml:"cpu"`
	Memory    Size     `yaml:"memory"`
	Processes int      `yaml:"processes"`
	FileSize  Size     `yaml:"file_size"`
	Disk      Size     `yaml:"disk"`
}

// Size is a byte count written as 512MiB, 8GiB, 10G or a plain number of bytes.
type Size int64

// UnmarshalYAML reads sizes with binary units.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = Size(v)
	return nil
}

// ParseSize reads 512MiB, 8GiB, 10G, 100K or bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}}
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, fmt.Errorf("%q is not a size (want e.g. 512MiB, 8GiB)", s)
	}
	return n * mul, nil
}

func (s Sandbox) validate() error {
	var errs []error
	if s.Mode != "" {
		if _, err := sandbox.ParseMode(s.Mode); err != nil {
			errs = append(errs, fmt.Errorf("sandbox.mode: %q: want bubblewrap or none", s.Mode))
		}
	}
	if _, err := sandbox.ParseNetwork(s.Network, sandbox.NetAllow); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.network: %w", err))
	}
	for _, p := range s.ReadOnly {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("sandbox.read_only: %q is not an absolute path", p))
		}
	}
	if s.Limits.Processes < 0 {
		errs = append(errs, errors.New("sandbox.limits.processes: must not be negative"))
	}
	return errors.Join(errs...)
}

// SandboxConfig is the operator's sandbox as the engine takes it, with defaults filled in. mode is
// the chosen mode (the caller decides what an unset one means: see cmd/akira).
func (o Operator) SandboxConfig(mode sandbox.Mode) sandbox.Config {
	s := o.Sandbox
	net, _ := sandbox.ParseNetwork(s.Network, sandbox.NetAllow)
	l := s.Limits
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	return sandbox.Config{
		Mode: mode, VerifyNetwork: net, ReadOnly: append([]string(nil), s.ReadOnly...),
		Limits: sandbox.Limits{
			CPU:       time.Duration(pick(int64(l.CPU), int64(DefaultCPULimit))),
			Memory:    pick(int64(l.Memory), DefaultMemoryLimit),
			Processes: int(pick(int64(l.Processes), DefaultProcessLimit)),
			FileSize:  pick(int64(l.FileSize), DefaultFileSizeLimit),
		},
		Disk: pick(int64(l.Disk), DefaultWorkspaceLimit),
	}
}

// AgentNetwork is what a profile's agent may reach: its `network`, else allow for an exec agent (a
// coding-agent CLI talks to its model API) and none for the built-in agent's commands (Akira itself
// talks to the model).
func (p AgentProfile) AgentNetwork() sandbox.Network {
	def := sandbox.NetNone
	if p.Kind == "exec" {
		def = sandbox.NetAllow
	}
	n, err := sandbox.ParseNetwork(p.Network, def)
	if err != nil {
		return sandbox.NetNone
	}
	return n
}
