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
	// Marks are the status marks a markdown plan uses and how each was read.
	Marks []MarkReading
	// NotTasks are the checkbox lines not read as tasks (a choice such as "choose one", a line that
	// repeats a task), and why: what --explain shows.
	NotTasks []NotTask
	// byID indexes Tasks by id for Task; built by the parser.
	byID map[string]int
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
	// Optional marks a task its plan says may be left out (Kiro's "- [ ]* 1.3", or a mark its legend
	// says is dropped): a run skips it unless asked to include optional tasks.
	Optional bool
	// Mark is the status mark the task was read from when it is not a plain box ("[~]",
	// "Status: In progress"), and MarkReading how it was read ("[~] is read as not done: the legend
	// on line 3 says \"deployed but not verified\""), for --explain.
	Mark, MarkReading string
	// Guesses are the readings of the task Akira is not sure of (a mark no legend explains, a line
	// that repeats another), for --explain: a task whose state Akira cannot tell is never done.
	Guesses []string
	// Context are files of the repository the task names as its plan or spec (a GSD NN-MM-PLAN.md):
	// their content goes into the task's prompt, within a budget.
	Context []string
	// ReadAs says what the task was read from ("a GSD plan line", "a checklist item"), and
	// DependsFrom, one per entry of Depends, the text each dependency was read from: what
	// `akira plan --explain` shows a person who disagrees with the reading.
	ReadAs      string
	DependsFrom []DepSource
}

// DepSource is where one dependency of a task was read.
type DepSource struct {
	ID   string
	Line int    // 1-based; the task's own line for a dependency implied by a wave or a phase
	Text string // the words it was read from: "(after: 1.1)", "**Depends on:** Phase 2", …
	// PhaseOrder marks a dependency that only keeps the plan's phases in order (spec-kit's phase
	// rules and its "Dependencies & Execution Order" section): it holds the task back, but does not
	// make it a task that may run beside others (see MayRunBeside).
	PhaseOrder bool
}

// Subtask is a nested checkbox under a task. Subtasks are ticked together with their task.
type Subtask struct {
	Title string
	Done  bool
}

