package templates

import (
	"github.com/akira-bot/akira/jobs/lifecycle"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/akira-bot/akira/internal/cost"
)

// OutputLines is how many lines of command output an escalation comment shows.
const OutputLines = 40

// CheckRunOutputLines is how many lines of output per attempt a check run's text shows; GitHub's
// 65,535-character limit is enforced again by the client when the text is sent.
const CheckRunOutputLines = 200

var funcs = template.FuncMap{
	"status":              statusLabel,
	"dur":                 formatDuration,
	"short":               shortSHA,
	"fence":               Fence,
	"tail":                tailLines,
	"omitted":             omittedLines,
	"cell":                cell,
	"code":                inlineCode,
	"cellcode":            cellCode,
	"num":                 formatInt,
	"usd":                 formatUSD,
	"plural":              plural,
	"who":                 Who,
	"trim":                strings.TrimSpace,
	"lines":               nonEmptyLines,
	"blocks":              OutputBlocks,
	"add":                 func(a, b int) int { return a + b },
	"has":                 slices.Contains[[]string],
	"state":               stateWords,
	"runIs":               runIs,
	"outputLines":         func() int { return OutputLines },
	"checkRunOutputLines": func() int { return CheckRunOutputLines },
}

// statusLabel is a task's status with its mark, in the words people read it ("✋ needs a decision").
func statusLabel(s string) string {
	if info, ok := lifecycle.TaskStatusOf(s); ok {
		return info.Emoji + " " + info.Words
	}
	if s == "" {
		return "—"
	}
	return s
}

// formatDuration rounds to the second: nobody reads milliseconds in a comment.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Second:
		return "<1s"
	}
	return d.Round(time.Second).String()
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func tailLines(n int, s string) string {
	t, _ := Tail(s, n)
	return t
}

func omittedLines(n int, s string) int {
	_, o := Tail(s, n)
	return o
}

// cell makes text safe inside a Markdown table cell: one line, pipes escaped.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// inlineCode wraps s in a code span that its own backticks cannot close.
func inlineCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
			continue
		}
		run = 0
	}
	ticks := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatUSD is the one cost format of every surface (internal/cost): fractions of a cent shown as such.
func formatUSD(v float64) string { return cost.Format(v) }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " \t\r"))
		}
	}
	return out
}

// cellCode is a code span inside a table cell, where GFM needs pipes escaped even in code.
func cellCode(s string) string { return strings.ReplaceAll(inlineCode(s), "|", `\|`) }

// loginRE is a GitHub login: letters, digits and single hyphens, at most 39 characters.
// IsLogin says s is a GitHub login, which "@" + s mentions (lifecycle.IsLogin).
func IsLogin(s string) bool { return lifecycle.IsLogin(s) }

// Who names who did something: "@alice" for a GitHub login, anything else as written (lifecycle.Who,
// which a task's notes are written with).
func Who(s string) string { return lifecycle.Who(s) }

// parkedLabel is the label lifecycle's status table gives a parked run.
var parkedLabel = lifecycle.StatusParked.Label()

// stateWords is a run state as a person reads it: a parked run "needs a decision".
func stateWords(s string) string {
	if s == parkedLabel {
		return "needs a decision"
	}
	return s
}

// runIs says what a run is, for a sentence about it: "is running", "needs a decision".
func runIs(s string) string {
	if s == parkedLabel {
		return "needs a decision"
	}
	return "is " + s
}
