package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	// MaxServices is how many services one repository may start for a run.
	MaxServices = 8
	// MaxServiceTimeout is the longest a service may take to accept connections.
	MaxServiceTimeout = 10 * time.Minute
	// DefaultServiceTimeout is how long a service has to accept connections when it does not say.
	DefaultServiceTimeout = time.Minute
)

// serviceName keeps a service's name usable in environment variable names (REDIS_PORT).
var serviceName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Service is one process a repository's runs need beside their verification (a database, Redis):
// started after setup for the whole run, in a sandbox of its own, on a port Akira chooses.
type Service struct {
	Name string `yaml:"-"`
	// Command starts the service in the foreground; it must listen on 127.0.0.1:$PORT. It may keep
	// its data under $AKIRA_SERVICE_DIR, a directory of its own that lasts the run.
	Command string `yaml:"command"`
	// Init commands run once before Command, in the same place (initdb, say).
	Init []string `yaml:"init"`
	// Timeout is how long the service has to accept connections; zero means DefaultServiceTimeout.
	Timeout Duration `yaml:"timeout"`
}

// Services are a repository's `services:`, a mapping of name to service, in the order written.
type Services []Service

// UnmarshalYAML reads the mapping in order, so that services start in the order they are written.
func (s *Services) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: services: want a mapping of name to {command, init, timeout}", n.Line)
	}
	var out Services
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, body := n.Content[i], n.Content[i+1]
		if body.Kind == yaml.ScalarNode {
			out = append(out, Service{Name: name.Value, Command: body.Value})
			continue
		}
		if body.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: services.%s: want a command or a mapping with command, init and timeout", body.Line, name.Value)
		}
		for j := 0; j+1 < len(body.Content); j += 2 {
			switch k := body.Content[j].Value; k {
			case "command", "init", "timeout":
			default:
				return fmt.Errorf("line %d: services.%s: unknown key %q (want command, init, timeout)", body.Content[j].Line, name.Value, k)
			}
		}
		var svc Service
		if err := body.Decode(&svc); err != nil {
			return fmt.Errorf("services.%s: %w", name.Value, err)
		}
		svc.Name = name.Value
		out = append(out, svc)
	}
	*s = out
	return nil
}

func (s Services) check() error {
	var errs []error
	if len(s) > MaxServices {
		errs = append(errs, fmt.Errorf("services: %d services, at most %d", len(s), MaxServices))
	}
	seen := map[string]bool{}
	for _, svc := range s {
		if !serviceName.MatchString(svc.Name) {
			errs = append(errs, fmt.Errorf("services: name %q: want lower-case letters, digits and _, starting with a letter (it names $%s_PORT)", svc.Name, strings.ToUpper(svc.Name)))
			continue
		}
		if seen[svc.Name] {
			errs = append(errs, fmt.Errorf("services.%s: named twice", svc.Name))
		}
		seen[svc.Name] = true
		if strings.TrimSpace(svc.Command) == "" {
			errs = append(errs, fmt.Errorf("services.%s: no command", svc.Name))
		}
		for _, c := range svc.Init {
			if strings.TrimSpace(c) == "" {
				errs = append(errs, fmt.Errorf("services.%s.init: empty command", svc.Name))
			}
		}
		if t := time.Duration(svc.Timeout); t < 0 || t > MaxServiceTimeout {
			errs = append(errs, fmt.Errorf("services.%s.timeout: %s: want at most %s", svc.Name, t, MaxServiceTimeout))
		}
	}
	return errors.Join(errs...)
}
