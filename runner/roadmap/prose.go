package roadmap

import (
	"regexp"
	"strings"
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
			j-- // an unclosed remark runs to the end
		}
		if keep != nil && keep(string(b[i+1:j])) {
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
