package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Bringing a run's branch up to date with its base: the base is merged into the branch, never the
// branch rebased onto the base, so that the checkpoints already pushed (and reviewed, and named by
// check runs) keep their commits. A clean merge is left staged for the caller to verify; a merge that
// conflicts leaves the work tree with git's conflict markers for an agent to resolve, and says what
// conflicts, with every side of each conflicting hunk, as data for a prompt.

// Sync is what MergeBase found.
type Sync struct {
	// Base is the base branch's head that is being merged; "" when the branch already contains it.
	Base string
	// Conflicts are the files the merge could not resolve, in path order; none for a clean merge.
	Conflicts []Conflict
}

// UpToDate says the branch already contains the base's head: nothing to merge.
func (s Sync) UpToDate() bool { return s.Base == "" }

// Conflict is one file the merge of the base could not resolve.
type Conflict struct {
	Path string
	// Kind is "content" (both sides changed the same lines), "modify/delete" or "delete/modify" (one
	// side deleted the file the other changed: ours/theirs), "add/add" (both added it differently), or
	// "binary".
	Kind  string
	Hunks []Hunk
}

// Hunk is one conflicting region: the run's branch's lines (Ours), the base branch's (Theirs) and those
// of their common ancestor (Base). Line is where the region starts in the branch's version.
type Hunk struct {
	Line   int
	Ours   string
	Base   string
	Theirs string
}

// maxHunkBytes bounds each side of a hunk as data for a prompt.
const maxHunkBytes = 8 << 10

// maxConflictHunks bounds the hunks given per file.
const maxConflictHunks = 20

// MergeBase fetches the base branch and merges its head into the run's branch without committing.
// Up to date: nothing happens. A clean merge leaves the result staged (call CommitMerge once it is
// verified, or Reset to drop it). A conflicted merge leaves the conflicted files in the work tree with
// git's markers, for an agent to resolve before CommitMerge, and reports them.
func (w *Workspace) MergeBase(ctx context.Context) (Sync, error) {
	ref := "refs/remotes/origin/" + w.Base
	if !w.opts.DryRun {
		if _, err := w.remote(ctx, w.Dir, "fetch", "--quiet", "--no-tags", "--", w.opts.Remote, "+refs/heads/"+w.Base+":"+ref); err != nil {
			return Sync{}, fmt.Errorf("workspace: fetch %s: %w", w.Base, err)
		}
	}
	base, err := w.Git(ctx, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return Sync{}, fmt.Errorf("workspace: base %s: %w", w.Base, err)
	}
	if _, err := w.Git(ctx, "merge-base", "--is-ancestor", base, w.checkpoint); err == nil {
		return Sync{}, nil
	}
	if err := w.Reset(ctx); err != nil {
		return Sync{}, err
	}
	// No fast-forward even when the branch has nothing of its own: the merge commit carries the
	// trailer that says the branch was brought up to date. diff3 markers show the agent the ancestor.
	_, merr := w.Git(ctx, "-c", "merge.conflictStyle=diff3", "merge", "--no-ff", "--no-commit", "--no-edit", "--no-verify", base)
	conflicts, err := w.conflicts(ctx)
	if err != nil {
		return Sync{}, err
	}
	if merr != nil && len(conflicts) == 0 {
		_ = w.abortMerge(ctx)
		return Sync{}, fmt.Errorf("workspace: merge %s: %w", w.Base, merr)
	}
	return Sync{Base: base, Conflicts: conflicts}, nil
}

// conflicts lists the unmerged paths of the index with the sides of their conflicting hunks.
func (w *Workspace) conflicts(ctx context.Context) ([]Conflict, error) {
	out, err := w.run(ctx, w.Dir, false, "ls-files", "-z", "--unmerged")
	if err != nil {
		return nil, fmt.Errorf("workspace: unmerged files: %w", err)
	}
	// "<mode> <sha> <stage>\t<path>\0" per stage present.
	type stages struct{ sha [4]string }
	byPath := map[string]*stages{}
	var order []string
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || len(f[2]) != 1 || f[2][0] < '1' || f[2][0] > '3' {
			continue
		}
		st := byPath[path]
		if st == nil {
			st = &stages{}
			byPath[path] = st
			order = append(order, path)
		}
		st.sha[f[2][0]-'0'] = f[1]
	}
	var conflicts []Conflict
	for _, path := range order {
		st := byPath[path]
		c := Conflict{Path: path, Kind: "content"}
		switch {
		case st.sha[2] == "":
			c.Kind = "delete/modify"
		case st.sha[3] == "":
			c.Kind = "modify/delete"
		case st.sha[1] == "":
			c.Kind = "add/add"
		}
		sides := make([][]byte, 4)
		for i := 1; i <= 3; i++ {
			if st.sha[i] == "" {
				continue
			}
			data, err := w.run(ctx, w.Dir, false, "cat-file", "blob", st.sha[i])
			if err != nil {
				return nil, fmt.Errorf("workspace: read %s: %w", path, err)
			}
			sides[i] = data
		}
		if bytes.IndexByte(sides[1], 0) >= 0 || bytes.IndexByte(sides[2], 0) >= 0 || bytes.IndexByte(sides[3], 0) >= 0 {
			c.Kind = "binary"
		} else if c.Kind == "content" || c.Kind == "add/add" {
			hunks, err := w.hunks(ctx, sides[2], sides[1], sides[3])
			if err != nil {
				return nil, err
			}
			c.Hunks = hunks
		} else {
			// One side deleted the file: the hunk is the whole surviving version against the ancestor.
			c.Hunks = []Hunk{{Line: 1, Ours: clip(string(sides[2])), Base: clip(string(sides[1])), Theirs: clip(string(sides[3]))}}
		}
		conflicts = append(conflicts, c)
	}
	return conflicts, nil
}

