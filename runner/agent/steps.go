package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/runner/timeline"
)

// The steps a coding-agent CLI reports, read from its output as it runs, for the attempt's
// timeline. Two formats, told apart by their lines (a line of neither is the CLI's own log, and
// skipped):
//   - Claude Code, `-p --output-format stream-json --verbose`: a JSON object per line; "assistant"
//     lines carry the model's content blocks (tool_use with id, name and input; text), "user" lines
//     the tools' results (tool_result with tool_use_id, content, is_error), and a last "result"
//     line says how the run ended (subtype, num_turns, is_error, result). With `--output-format
//     json` only that result object is printed. A failed Bash call's result reads "Exit code N".
//   - Codex, `codex exec --json`: a JSON object per line; "item.completed" carries the item
//     (command_execution with command, aggregated_output and exit_code; file_change with changes;
//     mcp_tool_call; web_search; agent_message; error), "error" and "turn.failed" what went wrong.
//
// What an agent prints is its word, not a measurement: the timeline takes the files from the work
// tree and the cost from the proxy. The agent may print anything, so lines are bounded, and so are
// the tool calls waiting for their results.
const (
	maxStepLine    = 4 << 20
	maxPendingUses = 1024
)

// stepWriter reads a CLI's output line by line and records the steps it reports.
type stepWriter struct {
	record func(timeline.Event)
	line   []byte
	// skipping: the current line outgrew maxStepLine; it is dropped up to its end.
	skipping bool
	// uses are Claude Code's tool calls waiting for their results, by tool_use id.
	uses map[string]toolUse
}

type toolUse struct{ name, args string }

func newStepWriter(record func(timeline.Event)) *stepWriter {
	return &stepWriter{record: record, uses: map[string]toolUse{}}
}

func (w *stepWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.take(p)
			break
		}
		w.take(p[:i])
		if !w.skipping {
			w.parse(w.line)
		}
		w.line, w.skipping = w.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (w *stepWriter) take(p []byte) {
	if w.skipping {
		return
	}
	if len(w.line)+len(p) > maxStepLine {
		w.line, w.skipping = nil, true
		return
	}
	w.line = append(w.line, p...)
}

// flush reads a last line the output did not end.
func (w *stepWriter) flush() {
	if !w.skipping && len(w.line) > 0 {
		w.parse(w.line)
	}
	w.line, w.skipping = nil, false
}

// cliLine is what a line of either CLI may hold.
type cliLine struct {
	Type string `json:"type"`
	// Claude Code's message is an object with content; Codex's "error" line has a string.
	Message  json.RawMessage `json:"message"`
	Subtype  string          `json:"subtype"`
	IsError  bool            `json:"is_error"`
	NumTurns int             `json:"num_turns"`
	Result   string          `json:"result"`
	// Codex.
	Item *codexItem `json:"item"`
	// Codex's "error" line has a message; "turn.failed" an error object with one.
	Error json.RawMessage `json:"error"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type codexItem struct {
	Type             string          `json:"type"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Query            string          `json:"query"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
}

func (w *stepWriter) parse(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var l cliLine
	if json.Unmarshal(line, &l) != nil {
		return
	}
	switch l.Type {
	case "assistant", "user":
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(l.Message, &m) == nil {
			w.claudeContent(m.Content)
		}
	case "result":
		text := fmt.Sprintf("%s after %d turns", cmp.Or(l.Subtype, "ended"), l.NumTurns)
		if l.Result != "" {
			text += ": " + l.Result
		}
		w.step(timeline.Step{Agent: timeline.AgentClaudeCode, Type: timeline.StepResult, Text: text, Error: l.IsError})
	case "item.completed":
		if l.Item != nil {
			w.codexItem(*l.Item)
		}
	case "error", "turn.failed":
		var e struct {
			Message string `json:"message"`
		}
		msg := ""
		if json.Unmarshal(l.Error, &e) == nil {
			msg = e.Message
		}
		if msg == "" {
			_ = json.Unmarshal(l.Message, &msg)
		}
		w.step(timeline.Step{Agent: timeline.AgentCodex, Type: timeline.StepError, Text: msg, Error: true})
	}
}

func (w *stepWriter) step(s timeline.Step) {
	w.record(timeline.Event{Kind: timeline.KindAgentStep, Step: &s})
}

func (w *stepWriter) claudeContent(raw json.RawMessage) {
	var blocks []contentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return // a string: a prompt, not a step
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				w.step(timeline.Step{Agent: timeline.AgentClaudeCode, Type: timeline.StepMessage, Text: b.Text})
			}
		case "tool_use":
			if len(w.uses) < maxPendingUses {
				w.uses[b.ID] = toolUse{name: b.Name, args: inputSummary(b.Input)}
			}
		case "tool_result":
			use, ok := w.uses[b.ToolUseID]
			delete(w.uses, b.ToolUseID)
			if !ok {
				use.name = "?"
			}
			text := resultText(b.Content)
			s := timeline.Step{Agent: timeline.AgentClaudeCode, Type: timeline.StepTool, Tool: use.name, Args: use.args,
				ResultBytes: len(text), Error: b.IsError}
			if use.name == "Bash" {
				s.ExitCode = bashExit(text, b.IsError)
			}
			w.step(s)
		}
	}
}

// exitCodeRE is how Claude Code's Bash tool starts the result of a command that failed.
var exitCodeRE = regexp.MustCompile(`^Exit code (\d+)`)

// bashExit is a Bash call's exit code as Claude Code reports it: 0 for a result that is no error,
// the number of "Exit code N" for one that is, unknown otherwise (a timeout, a refusal).
func bashExit(result string, isError bool) *int {
	if !isError {
		code := 0
		return &code
	}
	if m := exitCodeRE.FindStringSubmatch(result); m != nil {
		if code, err := strconv.Atoi(m[1]); err == nil {
			return &code
		}
	}
	return nil
}

// resultText is a tool result's text: a string, or the text of its blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// identifyingArgs are the arguments that say what a tool call did, in the order they are looked for.
var identifyingArgs = []string{"file_path", "path", "notebook_path", "command", "cmd", "pattern", "url", "query", "prompt", "description"}

// inputSummary is the argument of a call that identifies it, else its arguments as JSON.
func inputSummary(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	for _, k := range identifyingArgs {
		var v string
		if json.Unmarshal(m[k], &v) == nil && v != "" {
			return v
		}
	}
	return string(raw)
}

func (w *stepWriter) codexItem(it codexItem) {
	s := timeline.Step{Agent: timeline.AgentCodex, Type: timeline.StepTool}
	switch it.Type {
	case "command_execution":
		s.Tool, s.Args, s.ResultBytes, s.ExitCode = "command", it.Command, len(it.AggregatedOutput), it.ExitCode
		s.Error = it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, c.Kind+" "+c.Path)
		}
		s.Tool, s.Args, s.Error = "file_change", strings.Join(paths, ", "), it.Status == "failed"
	case "mcp_tool_call":
		s.Tool, s.Args, s.Error = "mcp:"+it.Server+"/"+it.Tool, inputSummary(it.Arguments), it.Status == "failed"
	case "web_search":
		s.Tool, s.Args = "web_search", it.Query
	case "agent_message":
		s.Type, s.Text = timeline.StepMessage, it.Text
	case "error":
		s.Type, s.Text, s.Error = timeline.StepError, it.Message, true
	default:
		return // reasoning, a to-do list: no step of the work
	}
	w.step(s)
}
