package roadmap

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The markdown reader is line based rather than a full CommonMark parser: roadmaps are lists under
// headings, and a line model keeps every byte position exact, which Tick needs. The CommonMark rules
// that matter for finding tasks are kept: fenced code, HTML comments, front matter, ATX and setext
// headings, list markers and nesting by indentation.

var bom = []byte("\xef\xbb\xbf")

// mdLine is one line of the source.
type mdLine struct {
	start  int    // byte offset of the line's first byte (after a BOM on line 1)
	text   string // without the line end ("\n" or "\r\n")
	num    int    // 1-based
	indent int    // columns of leading whitespace, tabs to the next multiple of 4
	blank  bool
	skip   bool // inside front matter, a fenced code block or an HTML comment: never a task
	region int  // for skipped lines: index of the line that opened the region; -1 otherwise
}

func splitLines(data []byte) []mdLine {
	var lines []mdLine
	start := 0
	if bytes.HasPrefix(data, bom) {
		start = len(bom)
	}
	for num := 1; ; num++ {
		end, next := len(data), -1
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end, next = start+i, start+i+1
		}
		text := strings.TrimSuffix(string(data[start:end]), "\r")
		ws := leadingWS(text)
		lines = append(lines, mdLine{
			start:  start,
			text:   text,
			num:    num,
			indent: columns(text[:ws]),
			blank:  ws == len(text),
			region: -1,
		})
		if next < 0 {
			return lines
		}
		start = next
	}
}

func leadingWS(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func columns(ws string) int {
	col := 0
	for i := 0; i < len(ws); i++ {
		if ws[i] == '\t' {
			col += 4 - col%4
		} else {
			col++
		}
	}
	return col
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// markSkips marks front matter, fenced code blocks and HTML comments. Fences are recognised at any
// indentation (so code inside list items is covered); an unclosed fence or comment runs to the end.
func markSkips(lines []mdLine) {
	i := 0
	if len(lines) > 1 && strings.TrimRight(lines[0].text, " \t") == "---" {
		for j := 1; j < len(lines); j++ {
			if t := strings.TrimRight(lines[j].text, " \t"); t == "---" || t == "..." {
				for k := 0; k <= j; k++ {
					lines[k].skip, lines[k].region = true, 0
				}
				i = j + 1
				break
			}
		}
	}
	const (
		none = iota
		fence
		comment
	)
	state, region := none, -1
	var fenceChar byte
	fenceLen := 0
	for ; i < len(lines); i++ {
		ln := &lines[i]
		switch state {
		case fence:
			ln.skip, ln.region = true, region
			if fenceCloses(ln.text, fenceChar, fenceLen) {
				state = none
			}
		case comment:
			ln.skip, ln.region = true, region
			if !commentOpenAtEnd(ln.text, true) {
				state = none
			}
		default:
			if c, n, ok := fenceOpens(ln.text); ok {
				state, region, fenceChar, fenceLen = fence, i, c, n
				ln.skip, ln.region = true, i
				continue
			}
			if strings.HasPrefix(ln.text[leadingWS(ln.text):], "<!--") {
				ln.skip, ln.region = true, i
			}
			if commentOpenAtEnd(blankCodeSpans(ln.text), false) {
				state, region = comment, i
			}
		}
	}
}

func fenceOpens(text string) (byte, int, bool) {
	t := text[leadingWS(text):]
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	c := t[0]
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.IndexByte(t[n:], '`') >= 0) {
		return 0, 0, false
	}
	return c, n, true
}

func fenceCloses(text string, c byte, n int) bool {
	t := text[leadingWS(text):]
	m := 0
	for m < len(t) && t[m] == c {
		m++
	}
	return m >= n && strings.Trim(t[m:], " \t") == ""
}

// commentOpenAtEnd reports whether an HTML comment is still open at the end of s.
func commentOpenAtEnd(s string, open bool) bool {
	for {
		if open {
			j := strings.Index(s, "-->")
			if j < 0 {
				return true
			}
			s, open = s[j+3:], false
			continue
		}
		j := strings.Index(s, "<!--")
		if j < 0 {
			return false
		}
		s, open = s[j+4:], true
	}
}

// blankCodeSpans hides the content of inline code spans, so a title that mentions `<!--` does not
// open a comment.
func blankCodeSpans(s string) string {
	if strings.IndexByte(s, '`') < 0 {
		return s
	}
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		closeAt := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(b) && b[j+m] == '`' {
				m++
			}
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n
			continue
		}
		for k := i + n; k < closeAt; k++ {
			b[k] = ' '
		}
		i = closeAt + n
	}
	return string(b)
}

// atxHeading parses "## text ##".
func atxHeading(ln mdLine) (int, string, bool) {
	if ln.indent > 3 {
		return 0, "", false
	}
	t := ln.text[leadingWS(ln.text):]
	level := 0
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(t) && !isSpace(t[level])) {
		return 0, "", false
	}
	text := strings.Trim(t[level:], " \t")
	if trimmed := strings.TrimRight(text, "#"); trimmed == "" || isSpace(trimmed[len(trimmed)-1]) {
		text = strings.TrimRight(trimmed, " \t")
	}
	return level, text, true
}

