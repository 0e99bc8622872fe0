package publish

import (
	"context"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/timeline"
)

// TestTimelineMasksTheAppsSecrets: what an attempt's timeline keeps has the App's own secrets (an
// installation token, the webhook secret) masked, as its log has, whatever the engine masked.
func TestTimelineMasksTheAppsSecrets(t *testing.T) {
	rdb, prefix := redistest.Prefixed(t)
	st := store.NewStore(rdb, prefix)
	rep := NewReporter(nil, st, nil, nil, &lifecycle.Run{ID: "r1"})
	rep.masker = store.NewMasker("ghs_installation_token_0123")
	ev := timeline.Event{V: 1, Seq: 1, Kind: timeline.KindVerify, RunID: "r1", TaskID: "1.1", Attempt: 1,
		Command: &timeline.Command{Command: "env", Tail: "GITHUB_TOKEN=ghs_installation_token_0123"}}
	if err := rep.Timeline().Record(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	lines, err := st.Timeline(context.Background(), "r1", "1.1", 1)
	if err != nil || len(lines) != 1 {
		t.Fatalf("timeline: %v, %v", lines, err)
	}
	if s := string(lines[0]); strings.Contains(s, "ghs_installation_token_0123") || !strings.Contains(s, "[masked]") {
		t.Errorf("the timeline keeps %s", s)
	}
}
