package roadmap

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// People write dependencies in sentences: "Phase 2; independent of Phases 3-6.", "Depends on:
// nothing.", "Phases 4.1, 4.2 (hard: needs the schema), 4.3 (soft)". The helpers here keep the
// words that name what a task needs and drop the rest, so that a negation is never read as a
// dependency and a remark never hides the items after it.

// negationRE finds where a clause stops naming what is needed: what follows a negation is what is
// not needed, or what may run beside.
// What follows "before" or "blocks" are the tasks that need this one, not what it needs.
var negationRE = regexp.MustCompile(`(?i)\b(?:independent(?:ly)?\s+of|independent|not|no|none|nothing|without|except|excluding|unrelated\s+to|regardless\s+of|in\s+parallel\s+with|parallel\s+to|alongside|instead\s+of|n/a|before|blocks|blocking|unblocks|prior\s+to|followed\s+by)\b`)

// nothingRE is a statement that starts by saying nothing is needed.
var nothingRE = regexp.MustCompile(`(?i)^\W*(?:nothing|none|no\s+dependenc(?:y|ies)|n/a)\b`)

// neededWords keeps, of a dependency statement, the words that name what is needed: it is cut into
// clauses (at ";", the end of a sentence, or a dash between spaces), and each clause is kept up to
// its first negation. "Phase 2; independent of Phases 3-6." keeps "Phase 2"; "nothing." keeps
// nothing.
func neededWords(s string) string {
	var kept []string
	for i, clause := range clauses(s) {
		if i == 0 && nothingRE.MatchString(clause) {
			return "" // "Nothing. Phase 2 builds on it." names nothing this depends on
		}
		if loc := negationRE.FindStringIndex(clause); loc != nil {
			clause = clause[:loc[0]]
		}
		if c := strings.TrimSpace(clause); c != "" {
			kept = append(kept, c)
		}
	}
	return strings.Join(kept, ", ")
}

// clauses splits a statement at ";", at a sentence end (". " or a final "."; not the dot of
// "1.2") and at a dash with spaces around it (" - ", " – ", " — ").
func clauses(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		cut, skip := false, 1
		switch {
		case s[i] == ';':
			cut = true
		case s[i] == '.' && (i+1 == len(s) || isSpace(s[i+1])) && !(i > 0 && s[i-1] == '.'):
			cut = true
		case isSpace(s[i]):
			for _, dash := range []string{"-", "–", "—"} {
				after := i + 1 + len(dash)
				if strings.HasPrefix(s[i+1:], dash) && after < len(s) && isSpace(s[after]) && !rangeAfter(s[after:]) {
					cut, skip = true, 1+len(dash)
				}
			}
		}
		if cut {
			out = append(out, s[start:i])
			start = i + skip
			i = start - 1
		}
	}
	return append(out, s[start:])
}

// rangeAfter says the words after a spaced dash start with an id: "T002 – T004" is a range, not
// two clauses.
func rangeAfter(s string) bool {
	f := strings.Fields(s)
	return len(f) > 0 && looksLikeID(strings.TrimRight(f[0], ",;.)"))
}

// withoutRemarks blanks the remarks in parentheses of a dependency list, "1.1 (hard: the schema),
// 1.2 (soft)", so that each remark ends where it is closed and the items after it are read. keep
// says which remarks name something ("(v1.3)", a milestone) and stay.
func withoutRemarks(s string, keep func(inner string) bool) string {
	if strings.IndexByte(s, '(') < 0 {
		return s
	}
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		if b[i] != '(' {
			continue
		}
		depth, j := 0, i
		for ; j < len(b); j++ {
			if b[j] == '(' {
				depth++
			} else if b[j] == ')' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		if j == len(b) {
			j-- // an unclosed remark runs to the end, its last byte included
		}
		inner := ""
		if j > i {
			inner = string(b[i+1 : j])
		}
		if keep != nil && keep(inner) {
			i = j
			continue
		}
		for k := i; k <= j; k++ {
			b[k] = ' '
		}
		i = j
	}
	return string(b)
}

// dependencyList is the part of a task's dependency list that names what it needs, its remarks
// blanked: "1.1 (hard), 1.2 (soft); not 1.3" is "1.1, 1.2".
func dependencyList(s string) string { return neededWords(withoutRemarks(s, nil)) }

