package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/proc"
	gitws "github.com/akira-bot/akira/runner/workspace"
)

// workspace confines every path the model names to one directory. The checks are the agent's first
// line of defence; the engine still diffs the workspace against the protected paths afterwards.
type workspace struct {
	// root is the workspace directory with symlinks resolved, so that containment is decided on
	// real paths.
	root      string
	protected []string
}

func openWorkspace(dir string, protected []string) (*workspace, error) {
	if dir == "" {
		return nil, errors.New("llm: request has no workspace")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("llm: workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("llm: workspace: %w", err)
	}
	for _, p := range protected {
		if err := validGlob(p); err != nil {
			return nil, fmt.Errorf("llm: protected path %q: %w", p, err)
		}
	}
	return &workspace{root: real, protected: protected}, nil
}

// pathError is an error the model sees as a tool result.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func refused(format string, a ...any) error { return &pathError{msg: fmt.Sprintf(format, a...)} }

// resolve maps a model-supplied path to a real path inside the workspace. It returns the path
// relative to the root after symlinks are resolved (slash-separated) and the absolute real path.
// Components that do not exist yet are kept as given: creating them creates plain entries.
func (w *workspace) resolve(p string) (rel, abs string, err error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", "", refused("path is empty")
	}
	if filepath.IsAbs(p) {
		return "", "", refused("path %q is absolute: use a path relative to the repository root", p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", "", refused("path %q is outside the workspace", p)
	}
	full := filepath.Join(w.root, clean)
	existing, suffix := full, ""
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", refused("path %q: %s", p, errors.Unwrap(err))
		}
		suffix = filepath.Join(filepath.Base(existing), suffix)
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", "", refused("path %q is a symlink that cannot be resolved", p)
	}
	if !within(w.root, real) {
		return "", "", refused("path %q is outside the workspace (it resolves through a symlink)", p)
	}
	abs = filepath.Join(real, suffix)
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return "", "", refused("path %q: %v", p, err)
	}
	return filepath.ToSlash(r), abs, nil
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// writable refuses changes to protected paths and to git's own directory (a hook written there
// would run when Akira commits). Both the path as written and the path after symlinks are checked,
// so an alias cannot reach a protected file.
func (w *workspace) writable(given, rel string) error {
	lexical := filepath.ToSlash(filepath.Clean(strings.TrimSpace(given)))
	for _, p := range []string{lexical, rel} {
		// Case-folded, so that ".GitHub/Workflows" cannot slip past on a case-insensitive file
		// system; refusing a little more on a case-sensitive one is harmless.
		p = strings.ToLower(p)
		if p == ".git" || strings.HasPrefix(p, ".git/") {
			return refused("path %q is inside .git: git metadata is not yours to change", given)
		}
		for _, g := range w.protected {
			if matchGlob(strings.ToLower(g), p) {
				return refused("path %q is protected (%s): it must not be changed", given, g)
			}
		}
	}
	return nil
}

// files lists the workspace's files (slash-separated, relative to the root), honouring .gitignore.
// git decides what is ignored, since re-implementing its rules is how ignored files leak in; a
// directory that is not a git repository is walked instead.
func (w *workspace) files(ctx context.Context) ([]string, error) {
	res, err := proc.Run(ctx, proc.Cmd{
		Args:      []string{"git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"},
		Dir:       w.root,
		Env:       proc.Environ(nil, gitws.HardenedGitEnv()...),
		Timeout:   time.Minute,
		OutputCap: 64 << 20,
	})
	if err == nil && res.ExitCode == 0 && !res.Truncated {
		var out []string
		seen := map[string]bool{}
		for _, name := range bytes.Split(res.Output, []byte{0}) {
			n := string(name)
			if n == "" || seen[n] {
				continue
			}
			seen[n] = true
			// --cached lists files deleted from the work tree too.
			if _, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(n))); err != nil {
				continue
			}
			out = append(out, n)
		}
		sort.Strings(out)
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var out []string
	err = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			r, _ := filepath.Rel(w.root, p)
			out = append(out, filepath.ToSlash(r))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// topLevel lists the root's entries for the prompt, directories with a trailing slash.
func (w *workspace) topLevel(limit int) string {
	entries, err := os.ReadDir(w.root)
	if err != nil {
		return "(unreadable)"
	}
	var b strings.Builder
	n := 0
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if n == limit {
			fmt.Fprintf(&b, "… and %d more\n", len(entries)-n)
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		b.WriteString(name + "\n")
		n++
	}
	if n == 0 {
		return "(empty)\n"
	}
	return b.String()
}

// matchGlob reports whether the slash-separated path name matches pattern. "**" matches any number
// of path segments (none included); other segments follow path.Match. A pattern without "/" matches
// the base name at any depth, as in .gitignore, unless it starts with "/"; a trailing "/" means
// everything under a directory.
func matchGlob(pattern, name string) bool {
	anchored := strings.HasPrefix(pattern, "/")
	pattern = strings.TrimPrefix(pattern, "/")
	if strings.HasSuffix(pattern, "/") {
		pattern += "**"
	}
	if !anchored && !strings.Contains(pattern, "/") {
		pattern = "**/" + pattern
	}
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			pat = pat[1:]
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegments(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func validGlob(pattern string) error {
	if strings.TrimSpace(pattern) == "" {
		return errors.New("empty pattern")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}
