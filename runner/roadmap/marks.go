package roadmap

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Status marks. Besides "[ ]" and "[x]", people mark work "[~]" (in progress, or "deployed but not
// verified"), "[-]" (dropped, or started), "[/]", "[>]" (deferred), "[!]", "[?]", and often say what
// each means in a legend ("Legend: [x] done · [~] deployed, not verified · [-] dropped"). A mark is
// read as the file's legend says; a mark no legend explains is read as not done, and said to be a
// guess: a plan that looks finished when it is not makes a run do nothing and report success.
// "[ ]", "[x]", "[X]" and the emoji keep their usual meaning whatever a legend says.

// Mark readings.
const (
	readingDone    = "done"
	readingPending = "not done"
	readingDropped = "dropped"
)

// otherMarks are the characters read as a status mark between brackets, besides " ", "x" and "X".
const otherMarks = "~-/\\<>!?.+*=:;,'\"%&^@#$"

// isOtherMark says c, between brackets, is a status mark other than " ", "x" and "X".
func isOtherMark(c byte) bool { return strings.IndexByte(otherMarks, c) >= 0 }

// MarkReading is how one mark a plan uses was read.
type MarkReading struct {
	Mark    string // "[~]"
	Reading string // "done", "not done" or "dropped" (left out of a run, as an optional task)
	// Meaning is what the legend says ("deployed but not verified"), and Line the legend's line;
	// empty and 0 when no legend says, and then Guess is set.
	Meaning string
	Line    int
	Guess   bool
	Tasks   int // how many tasks and subtasks carry it
}

// legend is what a plan's legend says its marks mean, and how often each mark is used.
type legend struct {
	meaning map[string]string // "[~]" -> "deployed but not verified"
	line    map[string]int
	used    map[string]int
}

// legendHeadingRE is a heading whose section explains marks.
var legendHeadingRE = regexp.MustCompile(`(?i)^\W*(?:status\s+)?(?:legend|key|symbols|marks|status\s+marks)\W*$`)

// legendWordRE starts a line that explains marks: "Legend:", "Key:", "Status legend:".
var legendWordRE = regexp.MustCompile(`(?i)\b(?:legend|key|marks|symbols|status(?:es)?)\b\s*\**\s*[:—–-]`)

// legendEntryRE is one mark and what it means: "[~] deployed but not verified", "`[-]` = dropped",
// "[x]: done".
//
// A meaning runs to the next mark or to "·", "|" or ";", not to a comma: "[~] deployed, not
// verified" must keep its "not".
var legendEntryRE = regexp.MustCompile("`?\\[([^\\]\\[`])\\]`?\\s*(?:=|:|→|->|—|–|-|\\bmeans\\b|\\bis\\b)?\\s*([^·•|;\\[`]*)")

// readLegend finds the marks a plan explains: on legend lines ("Legend: [x] done · [~] …"), on
// lines that explain two marks or more, and on the lines of a "Legend" section.
func readLegend(lines []mdLine) *legend {
	lg := &legend{meaning: map[string]string{}, line: map[string]int{}, used: map[string]int{}}
	inSection := 0
	for _, ln := range lines {
		if ln.skip && !strings.HasPrefix(strings.TrimSpace(lines[max(ln.region, 0)].text), "<!--") {
			continue // code; a legend in an HTML comment is still the author's word
		}
		if level, text, ok := atxHeading(ln); ok {
			switch {
			case legendHeadingRE.MatchString(text):
				inSection = level
			case inSection > 0 && level <= inSection:
				inSection = 0
			}
			continue
		}
		if _, _, _, _, task := parseBox(ln.text); inSection == 0 && !isLegendLine(ln.text, task && !ln.skip) {
			continue
		}
		for _, m := range legendEntryRE.FindAllStringSubmatch(ln.text, -1) {
			mark, meaning := "["+m[1]+"]", strings.Trim(strings.TrimSpace(m[2]), "*_.,")
			if meaning == "" || !isOtherMark(m[1][0]) && m[1] != " " && m[1] != "x" && m[1] != "X" {
				continue
			}
			if _, seen := lg.meaning[mark]; !seen {
				lg.meaning[mark], lg.line[mark] = meaning, ln.num
			}
		}
	}
	return lg
}

// isLegendLine says a line explains marks: it says "Legend:" (or "Key:", "Status:") before a mark,
// or, when it is not a task line, it explains two marks or more, one of them not a plain box.
func isLegendLine(text string, task bool) bool {
	// Cheap tests first: this runs on every task line of plans of 100,000 tasks.
	if n := strings.Count(text, "["); n == 0 || (task && !hasLegendWord(text)) || (!task && n < 2 && !hasLegendWord(text)) {
		return false
	}
	ms := legendEntryRE.FindAllStringSubmatchIndex(text, -1)
	if len(ms) == 0 {
		return false
	}
	if loc := legendWordRE.FindStringIndex(text); loc != nil && loc[0] < ms[0][0] {
		return true
	}
	if task || len(ms) < 2 {
		return false
	}
	for _, m := range ms {
		if isOtherMark(text[m[2]]) {
			return true
		}
	}
	return false
}

// inLegendSection reports, for each line, whether it is under a "Legend" heading.
func legendSections(lines []mdLine) []bool {
	out := make([]bool, len(lines))
	inSection := 0
	for i, ln := range lines {
		if level, text, ok := atxHeading(ln); ok && !ln.skip {
			switch {
			case legendHeadingRE.MatchString(text):
				inSection = level
				continue
			case inSection > 0 && level <= inSection:
				inSection = 0
			}
		}
		out[i] = inSection > 0
	}
	return out
}

var (
	droppedWordsRE = regexp.MustCompile(`(?i)\b(?:drop(?:ped)?|cancel(?:l?ed)?|won'?t(?:\s+do|\s+fix)?|wontfix|abandon(?:ed)?|obsolete|skip(?:ped)?|removed|descoped|out\s+of\s+scope|superseded|rejected|n/a|not\s+planned)\b`)
	notDoneWordsRE = regexp.MustCompile(`(?i)\b(?:not|no|un\w+|pending|todo|to\s*-?\s*do|planned|progress|wip|ongoing|started|partial(?:ly)?|blocked|waiting|awaiting|deferred|postponed|review|reviewing|testing|draft|open|next|doing|working|half|needs?|later|backlog|paused|on\s+hold|incomplete)\b`)
	doneWordsRE    = regexp.MustCompile(`(?i)\b(?:done|complete[d]?|finished|shipped|merged|released|deployed|verified|fixed|implemented|closed|resolved|landed)\b|✅|✔`)
)

// hasLegendWord says a line has a word legendWordRE looks for, before asking it.
func hasLegendWord(text string) bool {
	lower := strings.ToLower(text)
	for _, w := range []string{"legend", "key", "mark", "symbol", "status"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// readMeaning says what the words of a legend or a status field mean: done, not done or dropped;
// known is false when they say none of these (then the task is not done, and that is a guess).
// Words that say the work is unfinished win over words that say it is done: "deployed but not
// verified" is not done.
func readMeaning(words string) (reading string, known bool) {
	switch {
	case droppedWordsRE.MatchString(words):
		return readingDropped, true
	case notDoneWordsRE.MatchString(words):
		return readingPending, true
	case doneWordsRE.MatchString(words):
		return readingDone, true
	}
	return readingPending, false
}

// read returns how a box mark is read: "[ ]" not done, "[x]" done, any other as the legend says,
// else not done as a guess.
func (lg *legend) read(mark string) (reading, meaning string, line int, guess bool) {
	switch mark {
	case "[ ]", "[\t]":
		return readingPending, "", 0, false
	case "[x]", "[X]":
		return readingDone, "", 0, false
	}
	if value, ok := strings.CutPrefix(mark, statusMark); ok {
		reading, known := readMeaning(value)
		return reading, "", 0, !known
	}
	if lg == nil {
		return readingPending, "", 0, true
	}
	meaning, ok := lg.meaning[mark]
	if !ok {
		return readingPending, "", 0, true
	}
	reading, known := readMeaning(meaning)
	return reading, meaning, lg.line[mark], !known
}

// applyMark reads the mark of a task's box and sets what it says: done, or dropped (optional, so a
// run leaves it out), with the reading for --explain and a guess when no legend says.
func (lg *legend) applyMark(it *item, mark string) {
	if mark == "" || lg == nil {
		return
	}
	lg.used[mark]++
	reading, meaning, line, guess := lg.read(mark)
	it.task.Done = reading == readingDone
	if mark == "[ ]" || mark == "[\t]" || mark == "[x]" || mark == "[X]" {
		return
	}
	it.task.Mark = mark
	it.task.MarkReading = describeReading(mark, reading, meaning, line, guess)
	if reading == readingDropped {
		it.task.Optional = true
	}
	if guess {
		it.task.Guesses = append(it.task.Guesses, it.task.MarkReading)
	}
}

// describeReading says in words how a mark was read.
func describeReading(mark, reading, meaning string, line int, guess bool) string {
	what := reading
	if reading == readingDropped {
		what = "dropped (left out of a run, as an optional task)"
	}
	switch {
	case meaning == "":
		return fmt.Sprintf("%s is read as %s, a guess: no legend in the file says what it means", mark, what)
	case guess:
		return fmt.Sprintf("%s is read as %s, a guess: the legend on line %d says %q", mark, what, line, meaning)
	}
	return fmt.Sprintf("%s is read as %s: the legend on line %d says %q", mark, what, line, meaning)
}

// readings lists the marks a plan uses and how each was read, plain boxes first.
func (lg *legend) readings() []MarkReading {
	var out []MarkReading
	for mark, n := range lg.used {
		if n <= 0 {
			continue
		}
		reading, meaning, line, guess := lg.read(mark)
		out = append(out, MarkReading{Mark: mark, Reading: reading, Meaning: meaning, Line: line, Guess: guess, Tasks: n})
	}
	rank := func(m string) int {
		switch m {
		case "[ ]":
			return 0
		case "[x]", "[X]":
			return 1
		}
		return 2
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Mark), rank(out[j].Mark); ri != rj {
			return ri < rj
		}
		return out[i].Mark < out[j].Mark
	})
	return out
}

// markWarnings warns once for each mark read by a guess, on the first line that uses it.
func markWarnings(items []*item, lg *legend) Errors {
	var out Errors
	warned := map[string]bool{}
	for _, it := range items {
		m := it.task.Mark
		if m == "" || warned[m] || !strings.HasPrefix(m, "[") {
			continue
		}
		if _, _, _, guess := lg.read(m); !guess {
			continue
		}
		warned[m] = true
		out = append(out, &Error{Line: it.task.Line, IDs: []string{it.task.ID},
			Msg: fmt.Sprintf("task %s: %s (%d %s); a legend such as \"Legend: %s in progress\" says what it means",
				it.task.ID, it.task.MarkReading, lg.used[m], pluralWord(lg.used[m], "use"), m)})
	}
	return out
}

// statusMark starts the Mark of a task read from a status field.
const statusMark = "Status: "

// statusFieldRE is a status written as a field under a heading: "**Status**: Not started",
// "- Status: ✅ Complete".
var statusFieldRE = regexp.MustCompile(`(?i)^(?:[-*+]\s+)?[*_]*status[*_]*\s*:[*_]*\s*(.*?)\s*$`)

// phaseAt is the phase of a place in the plan: its text and key (see item.phaseKey).
type phaseAt struct {
	text string
	key  int
}

// statusHeadings reads the headings that are tasks by their status field, as status pages and some
// task templates write them ("#### Task 17: Export CSV" over "**Status**: Not started"): a heading
// of level 3 or deeper whose own lines hold a "Status:" field and no checkbox. Its other fields
// ("Blocked by:", "Verify:") are read as a task's sub-items are; the rest are its notes. The tasks
// join the others in document order.
func statusHeadings(items []*item, keys []int, lines []mdLine, phaseOf map[int]phaseAt, lg *legend) ([]*item, []int) {
	taskLine := map[int]bool{}
	for _, it := range items {
		taskLine[it.task.Line] = true
	}
	var found []*item
	var foundKeys []int
	for h := 0; h < len(lines); h++ {
		level, text, ok := atxHeading(lines[h])
		if !ok || lines[h].skip || level < 3 || taskLine[lines[h].num] || phaseRE.MatchString(text) || milestoneOf(text) != "" {
			continue
		}
		end := h + 1
		status, boxes := -1, false
		for ; end < len(lines); end++ {
			l := lines[end]
			if _, _, isHeading := atxHeading(l); isHeading && !l.skip {
				break
			}
			if l.skip || l.blank {
				continue
			}
			if _, _, _, _, isBox := parseBox(l.text); isBox || taskLine[l.num] {
				boxes = true
			}
			if status < 0 && statusFieldRE.MatchString(strings.TrimSpace(l.text)) {
				status = end
			}
		}
		if status < 0 || boxes {
			continue
		}
		it := &item{task: newTask(), kind: "status", phaseKey: phaseOf[h].key}
		it.task.Line, it.task.Phase = lines[h].num, phaseOf[h].text
		parseTitle(it, text, lines[h].num)
		sl := lines[status]
		lead := leadingWS(sl.text) // the field was found on the line without its indentation
		field := strings.TrimRight(sl.text[lead:], " \t")
		m := statusFieldRE.FindStringSubmatchIndex(field)
		value := field[m[2]:m[3]]
		reading, known := readMeaning(value)
		if value == "" {
			reading, known = readingPending, false
		}
		it.box = box{off: sl.start + lead + m[2], width: len(value), status: true, done: reading == readingDone}
		it.task.Done = reading == readingDone
		it.task.Optional = reading == readingDropped
		it.task.Mark = statusMark + value
		it.task.MarkReading = fmt.Sprintf("the status %q is read as %s", value, reading)
		if !known {
			it.task.MarkReading += ", a guess: Akira does not know these words"
			it.task.Guesses = append(it.task.Guesses, it.task.MarkReading)
		}
		lg.used[it.task.Mark]++
		var notes []string
		for j := h + 1; j < end; j++ {
			l := lines[j]
			if j == status {
				continue
			}
			t := strings.TrimSpace(l.text)
			if q, isItem := listMarker(t, 0); isItem {
				t = t[q:]
			}
			if key, val, ok := parseKey(t); ok && !l.skip {
				it.addKey(key, val, l.num, strings.TrimSpace(l.text))
				continue
			}
			notes = append(notes, l.text)
		}
		it.task.Notes = dedent(notes)
		found, foundKeys = append(found, it), append(foundKeys, phaseOf[h].key)
		h = end - 1
	}
	if len(found) == 0 {
		return items, keys
	}
	// Both lists are in document order: merge them.
	outItems := make([]*item, 0, len(items)+len(found))
	outKeys := make([]int, 0, len(items)+len(found))
	i, j := 0, 0
	for i < len(items) || j < len(found) {
		if j == len(found) || (i < len(items) && items[i].task.Line < found[j].task.Line) {
			outItems, outKeys = append(outItems, items[i]), append(outKeys, keys[i])
			i++
			continue
		}
		outItems, outKeys = append(outItems, found[j]), append(outKeys, foundKeys[j])
		j++
	}
	return outItems, outKeys
}
