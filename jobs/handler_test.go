package jobs

import (
	"testing"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/queue"
)

// TestServeMuxRoutesEveryTaskType: the router is built from taskTypes, so every listed type reaches
// its handler, and no two entries claim one name.
func TestServeMuxRoutesEveryTaskType(t *testing.T) {
	mux := NewServeMux(&Handler{})
	seen := map[string]bool{}
	for _, tt := range taskTypes {
		if seen[tt.Name] {
			t.Errorf("task type %s is listed twice", tt.Name)
		}
		seen[tt.Name] = true
		if _, pattern := mux.Handler(asynq.NewTask(tt.Name, nil)); pattern != tt.Name {
			t.Errorf("task type %s routes to %q", tt.Name, pattern)
		}
	}
	for _, name := range []string{queue.TypeIntake, queue.TypeRun, queue.TypeResume, queue.TypePlan, queue.TypeRollback, queue.TypeSweep, queue.TypeRecover, queue.TypeNotify,
		queue.TypeAuditLine, queue.TypePublish, queue.TypeCI, queue.TypeHandoff} {
		if !seen[name] {
			t.Errorf("task type %s is not in taskTypes: a worker would not serve it", name)
		}
	}
}
