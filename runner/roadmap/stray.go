package roadmap

import (
	"fmt"
	"regexp"
	"strings"
)

// Lines that look like tasks and are not: the boxes of a choice in an issue or pull request
// template ("Type of change — choose one: [ ] Patch [ ] Minor [ ] Major"), and a line that repeats
// a task, as an orphaned copy after the end of a roadmap does.

// NotTask is a checkbox line not read as a task.
type NotTask struct {
	Line int    // 1-based
	Why  string // "a choice under \"Choose one:\" (line 4), not work to do"
	// Guess says the reading is not certain.
	Guess bool
}

// choiceRE is a lead-in that makes the boxes under it a form to fill in rather than work to do.
var choiceRE = regexp.MustCompile(`(?i)\b(?:choose|select|pick|check|tick|mark)\s+(?:only\s+|exactly\s+)?(?:one|all|any)\b|\bone\s+of\s+the\s+following\b|\b(?:delete|remove)\s+(?:the\s+)?options?\b|\boptions?\s+that\s+(?:are|is)\s+(?:not\s+)?relevant\b|\b(?:all|any)\s+that\s+appl(?:y|ies)\b`)

// strayLines takes out of the tasks the boxes of a choice and the lines that repeat a task. A
// repeat is ticked with the task it repeats, and the task is done only when both say so.
func strayLines(d *doc, items []*item, keys []int, lines []mdLine) ([]*item, []int) {
	drop := make([]bool, len(items))
	// Choices: a list of boxes right under a lead-in that says to choose.
	for start := 0; start < len(items); {
		end := start + 1
		for end < len(items) && sameList(items[end-1], items[end], lines) {
			end++
		}
		if lead, n := leadIn(items[start], lines); n > 0 && end-start >= 2 && choiceRE.MatchString(lead) {
			for k := start; k < end; k++ {
				drop[k] = true
				d.notTasks = append(d.notTasks, NotTask{Line: items[k].task.Line,
					Why: fmt.Sprintf("a choice under %q (line %d), not work to do", strings.TrimSpace(lead), n)})
			}
		}
		start = end
	}
	// Repeats: the same line again, in the same phase, or in a section that holds nothing else.
	first := map[string]int{}
	repeat := make([]int, len(items))
	for i, it := range items {
		repeat[i] = -1
		if drop[i] || it.kind != "" || it.box.status {
			continue
		}
		text := lineText(it, lines)
		if text == "" {
			continue
		}
		if j, ok := first[text]; ok {
			repeat[i] = j
			continue
		}
		first[text] = i
	}
	onlyRepeats := map[int]bool{} // phase key -> every task of it repeats one before
	for i := range items {
		k := keys[i]
		if _, seen := onlyRepeats[k]; !seen {
			onlyRepeats[k] = true
		}
		if repeat[i] < 0 && !drop[i] {
			onlyRepeats[k] = false
		}
	}
	for i, it := range items {
		j := repeat[i]
		if j < 0 || drop[j] || (keys[i] != keys[j] && !onlyRepeats[keys[i]]) {
			continue
		}
		orig := items[j]
		drop[i] = true
		orig.subBoxes = append(append(orig.subBoxes, it.box), it.subBoxes...)
		why := fmt.Sprintf("repeats the task on line %d", orig.task.Line)
		guess := orig.task.Done != it.task.Done
		if guess {
			orig.task.Done = false
			g := fmt.Sprintf("line %d repeats this task with another mark: not done until both are ticked", it.task.Line)
			orig.task.Guesses = append(orig.task.Guesses, g)
			why += ", with another mark; the task is read as not done"
		}
		d.notTasks = append(d.notTasks, NotTask{Line: it.task.Line, Why: why, Guess: guess})
		d.warnings = append(d.warnings, &Error{Line: it.task.Line, Msg: fmt.Sprintf("line %d %s: read as one task", it.task.Line, why)})
	}
	var outItems []*item
	var outKeys []int
	for i, it := range items {
		if !drop[i] {
			outItems, outKeys = append(outItems, it), append(outKeys, keys[i])
		}
	}
	return outItems, outKeys
}

// sameList says b follows a in one list: the next box at the same indentation, with nothing but
// a's own lines and blank lines between them.
func sameList(a, b *item, lines []mdLine) bool {
	if a.kind != "" || b.kind != "" || a.end < 0 {
		return false
	}
	ai, bi := a.task.Line-1, b.task.Line-1
	if lines[ai].indent != lines[bi].indent {
		return false
	}
	for k := a.end + 1; k < bi; k++ {
		if !lines[k].blank {
			return false
		}
	}
	return true
}

// leadIn is the line that introduces the list a task starts: the nearest line above it that is
// not blank (a heading, a paragraph, or an HTML comment), and its 1-based number; 0 when none.
func leadIn(it *item, lines []mdLine) (string, int) {
	for k := it.task.Line - 2; k >= 0; k-- {
		l := lines[k]
		if l.blank {
			continue
		}
		if l.skip && !strings.HasPrefix(strings.TrimSpace(lines[max(l.region, 0)].text), "<!--") {
			return "", 0
		}
		if _, _, _, _, isBox := parseBox(l.text); isBox && !l.skip {
			return "", 0 // the list goes on above: not its start
		}
		return l.text, l.num
	}
	return "", 0
}

// lineText is a task's line without its list marker, box and spaces, to find a line written twice.
func lineText(it *item, lines []mdLine) string {
	l := lines[it.task.Line-1]
	_, _, _, rest, ok := parseBox(l.text)
	if !ok {
		return ""
	}
	return cleanSpaces(rest)
}
