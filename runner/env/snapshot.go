package env

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A setup snapshot is what a repository's setup added to the work tree (node_modules, .venv,
// generated files), kept in the run's cache scope so that the next run with the same inputs restores
// it instead of running setup again. Its content came from commands the repository controls: it is
// written and read only through os.Root, and restored only into paths that do not exist yet.

const (
	// snapshotFormat is in every key: a change of what a snapshot holds or how it is restored leaves
	// every older snapshot unused.
	snapshotFormat = "akira-setup-snapshot/1"
	// SnapshotPrefix starts the name of a snapshot's directory in a scope (lock-file keys are hex).
	SnapshotPrefix = "setup-"
	// DefaultSnapshotMaxAge is how long a snapshot is used when the repository does not say: the
	// toolchains a worker runs setup with change without anything in the repository saying so.
	DefaultSnapshotMaxAge = 24 * time.Hour
	snapshotTar           = "snapshot.tar"
	snapshotManifest      = "manifest.json"
	// maxRewrite bounds a text file whose old work-tree path is rewritten on restore (read whole).
	maxRewrite = 16 << 20
)

// SnapshotManifests are the files at the root besides the lock files whose content keys a snapshot:
// what setup commands read to know what to install or build.
var SnapshotManifests = []string{
	"go.mod", "go.work", "package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".nvmrc", ".node-version",
	"pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "Pipfile.lock", ".python-version", "tox.ini",
	"Cargo.toml", "rust-toolchain", "rust-toolchain.toml", "Gemfile", "Gemfile.lock", "composer.json",
	"composer.lock", ".tool-versions", "Makefile", "GNUmakefile", "makefile", "Dockerfile",
}

// ErrSnapshotUnsafe marks a snapshot whose tar would write outside the work tree, through a symlink,
// over something that exists, or that does not match its manifest: it is never used.
var ErrSnapshotUnsafe = errors.New("unsafe snapshot")

// SnapshotInfo is what a run says about the setup snapshot it restored or saved.
type SnapshotInfo struct {
	Key   string    `json:"key"`
	Taken time.Time `json:"taken"`
	Files int       `json:"files"`
	Bytes int64     `json:"bytes"`
	// Restored is true when the snapshot replaced the setup commands, false when it was saved after
	// they ran.
	Restored bool `json:"restored"`
}

// SnapshotInputs are what a snapshot's key is made of besides the files of the work tree.
type SnapshotInputs struct {
	Commands []string
	// Network is what the setup commands may reach.
	Network string
}