// setextLevel reports whether a line underlines the paragraph above it: "===" (1) or "---" (2).
func setextLevel(ln mdLine) int {
	if ln.indent > 3 {
		return 0
	}
	t := strings.Trim(ln.text, " \t")
	switch {
	case t == "":
		return 0
	case strings.Trim(t, "=") == "":
		return 1
	case strings.Trim(t, "-") == "":
		return 2
	}
	return 0
}

// listMarker returns the offset of an item's content when s (from byte p) starts with a list
// marker: "-", "*", "+", "1." or "1)" followed by whitespace or the end of the line.
func listMarker(s string, p int) (int, bool) {
	if p >= len(s) {
		return 0, false
	}
	q := p
	switch c := s[p]; {
	case c == '-' || c == '*' || c == '+':
		q++
	case c >= '0' && c <= '9':
		for q < len(s) && q-p < 9 && s[q] >= '0' && s[q] <= '9' {
			q++
		}
		if q >= len(s) || (s[q] != '.' && s[q] != ')') {
			return 0, false
		}
		q++
	default:
		return 0, false
	}
	if q < len(s) && !isSpace(s[q]) {
		return 0, false
	}
	for q < len(s) && isSpace(s[q]) {
		q++
	}
	return q, true
}

const (
	emojiDone = "✅"
	emojiTodo = "⬜"
	ballotBox = "☐"
	variation = "\ufe0f"
)

// pendingEmoji are the marks people use for work not done: ⬜ and ☐, 🔲 (a box), 🚧 (in progress)
// and 📋 (planned). All of them mean pending, wherever they appear, so one plan reads one way.
var pendingEmoji = []string{emojiTodo, ballotBox, "🔲", "🚧", "📋"}

// emojiBox recognises ✅ (done) and the pending marks, with an optional variation selector.
func emojiBox(s string) (done bool, n int) {
	switch {
	case strings.HasPrefix(s, emojiDone):
		done, n = true, len(emojiDone)
	default:
		for _, e := range pendingEmoji {
			if strings.HasPrefix(s, e) {
				n = len(e)
				break
			}
		}
		if n == 0 {
			return false, 0
		}
	}
	if strings.HasPrefix(s[n:], variation) {
		n += len(variation)
	}
	return done, n
}

// parseBox finds a checkbox: a list item whose content starts with [ ], [x], [X], another status
// mark such as [~], ✅, ⬜ or ☐, or a line that starts with one of the emoji. off is the byte
// offset of the box within the line.
func parseBox(text string) (off int, emoji, done bool, rest string, ok bool) {
	p := leadingWS(text)
	if q, isItem := listMarker(text, p); isItem {
		// Kiro writes an optional task "- [ ]* 1.3 …": the star stays in rest for the caller.
		starred := q+4 <= len(text) && text[q+3] == '*' && (q+4 == len(text) || isSpace(text[q+4]))
		if q+3 <= len(text) && text[q] == '[' && text[q+2] == ']' && (q+3 == len(text) || isSpace(text[q+3]) || starred) {
			switch c := text[q+1]; {
			case c == ' ' || c == '\t':
				return q, false, false, text[q+3:], true
			case c == 'x' || c == 'X':
				return q, false, true, text[q+3:], true
			case isOtherMark(c):
				// "[~]", "[-]", "[/]", "[>]": not done unless the plan's legend says so (see marks.go).
				return q, false, false, text[q+3:], true
			}
		}
		p = q
	}
	if d, n := emojiBox(text[p:]); n > 0 {
		return p, true, d, text[p+n:], true
	}
	return 0, false, false, "", false
}

// phaseRE reads a phase heading or a GSD phase overview entry: "Phase 2: Engine", "Phase 2.1 —
// Hotfix", "**Phase 3: Docs**".
// The name runs to a dash with a space before it (or an em dash): "Read-only mode" keeps its hyphen.
var phaseRE = regexp.MustCompile(`^\**Phase\s+(\d+(?:\.\d+)*)\b\s*[:.—–-]?\s*(.*?)\**(?:\s+[—–-](?:\s.*)?|\s*—.*)?\s*$`)

// milestoneRE reads a GSD milestone entry: "**v1.0 MVP** — Phases 1-9 (shipped)".
var milestoneRE = regexp.MustCompile(`^\*\*v\d+(?:\.\d+)*\b[^*]*\*\*`)

// waveRE finds a GSD wave in a title ("(Wave 2, depends on 01-03)") or a "**Wave 2**" line.
var waveRE = regexp.MustCompile(`(?i)\bwave\s+(\d+)\b`)

// facts are what the scanner saw that tells the conventions apart.
type facts struct {
	phaseHeadings int // "### Phase N: …"
	overview      int // "- [ ] **Phase N: …**" entries
	planIDs       int // NN-MM and NN-MM-PLAN.md ids
	tIDs          int // spec-kit's T001
	storyLabels   int // [US1], [P]
	kiroOptional  int // "- [ ]* 1.3"
	requirements  int // "_Requirements: 1.1_"
	numbered      int // "- [ ] 1. Title" with nested "- [ ] 1.1"
	sections      int // OpenSpec's "## 1. Section"
}

