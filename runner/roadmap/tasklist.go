package roadmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Task lists are YAML or JSON documents:
//
//	title: Akira
//	tasks:
//	  - id: "1"
//	    title: Parse roadmaps
//	    description: ...
//	    depends: ["0"]            # or dependencies; a string "a, b" works too
//	    verify: go test ./...      # string or list
//	    accept: [...]              # string or list
//	    done: false
//
// Both formats are decoded into yaml.Node trees (JSON by a small offset-keeping parser, see json.go)
// so one schema check serves both and every problem carries a line number.

var taskKeys = []string{"id", "title", "description", "phase", "depends", "dependencies", "verify", "accept", "done", "parallel", "labels", "notes", "priority", "gate"}

// listTree keeps what Tick needs to edit a task list in place.
type listTree struct {
	doc   *yaml.Node           // the document node
	nodes []*yaml.Node         // the task mappings, by index in the tasks array
	spans map[*yaml.Node]*jval // JSON only: byte positions of objects and values
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func scanTaskList(data []byte, format Format) *doc {
	d := &doc{}
	var tree *listTree
	var err *Error
	if format == FormatJSON {
		tree, err = decodeJSON(data)
	} else {
		tree, err = decodeYAML(data)
	}
	if err != nil {
		d.errs = append(d.errs, err)
		return d
	}
	d.tree = tree
	fail := func(n *yaml.Node, format string, args ...any) {
		d.errs = append(d.errs, &Error{Line: n.Line, Msg: fmt.Sprintf(format, args...)})
	}
	var root *yaml.Node
	if len(tree.doc.Content) > 0 {
		root = resolve(tree.doc.Content[0])
	}
	if root == nil || root.Kind != yaml.MappingNode {
		line := 1
		if root != nil {
			line = root.Line
		}
		d.errs = append(d.errs, &Error{Line: line, Msg: `expected a mapping with a "tasks" list`})
		return d
	}
	var tasks *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		if seen[k.Value] {
			fail(k, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "title":
			s, ok := scalar(v)
			if !ok {
				fail(v, "title must be a string")
			}
			d.title = s
		case "tasks":
			if v.Kind != yaml.SequenceNode {
				if !isNull(v) {
					fail(v, `"tasks" must be a list`)
				}
				continue
			}
			tasks = v
		default:
			fail(k, "unknown key %q (known keys: title, tasks)", k.Value)
		}
	}
	if tasks == nil {
		if !seen["tasks"] {
			fail(root, `missing "tasks" list`)
		}
		return d
	}
	phases := map[string]int{}
	var phaseKeys []int
	for idx, n := range tasks.Content {
		n = resolve(n)
		tree.nodes = append(tree.nodes, n)
		if n.Kind != yaml.MappingNode {
			fail(n, "task #%d: expected a mapping with id, title, ...", idx+1)
			continue
		}
		it, errs := decodeTask(n, idx)
		d.errs = append(d.errs, errs...)
		if it == nil {
			continue
		}
		if _, ok := phases[it.task.Phase]; !ok {
			phases[it.task.Phase] = len(phases)
		}
		phaseKeys = append(phaseKeys, phases[it.task.Phase])
		d.items = append(d.items, it)
	}
	autoIDs(d.items, phaseKeys)
	return d
}

// decodeTask reads one task mapping. It returns nil when the task is too broken to validate further.
func decodeTask(n *yaml.Node, idx int) (*item, Errors) {
	it := &item{task: newTask(), index: idx, kind: "task-list"}
	t := it.task
	t.Line = n.Line
	type problem struct {
		line int
		msg  string
	}
	var problems []problem
	fail := func(at *yaml.Node, format string, args ...any) {
		problems = append(problems, problem{at.Line, fmt.Sprintf(format, args...)})
	}
	str := func(k, v *yaml.Node) string {
		s, ok := scalar(v)
		if !ok {
			fail(v, "%s must be a string", k.Value)
		}
		return s
	}
	list := func(k, v *yaml.Node) []string {
		if v.Kind == yaml.SequenceNode {
			var out []string
			for _, e := range v.Content {
				s, ok := scalar(resolve(e))
				if !ok {
					fail(e, "%s must be a string or a list of strings", k.Value)
					continue
				}
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out
		}
		s, ok := scalar(v)
		if !ok {
			fail(v, "%s must be a string or a list of strings", k.Value)
			return nil
		}
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		return []string{s}
	}
	flag := func(k, v *yaml.Node) bool {
		b, ok := boolean(v)
		if !ok {
			fail(v, "%s must be true or false", k.Value)
		}
		return b
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if seen[k.Value] != nil {
			fail(k, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = k
		switch k.Value {
		case "id":
			t.ID = strings.TrimSpace(str(k, v))
		case "title":
			t.Title = strings.TrimSpace(str(k, v))
		case "description":
			t.Description = strings.TrimSpace(str(k, v))
		case "phase":
			t.Phase = strings.TrimSpace(str(k, v))
		case "notes":
			t.Notes = strings.TrimSpace(str(k, v))
		case "depends", "dependencies":
			if seen["depends"] != nil && seen["dependencies"] != nil {
				fail(k, `use either "depends" or "dependencies", not both`)
				continue
			}
			for _, s := range list(k, v) {
				for _, id := range splitIDs(s) {
					it.addDep(id, v.Line, k.Value+": "+s)
				}
			}
		case "verify":
			t.Verify = append(t.Verify, list(k, v)...)
		case "accept":
			t.Accept = append(t.Accept, list(k, v)...)
		case "labels":
			t.Labels = append(t.Labels, list(k, v)...)
		case "done":
			t.Done = flag(k, v)
		case "parallel":
			t.Parallel = flag(k, v)
		case "priority":
			it.priority, it.priorityLine = strings.TrimSpace(str(k, v)), v.Line
		case "gate":
			it.gate, it.gateLine = strings.TrimSpace(str(k, v)), v.Line
		default:
			fail(k, "unknown key %q (known keys: %s)", k.Value, strings.Join(taskKeys, ", "))
		}
	}
	if t.Title == "" && seen["title"] == nil {
		fail(n, "missing title")
	} else if t.Title == "" {
		fail(seen["title"], "empty title")
	}
	name := "#" + strconv.Itoa(idx+1)
	if t.ID != "" {
		name = t.ID
	}
	var errs Errors
	for _, p := range problems {
		errs = append(errs, &Error{Line: p.line, IDs: idsOf(t.ID), Msg: "task " + name + ": " + p.msg})
	}
	return it, errs
}

func idsOf(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// scalar accepts any scalar (numbers too: "id: 1.2" is an id); null is the empty string.
func scalar(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	return n.Value, true
}

// boolean accepts true/false, and YAML 1.1's yes/no/on/off when unquoted.
func boolean(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	if n.ShortTag() == "!!bool" {
		b, err := strconv.ParseBool(n.Value)
		return b, err == nil
	}
	if n.Style == 0 && n.ShortTag() == "!!str" {
		switch strings.ToLower(n.Value) {
		case "yes", "on":
			return true, true
		case "no", "off":
			return false, true
		}
	}
	return false, false
}

func decodeYAML(data []byte) (tree *listTree, e *Error) {
	// yaml.v3 has panicked on hostile input in the past; a roadmap must never crash the server.
	defer func() {
		if r := recover(); r != nil {
			tree, e = nil, &Error{Line: 1, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{Line: line, Msg: "invalid YAML: " + m[2]}
		}
		return nil, &Error{Line: 1, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	return &listTree{doc: &n}, nil
}

func decodeJSON(data []byte) (*listTree, *Error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		line := 1
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line = lineAt(data, int(se.Offset))
		}
		msg := "not valid JSON"
		if err != nil {
			msg = strings.TrimPrefix(err.Error(), "json: ")
		}
		return nil, &Error{Line: line, Msg: "invalid JSON: " + msg}
	}
	p := &jparser{data: data, spans: map[*yaml.Node]*jval{}}
	root, err := p.parse()
	if err != nil {
		return nil, &Error{Line: lineAt(data, p.pos), Msg: "invalid JSON: " + err.Error()}
	}
	return &listTree{doc: &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1, Content: []*yaml.Node{root}}, spans: p.spans}, nil
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
		}
	}
	return line
}
