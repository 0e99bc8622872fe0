package roadmap

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GSD's ROADMAP.md: a phase overview ("- [ ] **Phase 2: Engine** — …"), "### Phase N" details with
// "**Depends on:** Phase 1" lines and plans named NN-MM, waves, and milestones. Inserted phases are
// numbered as decimals of the phase they follow (2.1, zero-padded as 02.1, nested as 02.13.1), and
// a long-lived roadmap may restart its phase numbers in each milestone ("## v1.4: Export").

// gsdPhase is what a "### Phase N" heading says about its phase.
type gsdPhase struct {
	num, text string
	line      int
	deps      []gsdDepLine
	warned    bool
}

// gsdDepLine is one "**Depends on:** …" line of a phase.
type gsdDepLine struct {
	refs []phaseRef
	text string
	line int
}

// phaseRef is a phase a "Depends on" line names; milestone is set when the line names one
// ("v1.3 Phase 2", "Phase 2 of v1.3").
type phaseRef struct{ milestone, num string }

// gsdPhaseIndex holds the phase headings by milestone and number (without leading zeros), and
// the first heading of each number in any milestone.
type gsdPhaseIndex struct {
	byKey map[string]*gsdPhase
	byNum map[string]*gsdPhase
}

func newGSDPhaseIndex() gsdPhaseIndex {
	return gsdPhaseIndex{byKey: map[string]*gsdPhase{}, byNum: map[string]*gsdPhase{}}
}

func phaseKey(milestone, num string) string { return milestone + "\x00" + trimZeros(num) }

func (x gsdPhaseIndex) heading(milestone, num, text string, line int) {
	if _, ok := x.byKey[phaseKey(milestone, num)]; !ok {
		p := &gsdPhase{num: num, text: text, line: line}
		x.byKey[phaseKey(milestone, num)] = p
		if _, ok := x.byNum[trimZeros(num)]; !ok {
			x.byNum[trimZeros(num)] = p
		}
	}
}

// find returns the heading of a phase: of the milestone scope when ids are scoped by milestone,
// else the first heading with that number in any section.
func (x gsdPhaseIndex) find(scope, num string) *gsdPhase {
	if scope != "" {
		return x.byKey[phaseKey(scope, num)]
	}
	return x.byNum[trimZeros(num)]
}

func (x gsdPhaseIndex) depends(milestone, num, val, text string, line int) {
	if p := x.byKey[phaseKey(milestone, num)]; p != nil {
		p.deps = append(p.deps, gsdDepLine{refs: phaseNumbers(val), text: text, line: line})
	}
}

// milestoneHeadRE reads a milestone heading: "v1.4: Export", "🚧 v1.1 Sharing (In Progress)",
// "Milestone v2.0 — Scale".
var milestoneHeadRE = regexp.MustCompile(`^[^\p{L}\p{N}]*(?:(?i:milestone)\s*:?\s*)?(v\d+(?:\.\d+)*)(?:$|[\s:—–(*-])`)