// SnapshotKey is the key of the snapshot setup would produce in dir (a fresh clone: every file in it
// is tracked): a hash of the format, the commands, their network, the lock files (LockKey), the
// manifest files at the root and every file of the tree a command names (./scripts/setup.sh,
// requirements-dev.txt). It also returns the lock-file key, "" without lock files.
func SnapshotKey(dir string, in SnapshotInputs) (key, lockKey string, err error) {
	lockKey, err = LockKey(dir)
	if err != nil {
		return "", "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", "", fmt.Errorf("env: snapshot key: %w", err)
	}
	defer root.Close()
	h := sha256.New()
	field := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s", len(p), p)
		}
	}
	field(snapshotFormat, "network", in.Network, "lock", lockKey)
	for _, c := range in.Commands {
		field("command", c)
	}
	seen := map[string]bool{}
	file := func(kind, name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		fi, err := root.Lstat(name)
		switch {
		case err != nil:
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return fmt.Errorf("env: snapshot key: %w", err)
			}
			field(kind, name, "symlink", target)
		case fi.Mode().IsRegular():
			f, err := root.Open(name)
			if err != nil {
				return fmt.Errorf("env: snapshot key: %w", err)
			}
			defer f.Close()
			field(kind, name, fmt.Sprint(fi.Size()))
			if _, err := io.Copy(h, f); err != nil {
				return fmt.Errorf("env: snapshot key: %w", err)
			}
		}
		return nil
	}
	for _, name := range SnapshotManifests {
		if err := file("manifest", name); err != nil {
			return "", "", err
		}
	}
	for _, c := range in.Commands {
		for _, tok := range commandPaths(c) {
			if err := file("named", tok); err != nil {
				return "", "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), lockKey, nil
}

// commandPaths are the words of a shell command that could name a file of the work tree: relative,
// inside it, without globbing. Which ones are files is for the caller to see.
func commandPaths(cmd string) []string {
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|()<>'\"=`$", r)
	})
	var out []string
	for _, w := range words {
		w = path.Clean(w)
		if w == "." || !filepath.IsLocal(w) || strings.ContainsAny(w, "*?[") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// snapshotMeta is a snapshot's manifest.json.
type snapshotMeta struct {
	Format  string    `json:"format"`
	Key     string    `json:"key"`
	LockKey string    `json:"lock_key,omitempty"`
	Created time.Time `json:"created"`
	// WorkTree is the work tree's path when the snapshot was taken; Rewrite the text files (no NUL
	// byte) that contain it, rewritten to the new work tree's path on restore; Binary the others that
	// contain it, left as they are.
	WorkTree string   `json:"work_tree"`
	Rewrite  []string `json:"rewrite,omitempty"`
	Binary   []string `json:"binary_with_path,omitempty"`
	Files    int      `json:"files"`
	Bytes    int64    `json:"bytes"`
	// TarSHA256 catches a tar that is not the one written (a disk that lost its end, an edit).
	TarSHA256 string `json:"tar_sha256"`
}

// Snapshot is a setup snapshot found in a scope.
type Snapshot struct {
	dir  string
	meta snapshotMeta
}

// Info describes the snapshot.
func (s *Snapshot) Info() SnapshotInfo {
	return SnapshotInfo{Key: s.meta.Key, Taken: s.meta.Created, Files: s.meta.Files, Bytes: s.meta.Bytes}
}

func (c *Caches) scopeDir(scope string) (string, error) {
	if c == nil || c.Root == "" {
		return "", errors.New("env: snapshot: no cache root")
	}
	if scope == "" || scope != filepath.Base(scope) || strings.HasPrefix(scope, ".") {
		return "", fmt.Errorf("env: cache scope %q is not a directory name", scope)
	}
	return filepath.Join(c.Root, scope), nil
}

func validSnapshotKey(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// LookupSnapshot returns the snapshot of key in scope when there is one to use, or nil and why
// not: none, older than maxAge, or made with a dependency cache that is gone since (the snapshot
// skips setup, so it is only good with the cache setup filled). Call it before Open, which creates
// the dependency cache's directory.
func (c *Caches) LookupSnapshot(scope, key string, maxAge time.Duration) (*Snapshot, string, error) {
	sd, err := c.scopeDir(scope)
	if err != nil {
		return nil, "", err
	}
	if !validSnapshotKey(key) {
		return nil, "", fmt.Errorf("env: snapshot key %q", key)
	}
	dir := filepath.Join(sd, SnapshotPrefix+key)
	data, err := os.ReadFile(filepath.Join(dir, snapshotManifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "no snapshot", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("env: snapshot: %w", err)
	}
	var m snapshotMeta
	if err := json.Unmarshal(data, &m); err != nil || m.Format != snapshotFormat || m.Key != key {
		return nil, "a snapshot of another format", nil
	}
	if maxAge <= 0 {
		maxAge = DefaultSnapshotMaxAge
	}
	if age := time.Since(m.Created); age > maxAge || age < -time.Minute {
		return nil, fmt.Sprintf("the snapshot is older than %s", maxAge), nil
	}
	if m.LockKey != "" {
		if fi, err := os.Stat(filepath.Join(sd, m.LockKey)); err != nil || !fi.IsDir() {
			return nil, "the dependency cache it was made with is gone", nil
		}
	}
	return &Snapshot{dir: dir, meta: m}, "", nil
}

// RemoveSnapshot removes the snapshot of key in scope, if any.
func (c *Caches) RemoveSnapshot(scope, key string) error {
	sd, err := c.scopeDir(scope)
	if err != nil {
		return err
	}
	if !validSnapshotKey(key) {
		return fmt.Errorf("env: snapshot key %q", key)
	}
	if err := removeAllWritable(filepath.Join(sd, SnapshotPrefix+key)); err != nil {
		return fmt.Errorf("env: snapshot: %w", err)
	}
	return nil
}

// SnapshotOptions configures SaveSnapshot.
type SnapshotOptions struct {
	// LockKey is the dependency cache's key the setup ran with ("" for none).
	LockKey string
	// MaxBytes caps the snapshot's content; past it no snapshot is kept. Zero means the scope's cap.
	MaxBytes int64
}

// SaveSnapshot keeps the paths of dir (as git status lists them: slash-separated, directories
// ending with a slash) as the snapshot of key in scope, replacing the one there. Nothing is
// followed: symlinks are kept as symlinks, special files are left out. The snapshot appears whole
// or not at all.
func (c *Caches) SaveSnapshot(ctx context.Context, scope, key, dir string, paths []string, opts SnapshotOptions) (SnapshotInfo, error) {
	sd, err := c.scopeDir(scope)
	if err != nil {
		return SnapshotInfo{}, err
	}
	if !validSnapshotKey(key) {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot key %q", key)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = cmp.Or(c.Max, DefaultCacheMax)
	}
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	tmp, err := os.MkdirTemp(sd, "."+SnapshotPrefix+key+"-")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	defer root.Close()
	f, err := os.OpenFile(filepath.Join(tmp, snapshotTar), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	defer f.Close()
	sum := sha256.New()
	w := &snapshotWriter{ctx: ctx, root: root, tw: tar.NewWriter(io.MultiWriter(f, sum)), needle: []byte(dir), max: opts.MaxBytes}
	w.meta = snapshotMeta{Format: snapshotFormat, Key: key, LockKey: opts.LockKey, Created: time.Now().UTC(), WorkTree: dir}
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	for _, p := range sorted {
		name := path.Clean(strings.TrimSuffix(p, "/"))
		if !filepath.IsLocal(name) || isGitPath(name) {
			return SnapshotInfo{}, fmt.Errorf("env: snapshot: %q is not a path of the work tree", p)
		}
		if err := w.add(name); err != nil {
			return SnapshotInfo{}, err
		}
	}
	if err := w.tw.Close(); err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	w.meta.TarSHA256 = hex.EncodeToString(sum.Sum(nil))
	data, err := json.MarshalIndent(w.meta, "", "  ")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, snapshotManifest), data, 0o600); err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	final := filepath.Join(sd, SnapshotPrefix+key)
	// A directory cannot be renamed over one that has files: the old snapshot moves aside first.
	// Another run saving the same key at the same time may win; either snapshot is whole.
	old := tmp + ".old"
	if err := os.Rename(final, old); err == nil {
		defer removeAllWritable(old)
	}
	if err := os.Rename(tmp, final); err != nil {
		return SnapshotInfo{}, fmt.Errorf("env: snapshot: %w", err)
	}
	done = true
	return SnapshotInfo{Key: key, Taken: w.meta.Created, Files: w.meta.Files, Bytes: w.meta.Bytes}, nil
}

// isGitPath reports a path in the work tree's .git: never the environment, and never restored.
func isGitPath(name string) bool {
	first, _, _ := strings.Cut(filepath.ToSlash(name), "/")
	return first == ".git"
}

type snapshotWriter struct {
	ctx    context.Context
	root   *os.Root
	tw     *tar.Writer
	needle []byte
	max    int64
	meta   snapshotMeta
}

// add writes name and, for a directory, everything under it.
func (w *snapshotWriter) add(name string) error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("env: snapshot: %w", err)
	}
	fi, err := w.root.Lstat(name)
	if err != nil {
		return fmt.Errorf("env: snapshot: %w", err)
	}
	slash := filepath.ToSlash(name)
	hdr := &tar.Header{Name: slash, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
	switch {
	case fi.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, slash+"/"
		if err := w.tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		w.meta.Files++
		d, err := w.root.Open(name)
		if err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		slices.Sort(names)
		for _, n := range names {
			if err := w.add(filepath.Join(name, n)); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := w.root.Readlink(name)
		if err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		if err := w.tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		w.meta.Files++
		return nil
	case fi.Mode().IsRegular():
		w.meta.Bytes += fi.Size()
		if w.meta.Bytes > w.max {
			return fmt.Errorf("env: snapshot: more than %d bytes", w.max)
		}
		f, err := w.root.Open(name)
		if err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("env: snapshot: %s changed while it was read", slash)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		if err := w.tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		sc := &pathScan{needle: w.needle}
		// A file that grows or shrinks while it is read fails the tar writer: no half snapshot.
		if _, err := io.Copy(w.tw, io.TeeReader(io.LimitReader(f, fi.Size()), sc)); err != nil {
			return fmt.Errorf("env: snapshot: %s: %w", slash, err)
		}
		switch {
		case sc.found && !sc.nul && fi.Size() <= maxRewrite:
			w.meta.Rewrite = append(w.meta.Rewrite, slash)
		case sc.found:
			w.meta.Binary = append(w.meta.Binary, slash)
		}
		w.meta.Files++
		return nil
	}
	// Sockets, pipes and devices are not an environment a later run can use.
	return nil
}

// pathScan sees whether what is written contains needle (across writes) and a NUL byte.
type pathScan struct {
	needle     []byte
	tail       []byte
	found, nul bool
}

func (s *pathScan) Write(p []byte) (int, error) {
	if !s.nul && bytes.IndexByte(p, 0) >= 0 {
		s.nul = true
	}
	if n := len(s.needle) - 1; !s.found && n >= 0 {
		if len(s.tail) > 0 {
			// The needle may start in the previous write and end in this one.
			edge := append(slices.Clip(s.tail), p[:min(n, len(p))]...)
			s.found = bytes.Contains(edge, s.needle)
		}
		s.found = s.found || bytes.Contains(p, s.needle)
		if len(p) >= n {
			s.tail = append(s.tail[:0], p[len(p)-n:]...)
		} else if s.tail = append(s.tail, p...); len(s.tail) > n {
			s.tail = s.tail[len(s.tail)-n:]
		}
	}
	return len(p), nil
}

// Restore extracts the snapshot into dir, a fresh clone of the repository, and rewrites the old
// work tree's path to dir in the text files that held it. Every entry must be a new path inside dir
// whose parents are directories (not symlinks): nothing that exists is replaced or written through.
// On an error, what was extracted is removed again; the caller runs setup instead.
func (s *Snapshot) Restore(ctx context.Context, dir string) (info SnapshotInfo, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return info, fmt.Errorf("env: snapshot restore: %w", err)
	}
	defer root.Close()
	f, err := os.Open(filepath.Join(s.dir, snapshotTar))
	if err != nil {
		return info, fmt.Errorf("env: snapshot restore: %w", err)
	}
	defer f.Close()
	r := &restorer{ctx: ctx, root: root, old: s.meta.WorkTree, new: dir, rewrite: map[string]bool{}, sum: sha256.New(), isDir: map[string]bool{}}
	for _, p := range s.meta.Rewrite {
		r.rewrite[p] = true
	}
	defer func() {
		if err != nil {
			r.undo()
		}
	}()
	if err := r.extract(io.TeeReader(f, r.sum)); err != nil {
		return info, err
	}
	if got := hex.EncodeToString(r.sum.Sum(nil)); got != s.meta.TarSHA256 || r.files != s.meta.Files {
		return info, fmt.Errorf("env: snapshot restore: %w: the tar does not match its manifest", ErrSnapshotUnsafe)
	}
	// Directories last, deepest first: their modes may forbid writing in them, their times change
	// with every entry made in them.
	for i := len(r.dirs) - 1; i >= 0; i-- {
		d := r.dirs[i]
		if err := root.Chmod(d.name, d.mode); err != nil {
			return info, fmt.Errorf("env: snapshot restore: %w", err)
		}
		if err := root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return info, fmt.Errorf("env: snapshot restore: %w", err)
		}
	}
	now := time.Now()
	_ = os.Chtimes(s.dir, now, now) // used: last in the scope's LRU prune
	info = s.Info()
	info.Restored = true
	return info, nil
}

type restoredDir struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

type restorer struct {
	ctx      context.Context
	root     *os.Root
	old, new string
	rewrite  map[string]bool
	sum      hash.Hash
	files    int
	dirs     []restoredDir
	// isDir are the directories seen to be real directories (made by the restore, or checked): the
	// restore only ever makes new paths, so none of them can turn into a symlink under it.
	isDir map[string]bool
	// made are the paths the restore created whose parent existed before: removing them undoes it.
	made []string
}

func (r *restorer) extract(in io.Reader) error {
	tr := tar.NewReader(in)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// The rest of the file (the tar's padding) counts in its checksum too.
			_, err = io.Copy(io.Discard, in)
			if err != nil {
				return fmt.Errorf("env: snapshot restore: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("env: snapshot restore: %w", err)
		}
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("env: snapshot restore: %w", err)
		}
		if err := r.entry(hdr, tr); err != nil {
			return err
		}
		r.files++
	}
}

