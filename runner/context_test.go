package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

// promptAgent keeps each task's prompt.
const promptAgent = logCall + `cp "$AKIRA_PROMPT_FILE" "$LOG/prompt-$AKIRA_TASK_ID"; echo ok > "out-$AKIRA_TASK_ID.txt"`

// TestPlanFilesInPrompts: a GSD plan's task gets its NN-MM-PLAN.md (from .planning/phases/) in its
// prompt, never a file outside the work tree a symlink points at; spec-kit tasks get spec.md and
// plan.md; Kiro's optional tasks are skipped unless included.
func TestPlanFilesInPrompts(t *testing.T) {
	gsd := "# Roadmap\n\n## Phases\n\n- [ ] **Phase 1: Setup** — the base\n\n## Phase Details\n\n### Phase 1: Setup\n\nPlans:\n" +
		"- [ ] 01-01-PLAN.md — Scaffold the module\n- [ ] 01-02-PLAN.md — Add the linter\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": gsd,
		".planning/phases/01-setup/01-01-PLAN.md": "# Plan 01-01\n\nCreate go.mod with module example.com/ledger and a ```main.go```.\n"})
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET outside the repository\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hostile repository links the second plan file to a file of the machine (pushed from a clone
	// of its own: the user's clone must stay as it was).
	other := filepath.Join(t.TempDir(), "other")
	gittest.Git(t, filepath.Dir(other), "clone", "-q", f.repo.Remote, other)
	if err := os.Symlink(secret, filepath.Join(other, ".planning", "phases", "01-setup", "01-02-PLAN.md")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, other, "add", "-A")
	gittest.Git(t, other, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "link")
	gittest.Git(t, other, "push", "-q", "origin", "HEAD:main")
	out, _, err := f.run(t, Options{Agent: f.agent(promptAgent)})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run: %v (%s)", err, out.Status)
	}
	p1, _ := os.ReadFile(filepath.Join(f.logs, "prompt-01-01"))
	if !strings.Contains(string(p1), "### .planning/phases/01-setup/01-01-PLAN.md") || !strings.Contains(string(p1), "module example.com/ledger") ||
		!strings.Contains(string(p1), "````markdown") {
		t.Errorf("01-01's prompt lacks its plan file, fenced:\n%s", p1)
	}
	if p2, _ := os.ReadFile(filepath.Join(f.logs, "prompt-01-02")); strings.Contains(string(p2), "TOP-SECRET") {
		t.Error("a symlinked plan file brought a file from outside the work tree into the prompt")
	}

	kiro := "# Tasks\n\n- [ ] 1. Build\n  - [ ] 1.1 Write the code\n  - [ ]* 1.2 Write property tests\n"
	k := newFixture(t, map[string]string{"tasks.md": kiro})
	out, _, err = k.run(t, Options{Inputs: Inputs{Roadmap: "tasks.md"}, Agent: k.agent(promptAgent)})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("kiro run: %v (%s)", err, out.Status)
	}
	wantCalls(t, k, "1.1:1")
	if r := out.Tasks[1]; r.ID != "1.2" || r.Status != TaskSkipped || !strings.Contains(r.Note, "optional") {
		t.Errorf("the optional task: %+v", r)
	}
	k2 := newFixture(t, map[string]string{"tasks.md": kiro})
	if out, _, err = k2.run(t, Options{Inputs: Inputs{Roadmap: "tasks.md", IncludeOptional: true}, Agent: k2.agent(promptAgent)}); err != nil || out.Status != StatusSucceeded {
		t.Fatalf("kiro run with optional tasks: %v", err)
	}
	wantCalls(t, k2, "1.1:1", "1.2:1")

	spec := "# Tasks: Albums\n\n## Phase 1: Setup\n\n- [ ] T001 [P] Create the project\n"
	s := newFixture(t, map[string]string{"specs/001-albums/tasks.md": spec, "specs/001-albums/spec.md": "Users sort photos into ALBUMS-SPEC.\n",
		"specs/001-albums/plan.md": "Use SQLite: PLAN-NOTE.\n"})
	if out, _, err = s.run(t, Options{Inputs: Inputs{Roadmap: "specs/001-albums/tasks.md"}, Agent: s.agent(promptAgent)}); err != nil || out.Status != StatusSucceeded {
		t.Fatalf("spec-kit run: %v", err)
	}
	if p, _ := os.ReadFile(filepath.Join(s.logs, "prompt-T001")); !strings.Contains(string(p), "ALBUMS-SPEC") || !strings.Contains(string(p), "PLAN-NOTE") {
		t.Errorf("the spec-kit task's prompt lacks spec.md and plan.md:\n%s", p)
	}
}
