package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/akira-bot/akira/runner/egress"
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
	// Network is what verification commands may reach: allowlist (default: through the egress
	// proxy, to the hosts of Egress), none or allow (the host's whole network). Each agent profile
	// says its own.
	Network string `yaml:"network"`
	// Egress is what network allowlist lets through.
	Egress Egress `yaml:"egress"`
	// ReadOnly are more directories commands see read-only (toolchains outside /usr and /opt).
	ReadOnly []string `yaml:"read_only"`
	Limits   Limits   `yaml:"limits"`
}

// Egress is the operator's allowlist: presets (go, npm, pypi, crates, debian, github), host names,
// *.domain patterns, and addresses or CIDR ranges (the only way to let a loopback, link-local,
// private or unique-local address through), each optionally with a port.
type Egress struct {
	// Allow is what every run may reach; unset means every preset.
	Allow []string `yaml:"allow"`
	// Ceiling is what a repository's network.allow may add besides Allow; unset means nothing more.
	Ceiling []string `yaml:"ceiling"`
}

// DefaultEgressAllow is the allowlist of an operator who set none: the package registries.
var DefaultEgressAllow = egress.PresetNames()

// EgressAllow is what every run may reach.
func (o Operator) EgressAllow() egress.Allowlist {
	entries := o.Sandbox.Egress.Allow
	if entries == nil {
		entries = DefaultEgressAllow
	}
	a, _ := egress.ParseAllowlist(entries) // validated by ParseOperator
	return a
}

// EgressCeiling is the most a repository's network.allow may ask for: Allow and Ceiling.
func (o Operator) EgressCeiling() egress.Allowlist {
	c, _ := egress.ParseAllowlist(o.Sandbox.Egress.Ceiling)
	return o.EgressAllow().Merge(c)
}

// RepoEgress is what a repository's runs may reach: the operator's allowlist and what the
// repository asked for within the ceiling. Asking for more is an error that names the entries.
func (o Operator) RepoEgress(r Repo) (egress.Allowlist, error) {
	asked, err := egress.ParseAllowlist(r.Network.Allow)
	if err != nil {
		return egress.Allowlist{}, fmt.Errorf("network.allow: %w", err)
	}
	if out := asked.Within(o.EgressCeiling()); len(out) > 0 {
		return egress.Allowlist{}, fmt.Errorf("network.allow: %s: not within what the operator allows repositories to ask for (sandbox.egress.allow and sandbox.egress.ceiling)", strings.Join(out, ", "))
	}
	return o.EgressAllow().Merge(asked), nil
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
	if _, err := sandbox.ParseNetwork(s.Network, sandbox.NetAllowlist); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.network: %w", err))
	}
	if _, err := egress.ParseAllowlist(s.Egress.Allow); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.egress.allow: %w", err))
	}
	if _, err := egress.ParseAllowlist(s.Egress.Ceiling); err != nil {
		errs = append(errs, fmt.Errorf("sandbox.egress.ceiling: %w", err))
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
	net, _ := sandbox.ParseNetwork(s.Network, sandbox.NetAllowlist)
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
		Disk:  pick(int64(l.Disk), DefaultWorkspaceLimit),
		Allow: o.EgressAllow(), Ceiling: o.EgressCeiling(),
	}
}

// AgentNetwork is what a profile's agent may reach: its `network`, else allowlist (an exec agent
// reaches its model through the egress proxy; the built-in agent's commands reach the registries).
func (p AgentProfile) AgentNetwork() sandbox.Network {
	n, err := sandbox.ParseNetwork(p.Network, sandbox.NetAllowlist)
	if err != nil {
		return sandbox.NetNone
	}
	return n
}

// The model APIs an exec profile's `api` names, with where they are and the variables their CLIs
// read.
var modelAPIs = map[string]struct{ baseURL, keyEnv, agentKeyEnv, agentBaseURLEnv string }{
	egress.ProtocolAnthropic: {"https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
	egress.ProtocolOpenAI:    {"https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"},
}

// ModelAPI is an exec profile's model endpoint with its defaults filled in; ok is false for a
// profile that names no api.
type ModelAPI struct {
	Protocol, BaseURL, KeyEnv, AgentKeyEnv, AgentBaseURLEnv string
}

// ModelAPI is the exec profile's model endpoint (its api, base_url, api_key_env, agent_key_env,
// agent_base_url_env).
func (p AgentProfile) ModelAPI() (ModelAPI, bool) {
	d, ok := modelAPIs[p.API]
	if p.Kind != "exec" || !ok {
		return ModelAPI{}, false
	}
	pick := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	return ModelAPI{Protocol: p.API, BaseURL: pick(p.BaseURL, d.baseURL), KeyEnv: pick(p.APIKeyEnv, d.keyEnv),
		AgentKeyEnv: pick(p.AgentKeyEnv, d.agentKeyEnv), AgentBaseURLEnv: pick(p.AgentBaseURLEnv, d.agentBaseURLEnv)}, true
}

// Host is the model endpoint's host.
func (m ModelAPI) Host() string {
	if u, err := url.Parse(m.BaseURL); err == nil {
		return u.Hostname()
	}
	return m.BaseURL
}
