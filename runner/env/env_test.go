package env

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		files       []string
		wantInstall string
		wantReason  string
	}{
		{[]string{"go.mod", "Makefile"}, "go mod download", "go.mod"},
		{[]string{"package.json", "package-lock.json"}, "npm ci", "package.json + package-lock.json"},
		{[]string{"package.json", "pnpm-lock.yaml"}, "pnpm install --frozen-lockfile", "package.json + pnpm-lock.yaml"},
		{[]string{"package.json", "yarn.lock"}, "yarn install --frozen-lockfile", "package.json + yarn.lock"},
		{[]string{"package.json"}, "npm install", "package.json"},
		{[]string{"pyproject.toml", "uv.lock"}, "uv sync --frozen", "pyproject.toml + uv.lock"},
		{[]string{"pyproject.toml", "poetry.lock"}, "poetry install --no-interaction", "pyproject.toml + poetry.lock"},
		{[]string{"requirements.txt"}, "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt", "requirements.txt"},
		{[]string{"Cargo.toml"}, "cargo fetch", "Cargo.toml"},
		{[]string{"Makefile"}, "make", "Makefile"},
		{[]string{"README.md"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.files, ","), func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Detect(dir); got.Install != tt.wantInstall || got.Reason != tt.wantReason {
				t.Errorf("Detect = %+v, want %q from %q", got, tt.wantInstall, tt.wantReason)
			}
		})
	}
}

func TestDetectIgnoresASymlinkedBuildFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if got := Detect(dir); got.Install != "" {
		t.Errorf("Detect = %+v, want nothing for a symlink", got)
	}
}

func TestSetupLogKeepsBothEndsOfALongOutput(t *testing.T) {
	res, err := Setup(context.Background(), t.TempDir(), []string{"echo FIRST; head -c 3000000 /dev/zero | tr '\\0' 'a'; echo; echo LAST"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() != nil {
		t.Fatalf("setup failed: %+v", res.Failed())
	}
	if len(res.Log) > MaxLogBytes+100 || !strings.Contains(res.Log, "FIRST") || !strings.Contains(res.Log, "LAST") || !strings.Contains(res.Log, "bytes not kept") {
		t.Errorf("log of %d bytes: want at most %d with both ends and a note of what was cut", len(res.Log), MaxLogBytes)
	}
}

func TestScopeNameKeepsScopesApart(t *testing.T) {
	a, b := ScopeName("inst", "1", "o", "r"), ScopeName("inst", "1", "o", "r/../../x")
	if a == b || strings.ContainsAny(b, "/\\") || strings.HasPrefix(b, ".") {
		t.Errorf("ScopeName = %q and %q, want two plain, different directory names", a, b)
	}
	if ScopeName("inst", "1", "O", "R") == ScopeName("inst", "2", "o", "r") {
		t.Error("two installations share a scope")
	}
}

func TestPruneRemovesTheLeastRecentlyUsedFirst(t *testing.T) {
	c := &Caches{Root: t.TempDir()}
	var keys []string
	for i, lock := range []string{"a", "b", "c"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
		cache, err := c.Open("s", dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache.Dir, "go/mod/blob"), make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		// Oldest first: a, then b, then c.
		old := time.Now().Add(time.Duration(i-3) * time.Hour)
		if err := os.Chtimes(cache.Dir, old, old); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, cache.Key)
	}
	removed, err := c.Prune(2000, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Key != keys[1] {
		t.Fatalf("removed %+v, want only b (a is kept as in use, c is the newest)", removed)
	}
	left, _ := c.List()
	if len(left) != 2 || left[0].Key != keys[2] || left[1].Key != keys[0] {
		t.Errorf("left %+v, want c then a", left)
	}
}

func TestPruneScopeLeavesOtherScopesAlone(t *testing.T) {
	c := &Caches{Root: t.TempDir()}
	for _, scope := range []string{"a", "b"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "Cargo.lock"), []byte(scope), 0o644); err != nil {
			t.Fatal(err)
		}
		cache, err := c.Open(scope, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache.Dir, "cargo", "blob"), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := c.PruneScope("a", -1, "")
	if err != nil || len(removed) != 1 || removed[0].Scope != "a" {
		t.Fatalf("removed %+v, %v; want a's one key", removed, err)
	}
	if left, _ := c.List(); len(left) != 1 || left[0].Scope != "b" {
		t.Errorf("left %+v, want b's key untouched", left)
	}
	if _, err := c.Open("../b", t.TempDir()); err == nil {
		t.Error("a scope that climbs out of the root was accepted")
	}
}
