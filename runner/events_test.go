package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/verify"
)

func TestReportersFanOut(t *testing.T) {
	var got []string
	rec := func(name string, err error) Reporter {
		return ReporterFunc(func(_ context.Context, ev Event) error {
			got = append(got, name+":"+string(ev.Type))
			return err
		})
	}
	boom := errors.New("boom")
	r := reporters(rec("a", nil), nil, rec("b", boom), rec("c", nil))
	err := r.Report(context.Background(), Event{Type: EventRunStarted})
	if !errors.Is(err, boom) || strings.Join(got, " ") != "a:run_started b:run_started c:run_started" {
		t.Fatalf("err = %v, calls = %v", err, got)
	}
}

func TestJSONReporterOneLinePerEvent(t *testing.T) {
	var buf bytes.Buffer
	r := NewJSONReporter(&buf)
	evs := []Event{
		{Type: EventVerifyFinished, RunID: "r", TaskID: "1.1", Verify: []verify.Result{{Command: "go test ./...", ExitCode: 1, Output: "a\nb <&>\n"}}},
		{Type: EventRunFinished, RunID: "r", Outcome: &Outcome{Status: StatusParked, Duration: time.Second}},
	}
	for _, ev := range evs {
		if err := r.Report(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"output":"a\nb <&>\n"`) {
		t.Fatalf("output:\n%s", buf.String())
	}
	var back Event
	if err := json.Unmarshal([]byte(lines[1]), &back); err != nil || back.Outcome.Status != StatusParked || back.Outcome.Duration != time.Second {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestTerminalView(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, false)
	ctx := context.Background()
	tasks := []TaskResult{{ID: "1", Title: "One", Status: TaskDone, Note: "ticked in the roadmap"}, {ID: "2", Title: "Two", Status: TaskPending}}
	for _, ev := range []Event{
		{Type: EventRunStarted, RunID: "r1", Roadmap: "ROADMAP.md", Branch: "akira/roadmap", Tasks: tasks, Message: "new branch from main"},
		{Type: EventTaskStarted, TaskID: "2", TaskTitle: "Two", MaxAttempts: 3},
		{Type: EventAttemptStarted, TaskID: "2", Attempt: 1},
		{Type: EventVerifyStarted, TaskID: "2", VerifyPlan: &verify.Plan{Source: verify.SourceNone}, Message: "no verification: nothing"},
		{Type: EventTaskCheckpointed, TaskID: "2", TaskTitle: "Two", Attempt: 1, Commit: "0123456789abcdef", Duration: 1500 * time.Millisecond},
		{Type: EventRunFinished, Outcome: &Outcome{Status: StatusSucceeded, Branch: "akira/roadmap", Head: "0123456789abcdef",
			Tasks: []TaskResult{{ID: "1", Title: "One", Status: TaskDone}, {ID: "2", Title: "Two", Status: TaskDone, Attempts: 1, Duration: 1500 * time.Millisecond, Commit: "0123456789abcdef"}}}},
	} {
		if err := term.Report(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	for _, want := range []string{
		"akira run ROADMAP.md → branch akira/roadmap (new branch from main)",
		"✓ 1 One (ticked in the roadmap)",
		"▶ 2 Two",
		"· no verification: nothing",
		"✓ 2 Two → 0123456 (1 attempt, 1.5s)",
		"TASK", "2 Two  done    1         1.5s      0123456",
		"done · branch akira/roadmap at 0123456",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape codes without a terminal:\n%q", out)
	}
}

func TestTerminalLiveStatusLine(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, true)
	defer term.Close()
	ctx := context.Background()
	_ = term.Report(ctx, Event{Type: EventRunStarted, Tasks: []TaskResult{{ID: "1", Status: TaskDone}, {ID: "2", Status: TaskPending}}})
	_ = term.Report(ctx, Event{Type: EventTaskStarted, TaskID: "2", TaskTitle: "Two", MaxAttempts: 3, Time: time.Now()})
	_ = term.Report(ctx, Event{Type: EventAttemptStarted, TaskID: "2", Attempt: 1})
	out := buf.String()
	if !strings.Contains(out, "██████████░░░░░░░░░░ 1/2 · 2 Two · attempt 1/3 · agent") {
		t.Fatalf("status line missing:\n%q", out)
	}
	term.Pause()
	if !strings.HasSuffix(buf.String(), "\r\x1b[2K") {
		t.Fatalf("Pause did not clear the status line: %q", buf.String())
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond: "850ms", 4200 * time.Millisecond: "4.2s", 185 * time.Second: "3m05s", 3720 * time.Second: "1h02m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestTerminalParallelTasks: with several tasks in progress, each line about a task names it, and
// the status line shows every running task.
func TestTerminalParallelTasks(t *testing.T) {
	var b bytes.Buffer
	term := NewTerminal(&b, true)
	term.color = false
	ctx := context.Background()
	now := time.Now()
	for _, ev := range []Event{
		{Type: EventRunStarted, Roadmap: "ROADMAP.md", Branch: "akira/roadmap", Tasks: []TaskResult{{ID: "T1", Status: TaskPending}, {ID: "T2", Status: TaskPending}}},
		{Type: EventTaskStarted, TaskID: "T1", TaskTitle: "One", Time: now},
		{Type: EventTaskStarted, TaskID: "T2", TaskTitle: "Two", Time: now},
		{Type: EventAgentFinished, TaskID: "T2", Duration: time.Second},
	} {
		if err := term.Report(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	out := b.String()
	term.Close()
	if !strings.Contains(out, "[T2] · agent done") {
		t.Errorf("the agent line does not name its task:\n%s", out)
	}
	if !strings.Contains(out, "T1 starting") || !strings.Contains(out, "T2 starting") {
		t.Errorf("the status line does not show both running tasks:\n%q", out)
	}
	b.Reset()
	if err := term.Report(ctx, Event{Type: EventTaskCheckpointed, TaskID: "T1", TaskTitle: "One", Commit: "0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	if err := term.Report(ctx, Event{Type: EventAgentFinished, TaskID: "T2", Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "[T2]") {
		t.Errorf("with one task left, lines are not prefixed:\n%s", b.String())
	}
}
