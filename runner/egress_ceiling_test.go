package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// TestRunRefusesARangeBeyondTheCeiling: a run whose .github/akira.yml asks for 10.0.0.0/8 under an
// operator ceiling of 10.0.0.0/16 stops before any agent call with an error naming the entry; a
// range the ceiling contains runs.
func TestRunRefusesARangeBeyondTheCeiling(t *testing.T) {
	tests := []struct {
		asked   string
		refused bool
	}{
		{asked: "10.0.0.0/8", refused: true},
		{asked: "10.0.0.0/15", refused: true},
		{asked: "10.0.3.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.asked, func(t *testing.T) {
			f := newFixture(t, map[string]string{
				"ROADMAP.md":        "- [ ] T1 Add one\n  - verify: `test -f T1.txt`\n",
				".github/akira.yml": "network:\n  allow: ['" + tt.asked + "']\n",
			})
			box := sandbox.Config{Mode: sandbox.None, VerifyNetwork: sandbox.NetNone,
				Allow: egress.MustAllowlist("go"), Ceiling: egress.MustAllowlist("10.0.0.0/16")}
			out, _, err := f.run(t, Options{Agent: f.agent(logCall + "touch T1.txt"), Sandbox: box})
			if !tt.refused {
				if err != nil || out.Status != StatusSucceeded {
					t.Fatalf("run = %s, %v; want it to run", out.Status, err)
				}
				return
			}
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "network.allow: "+tt.asked+": not within") {
				t.Errorf("run error = %v; want the entry named as beyond the ceiling", err)
			}
			if calls := f.calls(t); len(calls) != 0 {
				t.Errorf("the agent ran (%v) under a network.allow beyond the ceiling", calls)
			}
		})
	}
}
