package llm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The built-in agent lists files with git in Akira's own process, outside the sandbox, on a tree
// the agent wrote. A repository configuration that names a program (an fsmonitor, a hook) must not
// get it run there.
func TestFileListingRunsNothingTheRepositoryNames(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "main.go")
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "monitor.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("config", "core.fsmonitor", script)

	ws, err := openWorkspace(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ws.files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "main.go") {
		t.Errorf("files = %q, want main.go among them", files)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("listing the workspace's files ran the core.fsmonitor program the repository's configuration names")
	}
}
