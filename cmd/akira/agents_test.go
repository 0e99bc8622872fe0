package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/gittest"
)

// EnvAgentsDir names the directory where `make test-agents` installed the pinned coding-agent CLIs
// (node_modules/.bin/claude and codex). Without it the tests of the real CLIs are skipped, unless
// EnvAgentsRequired is set (CI), where that is a failure.
const (
	EnvAgentsDir      = "AKIRA_TEST_AGENTS_DIR"
	EnvAgentsRequired = "AKIRA_TEST_AGENTS_REQUIRED"
)

func agentsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvAgentsDir)
	if dir == "" {
		if os.Getenv(EnvAgentsRequired) != "" {
			t.Fatalf("%s is not set: run make test-agents", EnvAgentsDir)
		}
		t.Skipf("the real coding-agent CLIs are not installed: run make test-agents (sets %s)", EnvAgentsDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The real Claude Code and Codex CLIs, as the deploy image pins them, complete a task through
// `akira run` against scripted model servers speaking the real protocols: in the default sandbox
// (network allowlist: the egress proxy holds the key and meters the calls) and with --sandbox none.
// The CLI creates the file, the task verifies, the checkpoint lands, usage and cost are recorded
// from the metered calls, and the model server saw only the real key while the agent held a
// placeholder.
func TestRealAgents(t *testing.T) {
	dir := agentsDir(t)
	bin := filepath.Join(dir, "node_modules", ".bin")
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	cases := []struct {
		name, cli, keyVar, baseVar, command string
		fake                                func(testing.TB, string) *modeltest.Server
	}{
		{name: "claude", cli: "claude", keyVar: "ANTHROPIC_API_KEY", baseVar: "ANTHROPIC_BASE_URL",
			command: "claude -p --permission-mode acceptEdits --output-format json --model claude-sonnet-4-5", fake: modeltest.NewAnthropic},
		{name: "codex", cli: "codex", keyVar: "CODEX_API_KEY", baseVar: "OPENAI_BASE_URL",
			command: `codex exec -c openai_base_url="$OPENAI_BASE_URL" -s workspace-write --skip-git-repo-check --json -m gpt-5 -`, fake: modeltest.NewOpenAI},
	}
	for _, c := range cases {
		for _, box := range []string{"bubblewrap", "none"} {
			t.Run(c.name+"/"+box, func(t *testing.T) {
				if box == "bubblewrap" {
					sandboxtest.Require(t)
				}
				fake := c.fake(t, realKey)
				roadmap := "# R\n\n## P\n\n- [ ] 1.1 Write hello.txt\n  - verify: `grep -q 'hello from the model' hello.txt`\n"
				f := newRunFixture(t, roadmap)
				// What the agent's process sees of its environment becomes part of the checkpoint.
				command := "env > seen-env.txt; " + c.command
				cmd := f.command("run", "--agent-cmd", command, "--env", c.keyVar,
					"--sandbox", box, "--sandbox-ro", dir, "--work-dir", f.workDir, "--non-interactive", "--json", "-v", "--agent-timeout", "90s", "--stall-timeout", "60s")
				cmd.Env = append(cmd.Env, c.keyVar+"="+realKey, c.baseVar+"="+fake.BaseURL(),
					"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
				out, err := cmd.Output()
				if err != nil {
					stderr := ""
					if ee, ok := err.(*exec.ExitError); ok {
						stderr = string(ee.Stderr)
					}
					t.Fatalf("akira run: %v\n%s\n%s\nrequests: %+v", err, out, stderr, fake.Requests())
				}
				if !fake.Wrote() {
					t.Errorf("the model was never offered a tool to write the file: %+v", fake.Requests())
				}
				if got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello from the model" {
					t.Errorf("hello.txt on the branch = %q", got)
				}
				for _, r := range fake.Requests() {
					if r.Method != "POST" {
						t.Errorf("%s %s: a model call outside the metered HTTP route", r.Method, r.Path)
					}
					if r.Key != realKey {
						t.Errorf("the model server got key %q on %s, want the real key", r.Key, r.Path)
					}
				}
				seen := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:seen-env.txt")
				if strings.Contains(seen, realKey) {
					t.Error("the agent's environment held the real key")
				}
				if !strings.Contains(seen, c.keyVar+"=akira-placeholder-") || !strings.Contains(seen, c.baseVar+"=http://127.0.0.1:") {
					t.Errorf("the agent was not given a placeholder key and the proxy's base URL:\n%s", seen)
				}
				var usage struct{ in, out int64 }
				var cost float64
				sc := bufio.NewScanner(strings.NewReader(string(out)))
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					var ev runner.Event
					if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != runner.EventAgentFinished || ev.Usage == nil {
						continue
					}
					usage.in += ev.Usage.InputTokens
					usage.out += ev.Usage.OutputTokens
					cost += ev.Usage.CostUSD
				}
				calls := int64(0)
				for _, r := range fake.Requests() {
					if r.Method == "POST" && (strings.HasSuffix(r.Path, "/messages") || strings.HasSuffix(r.Path, "/responses")) {
						calls++
					}
				}
				// Every call is metered for its input. A call the CLI gives up mid-stream (a side request
				// cut short as it exits; seen once in CI: 161 of 240 output tokens) is metered as far as its
				// stream went, the output its first event announced: the meter cannot count what never
				// came. At most one such call.
				full := calls * fake.Usage.Output
				if calls == 0 || usage.in != calls*fake.Usage.Input || usage.out > full || usage.out < full-(fake.Usage.Output-1) {
					t.Errorf("usage = %+v for %d model calls of %+v each", usage, calls, fake.Usage)
				} else if usage.out < full {
					t.Logf("one call was cut short: output %d of %d", usage.out, full)
				}
				if cost <= 0 {
					t.Errorf("no cost recorded (usage %+v, requests %+v)", usage, fake.Requests())
				}
			})
		}
	}
}
