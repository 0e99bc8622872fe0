package env

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// LockFiles are the files whose content keys a repository's dependency cache. requirements.txt is
// pip's lock file when it pins versions (and hashes); unpinned, it still keys a cache that only
// serves downloads pip checks again.
var LockFiles = []string{"go.sum", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "poetry.lock", "uv.lock", "requirements.txt", "Cargo.lock"}

// DefaultCacheMax caps one scope's (repository's) dependency caches when Caches.Max is zero.
const DefaultCacheMax = 10 << 30

// Caches are the dependency caches of runs, kept across runs under Root: one directory per scope (an
// installation's repository, never shared with another installation's), in it one directory per
// lock-file key. Setup sees its cache read-write; the agent and verification read-only.
type Caches struct {
	Root string
	// Max caps the size of one scope; the least recently used keys go first. Zero means DefaultCacheMax.
	Max int64
}

// Cache is the dependency cache of one run.
type Cache struct {
	// Dir is the key's directory on the host; Scope the scope's.
	Dir, Scope string
	Key        string
}

var scopeUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// ScopeName makes a scope directory name of parts (installation id, owner, repository): nothing in
// them can climb out of Root or reach another scope.
func ScopeName(parts ...string) string {
	var clean []string
	for _, p := range parts {
		p = strings.Trim(scopeUnsafe.ReplaceAllString(strings.ToLower(p), "_"), "._")
		if p == "" {
			p = "_"
		}
		clean = append(clean, p)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	// The hash keeps two scopes apart whose names clean to the same string.
	return strings.Join(clean, "--") + "-" + hex.EncodeToString(sum[:4])
}

// LockKey is the key of the lock files at the root of dir: a hash of their names and content; ""
// when there is none (then there is nothing to key a cache by).
func LockKey(dir string) (string, error) {
	h := sha256.New()
	found := false
	for _, name := range LockFiles {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("env: lock file: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, fi.Size())
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("env: lock file: %w", err)
		}
		found = true
	}
	if !found {
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// Open returns the cache of scope for the lock files in dir, creating its directory and marking it
// used now; nil when dir has no lock file.
func (c *Caches) Open(scope, dir string) (*Cache, error) {
	if c == nil || c.Root == "" {
		return nil, nil
	}
	if scope == "" || scope != filepath.Base(scope) || strings.HasPrefix(scope, ".") {
		return nil, fmt.Errorf("env: cache scope %q is not a directory name", scope)
	}
	key, err := LockKey(dir)
	if err != nil || key == "" {
		return nil, err
	}
	scopeDir := filepath.Join(c.Root, scope)
	kd := filepath.Join(scopeDir, key)
	for _, sub := range cacheDirs {
		if err := os.MkdirAll(filepath.Join(kd, sub), 0o700); err != nil {
			return nil, fmt.Errorf("env: cache: %w", err)
		}
	}
	now := time.Now()
	_ = os.Chtimes(kd, now, now)
	return &Cache{Dir: kd, Scope: scopeDir, Key: key}, nil
}

var cacheDirs = []string{"go/mod", "go/build", "npm", "pip", "cargo"}

// Env are the variables that point the toolchains at the cache. GOCACHE (Go's build cache) is set
// only when write is true: go refuses to build with a build cache it cannot write.
func (c *Cache) Env(write bool) []string {
	if c == nil {
		return nil
	}
	env := []string{
		"GOMODCACHE=" + filepath.Join(c.Dir, "go/mod"),
		"GOFLAGS=-modcacherw",
		"npm_config_cache=" + filepath.Join(c.Dir, "npm"),
		"PIP_CACHE_DIR=" + filepath.Join(c.Dir, "pip"),
		"CARGO_HOME=" + filepath.Join(c.Dir, "cargo"),
	}
	if write {
		env = append(env, "GOCACHE="+filepath.Join(c.Dir, "go/build"))
	}
	return env
}

// Entry is one key's cache in a scope, or one setup snapshot (Key "setup-<key>").
type Entry struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	// Kind is KindDependencies or KindSnapshot.
	Kind     string    `json:"kind"`
	Size     int64     `json:"size"`
	LastUsed time.Time `json:"last_used"`
}

// The kinds of Entry.
const (
	KindDependencies = "dependencies"
	KindSnapshot     = "setup snapshot"
)

// List returns the caches under Root, most recently used first.
func (c *Caches) List() ([]Entry, error) {
	scopes, err := os.ReadDir(c.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("env: cache: %w", err)
	}
	var out []Entry
	for _, s := range scopes {
		if !s.IsDir() {
			continue
		}
		keys, err := os.ReadDir(filepath.Join(c.Root, s.Name()))
		if err != nil {
			continue
		}
		for _, k := range keys {
			info, err := k.Info()
			// A name with a dot is a snapshot being written (or left by a crash): not one yet.
			if err != nil || !k.IsDir() || strings.HasPrefix(k.Name(), ".") {
				continue
			}
			kind := KindDependencies
			if strings.HasPrefix(k.Name(), SnapshotPrefix) {
				kind = KindSnapshot
			}
			out = append(out, Entry{Scope: s.Name(), Key: k.Name(), Kind: kind, Size: dirSize(filepath.Join(c.Root, s.Name(), k.Name())), LastUsed: info.ModTime()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUsed.After(out[j].LastUsed) })
	return out, nil
}

// Prune removes the least recently used keys and setup snapshots of each scope until the scope is
// under max (0: Max, else DefaultCacheMax), never the keep keys; a negative max removes every key but
// keep. A snapshot goes with the dependency cache it was made with, kept or not: it skips the setup
// that would fill the cache again. It returns what it removed.
func (c *Caches) Prune(max int64, keep ...string) ([]Entry, error) {
	return c.prune("", max, keep)
}

// PruneScope is Prune for one scope only (a run trims its own repository's caches, never another's).
func (c *Caches) PruneScope(scope string, max int64, keep ...string) ([]Entry, error) {
	if scope == "" {
		return nil, errors.New("env: cache prune: no scope")
	}
	return c.prune(scope, max, keep)
}

// staleTemp is the age past which a dot directory of a scope (a snapshot being written) is one a
// crash left.
const staleTemp = time.Hour

func (c *Caches) prune(scope string, max int64, keep []string) ([]Entry, error) {
	c.removeStaleTemps(scope)
	if max == 0 {
		max = c.Max
	}
	if max == 0 {
		max = DefaultCacheMax
	}
	all, err := c.List()
	if err != nil {
		return nil, err
	}
	size := map[string]int64{}
	for _, e := range all {
		size[e.Scope] += e.Size
	}
	var removed []Entry
	gone := map[string]bool{} // scope/key removed
	remove := func(e Entry) error {
		if gone[e.Scope+"/"+e.Key] {
			return nil
		}
		if err := removeAllWritable(filepath.Join(c.Root, e.Scope, e.Key)); err != nil {
			return fmt.Errorf("env: cache prune: %w", err)
		}
		gone[e.Scope+"/"+e.Key] = true
		size[e.Scope] -= e.Size
		removed = append(removed, e)
		return nil
	}
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		e := all[i]
		if (scope != "" && e.Scope != scope) || slices.Contains(keep, e.Key) || (max > 0 && size[e.Scope] <= max) {
			continue
		}
		if err := remove(e); err != nil {
			return removed, err
		}
		if e.Kind != KindDependencies {
			continue
		}
		for _, s := range all {
			if s.Scope == e.Scope && s.Kind == KindSnapshot &&
				c.snapshotLockKey(s.Scope, s.Key) == e.Key {
				if err := remove(s); err != nil {
					return removed, err
				}
			}
		}
	}
	return removed, nil
}

// snapshotLockKey is the dependency cache key a snapshot was made with.
func (c *Caches) snapshotLockKey(scope, name string) string {
	data, err := os.ReadFile(filepath.Join(c.Root, scope, name, snapshotManifest))
	if err != nil {
		return ""
	}
	var m snapshotMeta
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.LockKey
}

// removeStaleTemps removes the dot directories a crash left in the scopes (all scopes for "").
func (c *Caches) removeStaleTemps(scope string) {
	scopes := []string{scope}
	if scope == "" {
		entries, _ := os.ReadDir(c.Root)
		scopes = scopes[:0]
		for _, e := range entries {
			scopes = append(scopes, e.Name())
		}
	}
	for _, s := range scopes {
		entries, _ := os.ReadDir(filepath.Join(c.Root, s))
		for _, e := range entries {
			if info, err := e.Info(); err == nil && e.IsDir() && strings.HasPrefix(e.Name(), ".") && time.Since(info.ModTime()) > staleTemp {
				_ = removeAllWritable(filepath.Join(c.Root, s, e.Name()))
			}
		}
	}
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}
