// Package roadmap reads the plans Akira executes: markdown roadmaps (GSD-style ROADMAP.md, spec-kit
// tasks.md, plain and emoji checklists) and structured YAML/JSON task lists. It validates them
// (duplicate ids, unknown dependencies, cycles), orders tasks topologically and ticks finished tasks
// in place without disturbing any other byte of the file.
package roadmap

import (
	"container/heap"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Format is the syntax a roadmap was written in.
type Format int

const (
	FormatMarkdown Format = iota
	FormatYAML
	FormatJSON
)

func (f Format) String() string {
	switch f {
	case FormatMarkdown:
		return "markdown"
	case FormatYAML:
		return "yaml"
	case FormatJSON:
		return "json"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Roadmap is a validated plan.
type Roadmap struct {
	Source string // the file name/path as given, used in errors
	Title  string // first level-1 heading (markdown) or `title:` (task list)
	Format Format
	Tasks  []*Task  // document order
	Order  []string // topological execution order, stable by document order
	// Warnings are what was read but not understood, and kept anyway: a dependency written in words
	// that names no task is kept in the task's notes.
	Warnings Errors
	// Convention is how the markdown was read (ConventionGSD, …); see Conventions.
	Convention string
}

// The conventions a markdown plan is read in. Detect picks one from the plan's own marks;
// ParseAs forces one.
const (
	ConventionChecklist = "checklist" // plain and emoji checklists, GSD-like phases as ## headings
	ConventionGSD       = "gsd"       // GSD's ROADMAP.md: phase overview, ### Phase N details, NN-MM plans, waves
	ConventionSpecKit   = "spec-kit"  // spec-kit tasks.md: T001 ids, [P], [USn] labels
	ConventionKiro      = "kiro"      // Kiro tasks.md: numbered tasks and sub-tasks, optional "*" tasks
	ConventionOpenSpec  = "openspec"  // OpenSpec change tasks.md: "## 1. Section" and "- [ ] 1.1 Task"
	ConventionTaskList  = "task-list" // YAML and JSON
)

// Conventions lists the markdown conventions, for --format.
var Conventions = []string{ConventionChecklist, ConventionGSD, ConventionSpecKit, ConventionKiro, ConventionOpenSpec}

// Describe says in words how a plan was read ("read as a GSD roadmap").
func Describe(convention string) string {
	switch convention {
	case ConventionGSD:
		return "read as a GSD roadmap (phases, NN-MM plans, waves)"
	case ConventionSpecKit:
		return "read as spec-kit tasks"
	case ConventionKiro:
		return "read as Kiro tasks (numbered tasks and sub-tasks; optional * tasks skipped)"
	case ConventionOpenSpec:
		return "read as an OpenSpec change's tasks"
	case ConventionTaskList:
		return "read as a task list"
	}
	return "read as a checklist"
}

// Task is one unit of work: one agent run and, once verified, one checkpoint commit.
type Task struct {
	ID, Title, Phase string
	Line             int // 1-based
	Done             bool
	Parallel         bool
	Labels           []string
	// Priority orders ready tasks: PriorityHigh first, PriorityLow last, document order otherwise.
	Priority int
	// Gate is GateBefore (a person approves before the agent starts) or GateAfter (a person approves the
	// verified work before it becomes a checkpoint); empty for none.
	Gate        string
	Depends     []string
	Verify      []string
	Accept      []string
	Subtasks    []Subtask
	Notes       string
	Description string // task lists only
	// Optional marks a task its plan says may be left out (Kiro's "- [ ]* 1.3"): a run skips it
	// unless asked to include optional tasks.
	Optional bool
	// Context are files of the repository the task names as its plan or spec (a GSD NN-MM-PLAN.md):
	// their content goes into the task's prompt, within a budget.
	Context []string
}

// Subtask is a nested checkbox under a task. Subtasks are ticked together with their task.
type Subtask struct {
	Title string
	Done  bool
}

// Task returns the task with the given id, or nil.
func (r *Roadmap) Task(id string) *Task {
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Error is one problem in a roadmap, located by file and line.
type Error struct {
	File string
	Line int      // 1-based; 0 when the problem has no single line
	IDs  []string // task ids involved (for a cycle: the ids on the cycle)
	Msg  string
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "roadmap"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", file, e.Msg)
}

// Errors is every problem found in one roadmap, sorted by line.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find an individual *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// FormatOf picks the format from the file extension: .yml/.yaml is YAML, .json is JSON, anything
// else is markdown.
func FormatOf(source string) Format {
	switch strings.ToLower(filepath.Ext(source)) {
	case ".yml", ".yaml":
		return FormatYAML
	case ".json":
		return FormatJSON
	}
	return FormatMarkdown
}

// Parse reads a roadmap in the format given by the extension of source (see FormatOf). When the
// roadmap is invalid it returns (nil, Errors) holding every problem found, not just the first.
func Parse(source string, data []byte) (*Roadmap, error) {
	return parse(source, FormatOf(source), data, "")
}

// ParseMarkdown reads a markdown roadmap whatever its name, e.g. the body of an issue.
func ParseMarkdown(source string, data []byte) (*Roadmap, error) {
	return parse(source, FormatMarkdown, data, "")
}

// ParseAs reads a markdown roadmap in the convention given (one of Conventions; "" detects it).
func ParseAs(source string, data []byte, convention string) (*Roadmap, error) {
	if convention != "" && !slices.Contains(Conventions, convention) {
		return nil, fmt.Errorf("roadmap: convention %q is not one of %s", convention, strings.Join(Conventions, ", "))
	}
	if FormatOf(source) != FormatMarkdown {
		return parse(source, FormatOf(source), data, "")
	}
	return parse(source, FormatMarkdown, data, convention)
}

func parse(source string, format Format, data []byte, convention string) (*Roadmap, error) {
	var d *doc
	if format == FormatMarkdown {
		d = scanMarkdown(data, convention)
	} else {
		d = scanTaskList(data, format)
		d.convention = ConventionTaskList
	}
	errs := d.errs
	warnings := resolveDeps(d.items, format == FormatMarkdown)
	errs = append(errs, validate(d.items)...)
	if len(errs) > 0 {
		for _, e := range errs {
			e.File = source
		}
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, errs
	}
	for _, w := range warnings {
		w.File = source
	}
	r := &Roadmap{Source: source, Title: d.title, Format: format, Tasks: make([]*Task, len(d.items)), Warnings: warnings,
		Convention: d.convention}
	for i, it := range d.items {
		r.Tasks[i] = it.task
	}
	r.Order = order(d.items)
	return r, nil
}

// doc is the result of scanning one file, before validation. Tick uses the positions it keeps.
type doc struct {
	title      string
	convention string
	items      []*item
	errs       Errors    // syntax and schema problems found while scanning
	tree       *listTree // task lists only
}

// item is a task plus what the scanner knows about where it came from.
type item struct {
	task *Task
	// priority is the task's priority as written, and its line, checked by validate.
	priority     string
	priorityLine int
	gate         string
	gateLine     int
	depLines     []int // line of each entry of task.Depends, for error messages
	// weakID says the id was a bare word before the title (markdown), which goes back into the title
	// when it is not unique.
	weakID   bool
	box      box   // markdown: the task's checkbox
	subBoxes []box // markdown: one per subtask (and the Kiro parent's box on its last sub-task)
	subLines []int // markdown: the line index of each subtask
	// phaseNum is the number of the task's phase heading ("2.1"), wave its GSD wave; overview is set on
	// a GSD phase overview entry, with its phase's number and name.
	phaseNum, overview, overviewName string
	wave                             int
	milestone                        bool
	index                            int // task lists: index in the tasks array
}

// box is the position of a checkbox in the source.
type box struct {
	off   int  // byte offset of "[" or of the emoji
	emoji bool // ✅ ⬜ ☐ rather than [ ] [x] [X]
}

// newTask returns a task whose slices are non-nil, as the API promises.
func newTask() *Task {
	return &Task{Labels: []string{}, Depends: []string{}, Verify: []string{}, Accept: []string{}, Subtasks: []Subtask{}, Context: []string{}}
}

func (it *item) addDep(id string, line int) {
	for _, d := range it.task.Depends {
		if d == id {
			return
		}
	}
	it.task.Depends = append(it.task.Depends, id)
	it.depLines = append(it.depLines, line)
}

// autoIDs gives "P.n" ids to tasks that have none: P is the phase's own number when its heading has
// one ("## Phase 2.7: …"), else the 1-based index of the phase among phases holding tasks; n is the
// task's 1-based position in its phase. phaseKey identifies phases (two headings
// with the same text are different phases).
//
// An automatic id never takes an id a task was given explicitly: the count goes on past it.
func autoIDs(items []*item, phaseKey []int) {
	taken := map[string]bool{}
	for _, it := range items {
		if it.task.ID != "" {
			taken[it.task.ID] = true
		}
	}
	phaseIndex := map[int]int{}
	count := map[int]int{}
	for i, it := range items {
		k := phaseKey[i]
		if _, ok := phaseIndex[k]; !ok {
			phaseIndex[k] = len(phaseIndex) + 1
		}
		count[k]++
		if it.task.ID == "" {
			// The author's own phase number when the heading has one ("## Phase 2.7" gives 2.7.1).
			prefix := strconv.Itoa(phaseIndex[k])
			if it.phaseNum != "" {
				prefix = it.phaseNum
			}
			id := fmt.Sprintf("%s.%d", prefix, count[k])
			for taken[id] {
				count[k]++
				id = fmt.Sprintf("%s.%d", prefix, count[k])
			}
			it.task.ID, taken[id] = id, true
		}
	}
}

// Gates.
const (
	GateBefore = "before"
	GateAfter  = "after"
)

// Task priorities.
const (
	PriorityLow    = -1
	PriorityNormal = 0
	PriorityHigh   = 1
)

// ParsePriority reads "high", "normal", "low" or spec-kit's P1 (high), P2 (normal), P3 (low).
func ParsePriority(s string) (int, bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(s), "`*[]()")) {
	case "high", "p1":
		return PriorityHigh, true
	case "normal", "medium", "p2":
		return PriorityNormal, true
	case "low", "p3":
		return PriorityLow, true
	}
	return PriorityNormal, false
}

// resolveDeps matches each dependency to a task: exactly, else ignoring case (blocked-by:t001 for
// T001). A dependency that is not even shaped like an id ("IApplyStep extraction") is words a person
// wrote: it is kept in the task's notes with a warning instead of failing the plan. An id that names
// no task stays, for validate to report. Task lists name ids of any shape, so words are only read as
// words in markdown.
func resolveDeps(items []*item, markdown bool) Errors {
	ids := map[string]bool{}
	fold := map[string]string{}
	for _, it := range items {
		ids[it.task.ID] = true
		if _, ok := fold[strings.ToLower(it.task.ID)]; !ok {
			fold[strings.ToLower(it.task.ID)] = it.task.ID
		}
	}
	var warnings Errors
	for _, it := range items {
		deps, lines := []string{}, []int{}
		words := map[int][]string{} // free text by line
		var wordLines []int
		for i, d := range it.task.Depends {
			switch {
			case ids[d]:
			case fold[strings.ToLower(d)] != "":
				d = fold[strings.ToLower(d)]
			case markdown && !looksLikeID(d):
				if _, seen := words[it.depLines[i]]; !seen {
					wordLines = append(wordLines, it.depLines[i])
				}
				words[it.depLines[i]] = append(words[it.depLines[i]], d)
				continue
			}
			if !slices.Contains(deps, d) {
				deps, lines = append(deps, d), append(lines, it.depLines[i])
			}
		}
		it.task.Depends, it.depLines = deps, lines
		for _, l := range wordLines {
			text := strings.Join(words[l], " ")
			note := "Depends on (in words; no task of the plan is named): " + text
			if it.task.Notes != "" {
				note = it.task.Notes + "\n" + note
			}
			it.task.Notes = note
			warnings = append(warnings, &Error{Line: l, IDs: []string{it.task.ID},
				Msg: fmt.Sprintf("task %s: dependency %q names no task; kept as a note", it.task.ID, text)})
		}
	}
	return warnings
}

// looksLikeID says a dependency is written as an id (1.2, T001, 01-03, AUTH-US1, or a short capital
// name such as A or DB) rather than words.
func looksLikeID(s string) bool {
	if isID(s) {
		return true
	}
	if len(s) == 0 || len(s) > 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'A' && s[i] <= 'Z') && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// validate reports duplicate ids, dependencies on unknown ids and dependency cycles.
func validate(items []*item) Errors {
	var errs Errors
	first := map[string]*item{}
	for _, it := range items {
		if f, ok := first[it.task.ID]; ok {
			errs = append(errs, &Error{Line: it.task.Line, IDs: []string{it.task.ID},
				Msg: fmt.Sprintf("duplicate task id %s (first at line %d)", it.task.ID, f.task.Line)})
			continue
		}
		first[it.task.ID] = it
	}
	for _, it := range items {
		if it.gate == "" {
			continue
		}
		switch g := strings.ToLower(strings.Trim(it.gate, " `*")); g {
		case GateBefore, GateAfter:
			it.task.Gate = g
		default:
			errs = append(errs, &Error{Line: it.gateLine, IDs: []string{it.task.ID},
				Msg: fmt.Sprintf("task %s: gate %q is not before or after", it.task.ID, it.gate)})
		}
	}
	for _, it := range items {
		if it.priority == "" {
			// spec-kit marks a story's priority as a label: [P1] to [P3].
			for _, l := range it.task.Labels {
				if p, ok := ParsePriority(l); ok && len(l) == 2 {
					it.task.Priority = p
				}
			}
			continue
		}
		p, ok := ParsePriority(it.priority)
		if !ok {
			errs = append(errs, &Error{Line: it.priorityLine, IDs: []string{it.task.ID},
				Msg: fmt.Sprintf("task %s: priority %q is not high, normal, low or P1 to P3", it.task.ID, it.priority)})
		}
		it.task.Priority = p
	}
	for _, it := range items {
		for i, d := range it.task.Depends {
			if _, ok := first[d]; !ok {
				errs = append(errs, &Error{Line: it.depLines[i], IDs: []string{it.task.ID, d},
					Msg: fmt.Sprintf("task %s depends on unknown task %s", it.task.ID, d)})
			}
		}
	}
	return append(errs, cycles(items, first)...)
}

// graph indexes the first task of each id and its edges to the tasks it depends on.
type graph struct {
	items []*item
	deps  [][]int
}

func newGraph(items []*item, first map[string]*item) *graph {
	pos := map[*item]int{}
	for i, it := range items {
		pos[it] = i
	}
	g := &graph{items: items, deps: make([][]int, len(items))}
	for i, it := range items {
		if first[it.task.ID] != it {
			continue // a duplicate: reported already, kept out of the graph
		}
		for _, d := range it.task.Depends {
			if dep, ok := first[d]; ok {
				g.deps[i] = append(g.deps[i], pos[dep])
			}
		}
	}
	return g
}

// cycles finds the strongly connected components of the dependency graph and reports one cycle per
// component, starting at its first task in document order.
func cycles(items []*item, first map[string]*item) Errors {
	g := newGraph(items, first)
	n := len(items)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var comps [][]int
	next := 0
	// Iterative Tarjan: long dependency chains must not exhaust the stack.
	type frame struct{ v, ei int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.ei < len(g.deps[f.v]) {
				w := g.deps[f.v][f.ei]
				f.ei++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				comps = append(comps, comp)
			}
		}
	}
	var errs Errors
	for _, comp := range comps {
		if len(comp) == 1 && !contains(g.deps[comp[0]], comp[0]) {
			continue
		}
		path := cyclePath(g, comp)
		ids := make([]string, len(path))
		for i, v := range path {
			ids[i] = items[v].task.ID
		}
		errs = append(errs, &Error{Line: items[path[0]].task.Line, IDs: ids,
			Msg: "dependency cycle: " + strings.Join(append(ids, ids[0]), " -> ")})
	}
	return errs
}

// cyclePath returns the shortest cycle through the first node (in document order) of a strongly
// connected component, found by breadth-first search inside the component.
func cyclePath(g *graph, comp []int) []int {
	in := map[int]bool{}
	start := comp[0]
	for _, v := range comp {
		in[v] = true
		if v < start {
			start = v
		}
	}
	prev := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.deps[v] {
			if w == start {
				path := []int{v}
				for v != start {
					v = prev[v]
					path = append(path, v)
				}
				// path runs backwards from the last node to start.
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen && in[w] {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int{start} // unreachable for a real component
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// order is Kahn's algorithm that always takes the ready task earliest in the document, so the
// execution order follows the document wherever the dependencies allow.
func order(items []*item) []string {
	first := map[string]*item{}
	for _, it := range items {
		if _, ok := first[it.task.ID]; !ok {
			first[it.task.ID] = it
		}
	}
	g := newGraph(items, first)
	n := len(items)
	indeg := make([]int, n)
	dependents := make([][]int, n)
	for v, ds := range g.deps {
		indeg[v] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], v)
		}
	}
	ready := &intHeap{}
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			heap.Push(ready, v)
		}
	}
	out := make([]string, 0, n)
	for ready.Len() > 0 {
		v := heap.Pop(ready).(int)
		out = append(out, items[v].task.ID)
		for _, w := range dependents[v] {
			indeg[w]--
			if indeg[w] == 0 {
				heap.Push(ready, w)
			}
		}
	}
	return out
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// splitIDs splits a dependency list such as "1.1, 1.2 and T-7" into ids. "none" and "nothing" mean
// no dependency, as people write in templates.
func splitIDs(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t'
	})
	var ids []string
	for _, f := range fields {
		f = strings.Trim(f, "`*[]#")
		f = strings.TrimRight(f, ".")
		switch strings.ToLower(f) {
		case "", "and", "&", "none", "nothing", "-", "task", "tasks", "n/a":
			continue
		}
		ids = append(ids, f)
	}
	return ids
}
