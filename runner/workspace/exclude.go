package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExcludeUntracked keeps what is untracked in the work tree now out of every later checkpoint: the
// repository's setup has just run, and what it installed (node_modules, .venv, generated code the
// repository does not ignore itself) is the environment, not the task's work. It returns the paths
// excluded; directories end with a slash. The list lives outside the work tree, where neither the
// agent nor the repository can change it.
func (w *Workspace) ExcludeUntracked(ctx context.Context) ([]string, error) {
	out, err := w.Git(ctx, "ls-files", "-z", "--others", "--exclude-standard", "--directory", "--no-empty-directory")
	if err != nil {
		return nil, fmt.Errorf("workspace: untracked files: %w", err)
	}
	var paths []string
	var b strings.Builder
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		paths = append(paths, p)
		b.WriteString("/" + escapePattern(p) + "\n")
	}
	if len(paths) == 0 {
		return nil, nil
	}
	file := filepath.Join(w.root, "setup-exclude")
	_ = os.Remove(file)
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("workspace: exclude: %w", err)
	}
	w.excludes = file
	return paths, nil
}

// escapePattern makes a path a gitignore pattern that matches only itself.
func escapePattern(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`\*?[]!# `, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
