package roadmap

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// spec-kit's tasks.md runs in phases: Setup, then Foundational ("blocks all user stories"), then the
// user stories, then Polish, and [P] marks tasks that may run at once within their phase. Its
// "Dependencies & Execution Order" section says the same in sentences ("Foundational (Phase 2):
// Depends on Setup completion - BLOCKS all user stories", "US2: Depends on US1", "US3: can run in
// parallel with US2 after US1"). Those rules become dependencies here, so that no wave of tasks run
// at once crosses them. A phase the section says nothing about comes after every phase before it,
// as the document reads; a phase the section gives dependencies comes after those. The dependencies
// are marked PhaseOrder: they hold a task back without making it a task that may run beside others.

// sectionLine is a line of the plan kept for a later reading.
type sectionLine struct {
	num  int
	text string
}

// orderSectionRE names the section of a spec-kit plan that says how its phases depend on each other.
var orderSectionRE = regexp.MustCompile(`(?i)\bdependenc(?:y|ies)\b|\bexecution\s+order\b`)

// maxBarrier bounds the dependencies one phase boundary gives in full (the tasks of a phase times
// the tasks of the phase before it). Past it the boundary goes through one task of the earlier
// phase, which waits for the others: what is kept in order stays in order, and the dependencies
// stay linear in the tasks of the plan.
const maxBarrier = 256

// phaseGroup is the tasks of one phase, in document order.
type phaseGroup struct {
	name    string
	items   []int // indexes into doc.items
	class   string
	stories []int // the user stories the phase holds
	num     string
}

// Phase classes of spec-kit.
const (
	classSetup        = "setup"
	classFoundational = "foundational"
	classStory        = "story"
	classPolish       = "polish"
)

var (
	setupRE        = regexp.MustCompile(`(?i)\bset\s*-?\s*up\b`)
	foundationalRE = regexp.MustCompile(`(?i)\bfoundation(?:al)?\b|\bblocking\s+prerequisites?\b`)
	polishRE       = regexp.MustCompile(`(?i)\bpolish\b|\bcross[\s-]cutting\b|\bfinal\s+phase\b`)
	storyRE        = regexp.MustCompile(`(?i)\b(?:user\s+)?story\s+(\d+)\b|\bUS(\d+)\b`)
	allStoriesRE   = regexp.MustCompile(`(?i)\b(?:user\s+)?stories\b`)
	phaseNumberRE  = regexp.MustCompile(`(?i)\bphases?\s+(\d+)(\+|\s*(?:[–—-]|\bto\b)\s*(\d+))?`)
	// orderVerbRE is what introduces the phases a phase needs.
	orderVerbRE = regexp.MustCompile(`(?i)\b(?:depends?\s+(?:up)?on|after|requires?|needs?|blocked\s+by|waits?\s+(?:for|on)|following|once|when)\b`)
	// noneRE says a phase needs nothing: "No dependencies", "can start immediately".
	noneRE = regexp.MustCompile(`(?i)^\W*(?:no\s+dependenc(?:y|ies)|none|nothing|n/a|can\s+start\s+(?:immediately|right\s+away|at\s+once))\b`)
	// subjectEndRE ends the subject of a sentence without a colon: "US3 can run … after US1".
	subjectEndRE = regexp.MustCompile(`(?i)\b(?:can|may|must|should|is|are|has|have|depends?|after|requires?|needs?|blocks?|blocked|waits?)\b`)
)

