// Package workspace is the ephemeral clone a run works in: it clones the repository into a fresh
// directory, checks out the run's branch, makes checkpoint commits and pushes them back.
//
// Every git command runs through runner/proc with an isolated configuration (no system or global
// git config, no terminal prompts, a fixed identity from the environment), so a run behaves the same
// on a laptop and in a worker. Credentials reach git only through GIT_CONFIG_COUNT/KEY/VALUE
// (http.extraheader) in the environment of the git commands that talk to the remote: never in a URL,
// .git/config, argv or the output the package returns.
//
// The work tree is handed to an agent that must be treated as hostile, so Akira's git never trusts
// it: the repository's git directory lives beside the work tree, not in it (the agent sees at most a
// read-only view of it, see GitDir); before every git command Akira puts back the configuration it
// wrote at clone time and removes hooks, attribute overrides and alternates; every command runs with
// hooks, fsmonitor, external diff and credential helpers switched off; pushes go to the URL Akira
// was given, never one read from the repository's configuration; and paths from user text are only
// ever passed after "--".
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/proc"
)

// DefaultAuthor is the identity of checkpoint commits when Options.Author is empty.
var DefaultAuthor = Identity{Name: "Akira", Email: "akira@users.noreply.github.com"}

// DefaultGitTimeout bounds one git command when Options.Timeout is zero.
const DefaultGitTimeout = 10 * time.Minute

// ErrPushRejected marks a push the remote refused because the branch moved under the run.
var ErrPushRejected = errors.New("push rejected: the remote branch moved")

// ErrRefused marks a push the remote declined for what it holds, whatever the ref: GitHub refuses a
// workflow file from an App without the workflows permission, and a secret its push protection finds.
var ErrRefused = errors.New("the remote refused what the push holds")

// Identity is a commit author and committer.
type Identity struct {
	Name  string
	Email string
}

// String formats the identity the way git does: "Name <email>".
func (i Identity) String() string { return fmt.Sprintf("%s <%s>", i.Name, i.Email) }

// ParseIdentity reads "Name <email>".
func ParseIdentity(s string) (Identity, error) {
	m := identityRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Identity{}, fmt.Errorf("workspace: identity %q: want \"Name <email>\"", s)
	}
	return Identity{Name: strings.TrimSpace(m[1]), Email: m[2]}, nil
}

var identityRE = regexp.MustCompile(`^([^<>]+)<([^<>\s]+)>$`)

// Options configures Clone.
type Options struct {
	// Remote is a clone URL or a local repository path.
	Remote string
	// DryRun keeps everything local: Push, PushParked and DropParked change nothing on the remote.
	DryRun bool
	// Base is the branch a new run branch starts from; empty means the remote's default branch (its HEAD).
	Base string
	// WorkDir is where the temporary workspace directory is created; empty means os.TempDir().
	WorkDir string
	// Auth, when set, is called before each command that talks to the remote (clone, fetch, push) and
	// returns the value of an http.extraheader, e.g. "Authorization: Basic ...". It is called every
	// time so that short-lived tokens can be minted fresh.
	Auth func(ctx context.Context) (string, error)
	// Author is the author and committer of the commits; empty means DefaultAuthor.
	Author Identity
	// PassEnv names variables passed to git besides proc.DefaultAllowEnv (e.g. SSH_AUTH_SOCK).
	PassEnv []string
	// Timeout bounds one git command; zero means DefaultGitTimeout.
	Timeout time.Duration
	// Cache, when set, makes the clone from a local mirror of a network remote (see Cache).
	Cache *Cache
}

// Workspace is one ephemeral clone. It is not safe for concurrent use.
type Workspace struct {
	// Dir is the root of the working tree.
	Dir string
	// Base is the branch new run branches start from.
	Base string
	// Branch is the checked-out run branch (set by Checkout).
	Branch string
	// Created reports that Checkout created Branch (it did not exist on the remote).
	Created bool

	opts       Options
	root       string // the temporary directory holding Dir, removed by Close
	gitDir     string // the repository's git directory, outside Dir
	config     []byte // gitDir/config as Akira wrote it, put back before every git command
	checkpoint string
	// pushed is the remote branch's head as this workspace last saw it ("" while it does not exist):
	// a push must find it there, so a branch someone deleted or moved is never overwritten or recreated.
	pushed string
	parked map[string]string // sanitized task id -> sha of refs/akira/parked/<branch>/<id>
	cached bool              // made from Options.Cache's mirror
	uses   int               // how many workspaces had this directory before (see spare)
	// atBase is the commit a kept tree was forced to (index and files exactly its tree, HEAD
	// detached on it) until Checkout: a branch starting there needs no pass over the tree.
	atBase string
	// excludes is a file of Akira's, outside the work tree, of paths no checkpoint takes (what the
	// repository's setup left untracked: node_modules, .venv); "" for none.
	excludes string
}

