package env

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testScope = "inst-1--o--r"

// writeTree writes files (name → content) under dir; a content starting with "->" makes a symlink.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func snapshotKey(t *testing.T, dir string, cmds ...string) (key, lock string) {
	t.Helper()
	key, lock, err := SnapshotKey(dir, SnapshotInputs{Commands: cmds, Network: "allowlist"})
	if err != nil {
		t.Fatal(err)
	}
	return key, lock
}

// A snapshot brings back what setup made, as it was: content, modes, times, symlinks (also those
// leading out of the tree, as links), and the old work tree's path rewritten in text files only.
func TestSnapshotRoundTrip(t *testing.T) {
	tracked := map[string]string{"package-lock.json": "{}", "README.md": "hi\n", "src/main.js": "x\n"}
	caches := &Caches{Root: t.TempDir()}
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, tracked)
	writeTree(t, b, tracked)
	key, lock := snapshotKey(t, a, "npm ci")
	if k2, _ := snapshotKey(t, b, "npm ci"); k2 != key {
		t.Fatalf("the same inputs in two clones give keys %s and %s", key, k2)
	}
	if _, err := caches.Open(testScope, a); err != nil {
		t.Fatal(err)
	}
	writeTree(t, a, map[string]string{
		"node_modules/pad/index.js":  "module.exports = 1\n",
		".venv/bin/pip":              "#!" + a + "/.venv/bin/python\nimport pip\n",
		".venv/bin/python":           "->/usr/bin/python3",
		".venv/lib64":                "->lib",
		".venv/lib/site.pth":         a + "/src\n",
		".venv/lib/native.so":        "\x00\x01" + a + "\x00",
		".venv/bin/abs":              "->" + a + "/.venv/bin/pip",
		"src/generated.js":           "// generated\n",
		"node_modules/.bin/readonly": "ro\n",
	})
	if err := os.Chmod(filepath.Join(a, ".venv/bin/pip"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, p := range []string{"node_modules/pad/index.js", ".venv/bin/pip", ".venv/lib/site.pth"} {
		if err := os.Chtimes(filepath.Join(a, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(a, "node_modules/.bin"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(a, "node_modules/.bin"), 0o755) })

	info, err := caches.SaveSnapshot(context.Background(), testScope, key, a,
		[]string{".venv/", "node_modules/", "src/generated.js"}, SnapshotOptions{LockKey: lock})
	if err != nil {
		t.Fatal(err)
	}
	if info.Files != 15 || info.Restored {
		t.Errorf("saved %+v, want 15 entries", info)
	}
	s, why, err := caches.LookupSnapshot(testScope, key, 0)
	if err != nil || s == nil {
		t.Fatalf("lookup = %v, %q, %v", s, why, err)
	}
	got, err := s.Restore(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(b, "node_modules/.bin"), 0o755) })
	if !got.Restored || got.Files != info.Files || got.Key != key {
		t.Errorf("restored %+v, want the saved %+v", got, info)
	}
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(b, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read(".venv/bin/pip"); got != "#!"+b+"/.venv/bin/python\nimport pip\n" {
		t.Errorf("pip's shebang = %q, want the new work tree's", got)
	}
	if got := read(".venv/lib/site.pth"); got != b+"/src\n" {
		t.Errorf(".pth = %q, want the new work tree's path", got)
	}
	if got := read(".venv/lib/native.so"); got != "\x00\x01"+a+"\x00" {
		t.Errorf("a binary file was rewritten: %q", got)
	}
	if got := read("src/generated.js"); got != "// generated\n" || read("README.md") != "hi\n" {
		t.Errorf("generated = %q", got)
	}
	links := map[string]string{".venv/bin/python": "/usr/bin/python3", ".venv/lib64": "lib", ".venv/bin/abs": b + "/.venv/bin/pip"}
	for p, want := range links {
		if got, err := os.Readlink(filepath.Join(b, p)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", p, got, err, want)
		}
	}
	fi, err := os.Stat(filepath.Join(b, ".venv/bin/pip"))
	if err != nil || fi.Mode().Perm() != 0o755 || !fi.ModTime().Equal(old) {
		t.Errorf("pip: mode %v, mtime %v (%v); want 0755 and %v", fi.Mode(), fi.ModTime(), err, old)
	}
	if fi, err := os.Stat(filepath.Join(b, "node_modules/pad/index.js")); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("index.js mtime = %v, want %v", fi.ModTime(), old)
	}
	if fi, err := os.Stat(filepath.Join(b, "node_modules/.bin")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("read-only directory restored as %v (%v)", fi.Mode(), err)
	}
}

