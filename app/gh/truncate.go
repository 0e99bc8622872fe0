package gh

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// GitHub's size limits. GitHub documents them in characters but enforces the check-run ones in bytes
// ("summary exceeds a maximum bytesize of 65535"), so Akira cuts by bytes, which satisfies both readings.
const (
	MaxCommentLen     = 65536 // issue and pull request comment bodies, pull request bodies
	MaxCheckOutputLen = 65535 // check run output.summary and output.text
	MaxAnnotations    = 50    // annotations per check run request
)

// TruncateComment cuts a comment body to GitHub's limit; see Truncate.
func TruncateComment(body string) string { return Truncate(body, MaxCommentLen) }

// Truncate cuts s to at most limit bytes. When it has to cut, it cuts at a line break near the end when
// there is one, never inside a UTF-8 sequence, closes a code fence left open by the cut, and appends
// "… output truncated: N characters omitted".
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	total := utf8.RuneCountInString(s)
	// The note is sized for the largest possible count so that the cut never has to move again.
	noteLen := len(truncNote(total))
	keep := limit - noteLen
	for keep > 0 {
		prefix := cutAt(s, keep)
		closer := ""
		if f := openFence(prefix); f != "" {
			closer = "\n" + f
		}
		omitted := total - utf8.RuneCountInString(prefix)
		out := prefix + closer + truncNote(omitted)
		if len(out) <= limit {
			return out
		}
		keep -= len(out) - limit
	}
	return cutAt(s, limit)
}

func truncNote(omitted int) string {
	return fmt.Sprintf("\n\n… output truncated: %d characters omitted", omitted)
}

// cutAt returns the longest prefix of s of at most n bytes that ends on a rune boundary, shortened to
// the last line break when one is near the end (within an eighth, at most 2 KB), so that a line or a
// table row is not cut in half.
func cutAt(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	p := s[:n]
	if i := strings.LastIndexByte(p, '\n'); i >= 0 && len(p)-i <= min(2048, n/8) {
		p = p[:i]
	}
	return p
}

// openFence returns the fence that closes a fenced code block left open at the end of md, or "".
func openFence(md string) string {
	var open string // the opening fence's run of backticks or tildes
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || t == "" || (t[0] != '`' && t[0] != '~') {
			continue
		}
		run := len(t) - len(strings.TrimLeft(t, t[:1]))
		if run < 3 {
			continue
		}
		if open == "" {
			// A backtick fence's info string may not contain backticks.
			if t[0] == '`' && strings.Contains(t[run:], "`") {
				continue
			}
			open = t[:run]
			continue
		}
		if t[0] == open[0] && run >= len(open) && strings.TrimSpace(t[run:]) == "" {
			open = ""
		}
	}
	return open
}