// hunks runs git merge-file on the three versions, with conflict markers longer than any marker-like
// run in the files (content cannot pose as a marker), and reads the conflicting regions back.
func (w *Workspace) hunks(ctx context.Context, ours, base, theirs []byte) ([]Hunk, error) {
	dir, err := w.Scratch("merge")
	if err != nil {
		return nil, err
	}
	names := []string{filepath.Join(dir, "ours"), filepath.Join(dir, "base"), filepath.Join(dir, "theirs")}
	for i, data := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(names[i], data, 0o600); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	size := max(7, longestMarkerRun(ours, base, theirs)+1)
	// merge-file exits with the number of conflicts: its output is what counts.
	out, _ := w.run(ctx, dir, false, "merge-file", "-p", "--diff3", fmt.Sprintf("--marker-size=%d", size),
		"-L", "ours", "-L", "base", "-L", "theirs", names[0], names[1], names[2])
	open, mid, sep, end := strings.Repeat("<", size)+" ours", strings.Repeat("|", size)+" base", strings.Repeat("=", size), strings.Repeat(">", size)+" theirs"
	var hunks []Hunk
	var cur *Hunk
	var part *strings.Builder
	var ob, bb, tb strings.Builder
	line, oursLine := 0, 0
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if l == "" {
			continue
		}
		line++
		bare := strings.TrimRight(l, "\n")
		switch {
		case cur == nil && bare == open:
			cur = &Hunk{Line: oursLine + 1}
			ob.Reset()
			bb.Reset()
			tb.Reset()
			part = &ob
		case cur != nil && bare == mid:
			part = &bb
		case cur != nil && bare == sep:
			part = &tb
		case cur != nil && bare == end:
			cur.Ours, cur.Base, cur.Theirs = clip(ob.String()), clip(bb.String()), clip(tb.String())
			oursLine += strings.Count(ob.String(), "\n")
			if len(hunks) < maxConflictHunks {
				hunks = append(hunks, *cur)
			}
			cur = nil
		case cur != nil:
			part.WriteString(l)
		default:
			oursLine++
		}
	}
	return hunks, nil
}

// longestMarkerRun is the longest run of a conflict-marker character at the start of a line in any of
// the texts.
func longestMarkerRun(texts ...[]byte) int {
	longest := 0
	for _, t := range texts {
		for _, l := range bytes.Split(t, []byte("\n")) {
			if len(l) == 0 || !strings.ContainsRune("<|=>", rune(l[0])) {
				continue
			}
			n := 0
			for n < len(l) && l[n] == l[0] {
				n++
			}
			longest = max(longest, n)
		}
	}
	return longest
}

func clip(s string) string {
	if len(s) <= maxHunkBytes {
		return s
	}
	return s[:maxHunkBytes] + "\n… (cut)\n"
}

// CommitMerge records the merge of the base (what MergeBase started, resolved and verified) as a merge
// commit with two parents, the last checkpoint and the base's head, and moves the branch to it. Any path
// still unmerged, or still holding the markers git wrote, is an error naming it.
func (w *Workspace) CommitMerge(ctx context.Context, s Sync, message string) (string, error) {
	if s.UpToDate() {
		return "", fmt.Errorf("workspace: commit merge: nothing was merged")
	}
	if _, err := w.Stage(ctx); err != nil {
		return "", err
	}
	if out, err := w.Git(ctx, "ls-files", "--unmerged"); err != nil || out != "" {
		return "", fmt.Errorf("workspace: commit merge: files are still unmerged: %s", out)
	}
	for _, c := range s.Conflicts {
		data, err := w.ReadFile(c.Path)
		if err != nil {
			continue // deleted: a resolution
		}
		if hasGitMarkers(data, s.Base) {
			return "", fmt.Errorf("workspace: commit merge: %s still holds conflict markers", c.Path)
		}
	}
	tree, err := w.Git(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("workspace: write tree: %w", err)
	}
	res, err := w.exec(ctx, w.Dir, false, strings.NewReader(message), "commit-tree", tree, "-p", w.checkpoint, "-p", s.Base)
	if err != nil {
		return "", fmt.Errorf("workspace: commit merge: %w", err)
	}
	sha := strings.TrimSpace(string(res))
	if !shaRE.MatchString(sha) {
		return "", fmt.Errorf("workspace: commit merge: unexpected output %q", sha)
	}
	ref := "refs/heads/" + w.Branch
	if _, err := w.Git(ctx, "update-ref", ref, sha); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if _, err := w.Git(ctx, "symbolic-ref", "HEAD", ref); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if err := w.abortMerge(ctx); err != nil {
		return "", err
	}
	w.checkpoint = sha
	return sha, nil
}

// hasGitMarkers reports the closing conflict marker `git merge` wrote, labelled with the merged commit:
// content cannot carry it by accident (the base's own files cannot name the commit that holds them), and
// lines that merely look like markers stay the file's business.
func hasGitMarkers(data []byte, base string) bool {
	marker := []byte(">>>>>>> " + base)
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Equal(bytes.TrimRight(l, "\r"), marker) {
			return true
		}
	}
	return false
}

// abortMerge forgets git's merge state (MERGE_HEAD and its companions) without touching the index or
// the work tree.
func (w *Workspace) abortMerge(ctx context.Context) error {
	for _, name := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"} {
		if err := os.Remove(filepath.Join(w.gitDir, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("workspace: clear %s: %w", name, err)
		}
	}
	return nil
}
