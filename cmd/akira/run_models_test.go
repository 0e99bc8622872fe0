package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunUnpricedModelAtStart: `akira run` says at start when the agent's metered calls would be
// recorded at $0 (a model without a price, or none named, so that the CLI runs one of its own):
// a warning naming the profile, the model and the fix, or, when the configuration's budget has a
// cost limit that could then never bind, an error before anything runs.
func TestRunUnpricedModelAtStart(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	roadmap := "# R\n\n- [ ] 1.1 First file\n  - verify: `test -f 1.1.txt`\n"
	profile := func(f *runFixture, model, extra string) string {
		cfg := filepath.Join(t.TempDir(), "akira.yaml")
		text := "default_agent: cli\nagents:\n  cli:\n    kind: exec\n    command: " + f.agent + "\n    env: [AKIRA_TEST_LOG]\n    api: anthropic\n" +
			"    model: " + model + "\nsandbox: none\n" + extra
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const unpriced = `agent cli: model "claude-opus-5-5" has no price: add it to prices:`
	tests := []struct {
		name         string
		args         func(f *runFixture) []string
		code         int
		want, absent []string
	}{
		{name: "unpriced, no budget", args: func(f *runFixture) []string { return []string{"--config", profile(f, "claude-opus-5-5", "")} },
			want: []string{"akira: warning: " + unpriced}},
		{name: "unpriced, cost budget", args: func(f *runFixture) []string {
			return []string{"--config", profile(f, "claude-opus-5-5", "budget: {cost_usd: 3}\n")}
		}, code: 2, want: []string{unpriced, "budget.cost_usd ($3.00) could not bind it"}},
		{name: "priced by the operator's table, cost budget", args: func(f *runFixture) []string {
			return []string{"--config", profile(f, "claude-opus-5-5", "budget: {cost_usd: 3}\nprices: {claude-opus-5-5: {input_per_mtok: 5, output_per_mtok: 25}}\n")}
		}, absent: []string{"has no price"}},
		{name: "a CLI without a model", args: func(f *runFixture) []string {
			return []string{"--agent-cmd", f.agent, "--env", "ANTHROPIC_API_KEY", "--env", "AKIRA_TEST_LOG"}
		}, want: []string{"akira: warning: agent --agent-cmd: no model"}},
		{name: "a CLI told its model", args: func(f *runFixture) []string {
			return []string{"--agent-cmd", f.agent, "--env", "ANTHROPIC_API_KEY", "--env", "AKIRA_TEST_LOG", "--model", "claude-sonnet-4-5"}
		}, absent: []string{"no model", "has no price"}},
		{name: "a script, nothing metered", args: func(f *runFixture) []string {
			return []string{"--agent-cmd", f.agent, "--env", "AKIRA_TEST_LOG"}
		}, absent: []string{"no model", "has no price"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRunFixture(t, roadmap)
			args := append([]string{"run", "--work-dir", f.workDir, "--non-interactive", "--sandbox", "none"}, tt.args(f)...)
			stdout, stderr, code := f.run(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(stderr, a) {
					t.Errorf("stderr has %q:\n%s", a, stderr)
				}
			}
			if calls := f.calls(t); tt.code == 2 && len(calls) != 0 {
				t.Errorf("the agent ran (%v) although the run could not start", calls)
			}
		})
	}
}