// continuation reads the lines that continue the first line of the task on line i, hard-wrapped
// as people wrap long items ("… token refresh, and" / "rotate the signing keys"), and returns them
// joined and the index of the last one (i when there is none). A line continues the item when
// Markdown would put it in the same paragraph (it starts no list item, heading, quote, table,
// fence or field such as "verify:" or "Notes:") and it reads as the rest of the sentence: it
// starts in lower case, or the line before ends in a comma, a dash or a word that needs more
// ("and", "to", "the"). A line that starts a sentence of its own stays a note, as before.
func continuation(lines []mdLine, i int) (string, int) {
	var b strings.Builder
	prev := strings.TrimSpace(lines[i].text)
	j := i + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if l.blank || l.skip || startsBlock(l) {
			break
		}
		t := strings.TrimSpace(l.text)
		if l.indent <= lines[i].indent && (strings.HasPrefix(t, "**") || strings.HasPrefix(t, "__")) {
			break // "**Wave 2**" after a plan: a paragraph of its own
		}
		if !continuesSentence(prev, t) {
			break
		}
		b.WriteByte(' ')
		b.WriteString(t)
		prev = t
	}
	return b.String(), j - 1
}

// labelRE is a field of a task written as a paragraph: "Notes: …", "**Goal**: …",
// "_Requirements: 1.1_".
var labelRE = regexp.MustCompile(`^[_*]*\p{L}[\p{L}\p{N} /&-]{0,40}?[_*]*\s*:[_*]*(?:\s|$)`)

// startsBlock says a line starts something of its own rather than continuing a paragraph.
func startsBlock(l mdLine) bool {
	t := l.text[leadingWS(l.text):]
	if _, ok := listMarker(l.text, leadingWS(l.text)); ok {
		return true
	}
	if _, _, _, _, ok := parseBox(l.text); ok {
		return true // "⬜ b": a task of its own
	}
	if _, _, ok := atxHeading(l); ok {
		return true
	}
	if _, _, ok := fenceOpens(l.text); ok || setextLevel(l) > 0 {
		return true
	}
	if t != "" && strings.ContainsRune("<>|", rune(t[0])) {
		return true
	}
	if _, _, ok := parseKey(t); ok {
		return true
	}
	return labelRE.MatchString(t)
}

// danglingRE is the end of a line that needs more words: a comma, a dash, or a word such as "and".
var danglingRE = regexp.MustCompile(`(?i)(?:[,&+/–—-]|\b(?:and|or|to|of|the|a|an|for|with|in|on|by|from|into|as|at|via|than|that|which|when|then|but|nor|so|per|plus)\b)$`)

// continuesSentence says next reads as the rest of prev's sentence.
func continuesSentence(prev, next string) bool {
	if prev == "" || next == "" {
		return false
	}
	if danglingRE.MatchString(prev) {
		return true
	}
	if strings.ContainsRune(".!?:;", rune(prev[len(prev)-1])) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(next)
	return unicode.IsLower(r) || r == '(' || r == '`'
}

// boldRE is text in **bold**, at the edges of words: "src/**/*.go" is a path, not bold.
var boldRE = regexp.MustCompile(`(^|[\s(\[])\*\*([^\s*](?:[^*]*[^\s*])?)\*\*($|[\s).,:;!?\]—–-])`)

// withoutMarkup removes the bold marks of a title, outside code spans: a person reads the words.
func withoutMarkup(s string) string {
	for k := 0; k < 8 && strings.Contains(s, "**"); k++ {
		// Matched on the title with its code spans blanked (same length), so "**" in code stays.
		ms := boldRE.FindAllStringSubmatchIndex(blankCodeSpans(s), -1)
		if ms == nil {
			break
		}
		var b strings.Builder
		prev := 0
		for _, m := range ms {
			b.WriteString(s[prev:m[0]])
			b.WriteString(s[m[2]:m[3]])
			b.WriteString(s[m[4]:m[5]])
			b.WriteString(s[m[6]:m[7]])
			prev = m[1]
		}
		b.WriteString(s[prev:])
		s = b.String()
	}
	return s
}
