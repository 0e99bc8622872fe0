package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cache keeps one bare mirror per remote repository, so that a workspace is made from local objects
// and only what changed upstream crosses the network.
//
// How a workspace is made from its mirror, and why: under the mirror's lock, the mirror is fetched
// (incrementally, with credentials only in git's environment as for every remote command), then the
// workspace is cloned from the mirror's directory with git's local clone, which hard-links the
// object files instead of copying them. The alternatives were rejected:
//   - `clone --reference`/`--shared` (alternates) make the workspace read objects that live only in
//     the mirror: a `gc` or `fetch --prune` in the mirror could delete an object a live workspace
//     still needs, and the workspace's hardening deletes objects/info/alternates before every command
//     (an alternates file is how a hostile tree would make git read foreign objects).
//   - `git worktree add` would make every workspace write its refs, index and new objects into the
//     mirror itself.
//
// With hard links each workspace owns its object files: whatever the mirror's maintenance removes
// later, the workspace's links keep the data; git never writes into an existing object or pack file
// (it writes new files and renames them), so nothing a workspace does reaches the mirror; and the
// workspace's new objects are files of its own. The mirror lives outside every sandbox, so an agent
// can neither see nor write it. When the cache and the workspaces are on different file systems git
// copies instead of linking: slower, never wrong.
//
// A failure to fetch into or clone from a mirror, or a base tree the workspace cannot read, runs
// `git fsck --connectivity-only` on the mirror; a mirror that fails it is dropped and rebuilt from
// the remote, never used. A mirror keeps no remote URL in its configuration (every fetch names the
// URL), so no credential a URL carries is ever written to disk.
type Cache struct {
	// Dir holds the mirrors (<key>.git), their locks (<key>.lock, whose mtime is the last use).
	Dir string
	// MaxBytes caps the mirrors' total size; least recently used mirrors not in use are removed
	// when a job finds the cache over it. Zero is no cap.
	MaxBytes int64
	// Logger receives what the cache did (rebuilt, evicted); nil discards it.
	Logger *slog.Logger
	// KeepWorkTrees is how many checked-out work trees of closed workspaces the cache keeps per
	// remote, in this process, for the next workspace of the same remote (see spare); zero keeps
	// none. A long-lived worker sets it: on a repository of 100,000 files, writing the tree is most
	// of a cold workspace's time, and a kept tree only has to change what changed upstream. A
	// one-run process (akira run) leaves it zero, or the tree would outlive it on disk.
	KeepWorkTrees int

	mu     sync.Mutex
	spares map[string][]spare
}

// spare is a closed workspace's directory kept for the next workspace of its remote: the work tree
// and git directory as the last run left them (its scratch directories and files removed), and the
// git configuration Akira sealed, which is written back before the tree is used again.
//
// Why a kept tree can be trusted: inside the sandbox the agent never writes the git directory, so
// the index's stat data is Akira's own, and git compares a file's ctime and inode as well as its
// size and mtime, which nothing in the sandbox can set back; so `checkout --force` rewrites every
// file the last run changed, and `clean -ffdx` removes every file it added, ignored ones included.
// Without a sandbox the agent already runs as the worker's user, cache included.
type spare struct {
	root, gitDir string
	config       []byte
	uses         int
}

// maxSpareUses bounds how often one kept tree is reused: its git directory gathers every run's
// objects (gc is off inside workspaces), so now and then a fresh clone starts over.
const maxSpareUses = 50

