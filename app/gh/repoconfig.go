package gh

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/akira-bot/akira/runner/config"
)

// RepoConfigPaths are where a repository's configuration is looked for, in order.
var RepoConfigPaths = []string{".github/akira.yml", ".github/akira.yaml"}

// RepoFiles is what LoadRepoConfig needs from GitHub; *Client has it.
type RepoFiles interface {
	DefaultBranch(ctx context.Context, owner, repo string) (string, error)
	GetFile(ctx context.Context, owner, repo, ref, path string) ([]byte, error)
}

// ConfigError is a repository configuration that cannot be used. Problems are one per line, each
// naming the key (and the line when known), ready for the config_error template.
type ConfigError struct {
	Path     string
	Ref      string
	Problems []string
	Err      error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s on %s: %s", e.Path, e.Ref, strings.Join(e.Problems, "; "))
}

func (e *ConfigError) Unwrap() error { return e.Err }

// LoadRepoConfig reads .github/akira.yml (or .yaml) from the default branch, never from a pull
// request's head, and parses it over the defaults; a repository without the file gets the defaults.
// validate, typically the operator's ValidateRepo, checks the choices the file makes (the agent
// profile must be one the operator defined). A file that does not parse or validate is a *ConfigError.
func LoadRepoConfig(ctx context.Context, files RepoFiles, owner, repo string, validate ...func(config.Repo) error) (config.Repo, error) {
	branch, err := files.DefaultBranch(ctx, owner, repo)
	if err != nil {
		return config.Repo{}, fmt.Errorf("gh: repo config: %w", err)
	}
	for _, path := range RepoConfigPaths {
		data, err := files.GetFile(ctx, owner, repo, branch, path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return config.Repo{}, fmt.Errorf("gh: repo config: %w", err)
		}
		rc, err := config.ParseRepo(data)
		if err == nil {
			for _, v := range validate {
				if err = v(rc); err != nil {
					break
				}
			}
		}
		if err != nil {
			return config.Repo{}, newConfigError(path, branch, err)
		}
		return rc, nil
	}
	return config.DefaultRepo(), nil
}

func newConfigError(path, ref string, err error) *ConfigError {
	e := &ConfigError{Path: path, Ref: ref, Err: err}
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		// runner/config names the file in its messages; the problem list is shown under the file's name.
		for _, p := range RepoConfigPaths {
			line = strings.TrimPrefix(line, p+": ")
		}
		if line != "" {
			e.Problems = append(e.Problems, line)
		}
	}
	return e
}

// RepoConfigKeys lists the keys .github/akira.yml may contain, nested ones as "parent.child".
func RepoConfigKeys() []string {
	return yamlKeys(reflect.TypeOf(config.Repo{}), "")
}

func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, yamlKeys(f.Type, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}
