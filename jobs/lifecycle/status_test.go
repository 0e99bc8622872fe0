package lifecycle

import (
	"testing"

	"github.com/akira-bot/akira/runner"
)

// TestStatusTableCoversTheTable: every state the transition table moves a run into or out of has its
// row in statusTable, with a label people can read, and no state is both over and waiting.
func TestStatusTableCoversTheTable(t *testing.T) {
	rows := map[RunStatus]StatusInfo{}
	for _, info := range statusTable {
		if _, dup := rows[info.Status]; dup {
			t.Errorf("state %s has two rows", info.Status)
		}
		rows[info.Status] = info
	}
	for _, rule := range Table {
		for _, m := range rule.Moves {
			for _, s := range []RunStatus{m.From, m.To} {
				if s == StatusNew {
					continue
				}
				info, ok := rows[s]
				if !ok {
					t.Errorf("event %s moves a run through %s, which has no row in statusTable", rule.Event, s)
					continue
				}
				if info.Label == "" || info.Phrase == "" {
					t.Errorf("state %s has no label or no phrase", s)
				}
				if info.Terminal && info.Waits {
					t.Errorf("state %s is both terminal and waiting", s)
				}
			}
		}
	}
}

func TestStatusProperties(t *testing.T) {
	tests := []struct {
		status                RunStatus
		terminal, waits       bool
		label, phrase, result string
	}{
		{StatusQueued, false, false, "queued", "queued", "decided"},
		{StatusRunning, false, false, "running", "running", ""},
		{StatusWaitingCI, false, true, "waiting for CI", "waiting for CI", "waiting_ci"},
		{StatusParked, false, true, "parked", "needs a decision", "parked"},
		{StatusPaused, false, true, "paused", "paused", "paused"},
		{StatusStopped, false, true, "stopped", "stopped", ""},
		{StatusSucceeded, true, false, "done", "finished", "succeeded"},
		{StatusFailed, true, false, "failed", "failed", "failed"},
		{StatusAborted, true, false, "aborted", "aborted", "aborted"},
		{"from_a_newer_akira", false, false, "from_a_newer_akira", "from a newer akira", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			if got := tt.status.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			if got := tt.status.Waits(); got != tt.waits {
				t.Errorf("Waits() = %v, want %v", got, tt.waits)
			}
			if got := tt.status.Label(); got != tt.label {
				t.Errorf("Label() = %q, want %q", got, tt.label)
			}
			if got := tt.status.Phrase(); got != tt.phrase {
				t.Errorf("Phrase() = %q, want %q", got, tt.phrase)
			}
			if got := tt.status.Result(); got != tt.result {
				t.Errorf("Result() = %q, want %q", got, tt.result)
			}
		})
	}
}

func TestEngineStatus(t *testing.T) {
	tests := []struct {
		engine runner.RunStatus
		want   RunStatus
	}{
		{runner.StatusSucceeded, StatusSucceeded},
		{runner.StatusYielded, StatusSucceeded},
		{runner.StatusParked, StatusParked},
		{runner.StatusAborted, StatusAborted},
		{runner.StatusFailed, StatusFailed},
	}
	for _, tt := range tests {
		if got := EngineStatus(tt.engine); got != tt.want {
			t.Errorf("EngineStatus(%s) = %s, want %s", tt.engine, got, tt.want)
		}
	}
}