// putSpare keeps s for the next workspace of remote, and reports whether it did.
func (c *Cache) putSpare(remote string, s spare) bool {
	if c.KeepWorkTrees <= 0 || s.uses >= maxSpareUses {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(remote)
	if len(c.spares[k]) >= c.KeepWorkTrees {
		return false
	}
	if c.spares == nil {
		c.spares = map[string][]spare{}
	}
	c.spares[k] = append(c.spares[k], s)
	return true
}

// takeSpare returns a kept tree of remote, if there is one.
func (c *Cache) takeSpare(remote string) (spare, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(remote)
	list := c.spares[k]
	if len(list) == 0 {
		return spare{}, false
	}
	s := list[len(list)-1]
	c.spares[k] = list[:len(list)-1]
	return s, true
}

// DropWorkTrees removes every kept work tree (when the worker stops).
func (c *Cache) DropWorkTrees() {
	c.mu.Lock()
	spares := c.spares
	c.spares = nil
	c.mu.Unlock()
	for _, list := range spares {
		for _, s := range list {
			_ = removeAll(s.root)
		}
	}
}

// NewCache returns the cache in dir, creating the directory.
func NewCache(dir string, maxBytes int64) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("workspace: cache: no directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: cache: %w", err)
	}
	return &Cache{Dir: dir, MaxBytes: maxBytes}, nil
}

