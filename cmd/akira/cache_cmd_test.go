package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/env"
)

func TestCacheLsAndPrune(t *testing.T) {
	root := t.TempDir()
	c := &env.Caches{Root: root}
	for _, lock := range []string{"one", "two"} {
		repo := t.TempDir()
		if err := os.WriteFile(filepath.Join(repo, "go.sum"), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
		cache, err := c.Open(env.ScopeName("inst", "1", "o", "r"), repo)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache.Dir, "npm", "blob"), make([]byte, 2048), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runCmd(t, "cache", "ls", "--dir", root)
	if code != 0 || !strings.Contains(out, "inst--1--o--r-") || !strings.Contains(out, "2 caches, 4.0 KiB") || !strings.Contains(out, " dependencies ") {
		t.Fatalf("akira cache ls: exit %d, %q %q", code, out, errOut)
	}
	// A setup snapshot shows as one.
	repo := t.TempDir()
	key, _, err := env.SnapshotKey(repo, env.SnapshotInputs{Commands: []string{"make"}})
	if err != nil {
		t.Fatal(err)
	}
	snapScope := env.ScopeName("inst", "2", "o", "r")
	if _, err := c.SaveSnapshot(t.Context(), snapScope, key, repo, nil, env.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCmd(t, "cache", "ls", "--dir", root); code != 0 || !strings.Contains(out, "setup-"+key+"  setup snapshot") {
		t.Fatalf("akira cache ls with a snapshot: exit %d, %q %q", code, out, errOut)
	}
	if err := os.RemoveAll(filepath.Join(root, snapScope)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCmd(t, "cache", "prune", "--dir", root, "--max", "3000")
	if code != 0 || !strings.Contains(out, "1 caches removed, 2.0 KiB freed") {
		t.Fatalf("akira cache prune --max: exit %d, %q %q", code, out, errOut)
	}
	out, _, code = runCmd(t, "cache", "prune", "--dir", root, "--all")
	if left, _ := c.List(); code != 0 || len(left) != 0 || !strings.Contains(out, "1 caches removed") {
		t.Fatalf("akira cache prune --all: exit %d, %q, left %+v", code, out, left)
	}
	if _, errOut, code := runCmd(t, "cache", "prune", "--dir", root, "--max", "lots"); code != 2 || !strings.Contains(errOut, "--max") {
		t.Errorf("a bad --max: exit %d, %q", code, errOut)
	}
}