// A setup that plants a symlink to a directory outside the tree and writes through it: the snapshot
// keeps the link, never what is behind it, and the restore makes the link only.
func TestSnapshotKeepsSymlinksOutOfTheTreeAsLinks(t *testing.T) {
	caches := &Caches{Root: t.TempDir()}
	a, b, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeTree(t, a, map[string]string{"Makefile": "all:\n", "out": "->" + outside})
	if err := os.WriteFile(filepath.Join(a, "out", "evil"), []byte("through the link"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, b, map[string]string{"Makefile": "all:\n"})
	key, _ := snapshotKey(t, a, "make")
	info, err := caches.SaveSnapshot(context.Background(), testScope, key, a, []string{"out"}, SnapshotOptions{})
	if err != nil || info.Files != 1 || info.Bytes != 0 {
		t.Fatalf("saved %+v, %v; want the link alone", info, err)
	}
	if err := os.Remove(filepath.Join(outside, "evil")); err != nil {
		t.Fatal(err)
	}
	s, _, err := caches.LookupSnapshot(testScope, key, 0)
	if err != nil || s == nil {
		t.Fatal(s, err)
	}
	if _, err := s.Restore(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(b, "out")); err != nil || target != outside {
		t.Errorf("out -> %q, %v", target, err)
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("the restore wrote outside the tree: %v", left)
	}
}

// tarEntry is one entry of a hand-made (tampered) snapshot.
type tarEntry struct {
	name, body, link string
	typ              byte
}

// plantSnapshot writes a snapshot of key whose tar holds entries, with a manifest that matches it (a
// tamperer can write both).
func plantSnapshot(t *testing.T, caches *Caches, scope, key, workTree string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Now()}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(caches.Root, scope, SnapshotPrefix+key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	meta, _ := json.Marshal(snapshotMeta{Format: snapshotFormat, Key: key, Created: time.Now().UTC(), WorkTree: workTree,
		Files: len(entries), TarSHA256: hex.EncodeToString(sum[:])})
	if err := os.WriteFile(filepath.Join(dir, snapshotTar), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapshotManifest), meta, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A snapshot tampered with in the cache never writes outside the tree or over a tracked file, and
// what it extracted before the bad entry is removed again.
func TestSnapshotRestoreRefusesTamperedTars(t *testing.T) {
	key := strings.Repeat("ab", 16)
	tests := []struct {
		name    string
		entries []tarEntry
	}{
		{"dot dot", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "../escape", body: "x"}}},
		{"dot dot inside", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "a/../../escape", body: "x"}}},
		{"absolute", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "OUTSIDE/abs-escape", body: "x"}}},
		{"through a symlink", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "link", typ: tar.TypeSymlink, link: "OUTSIDE"}, {name: "link/escape", body: "x"}}},
		{"symlink then file", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "ln", typ: tar.TypeSymlink, link: "README.md"}, {name: "ln", body: "over"}}},
		{"tracked file", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "README.md", body: "over"}}},
		{"tracked dir as a file", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "src", body: "over"}}},
		{"git dir", []tarEntry{{name: "ok.txt", body: "ok"}, {name: ".git/hooks/pre-commit", body: "x"}}},
		{"hard link", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "hl", typ: tar.TypeLink, link: "README.md"}}},
		{"device", []tarEntry{{name: "ok.txt", body: "ok"}, {name: "dev", typ: tar.TypeChar}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caches := &Caches{Root: t.TempDir()}
			parent := t.TempDir()
			dir, outside := filepath.Join(parent, "repo"), filepath.Join(parent, "outside")
			writeTree(t, dir, map[string]string{"README.md": "tracked\n", "src/main.go": "package main\n"})
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range tt.entries {
				tt.entries[i].link = strings.ReplaceAll(tt.entries[i].link, "OUTSIDE", outside)
				tt.entries[i].name = strings.ReplaceAll(tt.entries[i].name, "OUTSIDE", outside) // absolute
			}
			plantSnapshot(t, caches, testScope, key, dir, tt.entries)
			s, _, err := caches.LookupSnapshot(testScope, key, 0)
			if err != nil || s == nil {
				t.Fatal(s, err)
			}
			_, err = s.Restore(context.Background(), dir)
			if !errors.Is(err, ErrSnapshotUnsafe) {
				t.Fatalf("restore = %v, want ErrSnapshotUnsafe", err)
			}
			for _, p := range []string{filepath.Join(parent, "escape"), filepath.Join(outside, "escape"), filepath.Join(outside, "abs-escape")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(data) != "tracked\n" {
				t.Errorf("README.md = %q: a tracked file was overwritten", data)
			}
			left, _ := os.ReadDir(dir)
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			if strings.Join(names, ",") != "README.md,src" {
				t.Errorf("after the failed restore the tree holds %v, want its tracked files only", names)
			}
		})
	}
}