// scanMarkdown finds the tasks of a markdown roadmap, read in convention ("" detects it). It never
// fails: problems are reported by validate.
func scanMarkdown(data []byte, convention string) *doc {
	lines := splitLines(data)
	markSkips(lines)
	lg := readLegend(lines)
	legendLine := legendSections(lines)
	d := &doc{legend: lg}
	var f facts
	var phaseKeys []int
	titleSet := false
	h1, h2 := -1, -1 // index of the current level-1 and level-2 heading lines (or a "### Phase N" one)
	var h1Text, h2Text string
	phaseNum := "" // the current phase's number, when its heading has one
	wave := 0      // the current "**Wave N**" paragraph
	// milestone is the GSD milestone section ("## v1.4: Export") the lines are in; milestoneLevel
	// the level of its heading, 0 for a "<summary>v1.0 …" that a "</details>" ends.
	milestone, milestoneLevel := "", 0
	phases := newGSDPhaseIndex()
	orderLevel := 0 // the level of the "Dependencies & Execution Order" heading the lines are under
	heading := func(level int, text string, i int) {
		wave = 0
		if orderLevel > 0 && level <= orderLevel {
			orderLevel = 0
		}
		if orderSectionRE.MatchString(text) && phaseRE.FindStringSubmatch(text) == nil && orderLevel == 0 {
			orderLevel = level
		}
		if m := phaseRE.FindStringSubmatch(text); m != nil && level >= 2 {
			if level >= 3 {
				f.phaseHeadings++ // GSD's "### Phase N: …" details; "## Phase 1" alone is any checklist's
			}
			h2, h2Text, phaseNum = i, text, m[1]
			phases.heading(milestone, m[1], text, lines[i].num)
			return
		}
		if v := milestoneOf(text); v != "" && level >= 2 {
			milestone, milestoneLevel = v, level
		} else if milestone != "" && (level == 1 || level <= milestoneLevel) {
			milestone = ""
		}
		if level >= 2 && len(text) > 2 && isDigit(text[0]) && strings.Contains(text[:min(len(text), 4)], ". ") {
			f.sections++
		}
		switch level {
		case 1:
			if !titleSet {
				d.title, titleSet = text, true
			}
			// The phase stays the nearest level-2 heading above, even past a later level-1 heading:
			// the format's rule is "nearest level-2 heading, else nearest level-1 heading".
			h1, h1Text = i, text
		case 2:
			h2, h2Text, phaseNum = i, text, ""
		}
	}
	var para []string                 // the paragraph above, for setext headings
	headingPhase := map[int]phaseAt{} // the phase each heading is in, for a heading that is a task
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if ln.skip || ln.blank {
			para = para[:0]
			continue
		}
		if _, _, isHeading := atxHeading(ln); !isHeading && orderLevel > 0 {
			d.orderLines = append(d.orderLines, sectionLine{num: ln.num, text: ln.text})
		}
		if level, text, ok := atxHeading(ln); ok {
			para = para[:0]
			switch {
			case h2 >= 0:
				headingPhase[i] = phaseAt{h2Text, h2}
			case h1 >= 0:
				headingPhase[i] = phaseAt{h1Text, h1}
			default:
				headingPhase[i] = phaseAt{"", -1}
			}
			// "### [x] CLI with validate": a heading that is itself a task.
			if len(text) > 3 && text[0] == '[' && text[2] == ']' && isSpace(text[3]) && strings.ContainsRune(" xX", rune(text[1])) {
				if off := strings.Index(ln.text, text[:3]); off >= 0 {
					it := &item{task: newTask(), box: box{off: ln.start + off, done: text[1] != ' '}, kind: "heading", section: milestone}
					it.task.Line, it.task.Done = ln.num, text[1] != ' '
					key := -1
					switch {
					case h2 >= 0:
						it.task.Phase, key = h2Text, h2
					case h1 >= 0:
						it.task.Phase, key = h1Text, h1
					}
					parseTitle(it, text[4:], ln.num)
					d.items = append(d.items, it)
					phaseKeys = append(phaseKeys, key)
					continue
				}
			}
			heading(level, text, i)
			continue
		}
		if len(para) > 0 {
			if level := setextLevel(ln); level > 0 {
				heading(level, strings.Join(para, " "), i)
				para = para[:0]
				continue
			}
		}
		if off, emoji, done, rest, ok := parseBox(ln.text); ok && !legendLine[i] && !isLegendLine(ln.text, true) {
			it := &item{task: newTask(), box: box{off: ln.start + off, emoji: emoji}, phaseNum: phaseNum, wave: wave, section: milestone}
			it.task.Line, it.task.Done = ln.num, done
			lg.applyMark(it, boxMark(ln.text, off, emoji))
			it.box.done = it.task.Done
			if strings.HasPrefix(rest, "*") && !emoji {
				// Kiro: "- [ ]* 1.3 Write property test" is an optional task.
				it.task.Optional, rest = true, rest[1:]
				f.kiroOptional++
			}
			key := -1
			switch {
			case h2 >= 0:
				it.task.Phase, key = h2Text, h2
			case h1 >= 0:
				it.task.Phase, key = h1Text, h1
			}
			cont, through := continuation(lines, i)
			parseTitle(it, rest+cont, ln.num)
			if m := phaseRE.FindStringSubmatch(it.task.Title); m != nil && it.task.ID == "" {
				it.overview, it.overviewName = m[1], strings.TrimSpace(strings.Trim(m[2], "*"))
				f.overview++
			}
			if milestoneRE.MatchString(it.rawTitle) && it.task.ID == "" {
				it.milestone = true
			}
			// The wave as written, before the title loses "(Wave 2, depends on 01-03)".
			if m := waveRE.FindStringSubmatch(blankCodeSpans(rest + cont)); m != nil {
				it.wave, _ = strconv.Atoi(m[1])
			}
			i = parseBody(it, lines, i, through, lg, true)
			it.end = i
			if strings.Contains(it.task.Notes, "_Requirements:") {
				f.requirements++
			}
			f.count(it, lines)
			d.items = append(d.items, it)
			phaseKeys = append(phaseKeys, key)
			para = para[:0]
			continue
		}
		if _, ok := listMarker(ln.text, leadingWS(ln.text)); ok {
			para = para[:0]
			continue
		}
		// GSD archives a milestone's phases in "<details><summary>✅ v1.0 MVP …</summary>".
		if t := strings.TrimSpace(ln.text); strings.HasPrefix(t, "<") {
			if _, after, ok := strings.Cut(t, "<summary>"); ok {
				if v := milestoneOf(after); v != "" {
					milestone, milestoneLevel = v, 0
				}
			} else if strings.HasPrefix(t, "</details>") && milestoneLevel == 0 {
				milestone = ""
			}
		}
		// Paragraph lines under a phase: "**Depends on:** Phase 1" and "**Wave 2**".
		if phaseNum != "" {
			plain := strings.Trim(strings.TrimSpace(ln.text), "*_ ")
			if key, val, ok := parseKey(strings.TrimSpace(ln.text)); ok && key == "depends" {
				phases.depends(milestone, phaseNum, val, strings.TrimSpace(ln.text), ln.num)
			} else if m := waveRE.FindStringSubmatch(plain); m != nil && strings.HasPrefix(strings.ToLower(plain), "wave") {
				wave, _ = strconv.Atoi(m[1])
			}
		}
		if ln.indent <= 3 || len(para) > 0 {
			para = append(para, strings.Trim(ln.text, " \t"))
		}
	}
	d.items, phaseKeys = statusHeadings(d.items, phaseKeys, lines, headingPhase, lg)
	d.items, phaseKeys = strayLines(d, d.items, phaseKeys, lines)
	if convention == "" {
		convention = f.convention()
	}
	d.convention = convention
	switch convention {
	case ConventionGSD:
		scopeMilestones(d.items, phases)
		d.items, phaseKeys = gsdPhases(d.items, phaseKeys)
		plansBelong(d.items, phases)
	case ConventionKiro:
		d.items, phaseKeys = kiroSubtasks(d, d.items, phaseKeys, lines)
	}
	demoteWeakIDs(d.items)
	for _, it := range d.items {
		if it.scope != "" && it.task.ID != "" {
			it.task.ID = it.scope + "/" + it.task.ID
		}
	}
	autoIDs(d.items, phaseKeys)
	for i, it := range d.items {
		it.phaseKey = phaseKeys[i]
	}
	if convention == ConventionGSD {
		d.warnings = append(d.warnings, gsdDependencies(d.items, phases)...)
		d.rank = gsdRank(d.items)
	}
	return d
}