// phaseGroups gathers the items by phase, in the order the phases first appear.
func phaseGroups(items []*item) []*phaseGroup {
	byKey := map[int]*phaseGroup{}
	var groups []*phaseGroup
	for i, it := range items {
		g := byKey[it.phaseKey]
		if g == nil {
			g = &phaseGroup{name: it.task.Phase}
			byKey[it.phaseKey] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, i)
	}
	for _, g := range groups {
		if m := phaseRE.FindStringSubmatch(g.name); m != nil {
			g.num = m[1]
		}
		seen := map[int]bool{}
		for _, m := range storyRE.FindAllStringSubmatch(g.name, -1) {
			n, _ := strconv.Atoi(m[1] + m[2])
			if !seen[n] {
				seen[n] = true
				g.stories = append(g.stories, n)
			}
		}
		if len(g.stories) == 0 {
			// A phase named otherwise whose tasks all carry one story's label ([US2]).
			label := ""
			for _, i := range g.items {
				story := ""
				for _, l := range items[i].task.Labels {
					if m := storyRE.FindStringSubmatch(l); m != nil && strings.HasSuffix(strings.ToUpper(l), "US"+m[2]) && m[2] != "" {
						story = m[2]
					}
				}
				if story == "" || (label != "" && story != label) {
					label = ""
					break
				}
				label = story
			}
			if n, err := strconv.Atoi(label); err == nil {
				g.stories = []int{n}
			}
		}
		switch {
		case setupRE.MatchString(g.name):
			g.class = classSetup
		case foundationalRE.MatchString(g.name):
			g.class = classFoundational
		case len(g.stories) > 0:
			g.class = classStory
		case polishRE.MatchString(g.name):
			g.class = classPolish
		}
	}
	return groups
}

// phaseRefs finds the phases some words name: by name ("Setup", "Foundational", "US2", "User Story
// 2", "all user stories", "Polish") and, when no name is there, by number ("Phase 2", "Phases 3-5",
// "Phase 3+").
func phaseRefs(groups []*phaseGroup, s string) []int {
	var out []int
	in := map[int]bool{}
	add := func(match func(g *phaseGroup) bool) {
		for i, g := range groups {
			if match(g) && !in[i] {
				in[i] = true
				out = append(out, i)
			}
		}
	}
	if setupRE.MatchString(s) {
		add(func(g *phaseGroup) bool { return g.class == classSetup })
	}
	if foundationalRE.MatchString(s) {
		add(func(g *phaseGroup) bool { return g.class == classFoundational })
	}
	if polishRE.MatchString(s) {
		add(func(g *phaseGroup) bool { return g.class == classPolish })
	}
	stories := storyRE.FindAllStringSubmatch(s, -1)
	for _, m := range stories {
		n, _ := strconv.Atoi(m[1] + m[2])
		add(func(g *phaseGroup) bool { return slices.Contains(g.stories, n) })
	}
	if len(stories) == 0 && allStoriesRE.MatchString(s) {
		add(func(g *phaseGroup) bool { return g.class == classStory })
	}
	if len(out) > 0 {
		return out
	}
	for _, m := range phaseNumberRE.FindAllStringSubmatch(s, -1) {
		lo, _ := strconv.Atoi(m[1])
		hi := lo
		switch {
		case m[2] == "+":
			hi = 1 << 30
		case m[3] != "":
			hi, _ = strconv.Atoi(m[3])
		}
		add(func(g *phaseGroup) bool {
			n, err := strconv.Atoi(strings.SplitN(g.num, ".", 2)[0])
			return err == nil && g.num != "" && !strings.Contains(g.num, ".") && n >= lo && n <= hi
		})
	}
	return out
}

// orderStatement is what one sentence of the section says about the phases of its subject.
type orderStatement struct {
	subjects, needs []int
	explicit        bool // it says what the subjects need, if only "nothing"
	none            bool // it says they need nothing ("No dependencies")
	line            int
	text            string
}

