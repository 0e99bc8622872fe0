package roadmap

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Assessment says whether a plan was read with confidence, and when not, what was tried and which
// format came closest: what a person needs to fix the plan, or to ask for it to be normalized.
type Assessment struct {
	// Confident is false when no task was found, or when tasks were found but not one of their
	// dependencies (two or more) names a task.
	Confident bool
	Tasks     int
	// Deps and Unresolved count the dependencies written, and those that name no task; Unread says
	// what the first of those are ("task 1: dependency \"7\" names no task").
	Deps, Unresolved int
	Unread           []string
	// Tried are the formats the plan was read in; Closest the one whose marks it shows most
	// (a Conventions entry, or ConventionTaskList), and Seen what marks those are.
	Tried   []string
	Closest string
	Seen    string
}

// Problem says in one paragraph why a plan was not read with confidence ("" when it was).
func (a Assessment) Problem(source string) string {
	if a.Confident {
		return ""
	}
	tried := make([]string, len(a.Tried))
	for i, c := range a.Tried {
		tried[i] = Name(c)
	}
	if a.Tasks == 0 {
		return fmt.Sprintf("%s: no format reads this plan: no tasks found reading it as %s. The closest is %s: %s. "+
			"A task is a list item with a checkbox, such as \"- [ ] 1.1 Write the parser\".",
			source, strings.Join(tried, ", "), Name(a.Closest), a.Seen)
	}
	unread := ""
	if len(a.Unread) > 0 {
		unread = " (" + strings.Join(a.Unread, "; ") + ")"
	}
	which := fmt.Sprintf("not one of its %d dependencies names a task", a.Deps)
	if a.Deps == 1 {
		which = "its one dependency names no task"
	}
	return fmt.Sprintf("%s: read as %s, but %s of the plan%s: they are written in a way Akira does not read. "+
		"Dependencies name task ids: \"(depends: 1.1)\", \"- depends: T001–T003\".",
		source, Name(a.Closest), which, unread)
}

// Name is how a convention is called in messages.
func Name(convention string) string {
	switch convention {
	case ConventionGSD:
		return "a GSD roadmap"
	case ConventionSpecKit:
		return "spec-kit tasks"
	case ConventionKiro:
		return "Kiro tasks"
	case ConventionOpenSpec:
		return "an OpenSpec change"
	case ConventionTaskList:
		return "a YAML/JSON task list"
	}
	return "a checklist"
}

// Assess reads a plan as Parse and ParseAs do (convention "" detects it) and says how confidently.
// It never fails: a plan that does not parse is assessed by what its scan found.
func Assess(source string, data []byte, convention string) Assessment {
	format := FormatOf(source)
	var d *doc
	if format == FormatMarkdown {
		d = scanMarkdown(data, convention)
	} else {
		d = scanTaskList(data, format)
		d.convention = ConventionTaskList
	}
	a := Assessment{Tasks: len(d.items), Closest: d.convention}
	ids := map[string]bool{}
	for _, it := range d.items {
		ids[it.task.ID] = true
		a.Deps += len(it.task.Depends)
		for _, l := range it.loose {
			if slices.ContainsFunc(l.ids, looksLikeID) {
				a.Deps++
			}
		}
	}
	warnings, errs := resolveDeps(d, format == FormatMarkdown)
	for _, it := range d.items {
		for _, dep := range it.task.Depends {
			if !ids[dep] {
				a.Unresolved++
			}
		}
	}
	for _, e := range append(warnings, errs...) {
		a.Unresolved += e.unread
		if e.unread > 0 && len(a.Unread) < 3 {
			a.Unread = append(a.Unread, strings.TrimSuffix(e.Msg, "; kept as a note"))
		}
	}
	a.Unresolved = min(a.Unresolved, a.Deps)
	// One dependency that names no task is a typo, which Parse reports; several and not one read is
	// a way of writing them that Akira does not know.
	a.Confident = a.Tasks > 0 && (a.Deps < 2 || a.Unresolved < a.Deps)
	if format != FormatMarkdown {
		a.Tried = []string{ConventionTaskList}
		a.Seen = "a file that is not a task list with tasks"
		return a
	}
	if convention != "" {
		a.Tried = []string{convention}
	} else {
		a.Tried = append([]string{}, Conventions...)
	}
	if a.Tasks == 0 {
		a.Closest, a.Seen = closestConvention(data, a.Tried)
	}
	return a
}

// marks are the signs of each convention that do not need a checkbox, to name the closest one.
var marks = []struct {
	convention, what string
	re               *regexp.Regexp
}{
	{ConventionGSD, `"Phase N" headings or entries`, regexp.MustCompile(`(?m)^\s*(?:#{2,6}\s+|[-*]\s+)?\**Phase\s+\d+(?:\.\d+)*\b`)},
	{ConventionGSD, `GSD plan lines ("01-02: …")`, regexp.MustCompile(`(?m)^\s*[-*]\s+\d{2}(?:\.\d+)*-\d{2}\b`)},
	{ConventionSpecKit, `spec-kit task ids ("T001")`, regexp.MustCompile(`(?m)^\s*[-*]?\s*T\d{3}\b`)},
	{ConventionKiro, `numbered items ("1. …", "1.1 …")`, regexp.MustCompile(`(?m)^\s*(?:[-*]\s+)?\d+\.(?:\d+)?\s+\S`)},
	{ConventionKiro, `"_Requirements:" lines`, regexp.MustCompile(`(?m)_Requirements:`)},
	{ConventionOpenSpec, `numbered sections ("## 1. …")`, regexp.MustCompile(`(?m)^##\s+\d+\.\s`)},
	{ConventionChecklist, `list items`, regexp.MustCompile(`(?m)^\s*[-*+]\s+\S`)},
}

// closestConvention names the convention whose marks the text shows most, and what they are.
func closestConvention(data []byte, tried []string) (string, string) {
	lines := splitLines(data)
	markSkips(lines)
	var b strings.Builder
	for _, l := range lines {
		if !l.skip {
			b.WriteString(l.text)
			b.WriteByte('\n')
		}
	}
	text := b.String()
	score := map[string]int{}
	seen := map[string][]string{}
	for _, m := range marks {
		if n := len(m.re.FindAllStringIndex(text, -1)); n > 0 {
			score[m.convention] += n
			seen[m.convention] = append(seen[m.convention], fmt.Sprintf("%d %s", n, m.what))
		}
	}
	best := ""
	for _, c := range tried {
		// Any plan has list items: a specific convention's marks win a tie with the checklist's.
		if best == "" || score[c] > score[best] || (score[c] == score[best] && best == ConventionChecklist && score[c] > 0) {
			best = c
		}
	}
	if score[best] == 0 {
		return ConventionChecklist, "it has no list items at all"
	}
	return best, "it has " + strings.Join(seen[best], " and ") + ", but no task checkbox (\"- [ ]\")"
}