func (f *facts) count(it *item, lines []mdLine) {
	id := it.task.ID
	switch {
	case len(id) == 4 && id[0] == 'T' && isDigit(id[1]) && isDigit(id[2]) && isDigit(id[3]):
		f.tIDs++
	case len(id) >= 5 && isDigit(id[0]) && strings.Count(id, "-") == 1 && !strings.Contains(id, "."):
		f.planIDs++
	}
	for _, l := range it.task.Labels {
		if strings.HasPrefix(l, "US") || strings.Contains(l, "-US") {
			f.storyLabels++
		}
	}
	if it.task.Parallel {
		f.storyLabels++
	}
	// Kiro numbers tasks "1." and their sub-tasks "1.1".
	if len(it.subLines) > 0 && it.task.ID != "" && isDigit(it.task.ID[0]) && !strings.ContainsAny(it.task.ID, ".-") {
		if _, _, _, rest, ok := parseBox(lines[it.subLines[0]].text); ok {
			if id, _, ok := parseID(strings.TrimLeft(strings.TrimPrefix(rest, "*"), " \t")); ok && strings.HasPrefix(id, it.task.ID+".") {
				f.numbered++
			}
		}
	}
}

// convention picks the reading a plan's own marks ask for.
func (f *facts) convention() string {
	kiro := f.kiroOptional > 0 || f.requirements > 0 || f.numbered > 0
	switch {
	// "### Phase N" headings alone are how many plans are laid out; Kiro's own marks say more.
	case f.overview > 0 || f.planIDs > 0 || (f.phaseHeadings > 0 && f.tIDs == 0 && !kiro):
		if f.tIDs == 0 && f.storyLabels == 0 {
			return ConventionGSD
		}
		return ConventionSpecKit
	case f.tIDs > 0 || f.storyLabels > 0:
		return ConventionSpecKit
	case kiro:
		return ConventionKiro
	case f.sections > 0:
		return ConventionOpenSpec
	}
	return ConventionChecklist
}

