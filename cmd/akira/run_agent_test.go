package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/gittest"
)

// `akira run --agent openai --model M` drives the built-in agent against the OpenAI-compatible endpoint
// of OPENAI_BASE_URL (here a scripted server speaking the real protocol), and its edits become the checkpoint.
func TestRunBuiltinAgentFromEnvironment(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			f := newRunFixture(t, "# R\n\n## P\n\n- [ ] 1.1 Say hello\n  - verify: `grep -qx hello hello.txt`\n")
			srv := llmtest.New(t, kind, "test-model", "sk-test-key",
				llmtest.Turn{Calls: []llmtest.Call{{Name: "write_file", Args: map[string]any{"path": "hello.txt", "content": "hello\n"}}}},
				llmtest.Turn{Text: "Wrote hello.txt."},
			)
			prefix := strings.ToUpper(kind)
			cmd := f.command("run", "--agent", kind, "--model", "test-model", "--work-dir", f.workDir, "--non-interactive")
			cmd.Env = append(cmd.Env, prefix+"_BASE_URL="+srv.BaseURL(), prefix+"_API_KEY=sk-test-key")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("akira run: %v\n%s", err, out)
			}
			if srv.Remaining() != 0 {
				t.Fatalf("%d scripted turns left unused", srv.Remaining())
			}
			if got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello" {
				t.Fatalf("hello.txt on the branch = %q", got)
			}
			if strings.Contains(string(out), "sk-test-key") {
				t.Fatalf("the API key was printed:\n%s", out)
			}
		})
	}
}

func TestRunAgentSelectionErrors(t *testing.T) {
	f := newRunFixture(t, "- [ ] 1.1 x\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--work-dir", f.workDir}, "no agent: give the coding agent's command with --agent-cmd"},
		{[]string{"run", "--work-dir", f.workDir, "--agent", "gpt"}, `agent "gpt" is not a profile of the configuration nor a built-in agent (openai, anthropic)`},
		{[]string{"run", "--work-dir", f.workDir, "--agent", "openai"}, "no model: set model in the profile or pass --model"},
		{[]string{"run", "--work-dir", f.workDir, "--agent", "openai", "--agent-cmd", "true"}, "--agent-cmd and --agent both choose the agent"},
		{[]string{"run", "--work-dir", f.workDir, "--config", "does-not-exist.yaml", "--agent", "x"}, "does-not-exist.yaml"},
	}
	for _, tt := range tests {
		_, stderr, code := f.run(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("akira %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
}

// An operator file's profile is an agent too: its command, and only the variables its env list names.
func TestRunWithOperatorProfile(t *testing.T) {
	t.Setenv("SOME_SECRET", "s3cret-value")
	f := newRunFixture(t, "")
	cfg := filepath.Join(t.TempDir(), "akira.yaml")
	if err := os.WriteFile(cfg, []byte("default_agent: scripted\nagents:\n  scripted:\n    kind: exec\n    command: "+f.agent+"\n    env: [AKIRA_TEST_LOG]\nsandbox: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := f.run(t, "run", "--config", cfg, "--work-dir", f.workDir, "--non-interactive")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := []string{"akira: 1.1 First file|1.1", "akira: 1.2 Second file|1.2", "akira: 1.3 Third file|1.3"}
	if got := f.branch(t); !slices.Equal(got, want) {
		t.Fatalf("branch = %q, want %q", got, want)
	}
	env, err := os.ReadFile(filepath.Join(f.logs, "env-1.1-1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "s3cret-value") || !strings.Contains(string(env), "AKIRA_TEST_LOG=") {
		t.Fatalf("agent environment:\n%s", env)
	}
}

// TestRunAgentScriptOutsideRepository: the newcomer's first run, an agent script kept outside the
// repository under the default sandbox, ends before any attempt (exit 2) with an error that says the
// sandbox hides the script and how to show it; --sandbox-ro with the script's directory then runs it.
func TestRunAgentScriptOutsideRepository(t *testing.T) {
	sandboxtest.Require(t)
	roadmap := "# R\n\n- [ ] 1.1 First file\n  - verify: `test -f 1.1.txt`\n"
	f := newRunFixture(t, roadmap)
	scripts := t.TempDir()
	script := filepath.Join(scripts, "agent.sh")
	mustWrite(t, script, "#!/bin/sh\necho \"$AKIRA_TASK_TITLE\" > \"$AKIRA_TASK_ID.txt\"\n")

	stdout, stderr, code := f.run(t, "run", "--agent-cmd", script, "--work-dir", f.workDir, "--non-interactive")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (an agent that cannot run, found before the first attempt)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	hint := "the sandbox hides " + script
	fix := "akira run --sandbox-ro " + scripts
	for _, want := range []string{hint, fix, "put the script in the repository"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the error lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout+stderr, "parked") || strings.Contains(stdout+stderr, "needs a decision") || len(f.calls(t)) != 0 {
		t.Errorf("an attempt was made, or a task parked:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	stdout, stderr, code = f.run(t, "run", "--agent-cmd", script, "--sandbox-ro", scripts, "--work-dir", f.workDir, "--non-interactive")
	if code != 0 {
		t.Fatalf("with the fix it names: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:1.1.txt"); got != "First file" {
		t.Errorf("1.1.txt = %q", got)
	}
}
