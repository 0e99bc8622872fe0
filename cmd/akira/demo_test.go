package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs the README's first command (make demo, minus the build, which TestMain did) so that it
// cannot silently rot: every task of the demo roadmap gets exactly one checkpoint, and task 1.3 needs the
// feedback of its failed first attempt.
func TestDemo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo's verify commands need the go tool")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "AKIRA_BIN="+akiraBin, "DEMO_DIR="+dir, "DEMO_AGENT_DELAY=0", "DEMO_FLAGS=--non-interactive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"attempt 1 failed", "All tasks are done.", "git -C " + filepath.Join(dir, "calc") + " log"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}

	log := exec.Command("git", "-C", filepath.Join(dir, "calc"), "log", "--format=%(trailers:key=Akira-Task,valueonly)", "akira/roadmap")
	raw, err := log.Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	if got, want := strings.Join(strings.Fields(string(raw)), ","), "2.2,2.1,1.3,1.2,1.1"; got != want {
		t.Fatalf("checkpoints on akira/roadmap (newest first) = %s, want %s", got, want)
	}
	roadmap, err := exec.Command("git", "-C", filepath.Join(dir, "calc"), "show", "akira/roadmap:ROADMAP.md").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(roadmap), "[ ]") {
		t.Fatalf("roadmap on the branch still has open boxes:\n%s", roadmap)
	}
}