// kiroSubtasks makes Kiro's numbered sub-tasks ("- [ ] 1.1 Create models" under "- [ ] 1. Set up")
// tasks of their own, in the phase their parent names; the parent's checkbox is ticked with its
// last sub-task. Sub-tasks without a number stay sub-tasks.
func kiroSubtasks(d *doc, items []*item, keys []int, lines []mdLine) ([]*item, []int) {
	d.kiroKids = map[string][]string{}
	var outItems []*item
	var outKeys []int
	for i, parent := range items {
		var kids []*item
		for j, ln := range parent.subLines {
			off, emoji, done, rest, ok := parseBox(lines[ln].text)
			if !ok {
				continue
			}
			kid := &item{task: newTask(), box: parent.subBoxes[j], phaseNum: parent.phaseNum, kind: "subtask", section: parent.section}
			kid.box.emoji = emoji
			kid.task.Line, kid.task.Done = lines[ln].num, done
			mark := boxMark(lines[ln].text, off, emoji)
			d.legend.applyMark(kid, mark)
			if mark != "" {
				d.legend.used[mark]-- // counted already, as a subtask of its parent
			}
			kid.box.done = kid.task.Done
			if strings.HasPrefix(rest, "*") {
				kid.task.Optional, rest = true, rest[1:]
			}
			cont, through := continuation(lines, ln)
			parseTitle(kid, rest+cont, lines[ln].num)
			if kid.task.ID == "" || !isDigit(kid.task.ID[0]) {
				kids = nil
				break // not Kiro's numbering: keep the sub-tasks as they are
			}
			parseBody(kid, lines, ln, through, d.legend, false)
			kid.task.Phase = parent.task.ID + ". " + parent.task.Title
			if parent.task.ID == "" {
				kid.task.Phase = parent.task.Title
			}
			kids = append(kids, kid)
		}
		if len(kids) == 0 {
			outItems, outKeys = append(outItems, parent), append(outKeys, keys[i])
			continue
		}
		last := kids[len(kids)-1]
		last.subBoxes = append(last.subBoxes, parent.box)
		required := slices.ContainsFunc(kids, func(k *item) bool { return !k.task.Optional })
		for _, k := range kids {
			outItems, outKeys = append(outItems, k), append(outKeys, keys[i])
			// What the parent depends on ("- Depends on task 2" under it), its sub-tasks do.
			for j, dep := range parent.task.Depends {
				k.addDep(dep, parent.depLines[j], parent.depTexts[j])
			}
			// "Depends on task 3" names 3's sub-tasks, but not the optional ones a run leaves out.
			if parent.task.ID != "" && (!k.task.Optional || !required) {
				n := trimZerosOf(parent.task.ID)
				d.kiroKids[n] = append(d.kiroKids[n], k.task.ID)
			}
		}
	}
	return outItems, outKeys
}

// demoteWeakIDs puts a bare leading word that several tasks share ("D1 Configs …", "D1 Settings …")
// back into their titles: a person wrote a name there, not an id. Ids written as ids (with ":",
// bold, brackets or a dash) stay, and a duplicate among them is reported.
func demoteWeakIDs(items []*item) {
	n := map[string]int{}
	for _, it := range items {
		if it.task.ID != "" {
			n[it.task.ID]++
		}
	}
	// A name shared by lines ("D1") means the author writes names there, not ids: every such name
	// goes back. Counts go back only where they repeat: other numbers may be ids a dependency names.
	names := false
	for _, it := range items {
		names = names || (it.weakID && isLetter(it.task.ID[0]) && n[it.task.ID] > 1)
	}
	for _, it := range items {
		if it.weakID && ((isLetter(it.task.ID[0]) && names) || (isDigit(it.task.ID[0]) && n[it.task.ID] > 1)) {
			it.task.Title = cleanSpaces(it.task.ID + " " + it.task.Title)
			it.task.ID, it.weakID = "", false
		}
	}
}

// parseBody reads the lines nested under the task on line i (indented deeper than its marker),
// from the line after from (the last line of its title), and returns the index of the last one.
//
// The subtasks' marks are read as the plan's legend says; count says to count their uses (not when
// the lines were counted already, under a Kiro task whose sub-task this is).
func parseBody(it *item, lines []mdLine, i, from int, lg *legend, count bool) int {
	last := from
	for j := from + 1; j < len(lines); j++ {
		l := lines[j]
		if l.skip && l.region != j {
			// Inside a code block or comment that opened in this body (or on the task line itself).
			last = j
			continue
		}
		if l.blank {
			continue
		}
		if l.indent <= lines[i].indent {
			break
		}
		last = j
	}
	var notes []string
	pendingKey, pendingIndent, pendingText := "", 0, ""
	for j := from + 1; j <= last; j++ {
		l := lines[j]
		if l.skip || l.blank {
			notes = append(notes, l.text)
			if !l.blank {
				pendingKey = ""
			}
			continue
		}
		if off, emoji, done, rest, ok := parseBox(l.text); ok {
			if mark := boxMark(l.text, off, emoji); !emoji && lg != nil {
				if count {
					lg.used[mark]++
				}
				reading, _, _, _ := lg.read(mark)
				done = reading == readingDone
			}
			it.task.Subtasks = append(it.task.Subtasks, Subtask{Title: cleanSpaces(strings.TrimPrefix(rest, "*")), Done: done})
			it.subBoxes = append(it.subBoxes, box{off: l.start + off, emoji: emoji, done: done})
			it.subLines = append(it.subLines, j)
			pendingKey = ""
			continue
		}
		if q, ok := listMarker(l.text, leadingWS(l.text)); ok {
			content := l.text[q:]
			if key, val, ok := parseKey(content); ok {
				if strings.Trim(val, " \t") == "" {
					pendingKey, pendingIndent, pendingText = key, l.indent, strings.TrimSpace(l.text)
				} else {
					pendingKey = ""
					it.addKey(key, val, l.num, strings.TrimSpace(l.text))
				}
				continue
			}
			if pendingKey != "" && l.indent > pendingIndent {
				it.addKey(pendingKey, content, l.num, pendingText+" "+strings.TrimSpace(l.text))
				continue
			}
		}
		pendingKey = ""
		notes = append(notes, l.text)
	}
	it.task.Notes = dedent(notes)
	return last
}

