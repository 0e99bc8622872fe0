package roadmap

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Tick returns a copy of data, the source r was parsed from, with the given tasks marked done.
//
// Markdown: only the bytes of each task's checkbox and of its subtasks' checkboxes change: "[ ]"
// (or a mark read as not done, "[~]") becomes "[x]", ⬜ and ☐ become ✅ (the same number of
// bytes), and a task read from a heading's "Status: Not started" field gets "Status: Done". Every
// other byte (CRLF line ends, tabs, trailing spaces, a missing final newline) stays identical.
//
// YAML and JSON task lists: Tick edits the text in place when it can — it rewrites the value of an
// existing `done` key, or inserts a `done: true` line (YAML) / `"done": true` member (JSON) into the
// task, copying the neighbouring indentation — and checks the result by parsing it again. Only when
// that is not possible (unusual YAML such as a task mapping written with anchors or on one line with
// a complex key) does it re-encode the whole YAML document, which keeps comments but may change
// formatting.
//
// Tick with no ids returns an identical copy. Ticking a task that is already done only ticks its
// open subtasks.
func Tick(r *Roadmap, data []byte, ids ...string) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("tick: nil roadmap")
	}
	out, err := tick(r.Format, r.Convention, data, ids)
	if err != nil {
		return nil, fmt.Errorf("tick %s: %w", r.Source, err)
	}
	return out, nil
}

func tick(format Format, convention string, data []byte, ids []string) ([]byte, error) {
	out := bytes.Clone(data)
	if out == nil {
		out = []byte{}
	}
	if len(ids) == 0 {
		return out, nil
	}
	var d *doc
	if format == FormatMarkdown {
		d = scanMarkdown(data, convention)
	} else {
		d = scanTaskList(data, format)
		if d.tree == nil {
			return nil, d.errs
		}
	}
	byID := map[string]*item{}
	for _, it := range d.items {
		if _, ok := byID[it.task.ID]; !ok {
			byID[it.task.ID] = it
		}
	}
	var targets []*item
	for _, id := range ids {
		it, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("no task with id %q", id)
		}
		targets = append(targets, it)
	}
	if format == FormatMarkdown {
		var edits []edit
		for _, it := range targets {
			for _, b := range append([]box{it.box}, it.subBoxes...) {
				if b.status {
					if !b.done {
						edits = append(edits, edit{off: b.off, del: b.width, ins: statusDone})
					}
					continue
				}
				tickBox(out, b)
			}
		}
		if len(edits) > 0 {
			out = applyEdits(out, edits)
		}
		return out, nil
	}
	return tickList(d, data, format, targets)
}

// statusDone is what ticking writes as a status field's value.
const statusDone = "Done"

// tickBox marks one checkbox done in place; both forms keep their byte length.
func tickBox(data []byte, b box) {
	if b.emoji {
		s := string(data[b.off:])
		for _, e := range pendingEmoji {
			if strings.HasPrefix(s, e) {
				// ✅ is 3 bytes; a 4-byte mark (🔲 🚧 📋) leaves a space behind, so nothing else moves.
				copy(data[b.off:], emojiDone+strings.Repeat(" ", len(e)-len(emojiDone)))
				return
			}
		}
		return
	}
	if !b.done {
		data[b.off+1] = 'x' // "[ ]", and a mark read as not done: "[~]", "[/]"
	}
}

// edit replaces data[off:off+del] with ins.
type edit struct {
	off, del int
	ins      string
}

func tickList(d *doc, data []byte, format Format, targets []*item) ([]byte, error) {
	var edits []edit
	feasible := true
	var starts []int
	if format == FormatYAML {
		starts = yamlLineStarts(data)
	}
	for _, it := range targets {
		if it.task.Done {
			continue
		}
		n := d.tree.nodes[it.index]
		var e edit
		var ok bool
		if format == FormatJSON {
			e, ok = jsonDoneEdit(data, d.tree.spans, n)
		} else {
			e, ok = yamlDoneEdit(data, starts, n)
		}
		if !ok {
			feasible = false
			break
		}
		edits = append(edits, e)
	}
	if feasible {
		out := applyEdits(data, edits)
		if sameButDone(d, out, format, targets) {
			return out, nil
		}
	}
	if format == FormatJSON {
		return nil, fmt.Errorf("cannot mark tasks done in place")
	}
	return reencodeYAML(data, targets)
}

func applyEdits(data []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].off > edits[j].off })
	out := bytes.Clone(data)
	for _, e := range edits {
		out = append(out[:e.off:e.off], append([]byte(e.ins), out[e.off+e.del:]...)...)
	}
	return out
}

