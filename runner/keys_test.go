package runner

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/sandbox"
)

// TestProviderKeysNeverReachACommand: a caller that says nothing of model keys (the sandbox config
// withholds none) and even names the providers' variables for the agent and for verification still
// hands none of them on: the engine withholds them, with their values, from the agent, setup and
// verification, in the real sandbox. What each command saw lands on the pushed branch.
func TestProviderKeysNeverReachACommand(t *testing.T) {
	sandboxtest.Require(t)
	const key = "sk-engine-floor-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("GEMINI_API_KEY", key+"-gemini")
	t.Setenv("NOT_A_KEY", "passes")
	f := newFixture(t, map[string]string{
		"ROADMAP.md":        "# R\n\n- [ ] T1: Do the task\n  - verify: `env > verify-env.txt`\n",
		".github/akira.yml": "setup: ['env > setup-env.txt']\n",
	})
	ag := &agent.Exec{Command: "env > agent-env.txt; cp setup-env.txt setup-seen.txt", PassEnv: []string{"OPENAI_API_KEY", "GEMINI_API_KEY", "NOT_A_KEY"}}
	out, _, err := f.run(t, Options{Agent: ag, Env: []string{"OPENAI_API_KEY", "GEMINI_API_KEY", "NOT_A_KEY"},
		Sandbox:      sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, Limits: sandbox.Limits{CPU: 60e9, Memory: 1 << 30}},
		AgentNetwork: sandbox.NetNone})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run = %v, %v", out.Status, err)
	}
	for _, file := range []string{"agent-env.txt", "setup-seen.txt", "verify-env.txt"} {
		seen := gittest.Git(t, f.repo.Remote, "show", "refs/heads/akira/roadmap:"+file)
		if strings.Contains(seen, key) {
			t.Errorf("%s holds a model key:\n%s", file, seen)
		}
		if !strings.Contains(seen, "NOT_A_KEY=passes") {
			t.Errorf("%s lacks a variable that is no key, which was passed:\n%s", file, seen)
		}
	}
}