// Task returns the task with the given id, or nil.
func (r *Roadmap) Task(id string) *Task {
	if i, ok := r.byID[id]; ok && i < len(r.Tasks) && r.Tasks[i].ID == id {
		return r.Tasks[i]
	}
	// Not in the index: a roadmap built or changed by hand, or no such task (rare: a name a person
	// typed), so look.
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// index builds byID; the first task of an id wins, as everywhere else.
func (r *Roadmap) index() {
	r.byID = make(map[string]int, len(r.Tasks))
	for i, t := range r.Tasks {
		if _, ok := r.byID[t.ID]; !ok {
			r.byID[t.ID] = i
		}
	}
}

// Error is one problem in a roadmap, located by file and line.
type Error struct {
	File string
	Line int      // 1-based; 0 when the problem has no single line
	IDs  []string // task ids involved (for a cycle: the ids on the cycle)
	Msg  string
	// unread counts the dependencies this problem is about that were written but could not be
	// read (words, a bad range, "(after …)" naming no task), for Assess.
	unread int
	// unknown is set on a warning about ids the plan does not have, with the message it has as an
	// error: it becomes one when not one dependency of the plan names a task.
	unknown string
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
	warnings, rerrs, read := resolveDepsCounting(d, format == FormatMarkdown)
	if read == 0 {
		// Not one dependency of the plan names a task: the ids it names are not a slip in a plan
		// that is read, they say the plan is not read. They are errors, as a plan nothing reads is.
		var kept Errors
		for _, w := range warnings {
			if w.unknown != "" {
				rerrs = append(rerrs, &Error{Line: w.Line, IDs: w.IDs, Msg: w.unknown, unread: w.unread})
				continue
			}
			kept = append(kept, w)
		}
		warnings = kept
	}
	warnings = append(d.warnings, warnings...)
	if d.convention == ConventionSpecKit {
		warnings = append(warnings, specKitPhaseOrder(d)...)
	}
	if d.legend != nil {
		warnings = append(warnings, markWarnings(d.items, d.legend)...)
	}
	errs = append(errs, rerrs...)
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
	sort.SliceStable(warnings, func(i, j int) bool { return warnings[i].Line < warnings[j].Line })
	r := &Roadmap{Source: source, Title: d.title, Format: format, Tasks: make([]*Task, len(d.items)), Warnings: warnings,
		Convention: d.convention}
	for i, it := range d.items {
		r.Tasks[i] = it.task
		it.task.ReadAs = readAs(d.convention, it.kind)
		it.task.DependsFrom = make([]DepSource, len(it.task.Depends))
		for j, dep := range it.task.Depends {
			it.task.DependsFrom[j] = DepSource{ID: dep, Line: it.depLines[j], Text: it.depTexts[j], PhaseOrder: it.depOrder[j]}
		}
	}
	r.Order = order(d.items, d.rank)
	if d.legend != nil {
		r.Marks = d.legend.readings()
	}
	r.NotTasks = d.notTasks
	r.index()
	return r, nil
}

// doc is the result of scanning one file, before validation. Tick uses the positions it keeps.
type doc struct {
	title      string
	convention string
	items      []*item
	errs       Errors    // syntax and schema problems found while scanning
	warnings   Errors    // what was read but not understood, found while scanning
	tree       *listTree // task lists only
	// rank, when set, is each item's place among tasks that are ready at once (GSD: by phase
	// number, whatever order the sections are written in); nil means document order.
	rank []int
	// kiroKids are the ids of the sub-tasks of each Kiro task number that became tasks ("3" ->
	// 3.1, 3.2): "Depends on task 3" names them.
	kiroKids map[string][]string
	// legend is what the plan says its marks mean (markdown).
	legend *legend
	// notTasks are the lines that look like tasks and were not read as tasks, and why.
	notTasks []NotTask
	// orderLines are the lines of a "Dependencies & Execution Order" section, which say how the
	// phases of a spec-kit plan depend on each other.
	orderLines []sectionLine
}

// item is a task plus what the scanner knows about where it came from.
type item struct {
	task *Task
	// priority is the task's priority as written, and its line, checked by validate.
	priority     string
	priorityLine int
	gate         string
	gateLine     int
	depLines     []int    // line of each entry of task.Depends, for error messages
	depTexts     []string // the text each entry of task.Depends was read from, for --explain
	depOrder     []bool   // each entry of task.Depends only keeps phases in order (DepSource.PhaseOrder)
	// depSet holds task.Depends once it is long, so that adding a dependency stays O(1): a phase of
	// thousands of plans gives each plan of the next one thousands of dependencies.
	depSet map[string]bool
	// loose are "(after 1.1)" parentheses without a colon: dependencies only when every id they name
	// is a task, else words of the title (with a warning when they name some id).
	loose []looseDep
	// scope is the GSD milestone ("v1.4") whose phase numbers the task's id is scoped by; empty
	// unless the roadmap's milestones restart their phase numbers. section is the milestone the
	// task is written under, whether or not it scopes ids.
	scope, section string
	kind           string // what the task was read from, for Task.ReadAs
	rawTitle       string // the title with its markup, which says what a GSD entry is
	// weakID says the id was a bare word before the title (markdown), which goes back into the title
	// when it is not unique.
	weakID   bool
	phaseKey int   // identifies the task's phase: the line index of its heading, -1 for none
	end      int   // markdown: the index of the last line of the task's body
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
	off   int  // byte offset of "[" or of the emoji, or of a status field's value
	emoji bool // ✅ ⬜ ☐ rather than [ ] [x] [X]
	done  bool // read as done: ticking leaves it as it is
	// status is a "Status: Not started" field's value, width bytes long: ticking writes "Done".
	status bool
	width  int
}

// boxMark is the mark of the box at off in a line: "[~]", or "" for an emoji (whose meaning is fixed).
func boxMark(text string, off int, emoji bool) string {
	if emoji || off+3 > len(text) {
		return ""
	}
	return text[off : off+3]
}

// newTask returns a task whose slices are non-nil, as the API promises.
func newTask() *Task {
	return &Task{Labels: []string{}, Depends: []string{}, Verify: []string{}, Accept: []string{}, Subtasks: []Subtask{}, Context: []string{},
		DependsFrom: []DepSource{}}
}

// addDep records a dependency, the line it is on and the text it was read from.
func (it *item) addDep(id string, line int, text string) { it.addDepOf(id, line, text, false) }

// addDepOf records a dependency; phaseOrder says it only keeps the plan's phases in order.
func (it *item) addDepOf(id string, line int, text string, phaseOrder bool) {
	if it.hasDep(id) {
		return
	}
	it.task.Depends = append(it.task.Depends, id)
	it.depLines = append(it.depLines, line)
	it.depTexts = append(it.depTexts, text)
	it.depOrder = append(it.depOrder, phaseOrder)
	if it.depSet != nil {
		it.depSet[id] = true
	}
}

// hasDep says whether id is among the task's dependencies.
func (it *item) hasDep(id string) bool {
	const long = 16
	if it.depSet == nil && len(it.task.Depends) >= long {
		it.depSet = make(map[string]bool, 2*len(it.task.Depends))
		for _, d := range it.task.Depends {
			it.depSet[d] = true
		}
	}
	if it.depSet != nil {
		return it.depSet[id]
	}
	return slices.Contains(it.task.Depends, id)
}

// resetDeps empties the task's dependencies, to fill them again.
func (it *item) resetDeps() {
	it.task.Depends, it.depLines, it.depTexts, it.depOrder, it.depSet = []string{}, nil, nil, nil, nil
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
			if it.scope != "" {
				prefix = it.scope + "/" + prefix
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
// T001), else as the same dotted number (1.1 for 01.1); a task of a GSD milestone finds the ids of
// its own milestone first, and a GSD plan names a plan of its own phase by its number alone ("(wave
// 2, depends on 01)" in phase 3 is 03-01); a Kiro task number whose sub-tasks are the tasks names
// them all. A range ("T001–T005", "3 to 5") becomes the tasks it spans. In markdown, a dependency
// that names no task — words a person wrote ("IApplyStep extraction") or an id the plan does not
// have — is kept in the task's notes with a warning on that task instead of failing the plan; a
// task list names ids of any shape, and an id that names no task stays, for validate to report. It
// returns warnings, and errors for ranges that cannot be read.
func resolveDeps(d *doc, markdown bool) (warnings, errs Errors) {
	warnings, errs, _ = resolveDepsCounting(d, markdown)
	return warnings, errs
}

// resolveDepsCounting is resolveDeps, and it counts the dependencies that name a task.
func resolveDepsCounting(d *doc, markdown bool) (warnings, errs Errors, read int) {
	ix := newIDIndex(d.items)
	ix.kids = d.kiroKids
	budget := maxRangeDeps
	for _, it := range d.items {
		written, lines, texts, orders := it.task.Depends, it.depLines, it.depTexts, it.depOrder
		it.resetDeps()
		add := func(id string, line int, text string, phaseOrder bool) {
			read++
			it.addDepOf(id, line, text, phaseOrder)
		}
		words := map[int][]string{}    // what names no task, by line, for the notes
		unwarned := map[int][]string{} // of which not warned about yet
		var wordLines []int
		unread := func(line int, what string, warned bool) {
			if _, seen := words[line]; !seen {
				wordLines = append(wordLines, line)
			}
			words[line] = append(words[line], what)
			if !warned {
				unwarned[line] = append(unwarned[line], what)
			}
		}
		for i, dep := range written {
			line, text, phaseOrder := lines[i], texts[i], orders[i]
			if id, ok := ix.find(dep, it.scope); ok {
				add(id, line, text, phaseOrder)
				continue
			}
			if id, ok := ix.samePhasePlan(dep, it.task.ID); ok {
				add(id, line, text, phaseOrder)
				continue
			}
			if kids := ix.kids[trimZerosOf(dep)]; len(kids) > 0 {
				for _, id := range kids {
					add(id, line, text, phaseOrder)
				}
				continue
			}
			if ids, why, missing, isRange := ix.expandRange(dep, it.scope); isRange {
				if why == "" && len(ids) > budget {
					why = fmt.Sprintf("makes the plan's ranges name more than %d dependencies", maxRangeDeps)
				}
				budget -= len(ids)
				switch {
				case why != "" && missing && markdown:
					msg := fmt.Sprintf("task %s: dependency range %s %s", it.task.ID, dep, why)
					warnings = append(warnings, &Error{Line: line, IDs: []string{it.task.ID, dep}, unread: 1, unknown: msg,
						Msg: msg + "; kept as a note"})
					unread(line, dep, true)
				case why != "":
					errs = append(errs, &Error{Line: line, IDs: []string{it.task.ID, dep}, unread: 1,
						Msg: fmt.Sprintf("task %s: dependency range %s %s", it.task.ID, dep, why)})
				default:
					for _, id := range ids {
						add(id, line, text, phaseOrder)
					}
				}
				continue
			}
			if markdown {
				unread(line, dep, false)
				continue
			}
			add(dep, line, text, phaseOrder)
		}
		for _, l := range it.loose {
			ids, ok := ix.findAll(l.ids, it.scope)
			if ok && len(ids) <= budget {
				budget -= len(ids)
				for _, id := range ids {
					add(id, l.line, l.text, false)
				}
				it.task.Title = cleanSpaces(strings.Replace(it.task.Title, l.text, " ", 1))
				continue
			}
			var idLike []string
			for _, d := range l.ids {
				if looksLikeID(d) {
					idLike = append(idLike, d)
				}
			}
			if len(idLike) > 0 {
				warnings = append(warnings, &Error{Line: l.line, IDs: []string{it.task.ID}, unread: 1,
					Msg: fmt.Sprintf("task %s: %q looks like a dependency but is not read as one (it names something that is no task of the plan); it stays in the title, write %q for a dependency",
						it.task.ID, l.text, "(after: "+strings.Join(idLike, ", ")+")")})
			}
		}
		for _, l := range wordLines {
			text := strings.Join(words[l], " ")
			note := "Depends on (in words; no task of the plan is named): " + text
			if it.task.Notes != "" {
				note = it.task.Notes + "\n" + note
			}
			it.task.Notes = note
			var phrase, ids []string
			for _, w := range unwarned[l] {
				if looksLikeID(w) {
					ids = append(ids, w)
				} else {
					phrase = append(phrase, w)
				}
			}
			if len(ids) > 0 {
				msg := fmt.Sprintf("task %s depends on unknown %s %s", it.task.ID, pluralWord(len(ids), "task"), strings.Join(ids, ", "))
				warnings = append(warnings, &Error{Line: l, IDs: append([]string{it.task.ID}, ids...), unread: len(ids), unknown: msg,
					Msg: msg + "; kept as a note"})
			}
			if len(phrase) > 0 {
				warnings = append(warnings, &Error{Line: l, IDs: []string{it.task.ID}, unread: len(phrase),
					Msg: fmt.Sprintf("task %s: dependency %q names no task; kept as a note", it.task.ID, strings.Join(phrase, " "))})
			}
		}
	}
	return warnings, errs, read
}

// idIndex finds the task a dependency names.
type idIndex struct {
	ids   map[string]bool
	fold  map[string]string   // lower case -> first id
	canon map[string]string   // dotted number without leading zeros -> id ("" when two ids share it)
	kids  map[string][]string // a Kiro task number whose sub-tasks are tasks -> their ids
}

func newIDIndex(items []*item) *idIndex {
	ix := &idIndex{ids: map[string]bool{}, fold: map[string]string{}, canon: map[string]string{}}
	for _, it := range items {
		id := it.task.ID
		ix.ids[id] = true
		if _, ok := ix.fold[strings.ToLower(id)]; !ok {
			ix.fold[strings.ToLower(id)] = id
		}
		if c, ok := canonNumber(id); ok {
			if prev, seen := ix.canon[c]; seen && prev != id {
				ix.canon[c] = ""
			} else {
				ix.canon[c] = id
			}
		}
	}
	return ix
}

// find returns the id d names: in scope first ("v1.4/01-02" for "01-02" written in milestone
// v1.4), then as written, ignoring case, or as the same dotted number.
func (ix *idIndex) find(d, scope string) (string, bool) {
	cands := []string{d}
	if scope != "" && !strings.Contains(d, "/") {
		cands = []string{scope + "/" + d, d}
	}
	for _, c := range cands {
		if ix.ids[c] {
			return c, true
		}
	}
	for _, c := range cands {
		if id := ix.fold[strings.ToLower(c)]; id != "" {
			return id, true
		}
	}
	for _, c := range cands {
		if n, ok := canonNumber(c); ok && ix.canon[n] != "" {
			return ix.canon[n], true
		}
	}
	return "", false
}

// samePhasePlan finds the plan of the same GSD phase a bare number names: "01" written by plan
// 03-02 is 03-01, zero-padded as the plan's own number is.
func (ix *idIndex) samePhasePlan(d, self string) (string, bool) {
	scope, own := "", self
	if i := strings.LastIndexByte(self, '/'); i >= 0 {
		scope, own = self[:i+1], self[i+1:]
	}
	phase, ok := planPhase(own)
	if !ok || d == "" || len(d) > 3 || strings.Trim(d, "0123456789") != "" {
		return "", false
	}
	num := own[len(phase)+1:]
	if len(d) < len(num) {
		d = strings.Repeat("0", len(num)-len(d)) + d
	}
	return ix.find(scope+phase+"-"+d, "")
}

// findAll resolves every id (or range) of a list; ok only when all of them name tasks.
func (ix *idIndex) findAll(ds []string, scope string) ([]string, bool) {
	var out []string
	for _, d := range ds {
		if id, ok := ix.find(d, scope); ok {
			out = append(out, id)
			continue
		}
		ids, why, _, isRange := ix.expandRange(d, scope)
		if !isRange || why != "" {
			return nil, false
		}
		out = append(out, ids...)
	}
	return out, len(out) > 0
}

// canonNumber writes an id made of numbers joined by "." and "-" (01.1, 02.13.1-01), optionally
// scoped ("v1.4/01-02"), without leading zeros, so that 1.1 finds 01.1.
func canonNumber(id string) (string, bool) {
	scope, rest := "", id
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		scope, rest = id[:i+1], id[i+1:]
	}
	if rest == "" || !isDigit(rest[0]) || !isDigit(rest[len(rest)-1]) {
		return "", false
	}
	var b strings.Builder
	b.WriteString(scope)
	start := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if isDigit(c) {
			continue
		}
		// The first and last bytes are digits, so i-1 and i+1 are inside rest.
		if (c != '.' && c != '-') || !isDigit(rest[i-1]) || !isDigit(rest[i+1]) {
			return "", false
		}
		b.WriteString(trimZeros(rest[start:i]))
		b.WriteByte(c)
		start = i + 1
	}
	b.WriteString(trimZeros(rest[start:]))
	return b.String(), true
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
func order(items []*item, rank []int) []string {
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
	if rank == nil {
		rank = make([]int, n)
		for i := range rank {
			rank[i] = i
		}
	}
	ready := &intHeap{rank: rank}
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

// intHeap holds item indexes, the lowest rank on top.
type intHeap struct {
	xs   []int
	rank []int
}

func (h *intHeap) Len() int           { return len(h.xs) }
func (h *intHeap) Less(i, j int) bool { return h.rank[h.xs[i]] < h.rank[h.xs[j]] }
func (h *intHeap) Swap(i, j int)      { h.xs[i], h.xs[j] = h.xs[j], h.xs[i] }
func (h *intHeap) Push(x any)         { h.xs = append(h.xs, x.(int)) }
func (h *intHeap) Pop() any {
	x := h.xs[len(h.xs)-1]
	h.xs = h.xs[:len(h.xs)-1]
	return x
}

// splitIDs splits a dependency list such as "1.1, 1.2 and T-7" into ids. "none" and "nothing" mean
// no dependency, as people write in templates. A range written with spaces ("T001 – T005", "3 to
// 5") stays one entry, for resolveDeps to expand.
func splitIDs(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t'
	})
	var ids []string
	joinNext := false
	for _, f := range fields {
		f = strings.Trim(f, "`*[]#")
		if f != ".." {
			f = strings.TrimRight(f, ".")
		}
		if joinNext {
			joinNext = false
			if looksLikeID(f) {
				ids[len(ids)-1] += " " + f
				continue
			}
			// Not a range after all: the separator was a word of the list.
			last := ids[len(ids)-1]
			sep := last[strings.LastIndexByte(last, ' ')+1:]
			ids[len(ids)-1] = strings.TrimSuffix(last, " "+sep)
			if sep != "-" {
				ids = append(ids, sep)
			}
		}
		if rangeWords[strings.ToLower(f)] && len(ids) > 0 && looksLikeID(ids[len(ids)-1]) {
			ids[len(ids)-1] += " " + f
			joinNext = true
			continue
		}
		switch strings.ToLower(f) {
		case "", "and", "&", "none", "nothing", "-", "task", "tasks", "n/a":
			continue
		}
		ids = append(ids, f)
	}
	if joinNext { // a list ending in a separator: "1.1 -"
		last := ids[len(ids)-1]
		sep := last[strings.LastIndexByte(last, ' ')+1:]
		ids[len(ids)-1] = strings.TrimSuffix(last, " "+sep)
		if sep != "-" {
			ids = append(ids, sep)
		}
	}
	return ids
}
