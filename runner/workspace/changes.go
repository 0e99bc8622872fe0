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
	status, err := w.execEnv(ctx, w.Dir, false, nil, env, "diff", "--cached", "--no-renames", "-z", "--name-status", w.checkpoint, "--")
	if err != nil {
		return nil, fmt.Errorf("workspace: changes: %w", err)
	}
	numstat, err := w.execEnv(ctx, w.Dir, false, nil, env, "diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "-z", "--numstat", w.checkpoint, "--")
	if err != nil {
		return nil, fmt.Errorf("workspace: changes: %w", err)
	}
	return parseChanges(string(status), string(numstat)), nil
}

// parseChanges joins `git diff -z --name-status` ("M\x00path\x00" per path) and `git diff -z
// --numstat` ("added\tdeleted\tpath\x00", "-" for a binary file) of the same diff.
func parseChanges(status, numstat string) []Change {
	var out []Change
	byPath := map[string]int{}
	fields := strings.Split(status, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		code, path := fields[i], fields[i+1]
		if code == "" || path == "" {
			continue
		}
		c := Change{Path: path, Status: "modified"}
		switch code[0] {
		case 'A':
			c.Status = "added"
		case 'D':
			c.Status = "deleted"
		}
		byPath[path] = len(out)
		out = append(out, c)
	}
	for _, rec := range strings.Split(numstat, "\x00") {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		i, ok := byPath[parts[2]]
		if !ok {
			continue
		}
		if parts[0] == "-" && parts[1] == "-" {
			out[i].Binary = true
			continue
		}
		out[i].Added, _ = strconv.Atoi(parts[0])
		out[i].Deleted, _ = strconv.Atoi(parts[1])
	}
	return out
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
