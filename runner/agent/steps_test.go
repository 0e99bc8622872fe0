package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/timeline"
)

// stepsOf feeds output to a step writer in pieces of n bytes, as a pipe would, and returns the
// steps it recorded.
func stepsOf(output []byte, n int) []timeline.Step {
	var steps []timeline.Step
	w := newStepWriter(func(ev timeline.Event) {
		if ev.Kind == timeline.KindAgentStep && ev.Step != nil {
			steps = append(steps, *ev.Step)
		}
	})
	for len(output) > 0 {
		k := min(n, len(output))
		w.Write(output[:k])
		output = output[k:]
	}
	w.flush()
	return steps
}

func code(n int) *int { return &n }

// The steps of what the pinned CLIs really print (testdata/steps: Claude Code 2.1.330 with
// --output-format stream-json --verbose and json, Codex 0.169.0 exec --json, run against scripted
// model servers; only the machine's paths replaced): each tool call with its argument, the size of
// its result and a command's exit code; the messages; the end.
func TestStepsOfTheCLIs(t *testing.T) {
	writeResult := "File created successfully at: /src/repo/hello.txt (file state is current in your context — no need to Read it back)"
	tests := []struct {
		file string
		want []timeline.Step
	}{
		{"claude-stream.jsonl", []timeline.Step{
			{Agent: "claude-code", Type: "tool", Tool: "Write", Args: "/src/repo/hello.txt", ResultBytes: len(writeResult)},
			{Agent: "claude-code", Type: "message", Text: "Done: the file is written."},
			{Agent: "claude-code", Type: "result", Text: "success after 2 turns: Done: the file is written."},
		}},
		{"claude-json.jsonl", []timeline.Step{
			{Agent: "claude-code", Type: "result", Text: "success after 2 turns: Done: the file is written."},
		}},
		{"claude-bash.jsonl", []timeline.Step{
			{Agent: "claude-code", Type: "tool", Tool: "Bash", Args: "echo out; echo err >&2; exit 3", ResultBytes: len("Exit code 3\nout\nerr"), ExitCode: code(3), Error: true},
			{Agent: "claude-code", Type: "message", Text: "done"},
			{Agent: "claude-code", Type: "result", Text: "success after 2 turns: done"},
		}},
		{"codex.jsonl", []timeline.Step{
			{Agent: "codex", Type: "error", Text: "Model metadata for `gpt-5` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.", Error: true},
			{Agent: "codex", Type: "error", Text: "Reconnecting... 2/5 (unexpected status 405 Method Not Allowed: use POST, url: ws://127.0.0.1:40379/v1/responses)", Error: true},
			{Agent: "codex", Type: "error", Text: "Reconnecting... 3/5 (unexpected status 405 Method Not Allowed: use POST, url: ws://127.0.0.1:40379/v1/responses)", Error: true},
			{Agent: "codex", Type: "error", Text: "Reconnecting... 4/5 (unexpected status 405 Method Not Allowed: use POST, url: ws://127.0.0.1:40379/v1/responses)", Error: true},
			{Agent: "codex", Type: "error", Text: "Reconnecting... 5/5 (unexpected status 405 Method Not Allowed: use POST, url: ws://127.0.0.1:40379/v1/responses)", Error: true},
			{Agent: "codex", Type: "error", Text: "Falling back from WebSockets to HTTPS transport. unexpected status 405 Method Not Allowed: use POST, url: ws://127.0.0.1:40379/v1/responses", Error: true},
			{Agent: "codex", Type: "tool", Tool: "command", Args: `/bin/bash -lc "printf %s 'hello from the model` + "\n" + `' > 'hello.txt'"`, ExitCode: code(0)},
			{Agent: "codex", Type: "message", Text: "Done: the file is written."},
		}},
	}
	for _, tt := range tests {
		data, err := os.ReadFile(filepath.Join("testdata", "steps", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{len(data), 7, 1} {
			got := stepsOf(data, n)
			if !slices.EqualFunc(got, tt.want, sameStep) {
				t.Errorf("%s in pieces of %d bytes:\ngot  %s\nwant %s", tt.file, n, showSteps(got), showSteps(tt.want))
			}
		}
	}
}

// What an agent prints is bounded: a line past the limit is dropped whole (not parsed from its
// middle), and the next one is read; a result whose call was never seen still counts.
func TestStepsBounded(t *testing.T) {
	huge := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxStepLine) + `"}]}}` + "\n"
	out := huge + `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"never-seen","content":[{"type":"text","text":"abc"}]}]}}` + "\n" +
		`{"type":"item.completed","item":{"type":"command_execution","command":"make","aggregated_output":"boom","exit_code":2,"status":"failed"}}`
	got := stepsOf([]byte(out), 64<<10)
	want := []timeline.Step{
		{Agent: "claude-code", Type: "tool", Tool: "?", ResultBytes: 3},
		{Agent: "codex", Type: "tool", Tool: "command", Args: "make", ResultBytes: 4, ExitCode: code(2), Error: true},
	}
	if !slices.EqualFunc(got, want, sameStep) {
		t.Errorf("got  %s\nwant %s", showSteps(got), showSteps(want))
	}
}

func sameStep(a, b timeline.Step) bool {
	if (a.ExitCode == nil) != (b.ExitCode == nil) || (a.ExitCode != nil && *a.ExitCode != *b.ExitCode) {
		return false
	}
	a.ExitCode, b.ExitCode = nil, nil
	return a == b
}

func showSteps(steps []timeline.Step) string {
	var b strings.Builder
	for _, s := range steps {
		exit := "-"
		if s.ExitCode != nil {
			exit = strconv.Itoa(*s.ExitCode)
		}
		b.WriteString("\n  " + s.Agent + " " + s.Type + " " + s.Tool + " [" + s.Args + "] " + s.Text + " exit=" + exit)
		if s.Error {
			b.WriteString(" error")
		}
	}
	return b.String()
}