// addKey records a "key: value" sub-item; text is the line as written, for --explain.
func (it *item) addKey(key, val string, line int, text string) {
	val = strings.Trim(val, " \t")
	switch key {
	case "depends":
		for _, id := range splitIDs(dependencyList(val)) {
			it.addDep(id, line, text)
		}
	case "verify":
		if v := stripBackticks(val); v != "" {
			it.task.Verify = append(it.task.Verify, v)
		}
	case "accept":
		if val != "" {
			it.task.Accept = append(it.task.Accept, val)
		}
	case "priority":
		it.priority, it.priorityLine = val, line
	case "gate":
		it.gate, it.gateLine = val, line
	}
}

// parseKey recognises the sub-items "depends: …", "depends on: …", "after: …", "verify: …",
// "accept: …", "priority: …" and "gate: …" (case-insensitive, the key optionally in bold).
func parseKey(s string) (key, val string, ok bool) {
	bold := strings.HasPrefix(s, "**")
	if bold {
		s = s[2:]
	}
	for _, k := range []struct{ word, key string }{
		{"depends on", "depends"}, {"depends", "depends"}, {"after", "depends"},
		{"dependencies", "depends"}, {"dependency", "depends"}, {"deps", "depends"}, {"dep", "depends"},
		{"blocked by", "depends"}, {"blocked-by", "depends"},
		{"verify", "verify"}, {"accept", "accept"}, {"priority", "priority"}, {"gate", "gate"},
	} {
		if !hasFoldPrefix(s, k.word) {
			continue
		}
		r := s[len(k.word):]
		if bold {
			r = strings.TrimPrefix(r, "**")
		}
		rest := strings.TrimLeft(r, " \t")
		if !strings.HasPrefix(rest, ":") {
			// Kiro writes "Depends on task 3", "Blocked by T-1", without a colon.
			if (k.word == "depends on" || k.word == "blocked by") && len(rest) < len(r) && rest != "" {
				return k.key, rest, true
			}
			continue
		}
		r = rest
		r = r[1:]
		if bold {
			r = strings.TrimPrefix(r, "**")
		}
		return k.key, r, true
	}
	return "", "", false
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// stripBackticks turns "`go test ./...`" into "go test ./...".
func stripBackticks(s string) string {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n == 0 || len(s) < 2*n+1 || strings.Repeat("`", n) != s[len(s)-n:] || s[len(s)-n-1] == '`' {
		return s
	}
	return strings.Trim(s[n:len(s)-n], " ")
}

// dedent joins note lines, removing the indentation they share and leading and trailing blank
// lines; everything else is kept verbatim.
func dedent(lines []string) string {
	for len(lines) > 0 && strings.Trim(lines[0], " \t") == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.Trim(lines[len(lines)-1], " \t") == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.Trim(l, " \t") == "" {
			continue
		}
		ws := l[:leadingWS(l)]
		if first {
			prefix, first = ws, false
			continue
		}
		n := 0
		for n < len(prefix) && n < len(ws) && prefix[n] == ws[n] {
			n++
		}
		prefix = prefix[:n]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, prefix)
		if strings.Trim(out[i], " \t") == "" {
			out[i] = ""
		}
	}
	return strings.Join(out, "\n")
}

func cleanSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

// parseTitle splits the text after a checkbox into id, markers, inline dependencies and title.
func parseTitle(it *item, rest string, line int) {
	s := strings.TrimLeft(rest, " \t")
	// A priority tag or [P] before the id ("[P1] WP-01: …") is a marker, never the id.
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "[P]") {
			it.task.Parallel, s = true, s[3:]
			continue
		}
		if len(s) >= 4 && s[0] == '[' && (s[1] == 'P' || s[1] == 'p') && s[2] >= '1' && s[2] <= '3' && s[3] == ']' {
			it.task.Labels, s = append(it.task.Labels, "P"+s[2:3]), s[4:]
			continue
		}
		break
	}
	// "Task 17: Export", "**Task 12**: Login": the word before the number is not part of the id.
	if m := taskWordRE.FindStringSubmatchIndex(s); m != nil {
		s = s[:m[2]] + s[m[3]:]
	}
	if id, after, ok := parseID(s); ok {
		// An id followed by nothing but a space may be a word of the title ("D1 Configs"): if it
		// turns out not to be unique, it goes back into the title (see demoteWeakIDs).
		it.weakID = weakAfter(s, id) && (isLetter(id[0]) || countLike(id, after))
		if strings.HasPrefix(s[len(id):], "-") {
			it.task.Context = append(it.task.Context, id+"-PLAN.md") // the plan file it names
		}
		it.task.ID, s = id, after
	}
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "[P]") {
			it.task.Parallel, s = true, s[3:]
			continue
		}
		if strings.HasPrefix(s, "[") {
			if j := strings.IndexByte(s, ']'); j > 1 && isAlnumID(s[1:j]) {
				it.task.Labels = append(it.task.Labels, s[1:j])
				s = s[j+1:]
				continue
			}
		}
		break
	}
	s, deps := cutInlineDeps(s)
	for _, d := range deps {
		if d.loose {
			it.loose = append(it.loose, looseDep{text: d.text, ids: d.ids, line: line})
			continue
		}
		for _, id := range d.ids {
			it.addDep(id, line, d.text)
		}
	}
	it.rawTitle = cleanSpaces(s)
	it.task.Title = withoutMarkup(it.rawTitle)
}