// milestoneOf returns the version a milestone heading names, or "".
func milestoneOf(text string) string {
	if m := milestoneHeadRE.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// phaseNumRE finds the phases a "Depends on" line names: "Phase 2", "Phases 1–5", "Phases 01..03",
// "v1.3 Phase 2", "Phase 2 of v1.3", "Phase 2 (v1.3)".
var phaseNumRE = regexp.MustCompile(`(?i)(?:\b(v\d+(?:\.\d+)*)\s+)?phases?\s+(\d+(?:\.\d+)*)(?:\s*(?:[–—-]|\.\.|\bto\b)\s*(\d+(?:\.\d+)*))?(?:\s+of\s+(v\d+(?:\.\d+)*)|\s*\((v\d+(?:\.\d+)*)\))?`)

// prose ends the part of a "Depends on" line that names dependencies: "Phase 5 (must land before
// Phase 6)" depends on phase 5 only.
var proseRE = regexp.MustCompile(`(?i)\b(?:before|blocks|blocking|unblocks|then|prior to|followed by)\b`)

// phaseListRE continues a list of phases after the first: ", 4.2", " and 5", ", Phase 7 of v1.3",
// "& 3–4".
var phaseListRE = regexp.MustCompile(`(?i)^\s*(?:,|&|/|\band\b|\bor\b)\s*(?:phases?\s+)?(\d+(?:\.\d+)*)(?:\s*(?:[–—-]|\.\.|\bto\b)\s*(\d+(?:\.\d+)*))?(?:\s+of\s+(v\d+(?:\.\d+)*)|\s*\((v\d+(?:\.\d+)*)\))?`)

// milestoneRemarkRE is a remark that names a milestone, "(v1.3)", which says which phase is meant.
var milestoneRemarkRE = regexp.MustCompile(`^\s*v\d+(?:\.\d+)*\s*$`)

// phaseNumbers reads the phases a "Depends on" line names; "Nothing" names none, nor does what
// follows a negation ("independent of Phases 3-6"); remarks in parentheses are skipped, so that
// "Phases 4.1, 4.2 (hard: …), 4.3 (soft: …)" names all three.
func phaseNumbers(s string) []phaseRef {
	if loc := proseRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	s = withoutRemarks(neededWords(s), milestoneRemarkRE.MatchString)
	var out []phaseRef
	add := func(ms, from, to string) {
		if to == "" || strings.Contains(from, ".") || strings.Contains(to, ".") {
			out = append(out, phaseRef{ms, from})
			if to != "" {
				out = append(out, phaseRef{ms, to})
			}
			return
		}
		a, _ := strconv.Atoi(from)
		b, _ := strconv.Atoi(to)
		for n := a; n <= b && n-a < 100; n++ {
			out = append(out, phaseRef{ms, strconv.Itoa(n)})
		}
	}
	for len(s) > 0 {
		loc := phaseNumRE.FindStringSubmatchIndex(s)
		if loc == nil {
			break
		}
		group := func(k int) string {
			if loc[2*k] < 0 {
				return ""
			}
			return s[loc[2*k]:loc[2*k+1]]
		}
		ms := group(1)
		if ms == "" {
			ms = group(4)
		}
		if ms == "" {
			ms = group(5)
		}
		add(ms, group(2), group(3))
		s = s[loc[1]:]
		for {
			m := phaseListRE.FindStringSubmatchIndex(s)
			if m == nil {
				break
			}
			sub := func(k int) string {
				if m[2*k] < 0 {
					return ""
				}
				return s[m[2*k]:m[2*k+1]]
			}
			lms := sub(3)
			if lms == "" {
				lms = sub(4)
			}
			add(lms, sub(1), sub(2))
			s = s[m[1]:]
		}
	}
	return out
}

// scopeMilestones scopes the tasks of each milestone by it when milestones restart their phase
// numbers (phase 1 in both v1.3 and v1.4): ids become "v1.4/01-02", phases "v1.4 / Phase 1: …".
// A roadmap that numbers its phases on across milestones keeps its ids as written.
func scopeMilestones(items []*item, phases gsdPhaseIndex) {
	seen := map[string]string{} // phase number -> the milestone it was first seen in
	restart := false
	note := func(milestone, num string) {
		if milestone == "" {
			return
		}
		n := trimZeros(num)
		if m, ok := seen[n]; ok && m != milestone {
			restart = true
		} else if !ok {
			seen[n] = milestone
		}
	}
	for k := range phases.byKey {
		milestone, num, _ := strings.Cut(k, "\x00")
		note(milestone, num)
	}
	for _, it := range items {
		if it.overview != "" {
			note(it.section, it.overview)
		}
	}
	if !restart {
		return
	}
	for _, it := range items {
		it.scope = it.section
		if it.scope != "" && it.task.Phase != "" && !strings.HasPrefix(it.task.Phase, it.scope) {
			it.task.Phase = it.scope + " / " + it.task.Phase
		}
	}
}

// gsdPhases reads GSD's phase overview ("- [ ] **Phase 2: Engine** — …") as phases: an entry whose
// phase lists plans is not a task (the plans are), so the work is never done twice; an entry whose
// phase has no plans yet is the phase's one task, with the phase's number as its id. A milestone
// entry ("- ✅ **v1.0 MVP** — Phases 1-9") is never a task.
func gsdPhases(items []*item, keys []int) ([]*item, []int) {
	planned := map[string]bool{} // scope and phase number
	plannedAnywhere := map[string]bool{}
	for _, it := range items {
		if it.overview == "" && it.phaseNum != "" {
			planned[phaseKey(it.scope, it.phaseNum)] = true
			plannedAnywhere[trimZeros(it.phaseNum)] = true
		}
		if p, ok := planPhase(it.task.ID); ok && it.overview == "" {
			planned[phaseKey(it.scope, p)] = true
			plannedAnywhere[trimZeros(p)] = true
		}
	}
	var outItems []*item
	var outKeys []int
	for i, it := range items {
		if it.milestone {
			continue // a milestone names phases; their plans are the work
		}
		if it.overview != "" {
			// An overview outside the milestone sections of a roadmap that restarts its numbers
			// cannot say which milestone it means: any that has plans for the number will do.
			if planned[phaseKey(it.scope, it.overview)] || (it.scope == "" && plannedAnywhere[trimZeros(it.overview)] && scoped(items)) {
				continue
			}
			it.task.ID, it.weakID, it.kind = it.overview, false, "phase"
			it.task.Phase = "Phase " + it.overview + ": " + it.overviewName
			if it.scope != "" {
				it.task.Phase = it.scope + " / " + it.task.Phase
			}
			it.phaseNum = it.overview
			if it.overviewName != "" {
				// "**Phase 2: Engine** — run one task": the name is the title, the rest says what it is.
				if _, after, ok := strings.Cut(it.rawTitle, "**"); ok {
					if _, desc, ok := strings.Cut(after, "**"); ok {
						if desc = strings.TrimSpace(trimSep(desc)); desc != "" {
							it.task.Notes = strings.TrimSpace(desc + "\n" + it.task.Notes)
						}
					}
				}
				it.task.Title = it.overviewName
			}
		}
		outItems, outKeys = append(outItems, it), append(outKeys, keys[i])
	}
	return outItems, outKeys
}

func scoped(items []*item) bool {
	return slices.ContainsFunc(items, func(it *item) bool { return it.scope != "" })
}

// planPhase returns the phase a GSD plan id names: "02.13.1" for 02.13.1-01.
func planPhase(id string) (string, bool) {
	p, n, ok := strings.Cut(id, "-")
	if !ok || p == "" || n == "" || strings.Contains(n, "-") {
		return "", false
	}
	if _, ok := canonNumber(p); !ok || strings.Contains(p, "-") {
		return "", false
	}
	for i := 0; i < len(n); i++ {
		if !isDigit(n[i]) {
			return "", false
		}
	}
	return p, true
}

// plansBelong gives a plan the phase its id names (02.13.1-01 is a plan of phase 02.13.1) when the
// roadmap has that phase, wherever the plan is written.
func plansBelong(items []*item, phases gsdPhaseIndex) {
	for _, it := range items {
		p, ok := planPhase(it.task.ID)
		if !ok || (it.phaseNum != "" && trimZeros(p) == trimZeros(it.phaseNum)) {
			continue
		}
		if ph := phases.find(it.scope, p); ph != nil {
			it.phaseNum, it.task.Phase = p, ph.text
			if it.scope != "" {
				it.task.Phase = it.scope + " / " + ph.text
			}
		}
	}
}

// trimZerosOf writes a dotted number without leading zeros ("03" is "3"), and leaves anything else
// as it is.
func trimZerosOf(s string) string {
	if s == "" || strings.Trim(s, "0123456789.") != "" {
		return s
	}
	return trimZeros(s)
}

func trimZeros(n string) string {
	parts := strings.Split(n, ".")
	for i, p := range parts {
		if t := strings.TrimLeft(p, "0"); t != "" {
			parts[i] = t
		} else {
			parts[i] = "0"
		}
	}
	return strings.Join(parts, ".")
}

// gsdDependencies gives GSD plans the order their roadmap states without per-plan dependencies: a
// plan of wave N waits for the plans of the waves before it in its phase, and the first wave of a
// phase waits for the plans of the phases its "Depends on" lines name. A plan that names its own
// dependencies keeps them. A "Depends on" line naming a later phase of the same milestone is prose
// ("inserted after Phase 5, ahead of Phase 6"): GSD's dependencies flow forward, so it is
// reported and left out rather than read as a cycle.
//
// What it adds stays linear in the plans: when the plans of a wave times the plans it waits for
// would be more than maxBarrier dependencies, a wave waits for the plans that stand for the ones
// before it (the last wave's, which wait for the rest), and past that for one of them, which waits
// for the others.
func gsdDependencies(items []*item, phases gsdPhaseIndex) Errors {
	own := make([]bool, len(items)) // the plan names its own dependencies
	byPhase := map[string][]int{}
	var keys []string
	for i, it := range items {
		own[i] = len(it.task.Depends) > 0
		if it.phaseNum == "" {
			continue
		}
		k := phaseKey(it.scope, it.phaseNum)
		if _, ok := byPhase[k]; !ok {
			keys = append(keys, k)
		}
		byPhase[k] = append(byPhase[k], i)
	}
	type wave struct {
		n     int
		plans []int
	}
	standFor := map[string][]int{} // plans whose being done means the whole phase is
	first := map[string][]int{}    // plans of a phase that wait for the phases it depends on
	for _, k := range keys {
		at := map[int]int{}
		var waves []wave
		var noWave []int
		for _, i := range byPhase[k] {
			n := items[i].wave
			if n <= 0 {
				noWave = append(noWave, i)
				continue
			}
			if _, ok := at[n]; !ok {
				at[n] = len(waves)
				waves = append(waves, wave{n: n})
			}
			waves[at[n]].plans = append(waves[at[n]].plans, i)
		}
		slices.SortStableFunc(waves, func(a, b wave) int { return a.n - b.n })
		var earlier, rest []int // every plan of the waves so far; the plans that stand for them
		for wi, wv := range waves {
			var after []int
			for _, i := range wv.plans {
				if !own[i] {
					after = append(after, i)
				}
			}
			switch {
			case wi == 0:
				first[k] = append(first[k], after...)
			case len(after) > 0:
				before := earlier
				if len(earlier)*len(after) > maxBarrier {
					before = gsdGate(items, rest, fmt.Sprintf("waves before wave %d of phase %s", wv.n, items[after[0]].phaseNum))
				}
				for _, i := range after {
					for _, j := range before {
						if items[j].task.Optional {
							continue // left out of a run: not waited for
						}
						items[i].addDep(items[j].task.ID, items[i].task.Line,
							fmt.Sprintf("wave %d of phase %s comes after its wave %d", wv.n, items[i].phaseNum, items[j].wave))
					}
				}
			}
			earlier = append(earlier, wv.plans...)
			if slices.ContainsFunc(after, func(i int) bool { return waits(items[i]) }) {
				rest = append([]int{}, wv.plans...) // one of them waits for everything before them
			} else {
				rest = append(rest, wv.plans...)
			}
		}
		for _, i := range noWave {
			if !own[i] {
				first[k] = append(first[k], i)
			}
		}
		standFor[k] = append(rest, noWave...)
	}
	var warnings Errors
	phaseRep := map[string][]int{} // the plans a phase is waited for through, once it is named
	for _, k := range keys {
		after := first[k]
		if len(after) == 0 {
			continue
		}
		it := items[after[0]]
		ph := phases.find(it.scope, it.phaseNum)
		if ph == nil {
			continue
		}
		for _, dl := range ph.deps {
			var named []string // the phases the line names, each once
			seen := map[string]bool{}
			for _, ref := range dl.refs {
				scope := it.scope
				if ref.milestone != "" && scope != "" {
					scope = ref.milestone
				}
				if scope == it.scope && compareDotted(ref.num, it.phaseNum) >= 0 {
					if !ph.warned {
						ph.warned = true
						warnings = append(warnings, &Error{Line: dl.line, IDs: []string{it.task.ID},
							Msg: fmt.Sprintf("phase %s: %q names phase %s, which is not before it; read as words, not a dependency", ph.num, dl.text, ref.num)})
					}
					continue
				}
				rk := phaseKey(scope, ref.num)
				if len(byPhase[rk]) == 0 && scope != "" && ref.milestone == "" {
					rk = phaseKey("", ref.num) // a phase written outside the milestones
				}
				if !seen[rk] {
					seen[rk] = true
					named = append(named, rk)
				}
			}
			total := 0
			for _, rk := range named {
				total += len(byPhase[rk])
			}
			var before []int
			if total*len(after) <= maxBarrier {
				for _, rk := range named {
					before = append(before, byPhase[rk]...)
				}
			} else {
				// Each phase it names is waited for through the plans that stand for it, or through one
				// of them when they are many; and those through one, when they are many in turn.
				for _, rk := range named {
					rep, ok := phaseRep[rk]
					if !ok {
						rep = standFor[rk]
						if len(rep) > maxBarrier/16 {
							rep = gsdGateOf(items, rep, "plans of phase "+items[rep[0]].phaseNum)
						}
						phaseRep[rk] = rep
					}
					before = append(before, rep...)
				}
				before = gsdGate(items, before, "the phases "+strings.TrimSpace(dl.text)+" names")
			}
			for _, i := range after {
				for _, j := range before {
					if j != i && !items[j].task.Optional {
						items[i].addDep(items[j].task.ID, dl.line, dl.text)
					}
				}
			}
		}
	}
	return warnings
}

// gsdGate returns the plans to wait for in place of before: before itself when it is short, else
// one of them that waits for the others. That one is the latest (by phase number and wave, then
// the document), so its waiting goes the way the roadmap's order does.
func gsdGate(items []*item, before []int, what string) []int {
	if len(before) <= maxBarrier/16 {
		return before
	}
	return gsdGateOf(items, before, what)
}

// gsdGateOf is gsdGate whatever the length of before.
func gsdGateOf(items []*item, before []int, what string) []int {
	var todo []int // what a run waits for: a plan done or left out is not waited for
	for _, i := range before {
		if waits(items[i]) {
			todo = append(todo, i)
		}
	}
	if len(todo) <= 1 {
		return todo
	}
	before = todo
	g := before[0]
	for _, i := range before {
		a, b := items[i], items[g]
		if c := compareDotted(a.phaseNum, b.phaseNum); c > 0 || (c == 0 && (a.wave > b.wave || (a.wave == b.wave && i > g))) {
			g = i
		}
	}
	for _, i := range before {
		if i != g {
			items[g].addDep(items[i].task.ID, items[g].task.Line, fmt.Sprintf("the end of the %s is waited for through %s", what, items[g].task.ID))
		}
	}
	return []int{g}
}

// compareDotted compares phase numbers as dotted numbers: 02.9 < 02.10 < 02.13 < 02.13.1 < 3.
func compareDotted(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, y := trimZeros(pa[i]), trimZeros(pb[i])
		if len(x) != len(y) {
			return len(x) - len(y)
		}
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
	return len(pa) - len(pb)
}

// gsdRank orders the tasks that are ready at once by milestone and phase number, whatever order the
// sections are written in; a task without a phase keeps its place after the task above it.
func gsdRank(items []*item) []int {
	type key struct{ milestone, phase string }
	keys := make([]key, len(items))
	var last key
	for i, it := range items {
		if it.phaseNum != "" {
			last = key{strings.TrimPrefix(it.scope, "v"), it.phaseNum}
		}
		keys[i] = last
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := compareDotted(keys[a].milestone, keys[b].milestone); keys[a].milestone != keys[b].milestone && c != 0 {
			return c
		}
		return compareDotted(keys[a].phase, keys[b].phase)
	})
	rank := make([]int, len(items))
	for r, i := range idx {
		rank[i] = r
	}
	return rank
}
