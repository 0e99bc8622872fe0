package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/timeline"
)

// jsonLines is a sink that appends each event to a file, as akira run's does.
type jsonLines struct{ f *os.File }

func (j jsonLines) Record(_ context.Context, ev timeline.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = j.f.Write(append(data, '\n'))
	return err
}

// BenchmarkRecord measures what one agent step costs the attempt that records it: numbered, masked
// with ten secrets, bounded, encoded and appended to a file.
func BenchmarkRecord(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "1.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var secrets []string
	for i := range 10 {
		secrets = append(secrets, strings.Repeat(string(rune('a'+i)), 40))
	}
	o := Options{Hooks: Hooks{Timeline: jsonLines{f}, Secrets: secrets}}
	withTimeline(&o)
	rec := &attemptRecord{sink: o.Timeline, ctx: context.Background(), runID: "r", taskID: "1.1", attempt: 1, start: time.Now(),
		dropped: map[timeline.Kind]int{}}
	step := timeline.Step{Agent: timeline.AgentClaudeCode, Type: timeline.StepTool, Tool: "Bash",
		Args: strings.Repeat("go test ./... ", 40), ResultBytes: 4096}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.kept = 0 // the bound is not what is measured
		rec.add(timeline.Event{Kind: timeline.KindAgentStep, Step: &step})
	}
}
