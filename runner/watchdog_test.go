package runner

import (
	"strings"
	"testing"
	"time"
)

// TestStallWatchdog: an agent silent and idle for the stall timeout is ended and the attempt fails as
// stalled, with that reason in the next attempt's feedback; an agent that prints, or that keeps
// changing files, is left alone however long it takes.
func TestStallWatchdog(t *testing.T) {
	const oneTask = "- [ ] T1: Do it\n  - verify: `test -f T1.txt`\n"
	tests := []struct {
		name, script string
		stalled      bool
	}{
		{"silent and idle", `[ "$AKIRA_ATTEMPT" = 1 ] && sleep 30; touch T1.txt`, true},
		{"printing", `for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo working; sleep 0.1; done; touch T1.txt`, false},
		{"writing files", `for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo $i > progress.txt; sleep 0.1; done; rm progress.txt; touch T1.txt`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"ROADMAP.md": oneTask})
			out, rec, err := f.run(t, Options{Limits: Limits{StallTimeout: 400 * time.Millisecond}, Agent: f.agent(logCall + tt.script)})
			if err != nil {
				t.Fatal(err)
			}
			wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
			failed := rec.of(EventAttemptFailed, "T1")
			if !tt.stalled {
				if len(failed) != 0 {
					t.Fatalf("an active agent was failed: %+v", failed)
				}
				return
			}
			if len(failed) != 1 || !strings.Contains(failed[0].Message, "stalled") || !strings.Contains(failed[0].Feedback, "stalled") {
				t.Fatalf("attempt_failed = %+v", failed)
			}
		})
	}
}