// readOrderSection reads the sentences of a "Dependencies & Execution Order" section.
func readOrderSection(groups []*phaseGroup, lines []sectionLine) []orderStatement {
	var out []orderStatement
	// A real section has a few dozen sentences; each may name every phase ("all user stories").
	const mostSentences = 200
	if len(lines) > mostSentences {
		lines = lines[:mostSentences]
	}
	seen := map[string]bool{}
	for _, l := range lines {
		text := strings.TrimSpace(l.text)
		if seen[text] {
			continue // said already
		}
		seen[text] = true
		if q, ok := listMarker(text, 0); ok {
			text = text[q:]
		}
		plain := strings.TrimSpace(strings.NewReplacer("**", "", "__", "").Replace(text))
		subject, predicate := "", ""
		if i := strings.Index(plain, ":"); i > 0 {
			subject, predicate = plain[:i], plain[i+1:]
		} else if loc := subjectEndRE.FindStringIndex(plain); loc != nil && loc[0] > 0 {
			subject, predicate = plain[:loc[0]], plain[loc[0]:]
		}
		subjects := phaseRefs(groups, subject)
		if len(subjects) == 0 {
			continue
		}
		st := orderStatement{subjects: subjects, line: l.num, text: text}
		for _, clause := range clauses(predicate) {
			if noneRE.MatchString(clause) {
				st.explicit, st.none = true, true
			}
			verbs := orderVerbRE.FindAllStringIndex(clause, -1)
			for k, v := range verbs {
				end := len(clause)
				if k+1 < len(verbs) {
					end = verbs[k+1][0]
				}
				seg := clause[v[1]:end]
				if loc := negationRE.FindStringIndex(seg); loc != nil {
					seg = seg[:loc[0]]
				}
				for _, p := range phaseRefs(groups, seg) {
					st.needs = append(st.needs, p) // phaseRefs names each phase once; a repeat is harmless
					st.explicit = true
				}
			}
		}
		if st.explicit {
			out = append(out, st)
		}
	}
	return out
}