func (c *Cache) log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Cacheable reports whether remote is worth a mirror: a network remote. A local path or file://
// URL is cloned directly, which already hard-links.
func Cacheable(remote string) bool {
	if strings.HasPrefix(remote, "file://") {
		return false
	}
	if strings.Contains(remote, "://") {
		return true
	}
	// scp-like syntax, user@host:path, but not a local path that merely has a colon later on.
	host, _, ok := strings.Cut(remote, ":")
	return ok && host != "" && !strings.ContainsAny(host, `/\`)
}

var unsafeKeyChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// key names a remote's mirror: readable (the repository's last two path elements) and unique (a
// hash of the whole URL, so that two hosts' owner/repo never share a mirror).
func key(remote string) string {
	sum := sha256.Sum256([]byte(remote))
	tail := strings.TrimSuffix(strings.TrimRight(remote, "/"), ".git")
	parts := strings.FieldsFunc(tail, func(r rune) bool { return r == '/' || r == ':' })
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	name := unsafeKeyChars.ReplaceAllString(strings.Join(parts, "-"), "_")
	if len(name) > 60 {
		name = name[:60]
	}
	return name + "-" + hex.EncodeToString(sum[:8])
}

// mirrorRefspecs are what a mirror keeps: branches, tags and Akira's parked work; not GitHub's
// refs/pull/*, which can outnumber the branches a thousandfold.
var mirrorRefspecs = []string{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+refs/akira/*:refs/akira/*"}

// ErrCorruptMirror marks a workspace that failed because its mirror was corrupt; the mirror has
// been dropped and the next workspace rebuilds it.
var ErrCorruptMirror = errors.New("the repository cache was corrupt")

// mirror is one remote's mirror, locked for the caller.
type mirror struct {
	c    *Cache
	dir  string
	lock *os.File
}

// open locks the remote's mirror (waiting for another job's fetch or clone) and marks it used.
func (c *Cache) open(ctx context.Context, remote string) (*mirror, error) {
	k := key(remote)
	f, err := os.OpenFile(filepath.Join(c.Dir, k+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace: cache lock: %w", err)
	}
	if err := flockWait(ctx, f); err != nil {
		f.Close()
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(f.Name(), now, now)
	return &mirror{c: c, dir: filepath.Join(c.Dir, k+".git"), lock: f}, nil
}

func (m *mirror) close() {
	_ = syscall.Flock(int(m.lock.Fd()), syscall.LOCK_UN)
	_ = m.lock.Close()
}

// flockWait takes an exclusive lock on f, polling so that ctx can end the wait. The lock is the
// kernel's: a job that dies releases it with its file descriptors.
func flockWait(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("workspace: cache lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workspace: waiting for the repository cache: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// git runs a git command in the mirror with Akira's hardening; remote commands get credentials.
func (m *mirror) git(ctx context.Context, w *Workspace, remote bool, args ...string) (string, error) {
	g := &Workspace{opts: w.opts}
	out, err := g.exec(ctx, m.dir, remote, nil, args...)
	return string(out), err
}

// update makes the mirror current: created on first use, fetched after. A mirror that cannot be
// fetched and fails its check is dropped and made again.
func (m *mirror) update(ctx context.Context, w *Workspace) error {
	if _, err := os.Stat(filepath.Join(m.dir, "HEAD")); err == nil {
		ferr := m.fetch(ctx, w)
		if ferr == nil {
			return nil
		}
		if m.sound(ctx, w) {
			return ferr
		}
		m.c.log().Warn("repository cache corrupt; rebuilding it", "mirror", filepath.Base(m.dir), "err", ferr)
	}
	return m.create(ctx, w)
}

// create makes the mirror from scratch, in a temporary directory renamed into place once fetched.
func (m *mirror) create(ctx context.Context, w *Workspace) error {
	if err := os.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("workspace: cache: %w", err)
	}
	tmp, err := os.MkdirTemp(m.c.Dir, ".new-")
	if err != nil {
		return fmt.Errorf("workspace: cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	g := &Workspace{opts: w.opts}
	if _, err := g.exec(ctx, tmp, false, nil, "init", "--quiet", "--bare", "."); err != nil {
		return fmt.Errorf("workspace: cache: %w", err)
	}
	// Maintenance runs inside the fetch that triggers it, under the mirror's lock, never detached
	// beside a clone.
	for _, kv := range [][2]string{{"gc.autoDetach", "false"}, {"core.logAllRefUpdates", "false"}} {
		if _, err := g.exec(ctx, tmp, false, nil, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("workspace: cache: %w", err)
		}
	}
	if err := os.Rename(tmp, m.dir); err != nil {
		return fmt.Errorf("workspace: cache: %w", err)
	}
	if err := m.fetch(ctx, w); err != nil {
		_ = os.RemoveAll(m.dir)
		return err
	}
	return nil
}

// fetch brings the mirror up to date with the remote: refs that moved (force pushes included),
// refs deleted upstream pruned, and HEAD following the remote's default branch when the caller
// needs it (no base given) or it names a branch that is gone.
func (m *mirror) fetch(ctx context.Context, w *Workspace) error {
	args := append([]string{"fetch", "--quiet", "--prune", "--no-tags", "--", w.opts.Remote}, mirrorRefspecs...)
	if _, err := m.git(ctx, w, true, args...); err != nil {
		return fmt.Errorf("workspace: update the repository cache: %w", err)
	}
	if w.opts.Base != "" {
		if _, err := m.git(ctx, w, false, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
			return nil
		}
	}
	out, err := m.git(ctx, w, true, "ls-remote", "--symref", "--", w.opts.Remote, "HEAD")
	if err != nil {
		return fmt.Errorf("workspace: update the repository cache: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if ref, ok := strings.CutPrefix(line, "ref: "); ok {
			ref, _, _ = strings.Cut(ref, "\t")
			if _, err := m.git(ctx, w, false, "symbolic-ref", "HEAD", ref); err != nil {
				return fmt.Errorf("workspace: update the repository cache: %w", err)
			}
		}
	}
	return nil
}

// sound reports whether the mirror passes git's connectivity check.
func (m *mirror) sound(ctx context.Context, w *Workspace) bool {
	_, err := m.git(ctx, w, false, "fsck", "--connectivity-only", "--no-progress")
	return err == nil
}

// drop removes the mirror (the caller holds its lock).
func (m *mirror) drop() { _ = os.RemoveAll(m.dir) }

// cloneFromCache makes w's clone in dir from the remote's mirror, with gitDir beside it, or takes a
// kept work tree of the remote (see spare) and brings it to the mirror's state; then w's root, Dir
// and the returned git directory are the kept tree's. It holds the mirror's lock from the fetch to
// the end of the local clone, so a concurrent fetch's maintenance never removes a file the clone is
// linking.
func (c *Cache) cloneFromCache(ctx context.Context, w *Workspace, gitDir string) (string, error) {
	m, err := c.open(ctx, w.opts.Remote)
	if err != nil {
		return "", err
	}
	defer m.close()
	for attempt := 0; ; attempt++ {
		err := m.update(ctx, w)
		if err == nil && attempt == 0 {
			if s, ok := c.takeSpare(w.opts.Remote); ok {
				fresh := w.root
				rerr := m.reuse(ctx, w, s)
				if rerr == nil {
					_ = removeAll(fresh)
					c.evict(filepath.Base(m.dir))
					return s.gitDir, nil
				}
				c.log().Warn("repository cache: a kept work tree could not be reused; cloning afresh", "mirror", filepath.Base(m.dir), "err", rerr)
				_ = removeAll(s.root)
				w.root, w.Dir, w.gitDir, w.config, w.uses, w.atBase = fresh, filepath.Join(fresh, "repo"), "", nil, 0, ""
			}
		}
		if err == nil {
			err = m.cloneInto(ctx, w, gitDir)
		}
		if err == nil || attempt > 0 || ctx.Err() != nil || m.sound(ctx, w) {
			if err == nil {
				c.evict(filepath.Base(m.dir))
			}
			return gitDir, err
		}
		c.log().Warn("repository cache corrupt; rebuilding it", "mirror", filepath.Base(m.dir), "err", err)
		m.drop()
		_ = os.RemoveAll(w.Dir)
		_ = os.RemoveAll(gitDir)
	}
}

// cloneInto clones the mirror into w.Dir, and checks that the default branch's whole tree is there
// (a local clone links files without reading them, so a missing object shows only now).
func (m *mirror) cloneInto(ctx context.Context, w *Workspace, gitDir string) error {
	if _, err := w.run(ctx, filepath.Dir(w.Dir), false, "clone", "--quiet", "--no-checkout", "--separate-git-dir="+gitDir, "--", m.dir, w.Dir); err != nil {
		return fmt.Errorf("workspace: clone from the repository cache: %w", err)
	}
	// The clone's origin is the mirror; the workspace's is the remote (pushes name it anyway).
	g := &Workspace{opts: w.opts}
	if _, err := g.exec(ctx, w.Dir, false, nil, "config", "--file", filepath.Join(gitDir, "config"), "remote.origin.url", w.opts.Remote); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	// The parked work of every branch comes along from the mirror, which has just fetched it: the
	// checkout needs no round trip to the remote for it.
	if _, err := g.exec(ctx, w.Dir, false, nil, "--git-dir="+gitDir, "fetch", "--quiet", "--no-tags", "--", m.dir, "+refs/akira/*:refs/akira/*"); err != nil {
		return fmt.Errorf("workspace: parked work from the repository cache: %w", err)
	}
	base := "refs/remotes/origin/HEAD"
	if w.opts.Base != "" {
		base = "refs/remotes/origin/" + w.opts.Base
	}
	// A base that does not exist is reported by Clone in its own words; only a missing object is
	// the mirror's fault.
	if _, err := g.exec(ctx, w.Dir, false, nil, "--git-dir="+gitDir, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		return nil
	}
	if _, err := g.exec(ctx, w.Dir, false, nil, "--git-dir="+gitDir, "rev-list", "--objects", "--missing=error", "--no-walk", base); err != nil {
		return fmt.Errorf("workspace: %w: the base tree cannot be read: %w", ErrCorruptMirror, err)
	}
	return nil
}

// reuse makes the kept tree s w's: its sealed configuration written back, the mirror's branches,
// tags and parked work fetched into it (pruned), the tree checked out at the base with every change
// and untracked or ignored file of the last run undone, and no local branch left. Checkout then
// changes only the files that differ.
func (m *mirror) reuse(ctx context.Context, w *Workspace, s spare) error {
	w.root, w.Dir, w.gitDir, w.config, w.uses = s.root, filepath.Join(s.root, "repo"), s.gitDir, s.config, s.uses+1
	if err := w.restoreGitDir(); err != nil {
		return err
	}
	// A .git the last run left at the top of the tree is not the workspace's (commands name GIT_DIR).
	if err := removeAll(filepath.Join(w.Dir, ".git")); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if _, err := w.Git(ctx, "fetch", "--quiet", "--prune", "--no-tags", "--force", "--", m.dir,
		"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*", "+refs/akira/*:refs/akira/*"); err != nil {
		return fmt.Errorf("workspace: fetch the repository cache into a kept tree: %w", err)
	}
	if head, err := m.git(ctx, w, false, "symbolic-ref", "--quiet", "HEAD"); err == nil {
		if _, err := w.Git(ctx, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/"+strings.TrimPrefix(strings.TrimSpace(head), "refs/heads/")); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	base := "refs/remotes/origin/HEAD"
	if w.opts.Base != "" {
		base = "refs/remotes/origin/" + w.opts.Base
	}
	if _, err := w.Git(ctx, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		return fmt.Errorf("workspace: base %s not in the repository cache", base)
	}
	// A merge or cherry-pick left half-done would make checkout refuse; reset --merge reads the
	// whole tree, so only when one was left.
	for _, state := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"} {
		if _, err := os.Stat(filepath.Join(w.gitDir, state)); err == nil {
			_, _ = w.Git(ctx, "reset", "--quiet", "--merge")
			break
		}
	}
	if _, err := w.Git(ctx, "checkout", "--quiet", "--force", "--detach", base); err != nil {
		return fmt.Errorf("workspace: reset a kept tree: %w", err)
	}
	if _, err := w.Git(ctx, "clean", "-ffdxq"); err != nil {
		return fmt.Errorf("workspace: clean a kept tree: %w", err)
	}
	out, err := w.Git(ctx, "for-each-ref", "--format=delete %(refname)", "refs/heads/")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if out != "" {
		if _, err := w.exec(ctx, w.Dir, false, strings.NewReader(out+"\n"), "update-ref", "--stdin"); err != nil {
			return fmt.Errorf("workspace: drop a kept tree's branches: %w", err)
		}
	}
	// No rev-list of the base tree's objects, as cloneInto does after its hard links: the fetch above
	// checked that what it brought connects, and the checkout read every blob that changed.
	sha, err := w.Git(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	w.atBase = sha
	return nil
}

// checkAfterFailure is called when a workspace made from a mirror failed to read its objects: a
// mirror that fails its check is dropped, so that the next workspace rebuilds it.
func (c *Cache) checkAfterFailure(ctx context.Context, w *Workspace, cause error) error {
	m, err := c.open(ctx, w.opts.Remote)
	if err != nil {
		return cause
	}
	defer m.close()
	if _, err := os.Stat(m.dir); err != nil {
		return cause
	}
	// The connectivity check does not read blobs: a blob that is there but damaged is known only
	// from what failed to read it.
	if m.sound(ctx, w) && !damagedObject(cause) {
		return cause
	}
	c.log().Warn("repository cache corrupt; dropped", "mirror", filepath.Base(m.dir), "err", cause)
	m.drop()
	return fmt.Errorf("%w (dropped; the next run rebuilds it): %w", ErrCorruptMirror, cause)
}

// damagedObjectRE matches git's words for an object it found but could not read.
var damagedObjectRE = regexp.MustCompile(`(?i)(unable to read|corrupt|inflate|bad object|invalid object|missing (blob|tree|commit)|loose object .* is corrupt|unable to unpack)`)

func damagedObject(err error) bool { return err != nil && damagedObjectRE.MatchString(err.Error()) }

// evict removes least recently used mirrors, never keep and never one in use, until the cache is
// under its cap.
func (c *Cache) evict(keep string) {
	if c.MaxBytes <= 0 {
		return
	}
	type entry struct {
		key  string
		size int64
		used time.Time
	}
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	var mirrors []entry
	var total int64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".git")
		if !ok || !e.IsDir() {
			continue
		}
		size := dirSize(filepath.Join(c.Dir, e.Name()))
		total += size
		used := time.Time{}
		if st, err := os.Stat(filepath.Join(c.Dir, name+".lock")); err == nil {
			used = st.ModTime()
		}
		mirrors = append(mirrors, entry{key: name, size: size, used: used})
	}
	sort.Slice(mirrors, func(i, j int) bool { return mirrors[i].used.Before(mirrors[j].used) })
	for _, m := range mirrors {
		if total <= c.MaxBytes {
			return
		}
		if m.key+".git" == keep {
			continue
		}
		f, err := os.OpenFile(filepath.Join(c.Dir, m.key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if os.RemoveAll(filepath.Join(c.Dir, m.key+".git")) == nil {
				total -= m.size
				c.log().Info("repository cache: evicted the least recently used mirror", "mirror", m.key, "bytes", m.size)
			}
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		f.Close()
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
