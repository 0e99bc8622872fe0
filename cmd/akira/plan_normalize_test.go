package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
)

// outline is a plan no format reads: phases and steps without a checkbox.
const outline = `# Atlas

## Phase 1: Tiles
- Tile cache on disk
- Renderer for vector tiles (needs the cache)

## Phase 2: Search
- Index place names
  verify with: go test ./search/...
`

const normalizedAnswer = "```markdown\n# Atlas\n\n## Phase 1: Tiles\n\n" +
	"- [ ] 1.1 Tile cache on disk\n  - source: 4\n" +
	"- [ ] 1.2 Renderer for vector tiles\n  - source: 5\n  - depends: 1.1\n" +
	"\n## Phase 2: Search\n\n" +
	"- [ ] 2.1 Index place names\n  - source: 8-9\n  - verify: go test ./search/...\n  - verify: rm -rf ~\n```\n"

// writeConfig writes an operator file whose default agent is the scripted model server.
func writeConfig(t *testing.T, srv *llmtest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "akira.yaml")
	cfg := "default_agent: planner\nagents:\n  planner:\n    kind: " + srv.Kind() + "\n    model: planner-model\n    base_url: " + srv.BaseURL() +
		"\n    api_key_env: PLANNER_KEY\nsandbox: none\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PLANNER_KEY", "sk-planner")
	return path
}

func writePlan(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ROADMAP.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A plan nothing reads is one error naming the formats tried and the closest; with a planner agent
// configured, it offers --normalize.
func TestPlanNotReadOffersNormalize(t *testing.T) {
	path := writePlan(t, outline)
	t.Setenv("AKIRA_CONFIG", "")
	stdout, stderr, code := runCmd(t, "plan", path)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "no format reads this plan: no tasks found reading it as a checklist, a GSD roadmap, spec-kit tasks, Kiro tasks, an OpenSpec change. The closest is a checklist: it has 3 list items, but no task checkbox") {
		t.Fatalf("exit %d\nstdout %q\nstderr %s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "--normalize") {
		t.Errorf("hint without a planner agent:\n%s", stderr)
	}
	srv := llmtest.New(t, "openai", "planner-model", "sk-planner")
	t.Setenv("AKIRA_CONFIG", writeConfig(t, srv))
	_, stderr, code = runCmd(t, "plan", path)
	if code != 2 || !strings.Contains(stderr, "hint: akira plan --normalize "+path+" asks the planner agent (planner)") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 2 {
		t.Errorf("%d lines on stderr, want the error and the hint:\n%s", n, stderr)
	}
	// --agent-cmd is a planner agent too.
	t.Setenv("AKIRA_CONFIG", "")
	if _, stderr, _ := runCmd(t, "plan", "--agent-cmd", "./plan.sh", path); !strings.Contains(stderr, "planner agent (--agent-cmd)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if srv.Requests() != 0 {
		t.Errorf("plan without --normalize asked the model %d times", srv.Requests())
	}
}

func TestPlanNormalize(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			path := writePlan(t, outline)
			srv := llmtest.New(t, kind, "planner-model", "sk-planner", llmtest.Turn{Text: normalizedAnswer}, llmtest.Turn{Text: normalizedAnswer})
			cfg := writeConfig(t, srv)

			stdout, stderr, code := runCmd(t, "plan", "--normalize", "--config", cfg, path)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			for _, want := range []string{
				"  [ ] 1.1 Tile cache on disk                    │    4  - Tile cache on disk\n",
				"  [ ] 1.2 Renderer for vector tiles (after 1.1) │    5  - Renderer for vector tiles (needs the cache)\n",
				"  [ ] 2.1 Index place names                     │    8  - Index place names\n",
				"                                                │    9    verify with: go test ./search/...\n",
				"Dropped a verify command the agent wrote that " + path + " does not contain: rm -rf ~",
				"    - [ ] 1.2 Renderer for vector tiles\n      - depends: 1.1\n",
				"Nothing was written or run.",
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, stdout)
				}
			}
			if got, _ := os.ReadFile(path); string(got) != outline {
				t.Fatalf("--normalize without --write changed the plan:\n%s", got)
			}

			stdout, stderr, code = runCmd(t, "plan", "--normalize", "--write", "--config", cfg, path)
			if code != 0 || !strings.Contains(stdout, "Wrote "+path) {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			if orig, _ := os.ReadFile(path + ".orig"); string(orig) != outline {
				t.Errorf("original not kept:\n%s", orig)
			}
			written, _ := os.ReadFile(path)
			if strings.Contains(string(written), "rm -rf") || strings.Contains(string(written), "source:") {
				t.Errorf("written plan:\n%s", written)
			}
			// What was written is a plan akira reads, in the order its author meant.
			stdout, stderr, code = runCmd(t, "plan", path)
			if code != 0 || !strings.Contains(stdout, "Execution order: 1.1, 1.2, 2.1") {
				t.Errorf("the written plan: exit %d\n%s%s", code, stdout, stderr)
			}
			if srv.Remaining() != 0 {
				t.Errorf("%d turns unused", srv.Remaining())
			}
			// A second --write never overwrites the kept original; a plan read with confidence is
			// not normalized.
			if _, stderr, code := runCmd(t, "plan", "--normalize", "--config", cfg, path); code != 2 || !strings.Contains(stderr, "--normalize is for plans no format reads with confidence") {
				t.Errorf("normalizing a read plan: exit %d, %s", code, stderr)
			}
		})
	}
}

func TestPlanNormalizeErrors(t *testing.T) {
	path := writePlan(t, outline)
	t.Setenv("AKIRA_CONFIG", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--write", path}, "--write writes what --normalize proposes"},
		{[]string{"plan", "--normalize", path}, "--normalize needs a planner agent"},
		{[]string{"plan", "--normalize", "--agent", "openai", path}, "no model"},
	}
	for _, tt := range tests {
		if _, stderr, code := runCmd(t, tt.args...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("akira %s: exit %d, %q; want %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	// The model's answer holds no plan, twice: nothing is written.
	srv := llmtest.New(t, "openai", "planner-model", "sk-planner", llmtest.Turn{Text: "no"}, llmtest.Turn{Text: "still no"})
	cfg := writeConfig(t, srv)
	if _, stderr, code := runCmd(t, "plan", "--normalize", "--write", "--config", cfg, path); code != 1 || !strings.Contains(stderr, "held no plan that parses") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(path + ".orig"); err == nil {
		t.Error("an original was kept although nothing was written")
	}
}