// A tar that is not the one the manifest describes (cut short, edited) is not restored.
func TestSnapshotRestoreChecksTheTar(t *testing.T) {
	caches := &Caches{Root: t.TempDir()}
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, map[string]string{"Makefile": "all:\n", "gen/a.txt": "generated\n"})
	key, _ := snapshotKey(t, a, "make")
	if _, err := caches.SaveSnapshot(context.Background(), testScope, key, a, []string{"gen/"}, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(caches.Root, testScope, SnapshotPrefix+key, snapshotTar)
	data, err := os.ReadFile(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tarPath, bytes.Replace(data, []byte("generated"), []byte("GENERATED"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _, _ := caches.LookupSnapshot(testScope, key, 0)
	if _, err := s.Restore(context.Background(), b); !errors.Is(err, ErrSnapshotUnsafe) {
		t.Fatalf("restore of an edited tar = %v, want ErrSnapshotUnsafe", err)
	}
	if _, err := os.Lstat(filepath.Join(b, "gen")); err == nil {
		t.Error("the edited tar's files were left in the tree")
	}
}

// The key follows what setup depends on, and nothing else.
func TestSnapshotKey(t *testing.T) {
	base := map[string]string{"package.json": `{"name":"x"}`, "package-lock.json": `{"v":1}`, "scripts/setup.sh": "npm ci\n",
		"requirements-dev.txt": "pytest\n", "src/app.js": "1\n"}
	cmds := []string{"./scripts/setup.sh", "pip install -r requirements-dev.txt"}
	key := func(files map[string]string, cmds []string, network string) string {
		t.Helper()
		dir := t.TempDir()
		writeTree(t, dir, files)
		k, _, err := SnapshotKey(dir, SnapshotInputs{Commands: cmds, Network: network})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	with := func(name, content string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		m[name] = content
		return m
	}
	ref := key(base, cmds, "allowlist")
	changes := []struct {
		name string
		key  string
		same bool
	}{
		{"the same", key(base, cmds, "allowlist"), true},
		{"a source file", key(with("src/app.js", "2\n"), cmds, "allowlist"), true},
		{"the lock file", key(with("package-lock.json", `{"v":2}`), cmds, "allowlist"), false},
		{"a manifest", key(with("package.json", `{"name":"y"}`), cmds, "allowlist"), false},
		{"a new manifest", key(with(".nvmrc", "20\n"), cmds, "allowlist"), false},
		{"the named script", key(with("scripts/setup.sh", "npm install\n"), cmds, "allowlist"), false},
		{"a named requirements file", key(with("requirements-dev.txt", "pytest==8\n"), cmds, "allowlist"), false},
		{"the commands", key(base, []string{"./scripts/setup.sh"}, "allowlist"), false},
		{"the network", key(base, cmds, "none"), false},
	}
	for _, c := range changes {
		if (c.key == ref) != c.same {
			t.Errorf("%s: key %s vs %s, want same=%v", c.name, c.key, ref, c.same)
		}
	}
}

func TestCommandPaths(t *testing.T) {
	got := commandPaths(`./scripts/setup.sh && pip install -r requirements-dev.txt --constraint=c.txt; cat "/etc/passwd" ../up *.txt`)
	want := "scripts/setup.sh,pip,install,-r,requirements-dev.txt,--constraint,c.txt,cat"
	if strings.Join(got, ",") != want {
		t.Errorf("commandPaths = %v, want %s", got, want)
	}
}

// A snapshot is used while it is younger than the max age, in its own scope only, and only while the
// dependency cache it was made with is there.
func TestLookupSnapshot(t *testing.T) {
	caches := &Caches{Root: t.TempDir()}
	a := t.TempDir()
	writeTree(t, a, map[string]string{"go.sum": "x\n", "go.mod": "module m\n"})
	key, lock := snapshotKey(t, a, "go mod download")
	if _, err := caches.Open(testScope, a); err != nil {
		t.Fatal(err)
	}
	if _, err := caches.SaveSnapshot(context.Background(), testScope, key, a, nil, SnapshotOptions{LockKey: lock}); err != nil {
		t.Fatal(err)
	}
	if s, _, err := caches.LookupSnapshot(testScope, key, 0); err != nil || s == nil {
		t.Fatalf("fresh snapshot not found: %v", err)
	}
	if s, why, _ := caches.LookupSnapshot("inst-2--o--r", key, 0); s != nil || why != "no snapshot" {
		t.Errorf("scope B found scope A's snapshot (%q)", why)
	}
	// Aged: the manifest says it was taken 13 hours ago.
	mp := filepath.Join(caches.Root, testScope, SnapshotPrefix+key, snapshotManifest)
	data, _ := os.ReadFile(mp)
	var m snapshotMeta
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Created = time.Now().Add(-13 * time.Hour)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(mp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := caches.LookupSnapshot(testScope, key, 0); s == nil {
		t.Error("a 13-hour-old snapshot is not used with the default max age (24h)")
	}
	if s, why, _ := caches.LookupSnapshot(testScope, key, 12*time.Hour); s != nil || !strings.Contains(why, "older than 12h") {
		t.Errorf("a 13-hour-old snapshot with max age 12h: %v, %q; want none", s, why)
	}
	if err := os.RemoveAll(filepath.Join(caches.Root, testScope, lock)); err != nil {
		t.Fatal(err)
	}
	if s, why, _ := caches.LookupSnapshot(testScope, key, 0); s != nil || !strings.Contains(why, "dependency cache") {
		t.Errorf("snapshot without its dependency cache: %v, %q; want none", s, why)
	}
}

// ls shows snapshots as such; prune takes a snapshot with the dependency cache it was made with, and
// the leftovers of a crashed save.
func TestPruneTakesSnapshotsWithTheirCache(t *testing.T) {
	caches := &Caches{Root: t.TempDir()}
	a := t.TempDir()
	writeTree(t, a, map[string]string{"go.sum": "x\n"})
	key, lock := snapshotKey(t, a, "go mod download")
	if _, err := caches.Open(testScope, a); err != nil {
		t.Fatal(err)
	}
	if _, err := caches.SaveSnapshot(context.Background(), testScope, key, a, nil, SnapshotOptions{LockKey: lock}); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(caches.Root, testScope, "."+SnapshotPrefix+key+"-123")
	if err := os.Mkdir(crashed, 0o700); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * time.Hour)
	_ = os.Chtimes(crashed, long, long)
	entries, err := caches.List()
	if err != nil || len(entries) != 2 {
		t.Fatalf("ls = %+v, %v; want the cache and the snapshot", entries, err)
	}
	kinds := map[string]string{}
	for _, e := range entries {
		kinds[e.Key] = e.Kind
	}
	if kinds[lock] != KindDependencies || kinds[SnapshotPrefix+key] != KindSnapshot {
		t.Errorf("kinds = %v", kinds)
	}
	// The run's own keys stay.
	if removed, err := caches.PruneScope(testScope, -1, lock, SnapshotPrefix+key); err != nil || len(removed) != 0 {
		t.Errorf("prune removed %+v (%v), want nothing kept", removed, err)
	}
	if _, err := os.Stat(crashed); err == nil {
		t.Error("a crashed save's directory survived the prune")
	}
	removed, err := caches.Prune(-1, SnapshotPrefix+key)
	if err != nil || len(removed) != 2 {
		t.Fatalf("prune of the cache removed %+v (%v), want it and its snapshot", removed, err)
	}
}

// A node_modules-sized tree: 20,000 files of 4 KiB in 400 directories (80 MiB). go test -bench
// SnapshotRestore -run '^$' ./runner/env reports a restore's time per op.
func BenchmarkSnapshotRestore(b *testing.B) {
	caches := &Caches{Root: b.TempDir()}
	src := b.TempDir()
	body := strings.Repeat("module.exports = 42;\n", 4096/21)
	for d := 0; d < 400; d++ {
		dir := filepath.Join(src, "node_modules", "pkg"+strings.Repeat("x", d%7), "d"+string(rune('a'+d%26))+strings.Repeat("0", d/26))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 50; f++ {
			if err := os.WriteFile(filepath.Join(dir, "f"+strings.Repeat("1", f)+".js"), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	key, _, err := SnapshotKey(src, SnapshotInputs{Commands: []string{"npm ci"}})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	info, err := caches.SaveSnapshot(context.Background(), testScope, key, src, []string{"node_modules/"}, SnapshotOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("saved %d entries, %d bytes in %s", info.Files, info.Bytes, time.Since(start))
	s, _, err := caches.LookupSnapshot(testScope, key, 0)
	if err != nil || s == nil {
		b.Fatal(s, err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(b.TempDir(), "repo")
		if err := os.Mkdir(dst, 0o755); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Restore(context.Background(), dst); err != nil {
			b.Fatal(err)
		}
	}
}