// specKitPhaseOrder adds the dependencies that keep a spec-kit plan's phases in order, and returns
// what it could not keep, as warnings.
func specKitPhaseOrder(d *doc) Errors {
	groups := phaseGroups(d.items)
	if len(groups) < 2 {
		return nil
	}
	topo, ok := explicitOrder(d.items)
	if !ok {
		return nil // a cycle of the plan's own: validate reports it, and nothing is added to it
	}
	var warnings Errors
	warned := 0
	phaseOf := make([]int, len(d.items))
	for p, g := range groups {
		for _, i := range g.items {
			phaseOf[i] = p
		}
	}
	// A dependency the author wrote from a phase onto a later one says the phases in between are
	// not in order: the phase order between them is left to what the tasks say.
	ix := newItemIndex(d.items)
	spanned := make([]int, len(groups)+1) // spanned[c] > 0: the boundary after phase c is crossed upwards
	var crossing [][2]int                 // task, dependency
	for i, it := range d.items {
		for _, dep := range it.task.Depends {
			j, ok := ix[dep]
			if !ok || phaseOf[j] <= phaseOf[i] {
				continue
			}
			spanned[phaseOf[i]]++
			spanned[phaseOf[j]]--
			crossing = append(crossing, [2]int{i, j})
		}
	}
	crossedBefore := make([]int, len(groups)+1) // how many of the boundaries before phase c are crossed
	for c := 0; c < len(groups); c++ {
		if c > 0 {
			spanned[c] += spanned[c-1]
		}
		crossedBefore[c+1] = crossedBefore[c]
		if spanned[c] > 0 {
			crossedBefore[c+1]++
		}
	}
	crossed := func(q, p int) bool { return crossedBefore[p]-crossedBefore[q] > 0 }
	// What each phase needs: what the section says, else every phase before it.
	explicit := make([][]int, len(groups))
	said := make([]bool, len(groups))
	saidBy := map[[2]int]orderStatement{} // the sentence that says phase p needs phase q, once per pair
	for _, st := range readOrderSection(groups, d.orderLines) {
		for _, p := range st.subjects {
			said[p] = said[p] || st.none
			for _, q := range st.needs {
				if q >= p {
					if warned < mostWarnings {
						warned++
						warnings = append(warnings, &Error{Line: st.line, IDs: []string{},
							Msg: fmt.Sprintf("%q: %s does not come before %s in the plan; read as words, not a dependency", st.text, groups[q].name, groups[p].name)})
					}
					continue
				}
				said[p] = true
				if _, dup := saidBy[[2]int{p, q}]; !dup {
					explicit[p] = append(explicit[p], q)
					saidBy[[2]int{p, q}] = st
				}
			}
		}
	}
	reduceNeeds(explicit, said)
	sinks := make([][]int, len(groups))
	gates := map[int]int{}
	// The frontier is the phases no later phase waits for yet: a phase the section says nothing
	// about waits for all of them. Kept as a list with a set beside it, so that each phase enters
	// and leaves it once.
	var frontierList []int
	inFrontier := map[int]bool{}
	for p, g := range groups {
		var needs []int
		if said[p] {
			needs = explicit[p]
		} else {
			for _, q := range frontierList {
				if inFrontier[q] {
					needs = append(needs, q)
				}
			}
		}
		sources := sourcesOf(d.items, g.items, ix)
		type wait struct {
			j, line int
			why     string
		}
		var waitsFor []wait // what the phase's sources wait for
		for _, q := range needs {
			if crossed(q, p) {
				if warned < mostWarnings {
					warned++
					i, j := crossingOf(crossing, phaseOf, q, p)
					warnings = append(warnings, &Error{Line: d.items[i].task.Line, IDs: []string{d.items[i].task.ID, d.items[j].task.ID},
						Msg: fmt.Sprintf("task %s depends on %s of a later phase, so %s is not kept after %s", d.items[i].task.ID,
							d.items[j].task.ID, groups[p].name, groups[q].name)})
				}
				continue
			}
			st, byWords := saidBy[[2]int{p, q}]
			why := fmt.Sprintf("%s comes after %s (spec-kit's phases run in order)", g.name, groups[q].name)
			if byWords {
				why = st.text
			}
			before := sinks[q]
			if len(before)*len(sources) > maxBarrier && len(before) > 1 {
				before = []int{gateOf(d.items, gates, q, before, topo, phaseOf, groups[q].name)}
			}
			for _, j := range before {
				line := 0 // the task's own line
				if byWords {
					line = st.line
				}
				waitsFor = append(waitsFor, wait{j, line, why})
			}
		}
		if len(waitsFor)*len(sources) > maxBarrier && len(waitsFor) > 1 {
			// A phase that needs very many (stories, for Polish): it waits for one task of the latest
			// of them, which waits for the rest. Its waiting goes the way the phases' order does.
			last := 0
			for k, w := range waitsFor {
				if a, b := phaseOf[w.j], phaseOf[waitsFor[last].j]; a > b || (a == b && topo[w.j] > topo[waitsFor[last].j]) {
					last = k
				}
			}
			gate := waitsFor[last].j
			for _, w := range waitsFor {
				if w.j != gate {
					d.items[gate].addDepOf(d.items[w.j].task.ID, d.items[gate].task.Line,
						fmt.Sprintf("%s waits for what it needs through %s", g.name, d.items[gate].task.ID), true)
				}
			}
			waitsFor = []wait{{gate, 0, fmt.Sprintf("%s comes after what it needs, through %s (%d phases)", g.name, d.items[gate].task.ID, len(needs))}}
		}
		for _, i := range sources {
			for _, w := range waitsFor {
				line := w.line
				if line == 0 {
					line = d.items[i].task.Line
				}
				d.items[i].addDepOf(d.items[w.j].task.ID, line, w.why, true)
			}
		}
		sinks[p] = sinksOf(d.items, g.items, ix)
		if !slices.ContainsFunc(g.items, func(i int) bool { return waits(d.items[i]) }) {
			// Nothing left to do in it: what comes after waits for what it waited for.
			for _, w := range waitsFor {
				sinks[p] = append(sinks[p], w.j)
			}
		}
		for _, q := range needs {
			inFrontier[q] = false
		}
		if !said[p] {
			frontierList = frontierList[:0]
		}
		frontierList = append(frontierList, p)
		inFrontier[p] = true
	}
	return warnings
}

// mostWarnings bounds the warnings about the phase order one plan gets: the first few say what is
// wrong, and a hostile plan cannot make them its size squared.
const mostWarnings = 10

// reduceNeeds drops, of what the section says a phase needs, the phases that another of its needs
// comes after already: "US2 depends on US1" and "all stories depend on Foundational" make US2 wait
// for US1 alone, which waits for Foundational. Plans have a few phases; one with very many is left
// as it is.
func reduceNeeds(needs [][]int, said []bool) {
	const most = 256
	if len(needs) > most {
		return
	}
	// before[p] holds every phase p comes after, through what is said or the document's order.
	before := make([]map[int]bool, len(needs))
	for p := range needs {
		before[p] = map[int]bool{}
		if !said[p] {
			for q := 0; q < p; q++ { // a phase the section says nothing about comes after all before it
				before[p][q] = true
			}
			continue
		}
		for _, q := range needs[p] {
			before[p][q] = true
			for r := range before[q] {
				before[p][r] = true
			}
		}
	}
	for p, qs := range needs {
		var kept []int
		for _, q := range qs {
			redundant := false
			for _, r := range qs {
				if r != q && before[r][q] {
					redundant = true
					break
				}
			}
			if !redundant {
				kept = append(kept, q)
			}
		}
		needs[p] = kept
	}
}

