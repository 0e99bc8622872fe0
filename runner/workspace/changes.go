package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Change is a path the work tree changes against the last checkpoint.
type Change struct {
	Path string
	// Status is "added", "modified" or "deleted".
	Status string
	// Added and Deleted are lines; a binary file has none.
	Added, Deleted int
	Binary         bool
}

// Changes lists what the work tree changes against the last checkpoint, as the next checkpoint
// would take it (tracked files edited or deleted, new files that are not ignored), with the lines
// added and deleted: what an attempt did, read from the work tree rather than from what the agent
// says. The index is left as it is: git reads the work tree into a copy of it.
func (w *Workspace) Changes(ctx context.Context) ([]Change, error) {
	index := filepath.Join(w.root, "changes-index")
	defer os.Remove(index)
	if err := copyFile(filepath.Join(w.gitDir, "index"), index); err != nil {
		return nil, fmt.Errorf("workspace: changes: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	// --ignore-errors: a file git cannot read (a nested repository without a commit) leaves the
	// others listed.
	if _, err := w.execEnv(ctx, w.Dir, false, nil, env, "add", "--all", "--ignore-errors"); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("workspace: changes: %w", err)
	}
	out, err := w.execEnv(ctx, w.Dir, false, nil, env, "diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "-z",
		"--raw", "--numstat", w.checkpoint, "--")
	if err != nil {
		return nil, fmt.Errorf("workspace: changes: %w", err)
	}
	return parseChanges(string(out)), nil
}

// parseChanges reads `git diff -z --raw --numstat`: a record per path of each, the raw ones
// (":<old mode> <new mode> <old sha> <new sha> <status>\x00<path>\x00") first, then the numstat
// ones ("<added>\t<deleted>\t<path>\x00", "-" for both of a binary file).
func parseChanges(out string) []Change {
	var changes []Change
	byPath := map[string]int{}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if meta, ok := strings.CutPrefix(f, ":"); ok {
			if i+1 >= len(fields) {
				break
			}
			i++
			m := strings.Fields(meta)
			if len(m) < 5 || fields[i] == "" {
				continue
			}
			c := Change{Path: fields[i], Status: "modified"}
			switch m[4][0] {
			case 'A':
				c.Status = "added"
			case 'D':
				c.Status = "deleted"
			}
			byPath[c.Path] = len(changes)
			changes = append(changes, c)
			continue
		}
		parts := strings.SplitN(f, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		j, ok := byPath[parts[2]]
		if !ok {
			continue
		}
		if parts[0] == "-" && parts[1] == "-" {
			changes[j].Binary = true
			continue
		}
		changes[j].Added, _ = strconv.Atoi(parts[0])
		changes[j].Deleted, _ = strconv.Atoi(parts[1])
	}
	return changes
}

// copyFile copies the regular file src to dst; a src that does not exist makes no dst (git then
// starts from an empty index).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
