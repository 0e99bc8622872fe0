package roadmap

import (
	"strings"
)

// InlinePlan finds a plan pasted under a command in a comment: the lines after the first line that
// starts with command ("/akira run"), outside code blocks and quotes. When the first thing under
// the command is a fenced block, the plan is that block's content; otherwise it is everything under
// the command up to the next line that starts with "/" (another command). ok is false when no
// command line is found or what follows it holds no task checkbox. line is the 1-based line of the
// comment the plan starts on, to map the plan's own line numbers back to the comment (add line-1).
//
// The plan is the comment author's, as an issue body is: the caller applies the same permission
// rules (verify lines from someone below write access wait for a writer's confirmation).
func InlinePlan(comment, command string) (plan string, line int, ok bool) {
	lines := splitLines([]byte(comment))
	markSkips(lines)
	cmd := -1
	for i, l := range lines {
		t := strings.TrimSpace(l.text)
		if l.skip || !hasFoldPrefix(t, command) {
			continue
		}
		if rest := t[len(command):]; rest == "" || isSpace(rest[0]) {
			cmd = i
			break
		}
	}
	if cmd < 0 {
		return "", 0, false
	}
	first := cmd + 1
	for first < len(lines) && lines[first].blank {
		first++
	}
	if first >= len(lines) {
		return "", 0, false
	}
	var body []string
	start := first
	if c, n, isFence := fenceOpens(lines[first].text); isFence {
		start = first + 1
		for j := first + 1; j < len(lines) && !fenceCloses(lines[j].text, c, n); j++ {
			body = append(body, lines[j].text)
		}
	} else {
		for j := first; j < len(lines); j++ {
			if !lines[j].skip && strings.HasPrefix(strings.TrimSpace(lines[j].text), "/") {
				break
			}
			body = append(body, lines[j].text)
		}
	}
	for len(body) > 0 && strings.TrimSpace(body[len(body)-1]) == "" {
		body = body[:len(body)-1]
	}
	plan = strings.Join(body, "\n")
	if plan == "" {
		return "", 0, false
	}
	plan += "\n"
	pl := splitLines([]byte(plan))
	markSkips(pl)
	for _, l := range pl {
		if _, _, _, _, isBox := parseBox(l.text); isBox && !l.skip {
			return plan, lines[start].num, true
		}
	}
	return "", 0, false
}