// crossingOf finds a dependency that crosses a boundary between phases q and p upwards.
func crossingOf(crossing [][2]int, phaseOf []int, q, p int) (int, int) {
	for _, c := range crossing {
		if lo, hi := phaseOf[c[0]], phaseOf[c[1]]; lo < p && hi > q {
			return c[0], c[1]
		}
	}
	return crossing[0][0], crossing[0][1]
}

// newItemIndex maps each id to its first item.
func newItemIndex(items []*item) map[string]int {
	ix := make(map[string]int, len(items))
	for i, it := range items {
		if _, ok := ix[it.task.ID]; !ok {
			ix[it.task.ID] = i
		}
	}
	return ix
}

// waits says a task takes part in a run's order: it is neither done nor left out.
func waits(it *item) bool { return !it.task.Done && !it.task.Optional }

// sourcesOf are the tasks of a phase that wait for no other task of it still to do: the phase's
// order reaches the others through them. (A done task waits for nothing: what depends on it alone
// is a source.)
func sourcesOf(items []*item, group []int, ix map[string]int) []int {
	in := map[int]bool{}
	for _, i := range group {
		in[i] = true
	}
	var out []int
	for _, i := range group {
		inner := false
		for _, dep := range items[i].task.Depends {
			if j, ok := ix[dep]; ok && in[j] && j != i && waits(items[j]) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, i)
		}
	}
	return out
}

// sinksOf are the tasks of a phase still to do that no other such task of it waits for: once they
// are done, the phase is. Done and optional tasks are left out (a run does not wait for them).
func sinksOf(items []*item, group []int, ix map[string]int) []int {
	in := map[int]bool{}
	for _, i := range group {
		in[i] = true
	}
	needed := map[int]bool{}
	for _, i := range group {
		if !waits(items[i]) {
			continue
		}
		for _, dep := range items[i].task.Depends {
			if j, ok := ix[dep]; ok && in[j] && j != i {
				needed[j] = true
			}
		}
	}
	var out []int
	for _, i := range group {
		if !needed[i] && waits(items[i]) {
			out = append(out, i)
		}
	}
	return out
}

// gateOf picks the task through which a large phase's end is waited for: the one of its last tasks
// in the latest phase that comes last in the plan's own order, which then waits for the others.
// Being last in that order, no task it waits for waits for it; being in the latest phase, its
// waiting goes the way the phases' order does.
func gateOf(items []*item, gates map[int]int, phase int, last []int, topo, phaseOf []int, name string) int {
	if g, ok := gates[phase]; ok {
		return g
	}
	g := last[0]
	for _, i := range last {
		if phaseOf[i] > phaseOf[g] || (phaseOf[i] == phaseOf[g] && topo[i] > topo[g]) {
			g = i
		}
	}
	why := fmt.Sprintf("the end of %s is waited for through %s (a phase of %d tasks)", name, items[g].task.ID, len(last))
	for _, i := range last {
		if i != g {
			items[g].addDepOf(items[i].task.ID, items[g].task.Line, why, true)
		}
	}
	gates[phase] = g
	return g
}

// explicitOrder numbers the items in a topological order of the dependencies they have now; ok is
// false when they form a cycle.
func explicitOrder(items []*item) ([]int, bool) {
	ix := newItemIndex(items)
	indeg := make([]int, len(items))
	dependents := make([][]int, len(items))
	for i, it := range items {
		for _, dep := range it.task.Depends {
			if j, ok := ix[dep]; ok {
				indeg[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	queue := make([]int, 0, len(items))
	for i := range items {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	pos := make([]int, len(items))
	for k := 0; k < len(queue); k++ {
		v := queue[k]
		pos[v] = k
		for _, w := range dependents[v] {
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	return pos, len(queue) == len(items)
}