// Clone makes a fresh temporary directory and clones the remote into it, without checking out a
// branch yet (see Checkout). The caller must Close the workspace, also on error paths.
func Clone(ctx context.Context, opts Options) (*Workspace, error) {
	if opts.Remote == "" {
		return nil, errors.New("workspace: no repository given")
	}
	if opts.Author.Name == "" || opts.Author.Email == "" {
		opts.Author = DefaultAuthor
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultGitTimeout
	}
	root, err := os.MkdirTemp(opts.WorkDir, "akira-ws-")
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	w := &Workspace{Dir: filepath.Join(root, "repo"), opts: opts, root: root}
	gitDir := filepath.Join(root, "git")
	if opts.Cache != nil && Cacheable(opts.Remote) {
		if gitDir, err = opts.Cache.cloneFromCache(ctx, w, gitDir); err != nil {
			_ = w.Close()
			return nil, err
		}
		w.cached = true
	} else if _, err := w.remote(ctx, root, "clone", "--quiet", "--no-checkout", "--separate-git-dir="+gitDir, "--", opts.Remote, w.Dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("workspace: clone: %w", err)
	}
	// The work tree keeps no pointer to the git directory: commands name it through GIT_DIR. (A
	// kept tree has none already.)
	if err := os.Remove(filepath.Join(w.Dir, ".git")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = w.Close()
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if err := w.sealGitDir(gitDir); err != nil {
		_ = w.Close()
		return nil, err
	}
	w.Base = opts.Base
	if w.Base == "" {
		ref, err := w.Git(ctx, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
		if err != nil || !strings.HasPrefix(ref, "refs/remotes/origin/") {
			_ = w.Close()
			return nil, errors.New("workspace: the repository has no default branch (is it empty?); give a base branch")
		}
		w.Base = strings.TrimPrefix(ref, "refs/remotes/origin/")
	}
	if _, err := w.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+w.Base+"^{commit}"); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("workspace: base branch %q does not exist in the repository", w.Base)
	}
	return w, nil
}

// sealGitDir records the configuration the clone wrote as the one every later command runs with, and
// clears what a clone may carry that runs code (hooks from a template directory).
func (w *Workspace) sealGitDir(gitDir string) error {
	cfg, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		return fmt.Errorf("workspace: read the clone's git config: %w", err)
	}
	w.gitDir, w.config = gitDir, cfg
	return w.restoreGitDir()
}

// untrustedGitFiles are the parts of a git directory that make git run a program, read other object
// stores or change what is committed; none is something Akira writes.
var untrustedGitFiles = []string{"hooks", "info/attributes", "info/exclude", "objects/info/alternates", "objects/info/http-alternates", "commondir", "config.worktree", "worktrees"}

// restoreGitDir undoes whatever anything but Akira changed in the git directory's configuration.
// Inside the sandbox the agent cannot reach the git directory at all; this is what still holds when
// the operator turned the sandbox off.
func (w *Workspace) restoreGitDir() error {
	if w.gitDir == "" {
		return nil
	}
	path := filepath.Join(w.gitDir, "config")
	if cur, err := os.ReadFile(path); err != nil || !bytes.Equal(cur, w.config) {
		// Written to a new file and renamed: a symlink planted at config is replaced, not followed.
		tmp := path + ".akira"
		_ = os.Remove(tmp)
		if err := os.WriteFile(tmp, w.config, 0o600); err != nil {
			return fmt.Errorf("workspace: restore git config: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("workspace: restore git config: %w", err)
		}
	}
	for _, name := range untrustedGitFiles {
		if err := os.RemoveAll(filepath.Join(w.gitDir, filepath.FromSlash(name))); err != nil {
			return fmt.Errorf("workspace: clear %s: %w", name, err)
		}
	}
	return nil
}

// Scratch returns a directory of the workspace outside the work tree (created on first use, removed
// by Close), for what lasts from one command of the run to the next but is never committed: the
// sandbox's HOME directories.
func (w *Workspace) Scratch(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "repo" || name == "git" || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("workspace: %q is not a scratch directory name", name)
	}
	dir := filepath.Join(w.root, "scratch-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, nil
}

// ReadFile reads a file of the work tree by its repository path. A path that leaves the work tree,
// itself or through a symlink anywhere along it, is an error naming the path: the work tree is the
// agent's and the repository's, and a symlink to a file of the host must not become a plan.
func (w *Workspace) ReadFile(path string) ([]byte, error) {
	root, err := os.OpenRoot(w.Dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.FromSlash(path))
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", path, escapeError(err))
	}
	return data, nil
}