// sameButDone checks an in-place edit: the edited document must parse to the same tasks, with
// exactly the targets turned done.
func sameButDone(before *doc, out []byte, format Format, targets []*item) bool {
	after := scanTaskList(out, format)
	if len(after.errs) != len(before.errs) || len(after.items) != len(before.items) || after.title != before.title {
		return false
	}
	want := map[*item]bool{}
	for _, it := range targets {
		want[it] = true
	}
	for i, it := range before.items {
		expect := *it.task
		if want[it] {
			expect.Done = true
		}
		expect.Line = after.items[i].task.Line // inserting a line moves the tasks below
		if !reflect.DeepEqual(&expect, after.items[i].task) {
			return false
		}
	}
	return true
}

func jsonDoneEdit(data []byte, spans map[*yaml.Node]*jval, n *yaml.Node) (edit, bool) {
	obj := spans[n]
	if obj == nil || obj.start >= len(data) || data[obj.start] != '{' {
		return edit{}, false
	}
	for _, m := range obj.members {
		if m.key == "done" {
			return edit{off: m.valStart, del: m.valEnd - m.valStart, ins: "true"}, true
		}
	}
	if len(obj.members) == 0 {
		return edit{off: obj.start + 1, ins: `"done": true`}, true
	}
	// Copy the layout of the last member: its leading whitespace and its ": " separator.
	last := obj.members[len(obj.members)-1]
	ws := last.keyStart
	for ws > 0 && strings.IndexByte(" \t\r\n", data[ws-1]) >= 0 {
		ws--
	}
	sep := string(data[last.keyEnd:last.valStart])
	return edit{off: last.valEnd, ins: "," + string(data[ws:last.keyStart]) + `"done"` + sep + "true"}, true
}

// yamlDoneEdit plans the in-place change for one YAML task mapping.
func yamlDoneEdit(data []byte, starts []int, n *yaml.Node) (edit, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "done" {
			continue
		}
		v := n.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Style != 0 {
			return edit{}, false
		}
		off, ok := yamlOffset(data, starts, v.Line, v.Column)
		if !ok || !bytes.HasPrefix(data[off:], []byte(v.Value)) {
			return edit{}, false
		}
		return edit{off: off, del: len(v.Value), ins: "true"}, true
	}
	if len(n.Content) < 2 {
		return edit{}, false
	}
	if n.Style&yaml.FlowStyle != 0 {
		off, ok := yamlOffset(data, starts, n.Line, n.Column)
		if !ok || data[off] != '{' {
			return edit{}, false
		}
		return edit{off: off + 1, ins: "done: true, "}, true
	}
	k0 := n.Content[0]
	off, ok := yamlOffset(data, starts, k0.Line, k0.Column)
	if !ok {
		return edit{}, false
	}
	prefix := data[starts[k0.Line-1]:off]
	if len(bytes.Trim(prefix, " -")) != 0 {
		return edit{}, false // anchors, tags or complex keys: leave it to the re-encoder
	}
	indent := strings.Repeat(" ", len(prefix))
	eol := "\n"
	if k0.Line < len(starts) {
		if end := starts[k0.Line] - 1; end > 0 && data[end-1] == '\r' {
			eol = "\r\n"
		}
	}
	// Prefer a line of its own after the first key, when the second key starts the next line;
	// otherwise put "done: true" first and move the first key to the next line.
	if len(n.Content) >= 4 {
		k1 := n.Content[2]
		if k1.Line == k0.Line+1 && k1.Column == k0.Column && k1.Line-1 < len(starts) {
			return edit{off: starts[k1.Line-1], ins: indent + "done: true" + eol}, true
		}
	}
	return edit{off: off, ins: "done: true" + eol + indent}, true
}

// yamlLineStarts returns the byte offset of each line as yaml.v3 counts lines (a UTF-8 BOM is not
// part of line 1).
func yamlLineStarts(data []byte) []int {
	starts := []int{0}
	if bytes.HasPrefix(data, bom) {
		starts[0] = len(bom)
	}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// yamlOffset converts yaml.v3's 1-based line and column (counted in characters) to a byte offset.
func yamlOffset(data []byte, starts []int, line, col int) (int, bool) {
	if line < 1 || line > len(starts) || col < 1 {
		return 0, false
	}
	off := starts[line-1]
	for c := 1; c < col; c++ {
		if off >= len(data) || data[off] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(data[off:])
		off += size
	}
	if off >= len(data) {
		return 0, false
	}
	return off, true
}

// reencodeYAML is the fallback: set done in the node tree and encode the document again.
func reencodeYAML(data []byte, targets []*item) ([]byte, error) {
	d := scanTaskList(data, FormatYAML)
	if d.tree == nil {
		return nil, d.errs
	}
	for _, target := range targets {
		if target.task.Done {
			continue
		}
		n := d.tree.nodes[target.index]
		set := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "done" {
				n.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
				set = true
			}
		}
		if !set {
			n.Content = append(n.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "done"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d.tree.doc); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return buf.Bytes(), nil
}