func (r *restorer) entry(hdr *tar.Header, body io.Reader) error {
	unsafe := func(why string) error {
		return fmt.Errorf("env: snapshot restore: %w: %q %s", ErrSnapshotUnsafe, hdr.Name, why)
	}
	slash := strings.TrimSuffix(hdr.Name, "/")
	if strings.HasPrefix(hdr.Name, "/") || path.Clean(slash) != slash || !filepath.IsLocal(filepath.FromSlash(slash)) || isGitPath(slash) {
		return unsafe("is not a path inside the work tree")
	}
	name := filepath.FromSlash(slash)
	if err := r.parents(name); err != nil {
		return unsafe(err.Error())
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := r.root.Mkdir(name, 0o700); err != nil {
			return unsafe("exists or cannot be made: " + err.Error())
		}
		r.note(name)
		r.isDir[name] = true
		r.dirs = append(r.dirs, restoredDir{name, mode, hdr.ModTime})
	case tar.TypeSymlink:
		target := hdr.Linkname
		if r.old != "" && (target == r.old || strings.HasPrefix(target, r.old+"/")) {
			target = r.new + strings.TrimPrefix(target, r.old)
		}
		if err := r.root.Symlink(target, name); err != nil {
			return unsafe("exists or cannot be made: " + err.Error())
		}
		r.note(name)
	case tar.TypeReg:
		// O_EXCL: an existing file, or a symlink planted at the name, is never written through.
		f, err := r.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return unsafe("exists or cannot be made: " + err.Error())
		}
		r.note(name)
		if r.rewrite[slash] && hdr.Size <= maxRewrite {
			var data []byte
			if data, err = io.ReadAll(io.LimitReader(body, hdr.Size)); err == nil {
				data = bytes.ReplaceAll(data, []byte(r.old), []byte(r.new))
				_, err = f.Write(data)
			}
		} else {
			_, err = io.CopyN(f, body, hdr.Size)
		}
		if err == nil {
			err = f.Chmod(mode) // on the open file: no second walk of the path
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("env: snapshot restore: %s: %w", slash, err)
		}
		if err := r.root.Chtimes(name, hdr.ModTime, hdr.ModTime); err != nil {
			return fmt.Errorf("env: snapshot restore: %w", err)
		}
	default:
		return unsafe(fmt.Sprintf("is of type %q, which a snapshot never holds", hdr.Typeflag))
	}
	return nil
}