// ReadHead reads at most n bytes of a file of the work tree, never through a symlink that leaves
// it; more says the file is longer.
func (w *Workspace) ReadHead(path string, n int) (data []byte, more bool, err error) {
	root, err := os.OpenRoot(w.Dir)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(path))
	if err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", path, escapeError(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("workspace: read %s: not a regular file", path)
	}
	data, err = io.ReadAll(io.LimitReader(f, int64(n)+1))
	if err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", path, err)
	}
	if len(data) > n {
		return data[:n], true, nil
	}
	return data, false, nil
}

// Glob lists the files of the work tree matching pattern (path.Match syntax), inside the work tree
// only.
func (w *Workspace) Glob(pattern string) ([]string, error) {
	root, err := os.OpenRoot(w.Dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	return fs.Glob(root.FS(), pattern)
}

// WriteFile replaces a file of the work tree, never through a symlink: the file itself must be a
// regular file inside the work tree.
func (w *Workspace) WriteFile(path string, data []byte) error {
	root, err := os.OpenRoot(w.Dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	name := filepath.FromSlash(path)
	fi, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, escapeError(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("workspace: write %s: not a regular file (a symlink or special file is never written through)", path)
	}
	if err := root.WriteFile(name, data, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, escapeError(err))
	}
	return nil
}

// escapeError says in words what os.Root's refusal means.
func escapeError(err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("it leads outside the repository (a symlink?): %w", err)
	}
	return err
}

// GitDir is the repository's git directory. It is outside Dir; a sandbox may show it to the agent
// read-only, never writable.
func (w *Workspace) GitDir() string { return w.gitDir }

// Close removes the workspace directory, or hands its checked-out tree to the cache for the next
// workspace of the same remote (Cache.KeepWorkTrees), its scratch directories removed. It is safe to
// call more than once.
func (w *Workspace) Close() error {
	if w == nil || w.root == "" {
		return nil
	}
	if w.cached && w.checkpoint != "" && w.opts.Cache != nil && w.opts.Cache.KeepWorkTrees > 0 && w.keepable() {
		if w.opts.Cache.putSpare(w.opts.Remote, spare{root: w.root, gitDir: w.gitDir, config: w.config, uses: w.uses}) {
			w.root = ""
			return nil
		}
	}
	if err := removeAll(w.root); err != nil {
		return fmt.Errorf("workspace: remove: %w", err)
	}
	w.root = ""
	return nil
}

// keepable empties the workspace's directory of all but its work tree and git directory (the
// scratch HOMEs, the setup's exclude file) and reports whether that left them alone.
func (w *Workspace) keepable() bool {
	entries, err := os.ReadDir(w.root)
	if err != nil || w.gitDir != filepath.Join(w.root, "git") || w.Dir != filepath.Join(w.root, "repo") {
		return false
	}
	for _, e := range entries {
		if e.Name() != "repo" && e.Name() != "git" {
			if removeAll(filepath.Join(w.root, e.Name())) != nil {
				return false
			}
		}
	}
	return true
}

// removeAll is os.RemoveAll that also removes read-only directories a tool left (Go's module cache
// does this): it makes everything writable and tries again.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err != nil {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		err = os.RemoveAll(dir)
	}
	return err
}

// ReadBase returns a file as it is on the base branch, and false when it does not exist there.
func (w *Workspace) ReadBase(ctx context.Context, path string) ([]byte, bool, error) {
	return w.readAt(ctx, "refs/remotes/origin/"+w.Base, path)
}

func (w *Workspace) readAt(ctx context.Context, rev, path string) ([]byte, bool, error) {
	spec := rev + ":" + filepath.ToSlash(path)
	if _, err := w.Git(ctx, "cat-file", "-e", spec); err != nil {
		return nil, false, nil
	}
	// cat-file -p prints nothing on stderr when the object exists, so the combined output is the blob.
	res, err := w.run(ctx, w.Dir, false, "cat-file", "blob", spec)
	if err != nil {
		return nil, false, err
	}
	return res, true, nil
}

