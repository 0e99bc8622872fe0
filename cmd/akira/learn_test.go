package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/judge"
)

// TestRunBinaryLearnsAndJudges: through `akira run`, a task its agent cannot do parks; a lesson
// written with `akira memory remember` reaches the next run's prompt for that task (and not the
// unrelated one's), the task passes, and the configured judge accepts it against its criterion.
func TestRunBinaryLearnsAndJudges(t *testing.T) {
	plan := "- [ ] 1 Add a flaky parser\n  - verify: `test -f out-1.txt`\n  - accept: the parser is documented\n" +
		"- [ ] 2 Write the release notes\n  - verify: `test -f out-2.txt`\n"
	f := newRunFixture(t, plan)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	mustWrite(t, agent, `#!/bin/sh
cp "$AKIRA_PROMPT_FILE" "$AKIRA_TEST_LOG/prompt-$AKIRA_TASK_ID"
case "$AKIRA_TASK_TITLE" in
*flaky*) grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE" || { echo "no magic word" >&2; exit 3; } ;;
esac
echo ok > "out-$AKIRA_TASK_ID.txt"
`)
	model := llmtest.NewOpenAI(t, "judge-mini", "sk-judge", llmtest.Turn{Calls: []llmtest.Call{{Name: judge.ToolName, Args: map[string]any{
		"criteria": []any{map[string]any{"criterion": "the parser is documented", "pass": true, "reason": "out-1.txt documents it"}}, "confidence": 0.9}}}})
	cfg := filepath.Join(t.TempDir(), "akira.yaml")
	mustWrite(t, cfg, ("judge:\n  kind: openai\n  model: judge-mini\n  base_url: " + model.BaseURL() + "\n  api_key_env: AKIRA_TEST_JUDGE_KEY\n"))
	env := []string{"AKIRA_MEMORY_DIR=" + t.TempDir(), "AKIRA_TEST_JUDGE_KEY=sk-judge"}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := f.command(args...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	runArgs := []string{"run", "--agent-cmd", agent, "--env", "AKIRA_TEST_LOG", "--work-dir", f.workDir, "--non-interactive",
		"--sandbox", "none", "--config", cfg, "--max-attempts", "1"}

	if stdout, stderr, code := run(runArgs...); code != 3 {
		t.Fatalf("run 1: exit %d, want 3 (the flaky task parked)\n%s\n%s", code, stdout, stderr)
	}
	if model.Requests() != 0 {
		t.Errorf("the judge was asked about a task whose verification never passed")
	}
	if out, stderr, code := run("memory", "remember", "the flaky parser tests need the MAGIC-WORD seed"); code != 0 {
		t.Fatalf("remember: exit %d %s %s", code, out, stderr)
	}
	stdout, stderr, code := run(runArgs...)
	if code != 0 {
		t.Fatalf("run 2: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if p, err := os.ReadFile(filepath.Join(f.logs, "prompt-1")); err != nil || !strings.Contains(string(p), "MAGIC-WORD") {
		t.Errorf("run 2's prompt for the flaky task lacks the lesson (%v)", err)
	}
	if p, _ := os.ReadFile(filepath.Join(f.logs, "prompt-2")); strings.Contains(string(p), "MAGIC-WORD") {
		t.Error("the unrelated task's prompt has the lesson")
	}
	if model.Requests() != 1 || !strings.Contains(stdout, "judge judge-mini: accepted, confidence 0.90") {
		t.Errorf("the judge was asked %d times; output:\n%s", model.Requests(), stdout)
	}
}
