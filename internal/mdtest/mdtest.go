// Package mdtest reads markdown the way a CommonMark reader splits it into fenced code blocks and
// the rest, so tests can tell text a prompt quotes as data from text it says outright.
package mdtest

import (
	"regexp"
	"strings"
)

// Block is a fenced code block, with the heading it is under.
type Block struct {
	Heading string
	Info    string
	Body    string
}

var (
	fenceRE   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	headingRE = regexp.MustCompile(`^ {0,3}#{1,6}\s`)
)

// Split returns the text outside fenced code blocks, and the blocks. A fence opens on a line of three
// or more backticks or tildes (a backtick fence's info string holds no backtick) and closes only on
// a line of at least as many of its own character and nothing else; one never closed runs to the end.
func Split(md string) (outside string, blocks []Block) {
	var out, body []string
	var open *Block
	fence, heading := "", ""
	for _, line := range strings.Split(md, "\n") {
		if open != nil {
			t := strings.TrimLeft(line, " ")
			if len(line)-len(t) <= 3 && strings.HasPrefix(t, fence) && strings.Trim(strings.TrimRight(t, " \t"), fence[:1]) == "" {
				open.Body = strings.Join(body, "\n")
				blocks = append(blocks, *open)
				open, body = nil, nil
				continue
			}
			body = append(body, line)
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`")) {
			open, fence = &Block{Heading: heading, Info: strings.TrimSpace(m[2])}, m[1]
			continue
		}
		if headingRE.MatchString(line) {
			heading = strings.TrimSpace(line)
		}
		out = append(out, line)
	}
	if open != nil {
		open.Body = strings.Join(body, "\n")
		blocks = append(blocks, *open)
	}
	return strings.Join(out, "\n"), blocks
}

// Section returns the text under a level-two heading line, up to the next level-two heading.
func Section(md, heading string) string {
	_, after, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}