// Checkout checks out branch: the remote's branch when it exists (continuing it), otherwise a new
// branch from the head of the base branch. It also fetches the task work parked on this branch by
// earlier runs (see PushParked).
func (w *Workspace) Checkout(ctx context.Context, branch string) error {
	if err := checkRefName(branch); err != nil {
		return err
	}
	w.Branch = branch
	start := "refs/remotes/origin/" + branch
	startSHA, err := w.Git(ctx, "rev-parse", "--verify", "--quiet", start+"^{commit}")
	if err != nil {
		start = "refs/remotes/origin/" + w.Base
		startSHA, _ = w.Git(ctx, "rev-parse", "--verify", "--quiet", start+"^{commit}")
		w.Created = true
	}
	atBase := w.atBase
	w.atBase = ""
	if atBase != "" && startSHA == atBase {
		// A kept tree already holds this commit's tree: what `checkout -B` would do, without
		// reading the 100,000 files of a large repository once more.
		if _, err := w.Git(ctx, "update-ref", "refs/heads/"+branch, startSHA); err != nil {
			return fmt.Errorf("workspace: checkout %s: %w", branch, err)
		}
		if _, err := w.Git(ctx, "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
			return fmt.Errorf("workspace: checkout %s: %w", branch, err)
		}
	} else if _, err := w.Git(ctx, "checkout", "--quiet", "--no-track", "-B", branch, start); err != nil {
		err = fmt.Errorf("workspace: checkout %s: %w", branch, err)
		if w.cached {
			// A checkout reads every blob of the tree: the first command to find a missing one.
			err = w.opts.Cache.checkAfterFailure(ctx, w, err)
		}
		return err
	}
	head, err := w.Git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	w.checkpoint = head
	if !w.Created {
		w.pushed = head
	}
	prefix := w.parkedPrefix()
	// A workspace made from the cache has the parked work already (cloneInto copied it).
	if !w.cached {
		if _, err := w.remote(ctx, w.Dir, "fetch", "--quiet", "--no-tags", "--", w.opts.Remote, "+"+prefix+"*:"+prefix+"*"); err != nil {
			return fmt.Errorf("workspace: fetch parked work: %w", err)
		}
	}
	out, err := w.Git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	w.parked = map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if ok {
			w.parked[strings.TrimPrefix(ref, prefix)] = sha
		}
	}
	return nil
}

// Head is the last checkpoint: the commit the branch points to.
func (w *Workspace) Head() string { return w.checkpoint }

// Trailers returns, for each commit on the branch that is not on the base branch (oldest first), the
// values of the given trailer key.
func (w *Workspace) Trailers(ctx context.Context, key string) ([]Commit, error) {
	out, err := w.Git(ctx, "log", "--reverse", "--format=%H%x1f%(trailers:key="+key+",valueonly,separator=%x1f)%x1e",
		"refs/remotes/origin/"+w.Base+"..HEAD")
	if err != nil {
		return nil, fmt.Errorf("workspace: read trailers: %w", err)
	}
	var commits []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		fields := strings.Split(strings.TrimSpace(rec), "\x1f")
		if len(fields) < 2 || fields[0] == "" {
			continue
		}
		c := Commit{SHA: fields[0]}
		for _, v := range fields[1:] {
			if v = strings.TrimSpace(v); v != "" {
				c.Values = append(c.Values, v)
			}
		}
		if len(c.Values) > 0 {
			commits = append(commits, c)
		}
	}
	return commits, nil
}

// Commit is a commit and the trailer values Trailers found on it.
type Commit struct {
	SHA    string
	Values []string
}

// Stage stages everything in the working tree and returns the paths that differ from the last
// checkpoint (added, modified or deleted), whether or not the agent committed them itself.
func (w *Workspace) Stage(ctx context.Context) ([]string, error) {
	// Nested repositories are rare: they are looked for only when the staged diff shows one (a new
	// gitlink) or `git add` refuses one (a repository without a commit), which saves a command per
	// checkpoint.
	if _, err := w.Git(ctx, "add", "--all"); err != nil {
		if ferr := w.flattenNestedRepos(ctx); ferr != nil {
			return nil, ferr
		}
		if _, err := w.Git(ctx, "add", "--all"); err != nil {
			return nil, fmt.Errorf("workspace: stage: %w", err)
		}
	}
	paths, gitlinks, err := w.staged(ctx)
	if err != nil || len(gitlinks) == 0 {
		return paths, err
	}
	if _, err := w.Git(ctx, append([]string{"rm", "--quiet", "--cached", "--force", "--"}, gitlinks...)...); err != nil {
		return nil, fmt.Errorf("workspace: stage: %w", err)
	}
	if err := w.flattenNestedRepos(ctx); err != nil {
		return nil, err
	}
	if _, err := w.Git(ctx, "add", "--all"); err != nil {
		return nil, fmt.Errorf("workspace: stage: %w", err)
	}
	paths, _, err = w.staged(ctx)
	return paths, err
}

