package templates

import (
	"regexp"
	"strings"
)

// OutputBlock is one piece of an attempt's output as a check run or an escalation shows it: the end
// of one command's (or the agent's) output, or a line of prose, without the fences and headers the
// agent's feedback wraps them in.
type OutputBlock struct {
	// Source names whose output it is: a command, "the agent", or "" when not known.
	Source string
	Text   string
	// Prose is text to show as it is, not in a code block.
	Prose bool
}

var (
	feedbackHead = regexp.MustCompile(`^Attempt \d+ failed: `)
	exitLine     = regexp.MustCompile(`^exit code -?\d+( \(killed: timeout\))?$`)
	fenceLine    = regexp.MustCompile("^(`{3,})[A-Za-z]*$")
)

// OutputBlocks splits an attempt's output for showing. The feedback the engine writes for the next
// attempt ("Attempt 2 failed: …", then each failing command with its exit code and the end of its
// output in a fence) states the failure the check run and the escalation already state, and shown
// inside another code block its fences read as literal ``` lines: it is taken apart into the
// outputs alone. Any other text is one block, as it is. Empty outputs are left out.
func OutputBlocks(s string) []OutputBlock {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if !feedbackHead.MatchString(lines[0]) {
		return []OutputBlock{{Text: strings.TrimRight(s, "\n")}}
	}
	var out []OutputBlock
	var prose []string
	flush := func() {
		if t := strings.TrimSpace(strings.Join(prose, "\n")); t != "" {
			out = append(out, OutputBlock{Text: t, Prose: true})
		}
		prose = nil
	}
	source := ""
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "$ ") && i+1 < len(lines) && exitLine.MatchString(lines[i+1]):
			flush()
			source = strings.TrimPrefix(l, "$ ")
			i++
			continue
		case l == "The end of the agent's output:":
			flush()
			source = "the agent"
			continue
		}
		m := fenceLine.FindStringSubmatch(l)
		if m == nil {
			if source == "" {
				prose = append(prose, l)
			}
			continue
		}
		// A fenced block: up to the line that is the same fence alone.
		end := i + 1
		for end < len(lines) && lines[end] != m[1] {
			end++
		}
		body := strings.Join(lines[i+1:min(end, len(lines))], "\n")
		if strings.TrimSpace(body) != "" {
			flush()
			out = append(out, OutputBlock{Source: source, Text: body})
		}
		source, i = "", end
	}
	flush()
	return out
}
