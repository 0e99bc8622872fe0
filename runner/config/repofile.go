package config

import (
	"context"
	"fmt"
	"reflect"
	"strings"
)

// RepoPaths are where a repository's configuration is looked for, in order: the first that exists is
// used, so with both files .github/akira.yml wins and .github/akira.yaml is not read.
var RepoPaths = []string{".github/akira.yml", ".github/akira.yaml"}

// FileReader reads a file of the repository's default branch; found is false when there is none.
type FileReader func(ctx context.Context, path string) (data []byte, found bool, err error)

// RepoError is a repository configuration file that cannot be used. Problems are one per line, each
// naming the key (and the line when known), ready to be shown to the repository's people.
type RepoError struct {
	Path     string
	Problems []string
	Err      error
}

func (e *RepoError) Error() string {
	return e.Path + ": " + strings.Join(e.Problems, "; ")
}

func (e *RepoError) Unwrap() error { return e.Err }

// LoadRepo is the one loader of a repository's configuration, used by the App's intake, its workers
// and akira run alike: the first of RepoPaths that read finds, parsed over the defaults and checked by
// validate (typically the operator's ValidateRepo); the defaults when there is no file. It returns the
// path it used ("" for none). A file that does not parse or validate is a *RepoError; a failure to read
// is returned wrapped.
func LoadRepo(ctx context.Context, read FileReader, validate ...func(Repo) error) (Repo, string, error) {
	for _, path := range RepoPaths {
		data, found, err := read(ctx, path)
		if err != nil {
			return Repo{}, "", fmt.Errorf("config: read %s: %w", path, err)
		}
		if !found {
			continue
		}
		rc, err := ParseRepo(data)
		if err == nil {
			for _, v := range validate {
				if err = v(rc); err != nil {
					break
				}
			}
		}
		if err != nil {
			return Repo{}, path, newRepoError(path, err)
		}
		return rc, path, nil
	}
	return DefaultRepo(), "", nil
}

func newRepoError(path string, err error) *RepoError {
	e := &RepoError{Path: path, Err: err}
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		// ParseRepo names the file in its messages; the problems are listed under the file's real name.
		for _, p := range RepoPaths {
			line = strings.TrimPrefix(line, p+": ")
		}
		if line != "" {
			e.Problems = append(e.Problems, line)
		}
	}
	return e
}

// RepoKeys lists the keys a repository's configuration may contain, nested ones as "parent.child".
func RepoKeys() []string {
	return yamlKeys(reflect.TypeOf(Repo{}), "")
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