// taskWordRE finds the word "Task" (or "Step") before a task's number, followed by a separator.
var taskWordRE = regexp.MustCompile(`^(?:\*\*)?((?i:task|step)\s+)\d+(?:\.\d+)*(?:\*\*)?(?:\s*[:.]|\s+[—–-]\s)`)

// parseID reads an explicit id: a dotted number (1, 1.2, 2.3.1), digits joined by dashes (01-02,
// as GSD plans are numbered) or letters followed by digits with an optional dash (T001, T-7,
// task-001, AUTH-12); optionally in **bold** or [brackets]; followed by ":", ".", " -" or a space.
func parseID(s string) (id, rest string, ok bool) {
	switch {
	case strings.HasPrefix(s, "**"):
		inner := s[2:]
		j := strings.Index(inner, "**")
		if j <= 0 {
			return "", s, false
		}
		tok, after := inner[:j], inner[j+2:]
		if isID(tok) {
			if r, ok := afterID(after); ok {
				return tok, r, true
			}
			return "", s, false
		}
		// "**T001:** title"
		if core := tok[:len(tok)-1]; (tok[len(tok)-1] == ':' || tok[len(tok)-1] == '.') && isID(core) &&
			(after == "" || isSpace(after[0])) {
			return core, trimSep(after), true
		}
	case strings.HasPrefix(s, "["):
		if j := strings.IndexByte(s, ']'); j > 1 && isID(s[1:j]) {
			if r, ok := afterID(s[j+1:]); ok {
				return s[1:j], r, true
			}
		}
	default:
		if n := idPrefixLen(s); n > 0 {
			// GSD names a plan by its file: "01-02-PLAN.md — scaffold" is plan 01-02.
			if rest := s[n:]; strings.Contains(s[:n], "-") && len(rest) >= 8 && strings.EqualFold(rest[:8], "-PLAN.md") {
				if r, ok := afterID(rest[8:]); ok || rest[8:] == "" {
					return s[:n], r, true
				}
			}
			if r, ok := afterID(s[n:]); ok {
				return s[:n], r, true
			}
		}
	}
	return "", s, false
}

// countLike says a bare number is followed by a lower-case word, as a count is ("6 user stories").
func countLike(id, after string) bool {
	for i := 0; i < len(id); i++ {
		if !isDigit(id[i]) {
			return false
		}
	}
	k := 0
	for k < len(after) && after[k] >= 'a' && after[k] <= 'z' {
		k++
	}
	return k >= 2 // "3 c" is task 3 titled c; "6 user stories" counts
}

// weakAfter says the id at the start of rest is followed only by spaces (no ":", ".", dash, bold or
// brackets): such an id, when it is a word with digits (D1, T1) or a count (6 user stories), may be
// part of the title. Other numbers (1.2, "3 Add") are ids however they are followed.
func weakAfter(rest, id string) bool {
	s := strings.TrimLeft(rest, " \t")
	i := strings.Index(s, id)
	if i != 0 || len(s) == len(id) {
		return false
	}
	r := s[len(id):]
	if !isSpace(r[0]) {
		return false
	}
	r = strings.TrimLeft(r, " \t")
	for _, dash := range []string{"-", "–", "—"} {
		if strings.HasPrefix(r, dash) {
			return false
		}
	}
	return true
}

// afterID checks what follows an id and returns the title after the separator.
func afterID(r string) (string, bool) {
	if r == "" {
		return "", false
	}
	switch r[0] {
	case ':', '.':
		if len(r) > 1 && !isSpace(r[1]) {
			return "", false
		}
		return trimSep(r[1:]), true
	case ' ', '\t':
		return trimSep(r), true
	}
	return "", false
}

// trimSep drops the whitespace and dash between an id and its title.
func trimSep(r string) string {
	r = strings.TrimLeft(r, " \t")
	for _, dash := range []string{"--", "-", "–", "—"} {
		if strings.HasPrefix(r, dash) && (len(r) == len(dash) || isSpace(r[len(dash)])) {
			return strings.TrimLeft(r[len(dash):], " \t")
		}
	}
	return r
}

