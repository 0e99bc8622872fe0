package roadmap

import (
	"fmt"
	"strconv"
	"strings"
)

// A dependency range names the tasks between two ids of one kind: "T001–T005", "T1.2.2-T1.2.4",
// "01-02..01-04", "3 to 5". Both ends share everything but their last number, and zero-padded
// numbers share their width, so that what is expanded is exactly what the author counted.

// maxRange bounds how many tasks one range may name: a typo must not make a million dependencies.
const maxRange = 1000

// maxRangeDeps bounds the dependencies all the ranges of one plan expand to: a few bytes of range
// must not become millions of edges in a hostile plan.
const maxRangeDeps = 100_000

// rangeSeps are the separators of a range other than the plain dash, which is tried at each of
// its positions because ids contain dashes themselves.
var rangeSeps = []string{" to ", "..", "–", "—"}

// expandRange reads d as a range and returns the ids of the tasks it spans. isRange is false when d
// is not written as a range at all; why says what is wrong with one that is, and onlyMissing that
// all that is wrong is that it names tasks the plan does not have.
func (ix *idIndex) expandRange(d, scope string) (ids []string, why string, onlyMissing, isRange bool) {
	from, to, why, ok := splitRange(d)
	if !ok {
		return nil, "", false, false
	}
	if why != "" {
		return nil, why, false, true
	}
	prefix, a, _ := cutNumber(from)
	_, b, _ := cutNumber(to)
	padded := (len(a) > 1 && a[0] == '0') || (len(b) > 1 && b[0] == '0')
	if padded && len(a) != len(b) {
		return nil, fmt.Sprintf("is not one kind of id: %s and %s differ in width", from, to), false, true
	}
	if len(a) > 9 || len(b) > 9 {
		return nil, "has a number too long to count", false, true
	}
	lo, _ := strconv.Atoi(a)
	hi, _ := strconv.Atoi(b)
	switch {
	case lo > hi:
		return nil, fmt.Sprintf("runs backwards (%s is after %s)", from, to), false, true
	case hi-lo >= maxRange:
		return nil, fmt.Sprintf("spans %d tasks, more than %d", hi-lo+1, maxRange), false, true
	}
	var missing []string
	for n := lo; n <= hi; n++ {
		num := strconv.Itoa(n)
		if padded {
			num = strings.Repeat("0", len(a)-len(num)) + num
		}
		id, ok := ix.find(prefix+num, scope)
		if kids := ix.kids[trimZerosOf(prefix+num)]; !ok && len(kids) > 0 {
			ids = append(ids, kids...) // "tasks 1–3" of a Kiro plan whose task 2 is its sub-tasks
			continue
		}
		if !ok {
			missing = append(missing, prefix+num)
			continue
		}
		ids = append(ids, id)
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 5 {
			more = fmt.Sprintf(" and %d more", len(missing)-5)
			missing = missing[:5]
		}
		return nil, fmt.Sprintf("names %s %s%s, which the plan does not have", pluralWord(len(missing), "task"),
			strings.Join(missing, ", "), more), true, true
	}
	return ids, "", false, true
}

// splitRange finds the two ends of a range. ok is false when s is not written as one; why is set
// when it is, but its ends are not of one kind.
func splitRange(s string) (from, to, why string, ok bool) {
	for _, sep := range rangeSeps {
		i := strings.Index(asciiLower(s), sep)
		if i <= 0 {
			continue
		}
		from, to = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(sep):])
		if !rangeEnd(from) || !rangeEnd(to) {
			return "", "", "", false
		}
		if w := sameKind(from, to); w != "" {
			return from, to, w, true
		}
		return from, to, "", true
	}
	// The plain dash: "T1.2.2-T1.2.4" is tried at each dash; "01-03", two bare numbers of which one
	// is zero-padded, is how GSD numbers a plan, never a range.
	mismatch := ""
	for i := 1; i < len(s)-1; i++ {
		if s[i] != '-' {
			continue
		}
		a, b := s[:i], s[i+1:]
		if !rangeEnd(a) || !rangeEnd(b) {
			continue
		}
		pa, na, _ := cutNumber(a)
		pb, nb, _ := cutNumber(b)
		if pa == "" && pb == "" && ((len(na) > 1 && na[0] == '0') || (len(nb) > 1 && nb[0] == '0')) {
			return "", "", "", false
		}
		if w := sameKind(a, b); w != "" {
			if mismatch == "" {
				mismatch = w
			}
			continue
		}
		return a, b, "", true
	}
	if mismatch != "" {
		return "", "", mismatch, true
	}
	return "", "", "", false
}

// rangeEnd says s can end a range: an id that ends in a number.
func rangeEnd(s string) bool {
	_, n, ok := cutNumber(s)
	return ok && n != "" && isID(s)
}

// sameKind says why two ends are not of one kind ("" when they are): they must share their prefix.
func sameKind(a, b string) string {
	pa, _, _ := cutNumber(a)
	pb, _, _ := cutNumber(b)
	if !strings.EqualFold(pa, pb) {
		return fmt.Sprintf("is not one kind of id: %s and %s do not share a prefix", a, b)
	}
	return ""
}

// cutNumber splits an id into what comes before its last number and that number ("T1.2." and "4").
func cutNumber(s string) (prefix, num string, ok bool) {
	i := len(s)
	for i > 0 && isDigit(s[i-1]) {
		i--
	}
	if i == len(s) {
		return s, "", false
	}
	return s[:i], s[i:], true
}

// asciiLower lowers ASCII letters only, keeping every byte offset.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func pluralWord(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// rangeWords are the separators splitIDs joins back between two ids: "T001 – T005", "3 to 5".
var rangeWords = map[string]bool{"to": true, "-": true, "–": true, "—": true, "..": true}

// readAs says in words what a task was read from, for --explain.
func readAs(convention, kind string) string {
	switch kind {
	case "heading":
		return "a heading with a checkbox"
	case "status":
		return "a heading with a status field"
	case "phase":
		return "a GSD phase overview entry (its phase lists no plans, so the phase is one task)"
	case "subtask":
		return "a Kiro sub-task (a task of its own, in its parent's phase)"
	case "task-list":
		return "an entry of the task list"
	}
	switch convention {
	case ConventionGSD:
		return "a checkbox line of a GSD roadmap"
	case ConventionSpecKit:
		return "a spec-kit task line"
	case ConventionKiro:
		return "a Kiro task line"
	case ConventionOpenSpec:
		return "an OpenSpec task line"
	case ConventionTaskList:
		return "an entry of the task list"
	}
	return "a checklist item"
}
