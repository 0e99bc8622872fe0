package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Checkpoints through GitHub's API. When a branch's rules require signed commits, a commit Akira makes
// and pushes is refused; a commit GitHub makes through its API (the Git database API, or GraphQL's
// createCommitOnBranch) is signed by GitHub. PushAPI turns the last checkpoint into such a commit: the
// same tree, message and parents, sent as the files it changes against its first parent; then the
// workspace takes GitHub's commit as its checkpoint, so the next task builds on what the branch holds.

// CommitAPI makes a commit on GitHub. jobs implements it with go-github (app/gh); runner never talks to
// GitHub itself.
type CommitAPI interface {
	// CreateCommit makes one commit on c.Branch and moves the branch to it, or creates the branch at it
	// when c.NewBranch. A branch that is no longer at c.Parents[0] is an error wrapping
	// ErrPushRejected, and the branch is left alone.
	CreateCommit(ctx context.Context, c APICommit) (sha string, err error)
}

// APICommit is a commit to make through the API.
type APICommit struct {
	Branch string
	// NewBranch: the branch does not exist yet on GitHub; it is created at the new commit.
	NewBranch bool
	// Parents are the commit's parents: the branch's head first (a merge of the base has two).
	Parents []string
	// BaseTree is the first parent's tree; Changes are the differences of the commit's tree from it.
	BaseTree string
	Changes  []FileChange
	// Tree is the tree the commit must have (git's ids are content hashes, so GitHub's tree of the same
	// files has the same id): an implementation that can see the tree before it moves the branch checks it.
	Tree    string
	Message string
}

// FileChange is one path of a commit's tree that differs from its first parent's.
type FileChange struct {
	Path string
	// Mode is git's: 100644 (file), 100755 (executable), 120000 (symlink; Content is its target) or
	// 160000 (a submodule; SHA is the commit).
	Mode string
	// OldMode is the path's mode in the first parent; "" for a new path.
	OldMode string
	Content []byte
	SHA     string
	Delete  bool
}

// ErrAPICommitMismatch is GitHub's commit not holding the tree of the checkpoint it was made from.
var ErrAPICommitMismatch = errors.New("the commit GitHub made does not hold the checkpoint's tree")

// APIChanges lists the changes of a commit against its first parent, as FileChange values with every
// changed file's content (binary files included). A rename is a deletion and an addition, as trees know
// no renames.
func (w *Workspace) APIChanges(ctx context.Context, commit string) (parents []string, baseTree, tree string, changes []FileChange, err error) {
	line, err := w.Git(ctx, "rev-list", "--parents", "-n", "1", commit)
	if err != nil {
		return nil, "", "", nil, fmt.Errorf("workspace: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return nil, "", "", nil, fmt.Errorf("workspace: %s has no parent to send it against", short(commit))
	}
	parents = f[1:]
	if baseTree, err = w.Git(ctx, "rev-parse", parents[0]+"^{tree}"); err != nil {
		return nil, "", "", nil, fmt.Errorf("workspace: %w", err)
	}
	if tree, err = w.Git(ctx, "rev-parse", commit+"^{tree}"); err != nil {
		return nil, "", "", nil, fmt.Errorf("workspace: %w", err)
	}
	out, err := w.run(ctx, w.Dir, false, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", parents[0], commit)
	if err != nil {
		return nil, "", "", nil, fmt.Errorf("workspace: diff %s: %w", short(commit), err)
	}
	// -z --raw: ":<old mode> <new mode> <old sha> <new sha> <status>\0<path>\0" per path.
	fields := strings.Split(string(out), "\x00")
	var blobs []string
	for i := 0; i+1 < len(fields); i += 2 {
		meta, path := strings.Fields(strings.TrimPrefix(fields[i], ":")), fields[i+1]
		if len(meta) < 5 || path == "" {
			continue
		}
		if meta[4] == "D" {
			changes = append(changes, FileChange{Path: path, Mode: meta[0], OldMode: meta[0], Delete: true})
			continue
		}
		fc := FileChange{Path: path, Mode: meta[1], SHA: meta[3]}
		if meta[4] != "A" {
			fc.OldMode = meta[0]
		}
		if fc.Mode != "160000" {
			blobs = append(blobs, fc.SHA)
		}
		changes = append(changes, fc)
	}
	contents, err := w.readBlobs(ctx, blobs)
	if err != nil {
		return nil, "", "", nil, err
	}
	for i := range changes {
		if c := &changes[i]; !c.Delete && c.Mode != "160000" {
			c.Content = contents[c.SHA]
		}
	}
	return parents, baseTree, tree, changes, nil
}

// readBlobs reads blobs in one git command (cat-file --batch), whatever their number.
func (w *Workspace) readBlobs(ctx context.Context, shas []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(shas) == 0 {
		return out, nil
	}
	res, err := w.exec(ctx, w.Dir, false, strings.NewReader(strings.Join(shas, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("workspace: read blobs: %w", err)
	}
	// "<sha> <type> <size>\n<content>\n" per object.
	for len(res) > 0 {
		header, rest, ok := bytes.Cut(res, []byte("\n"))
		f := strings.Fields(string(header))
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("workspace: read blobs: unexpected %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(rest) || f[1] != "blob" {
			return nil, fmt.Errorf("workspace: read blobs: unexpected %q", header)
		}
		out[f[0]] = rest[:size:size]
		res = rest[size+1:]
	}
	return out, nil
}

// PushAPI publishes the last checkpoint through api instead of git push: GitHub makes a commit of the
// same tree, message and parents (and signs it), the workspace fetches it and takes it as its checkpoint
// and as the branch's pushed head. The checkpoint must sit on what this workspace last pushed (or, for
// a branch GitHub does not have yet, on the base). It returns GitHub's commit.
func (w *Workspace) PushAPI(ctx context.Context, api CommitAPI) (string, error) {
	if w.opts.DryRun {
		w.pushed = w.checkpoint
		return w.checkpoint, nil
	}
	if w.checkpoint == w.pushed {
		return w.checkpoint, nil
	}
	parents, baseTree, tree, changes, err := w.APIChanges(ctx, w.checkpoint)
	if err != nil {
		return "", err
	}
	if w.pushed != "" && parents[0] != w.pushed {
		return "", fmt.Errorf("workspace: push %s through the API: the checkpoint %s does not follow the pushed head %s",
			w.Branch, short(w.checkpoint), short(w.pushed))
	}
	msg, err := w.Git(ctx, "cat-file", "commit", w.checkpoint)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	_, message, _ := strings.Cut(msg, "\n\n")
	sha, err := api.CreateCommit(ctx, APICommit{Branch: w.Branch, NewBranch: w.pushed == "", Parents: parents,
		BaseTree: baseTree, Changes: changes, Tree: tree, Message: message})
	if err != nil {
		return "", fmt.Errorf("workspace: push %s through the API: %w", w.Branch, err)
	}
	head, err := w.remoteHead(ctx)
	if err != nil {
		return "", err
	}
	if head != sha {
		return "", fmt.Errorf("workspace: push %s through the API: the branch is at %s, not at GitHub's new commit %s: %w",
			w.Branch, short(head), short(sha), ErrPushRejected)
	}
	got, err := w.Git(ctx, "rev-parse", sha+"^{tree}")
	if err != nil || got != tree {
		return "", fmt.Errorf("workspace: push %s through the API: %s: %w", w.Branch, short(sha), ErrAPICommitMismatch)
	}
	if _, err := w.Git(ctx, "update-ref", "refs/heads/"+w.Branch, sha); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	w.checkpoint, w.pushed = sha, sha
	return sha, nil
}
