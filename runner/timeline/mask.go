package timeline

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Masker replaces the secrets Akira knows (model keys, tokens, webhook secrets) with "[masked]" in
// what a timeline keeps, as the App's attempt logs are masked.
type Masker struct {
	r *strings.Replacer
}

// NewMasker masks each secret of at least 6 characters (shorter ones would mask ordinary words).
func NewMasker(secrets ...string) *Masker {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= 6 {
			pairs = append(pairs, s, "[masked]")
		}
	}
	if len(pairs) == 0 {
		return &Masker{}
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// Mask returns text without the secrets.
func (m *Masker) Mask(text string) string {
	if m == nil || m.r == nil {
		return text
	}
	return m.r.Replace(text)
}

// Clean is ev as a timeline keeps it: every text it holds masked, then made printable and cut to its
// bound (masked first, so that a secret cut in two is never kept half). Sources hand their events
// over whole.
func (m *Masker) Clean(ev Event) Event {
	short := func(s string) string { return Shorten(m.Mask(s), MaxText) }
	if ev.Call != nil {
		c := *ev.Call
		c.Model, c.Path, c.Refused, c.Error = short(c.Model), short(c.Path), short(c.Refused), short(c.Error)
		ev.Call = &c
	}
	if ev.Step != nil {
		s := *ev.Step
		s.Tool, s.Args, s.Text = short(s.Tool), short(s.Args), short(s.Text)
		ev.Step = &s
	}
	if ev.Agent != nil {
		a := *ev.Agent
		a.Error = short(a.Error)
		ev.Agent = &a
	}
	if ev.File != nil {
		f := *ev.File
		f.Path = cut(Printable(m.Mask(f.Path)), MaxPath)
		ev.File = &f
	}
	if ev.Command != nil {
		c := *ev.Command
		c.Command, c.Tail = cut(Printable(m.Mask(c.Command)), MaxPath), Tail(Printable(m.Mask(c.Tail)), TailBytes)
		ev.Command = &c
	}
	if ev.Refusal != nil {
		r := *ev.Refusal
		r.Host, r.Path, r.Reason = short(r.Host), short(r.Path), short(r.Reason)
		ev.Refusal = &r
	}
	if ev.Verdict != nil {
		v := *ev.Verdict
		v.Failed = nil
		for i, f := range ev.Verdict.Failed {
			if i == maxCriteria {
				v.Failed = append(v.Failed, fmt.Sprintf("and %d more", len(ev.Verdict.Failed)-i))
				break
			}
			v.Failed = append(v.Failed, short(f))
		}
		v.Error = short(v.Error)
		ev.Verdict = &v
	}
	if ev.End != nil {
		e := *ev.End
		e.Summary = short(e.Summary)
		ev.End = &e
	}
	return ev
}

// maxCriteria bounds the unmet criteria a verdict lists.
const maxCriteria = 20

// Shorten is s on one line, without control characters, cut to at most n bytes (on a character
// boundary) with "…" when cut.
func Shorten(s string, n int) string {
	return cut(Printable(strings.Join(strings.Fields(s), " ")), n)
}

// Printable is s with its control characters but newlines and tabs replaced by U+FFFD: an agent
// writes the text a terminal will show, and an escape sequence of its choosing must not reach the
// terminal as one.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// cut is s cut to at most n bytes on a character boundary, with "…" when cut, its spaces kept (a
// path or a command is not reflowed).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := n - len("…")
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + "…"
}

// Tail is the end of s, at most n bytes, starting on a character boundary.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