func isID(s string) bool           { return s != "" && idPrefixLen(s) == len(s) }
func isAlnumID(s string) bool      { return s != "" && isLetter(s[0]) && idPrefixLen(s) == len(s) }
func isDigit(c byte) bool          { return c >= '0' && c <= '9' }
func isLetter(c byte) bool         { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func digitAt(s string, i int) bool { return i < len(s) && isDigit(s[i]) }

// idPrefixLen returns the length of the longest id at the start of s, or 0.
func idPrefixLen(s string) int {
	n := 0
	switch {
	case s == "":
		return 0
	case isDigit(s[0]):
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		// 1.2, 01-02, and GSD's decimal phases: 02.1-01.
		for n < len(s) && (s[n] == '.' || s[n] == '-') && digitAt(s, n+1) {
			n++
			for n < len(s) && isDigit(s[n]) {
				n++
			}
		}
		return n
	case isLetter(s[0]):
		for n < len(s) && isLetter(s[n]) {
			n++
		}
		if n < len(s) && s[n] == '-' {
			n++
		}
		// Then segments of letters ending in digits, joined by "." or "-": T001, T1.1.1, T-M1-001,
		// AUTH-US1, WP-01. At least one digit: a plain word is never an id.
		end := 0
		for {
			m := n
			for m < len(s) && isLetter(s[m]) {
				m++
			}
			d := m
			for m < len(s) && isDigit(s[m]) {
				m++
			}
			if m == d {
				break
			}
			n, end = m, m
			if n+1 < len(s) && (s[n] == '.' || s[n] == '-') && (isLetter(s[n+1]) || isDigit(s[n+1])) {
				n++
				continue
			}
			break
		}
		return end
	}
	return 0
}

// looseDep is "(after 1.1)" in a title, kept until the ids of the plan are known.
type looseDep struct {
	text string
	ids  []string
	line int
}

// inlineDep is a dependency written in a title: the text as written ("(after: 1.1)") and the ids
// it names. A loose one ("(after 1.1)", no colon) stays in the title until resolveDeps finds that
// every id it names is a task.
type inlineDep struct {
	text  string
	ids   []string
	loose bool
}

// cutInlineDeps removes "(depends: a, b)", "(depends on a)", "(depends on: a)" and "(after: a)"
// from a title and returns them; "(after a)" is returned as loose and left in the title.
// Text inside code spans is left alone: "`(after: x)`" documents the syntax rather than using it.
func cutInlineDeps(s string) (string, []inlineDep) {
	var deps []inlineDep
	masked := blankCodeSpans(s) // same length as s
	// One pass, copying what stays: a title of many "(" without ")" must not cost a scan per "(".
	lastClose := strings.LastIndexByte(masked, ')')
	var out strings.Builder
	copied := 0 // s[:copied] has been written to out, or dropped
	for i := 0; i < lastClose; i++ {
		if masked[i] != '(' {
			continue
		}
		t := strings.TrimLeft(masked[i+1:], " \t")
		n, loose, ok := depKeyword(t)
		if !ok {
			// "(Wave 2, depends on 01-03)": the dependency after other words in the same parentheses.
			if end := strings.IndexByte(masked[i:], ')'); end > 0 {
				inner := masked[i+1 : i+end]
				for k := 0; k < len(inner); k++ {
					if inner[k] != ',' && inner[k] != ';' {
						continue
					}
					t2 := strings.TrimLeft(inner[k+1:], " \t")
					if n2, loose2, ok2 := depKeyword(t2); ok2 && !loose2 {
						start := i + 1 + len(inner) - len(t2)
						deps = append(deps, inlineDep{text: s[i : i+end+1], ids: splitIDs(dependencyList(s[start+n2 : i+end]))})
						out.WriteString(s[copied:i])
						out.WriteByte(' ')
						copied = i + end + 1
						i = copied - 1
						break
					}
				}
			}
			continue
		}
		start := len(s) - len(t)
		j := strings.IndexByte(masked[start+n:], ')')
		if j < 0 {
			break // no ")" after the keyword, so none after any later "(" either
		}
		end := start + n + j + 1
		d := inlineDep{text: s[i:end], ids: splitIDs(dependencyList(s[start+n : start+n+j])), loose: loose}
		deps = append(deps, d)
		if loose {
			i = end - 1
			continue
		}
		out.WriteString(s[copied:i])
		out.WriteByte(' ')
		copied = end
		i = end - 1
	}
	if copied == 0 {
		return s, deps
	}
	out.WriteString(s[copied:])
	return out.String(), deps
}

// depKeyword matches "depends:", "depends on", "depends on:", "after:", "dep:", "deps:",
// "dependencies:" and "blocked by" / "blocked-by:" and returns the length; "after" without a colon
// matches as loose.
func depKeyword(t string) (n int, loose, ok bool) {
	for _, w := range []string{"dependencies", "deps", "dep", "blocked-by", "blocked by"} {
		if hasFoldPrefix(t, w) {
			q := len(w) + leadingWS(t[len(w):])
			if q < len(t) && t[q] == ':' {
				return q + 1, false, true
			}
			if w == "blocked by" && q > len(w) {
				return q, false, true
			}
		}
	}
	switch {
	case hasFoldPrefix(t, "depends"):
		q := 7 + leadingWS(t[7:])
		if q > 7 && hasFoldPrefix(t[q:], "on") {
			r := q + 2
			r2 := r + leadingWS(t[r:])
			if r2 < len(t) && t[r2] == ':' {
				return r2 + 1, false, true
			}
			if r2 > r {
				return r2, false, true
			}
			return 0, false, false
		}
		if q < len(t) && t[q] == ':' {
			return q + 1, false, true
		}
	case hasFoldPrefix(t, "after"):
		q := 5 + leadingWS(t[5:])
		if q < len(t) && t[q] == ':' {
			return q + 1, false, true
		}
		if q > 5 && q < len(t) && t[q] != ')' {
			return q, true, true
		}
	}
	return 0, false, false
}
