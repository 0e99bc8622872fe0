package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/config"
)

// TestApplyOperator: the operator's file reaches the engine's options the same way for the CLI and
// the worker, and what the caller set before (the CLI's --env) is kept after the operator's own.
func TestApplyOperator(t *testing.T) {
	op, err := config.ParseOperator([]byte(`
agents:
  sh: {kind: exec, command: "true"}
default_agent: sh
verify_timeout: 2m
stall_timeout: 90s
auto_setup: true
budget: {cost_usd: 3, tokens: 1000, wall_time: 1h}
env: [GOFLAGS]
protected_paths: ["secrets/**"]
allow_workflows: true
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		before  []string
		wantEnv []string
	}{
		{"worker", nil, []string{"GOFLAGS"}},
		{"cli with --env", []string{"CGO_ENABLED"}, []string{"GOFLAGS", "CGO_ENABLED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Env: tt.before}
			o.ApplyOperator(op)
			if !slices.Equal(o.Env, tt.wantEnv) {
				t.Errorf("Env = %v, want %v", o.Env, tt.wantEnv)
			}
			if o.VerifyTimeout != 2*time.Minute || o.StallTimeout != 90*time.Second {
				t.Errorf("timeouts = %v, %v; want 2m, 1m30s", o.VerifyTimeout, o.StallTimeout)
			}
			if !o.AutoSetup || !slices.Equal(o.ProtectedPaths, op.ProtectedPaths) || o.MinConfidence != op.MinConfidence() {
				t.Errorf("auto setup %v, protected %v, confidence %v; want the operator's", o.AutoSetup, o.ProtectedPaths, o.MinConfidence)
			}
			if !o.AllowWorkflows {
				t.Error("AllowWorkflows = false, want the operator's allow_workflows")
			}
			if o.Budget != (Budget{CostUSD: 3, Tokens: 1000, WallTime: time.Hour}) {
				t.Errorf("Budget = %+v", o.Budget)
			}
		})
	}
}