// staged lists the paths the index changes against the last checkpoint, and the new gitlinks among
// them (nested repositories the agent made, which git added as pointers).
func (w *Workspace) staged(ctx context.Context) (paths, gitlinks []string, err error) {
	out, err := w.run(ctx, w.Dir, false, "diff", "--cached", "--raw", "--no-renames", "-z", w.checkpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: diff: %w", err)
	}
	// -z --raw: ":<old mode> <new mode> <old sha> <new sha> <status>\x00<path>\x00" per path.
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta, path := strings.Fields(strings.TrimPrefix(fields[i], ":")), fields[i+1]
		if len(meta) < 5 || path == "" {
			continue
		}
		paths = append(paths, path)
		if meta[1] == "160000" && meta[4] == "A" {
			gitlinks = append(gitlinks, path)
		}
	}
	return paths, gitlinks, nil
}

// flattenNestedRepos removes the git metadata of repositories the agent created inside the work tree,
// so that their files are committed as files: a nested repository would otherwise be recorded as a
// gitlink, a pointer to commits nobody can fetch instead of the work.
func (w *Workspace) flattenNestedRepos(ctx context.Context) error {
	out, err := w.run(ctx, w.Dir, false, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return fmt.Errorf("workspace: list new files: %w", err)
	}
	for _, p := range strings.Split(string(out), "\x00") {
		// git lists a nested repository as its directory, with a trailing slash, and does not descend.
		if !strings.HasSuffix(p, "/") {
			continue
		}
		meta := filepath.Join(w.Dir, filepath.FromSlash(p), ".git")
		if _, err := os.Lstat(meta); err == nil {
			if err := os.RemoveAll(meta); err != nil {
				return fmt.Errorf("workspace: remove nested git metadata %s: %w", p+".git", err)
			}
		}
	}
	return nil
}

// Commit records what Stage staged as one commit on top of the last checkpoint and moves the branch
// to it. Commits the agent made on its own are folded in: only the tree counts. The commit is made
// even when nothing changed. It returns the new checkpoint.
func (w *Workspace) Commit(ctx context.Context, message string) (string, error) {
	ref := "refs/heads/" + w.Branch
	if sha, ok, err := w.commitOnHead(ctx, ref, message); ok || err != nil {
		return sha, err
	}
	sha, err := w.commitTree(ctx, message)
	if err != nil {
		return "", err
	}
	if _, err := w.Git(ctx, "update-ref", ref, sha); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	// The agent may have switched branches or detached HEAD; point HEAD back at the run branch. The
	// index already matches the new commit's tree, so the working tree stays as it is.
	if head, _ := os.ReadFile(filepath.Join(w.gitDir, "HEAD")); string(bytes.TrimSpace(head)) != "ref: "+ref {
		if _, err := w.Git(ctx, "symbolic-ref", "HEAD", ref); err != nil {
			return "", fmt.Errorf("workspace: %w", err)
		}
	}
	w.checkpoint = sha
	return sha, nil
}

// commitOnHead is Commit in one git command, for the usual case where the agent left HEAD on the run
// branch at the last checkpoint: then `git commit` of the staged index is the same commit as
// write-tree, commit-tree and update-ref, at a third of the process starts (a checkpoint's cost is
// mostly process starts). ok is false when the case does not hold, and nothing was done.
func (w *Workspace) commitOnHead(ctx context.Context, ref, message string) (sha string, ok bool, err error) {
	refFile := filepath.Join(w.gitDir, filepath.FromSlash(ref))
	head, _ := os.ReadFile(filepath.Join(w.gitDir, "HEAD"))
	cur, _ := os.ReadFile(refFile)
	if string(bytes.TrimSpace(head)) != "ref: "+ref || string(bytes.TrimSpace(cur)) != w.checkpoint || w.checkpoint == "" {
		return "", false, nil
	}
	if _, err := w.exec(ctx, w.Dir, false, strings.NewReader(message), "commit", "--quiet", "--no-verify", "--allow-empty",
		"--cleanup=verbatim", "--no-edit", "--file=-"); err != nil {
		return "", true, fmt.Errorf("workspace: commit: %w", err)
	}
	out, err := os.ReadFile(refFile)
	sha = string(bytes.TrimSpace(out))
	if err != nil || !shaRE.MatchString(sha) {
		return "", true, fmt.Errorf("workspace: commit: the branch %s does not name the new commit", ref)
	}
	w.checkpoint = sha
	return sha, true, nil
}