// parents makes sure every parent of name is a directory, not a symlink, creating missing ones.
func (r *restorer) parents(name string) error {
	dir := filepath.Dir(name)
	if dir == "." {
		return nil
	}
	if r.isDir[dir] {
		return nil
	}
	var missing []string
	for d := dir; d != "."; d = filepath.Dir(d) {
		if r.isDir[d] {
			break
		}
		fi, err := r.root.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, d)
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("goes through %s, which is not a directory (a symlink?)", filepath.ToSlash(d))
		}
		r.isDir[d] = true
		break
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := r.root.Mkdir(missing[i], 0o755); err != nil {
			return err
		}
		r.note(missing[i])
		r.isDir[missing[i]] = true
	}
	return nil
}

// note records a path made by the restore when its parent is not one the restore made.
func (r *restorer) note(name string) {
	parent := filepath.Dir(name)
	for _, m := range r.made {
		if parent == m || strings.HasPrefix(parent, m+string(filepath.Separator)) {
			return
		}
	}
	r.made = append(r.made, name)
}

// undo removes what the restore made, making its directories writable first.
func (r *restorer) undo() {
	for _, d := range r.dirs {
		_ = r.root.Chmod(d.name, 0o700)
	}
	for i := len(r.made) - 1; i >= 0; i-- {
		_ = r.root.RemoveAll(r.made[i])
	}
}

// removeAllWritable removes dir even when a tool left read-only directories in it.
func removeAllWritable(dir string) error {
	err := os.RemoveAll(dir)
	if err != nil {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		err = os.RemoveAll(dir)
	}
	return err
}