func (w *Workspace) commitTree(ctx context.Context, message string) (string, error) {
	tree, err := w.Git(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("workspace: write tree: %w", err)
	}
	res, err := w.exec(ctx, w.Dir, false, strings.NewReader(message), "commit-tree", tree, "-p", w.checkpoint)
	if err != nil {
		return "", fmt.Errorf("workspace: commit: %w", err)
	}
	sha := strings.TrimSpace(string(res))
	if !shaRE.MatchString(sha) {
		return "", fmt.Errorf("workspace: commit: unexpected output %q", sha)
	}
	return sha, nil
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40,64}$`)

// Reset throws away everything since the last checkpoint: changes, new files (ignored files such as
// dependency caches are kept, they are not part of any commit), commits and branch switches.
func (w *Workspace) Reset(ctx context.Context) error {
	// A cherry-pick or merge the agent left half-done would make checkout refuse.
	_, _ = w.Git(ctx, "reset", "--quiet", "--merge")
	if _, err := w.Git(ctx, "checkout", "--quiet", "--force", "--no-track", "-B", w.Branch, w.checkpoint); err != nil {
		return fmt.Errorf("workspace: reset: %w", err)
	}
	if _, err := w.Git(ctx, "clean", "-ffdq"); err != nil {
		return fmt.Errorf("workspace: clean: %w", err)
	}
	return nil
}

// Push publishes the branch to the remote with an explicit refspec, leased on the head this workspace
// last saw there: when someone else moved the remote branch meanwhile, or deleted it, the error wraps
// ErrPushRejected (a deleted branch is not recreated behind the back of whoever deleted it).
func (w *Workspace) Push(ctx context.Context) error {
	ref := "refs/heads/" + w.Branch
	// The checkpoint, not whatever the branch or HEAD says now: an agent's own commits and ref
	// changes are never what is published.
	head := w.checkpoint
	if w.opts.DryRun {
		w.pushed = head
		return nil
	}
	// Only descendants of the leased head are ever pushed, so the lease is what keeps this a
	// fast-forward; an empty expectation means the branch must not exist yet.
	out, err := w.remote(ctx, w.Dir, "push", "--porcelain", "--force-with-lease="+ref+":"+w.pushed, "--", w.opts.Remote, head+":"+ref)
	if err != nil {
		if rejected(out) {
			return fmt.Errorf("workspace: push %s: %w (someone else pushed to it or deleted it); run again to continue from the new head",
				w.Branch, ErrPushRejected)
		}
		return fmt.Errorf("workspace: push %s: %w", w.Branch, err)
	}
	w.pushed = head
	return nil
}

// maxDiff bounds the diff Diff returns.
const maxDiff = 1 << 20

// Diff is what the branch changes over its base: a summary of the files, then the patch (cut at 1 MB).
func (w *Workspace) Diff(ctx context.Context) (string, error) {
	base := "refs/remotes/origin/" + w.Base
	stat, err := w.Git(ctx, "diff", "--no-ext-diff", "--no-textconv", "--stat", base, "HEAD", "--")
	if err != nil {
		return "", fmt.Errorf("workspace: diff: %w", err)
	}
	patch, err := w.Git(ctx, "diff", "--no-ext-diff", "--no-textconv", base, "HEAD", "--")
	if err != nil {
		return "", fmt.Errorf("workspace: diff: %w", err)
	}
	if len(patch) > maxDiff {
		patch = patch[:maxDiff] + "\n[diff cut at 1 MB]"
	}
	return stat + "\n\n" + patch, nil
}

// StagedDiff is what the index changes against the last checkpoint (call Stage first): a summary
// of the files, then the patch, cut at 1 MB.
func (w *Workspace) StagedDiff(ctx context.Context) (string, error) {
	args := []string{"diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color"}
	stat, err := w.Git(ctx, append(args, "--stat", w.checkpoint, "--")...)
	if err != nil {
		return "", fmt.Errorf("workspace: diff: %w", err)
	}
	patch, err := w.Git(ctx, append(args, w.checkpoint, "--")...)
	if err != nil {
		return "", fmt.Errorf("workspace: diff: %w", err)
	}
	if len(patch) > maxDiff {
		patch = patch[:maxDiff] + "\n[diff cut at 1 MB]"
	}
	return stat + "\n\n" + patch, nil
}

func rejected(out string) bool {
	// "cannot lock ref": two pushes raced on the remote and this one lost (parallel tasks).
	for _, s := range []string{"[rejected]", "non-fast-forward", "fetch first", "stale info", "cannot lock ref"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// refusedByRemote says git's push output reports a ref the remote declined (a hook, a rule), not a
// ref that moved or a connection that failed.
func refusedByRemote(out string) bool { return strings.Contains(out, "[remote rejected]") }

// parkedPrefix is where failed task work waits for a human decision, namespaced by branch so that
// runs on different branches never see each other's parked work.
func (w *Workspace) parkedPrefix() string { return parkedPrefix(w.Branch) }

func parkedPrefix(branch string) string { return "refs/akira/parked/" + branch + "/" }

// ParkedRef is the remote ref holding a task's parked work.
func (w *Workspace) ParkedRef(taskID string) string { return ParkedRefOf(w.Branch, taskID) }

// ParkedRefOf is the remote ref that holds the parked work of a task of branch, for those who look
// for it without a workspace (a run rebuilt from its branch).
func ParkedRefOf(branch, taskID string) string { return parkedPrefix(branch) + refSafe(taskID) }

// Parked returns the parked work of a task (found on the remote when the branch was checked out, or
// parked by this run), or "".
func (w *Workspace) Parked(taskID string) string { return w.parked[refSafe(taskID)] }

// PushParked commits the current working tree (the failed work) on top of the last checkpoint
// without moving the branch, and force-pushes it to the task's parked ref so that a later run can
// approve it. It returns the parked commit; when the remote refuses to hold it (ErrRefused), the
// commit too, which then lives only in the workspace.
func (w *Workspace) PushParked(ctx context.Context, taskID, message string) (string, error) {
	if _, err := w.Stage(ctx); err != nil {
		return "", err
	}
	sha, err := w.commitTree(ctx, message)
	if err != nil {
		return "", err
	}
	ref := w.ParkedRef(taskID)
	if w.opts.DryRun {
		w.parked[refSafe(taskID)] = sha
		return sha, nil
	}
	if out, err := w.remote(ctx, w.Dir, "push", "--quiet", "--", w.opts.Remote, "+"+sha+":"+ref); err != nil {
		if refusedByRemote(out + err.Error()) {
			return sha, fmt.Errorf("workspace: push parked work: %w: %w", ErrRefused, err)
		}
		return "", fmt.Errorf("workspace: push parked work: %w", err)
	}
	w.parked[refSafe(taskID)] = sha
	return sha, nil
}

// DropParked deletes a task's parked work on the remote, once the task is decided.
func (w *Workspace) DropParked(ctx context.Context, taskID string) error {
	if w.parked[refSafe(taskID)] == "" {
		return nil
	}
	if w.opts.DryRun {
		delete(w.parked, refSafe(taskID))
		return nil
	}
	if _, err := w.remote(ctx, w.Dir, "push", "--quiet", "--", w.opts.Remote, ":"+w.ParkedRef(taskID)); err != nil {
		return fmt.Errorf("workspace: delete parked work: %w", err)
	}
	delete(w.parked, refSafe(taskID))
	return nil
}

// ApplyParked applies the changes of a task's parked work to the working tree (a three-way merge,
// because other checkpoints may have landed since it was parked) without committing.
func (w *Workspace) ApplyParked(ctx context.Context, taskID string) error {
	sha := w.Parked(taskID)
	if sha == "" {
		return fmt.Errorf("workspace: task %s has no parked work on branch %s", taskID, w.Branch)
	}
	if _, err := w.Git(ctx, "cherry-pick", "--no-commit", sha); err != nil {
		_ = w.Reset(ctx)
		return fmt.Errorf("workspace: the parked work of task %s no longer applies: %w", taskID, err)
	}
	return nil
}

// refSafe maps a task id onto a valid ref name component.
func refSafe(id string) string {
	s := refUnsafeRE.ReplaceAllString(id, "-")
	s = strings.ReplaceAll(s, "..", "-")
	s = strings.Trim(s, ".-")
	if s == "" || strings.HasSuffix(s, ".lock") {
		s = "task-" + s
	}
	return s
}

var refUnsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func checkRefName(branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, " ~^:?*[\\\x7f") ||
		strings.Contains(branch, "..") || strings.Contains(branch, "@{") || strings.HasSuffix(branch, ".lock") ||
		strings.HasSuffix(branch, "/") || strings.HasPrefix(branch, "/") || strings.Contains(branch, "//") {
		return fmt.Errorf("workspace: %q is not a valid branch name", branch)
	}
	return nil
}

// Git runs a local git command in the workspace (never with credentials) and returns its trimmed
// output. A non-zero exit is an error carrying the output.
func (w *Workspace) Git(ctx context.Context, args ...string) (string, error) {
	out, err := w.run(ctx, w.Dir, false, args...)
	return strings.TrimSpace(string(out)), err
}

// remote runs a git command that talks to the remote, with credentials when Options.Auth is set.
func (w *Workspace) remote(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := w.run(ctx, dir, true, args...)
	return string(out), err
}

func (w *Workspace) run(ctx context.Context, dir string, auth bool, args ...string) ([]byte, error) {
	return w.exec(ctx, dir, auth, nil, args...)
}

// hardening is the configuration every git command of Akira's runs with, whatever the repository
// says: nothing the work tree or a repository can name is executed.
var hardening = [][2]string{
	{"core.hooksPath", os.DevNull},
	{"core.fsmonitor", "false"},
	{"core.untrackedCache", "false"},
	{"core.sshCommand", "ssh"},
	{"core.askPass", ""},
	{"credential.helper", ""},
	{"diff.external", ""},
	{"protocol.allow", "never"},
	{"protocol.https.allow", "always"},
	{"protocol.http.allow", "always"},
	{"protocol.ssh.allow", "always"},
	{"protocol.file.allow", "always"},
	{"submodule.recurse", "false"},
	{"uploadpack.packObjectsHook", ""},
	// A workspace lives for one run: no housekeeping pauses in the middle of one (a commit may
	// otherwise start `gc --auto` after enough tasks).
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// HardenedGitEnv is the environment for a git command Akira runs outside a Workspace on a tree the
// agent wrote (the built-in agent listing files): no system or global configuration, and the
// hardening settings through GIT_CONFIG_*, so nothing a repository's configuration names (an
// fsmonitor, a hook) is executed by Akira's own process.
func HardenedGitEnv() []string {
	env := []string{
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"LC_ALL=C",
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(hardening)),
	}
	for i, kv := range hardening {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

func (w *Workspace) exec(ctx context.Context, dir string, auth bool, stdin *strings.Reader, args ...string) ([]byte, error) {
	return w.execEnv(ctx, dir, auth, stdin, nil, args...)
}

// execEnv is exec with env (KEY=VALUE) added to git's environment.
func (w *Workspace) execEnv(ctx context.Context, dir string, auth bool, stdin *strings.Reader, env []string, args ...string) ([]byte, error) {
	if err := w.restoreGitDir(); err != nil {
		return nil, err
	}
	extra := []string{
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GCM_INTERACTIVE=never",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=" + w.opts.Author.Name,
		"GIT_AUTHOR_EMAIL=" + w.opts.Author.Email,
		"GIT_COMMITTER_NAME=" + w.opts.Author.Name,
		"GIT_COMMITTER_EMAIL=" + w.opts.Author.Email,
	}
	if w.gitDir != "" {
		extra = append(extra, "GIT_DIR="+w.gitDir, "GIT_WORK_TREE="+w.Dir)
	}
	extra = append(extra, env...)
	settings := hardening
	if w.excludes != "" {
		settings = append(settings[:len(settings):len(settings)], [2]string{"core.excludesFile", w.excludes})
	}
	secret := ""
	if auth && w.opts.Auth != nil {
		header, err := w.opts.Auth(ctx)
		if err != nil {
			return nil, fmt.Errorf("git auth: %w", err)
		}
		if header != "" {
			secret = header
			settings = append(settings[:len(settings):len(settings)], [2]string{"http.extraheader", header})
		}
	}
	extra = append(extra, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(settings)))
	for i, kv := range settings {
		extra = append(extra, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	allow := append(append([]string{}, proc.DefaultAllowEnv...), w.opts.PassEnv...)
	c := proc.Cmd{
		Args:    append([]string{"git"}, args...),
		Dir:     dir,
		Env:     proc.ScrubEnv(os.Environ(), allow, extra...),
		Timeout: w.opts.Timeout,
	}
	if stdin != nil {
		c.Stdin = stdin
	}
	res, err := proc.Run(ctx, c)
	out := res.Output
	if secret != "" {
		// Git does not print the header, but a misbehaving credential setup must not leak it either.
		out = bytes.ReplaceAll(out, []byte(secret), []byte("[redacted]"))
	}
	if err != nil {
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	if res.ExitCode != 0 {
		return out, fmt.Errorf("git %s: exit status %d: %s", args[0], res.ExitCode, lastLines(string(out), 5))
	}
	return out, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
