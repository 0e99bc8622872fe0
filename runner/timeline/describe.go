package timeline

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/internal/cost"
)

// FormatDuration is a duration as Akira prints it: 840ms, 12.3s, 4m05s, 2h10m.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Describe is an event in words: its step ("model call", "verify failed", …) and what it says, on
// one line; akira status --attempt prints it, the dashboard shows it.
func Describe(ev Event) (string, string) {
	switch {
	case ev.Start != nil:
		what := "from " + shortSHA(ev.Start.Commit)
		if ev.Start.Retry {
			what += ", told what failed before"
		}
		return "attempt started", what + fmt.Sprintf("; the run had cost %s", cost.Format(ev.Start.RunCostUSD))
	case ev.Call != nil:
		return "model call", callText(*ev.Call)
	case ev.Step != nil:
		return "agent", stepText(*ev.Step)
	case ev.Agent != nil:
		what := "returned after " + FormatDuration(ev.Agent.Duration)
		if ev.Agent.Error != "" {
			what += ": " + ev.Agent.Error
		}
		return "agent finished", what
	case ev.File != nil:
		f := ev.File
		if f.Binary {
			return "file " + f.Status, f.Path + " (binary)"
		}
		return "file " + f.Status, fmt.Sprintf("%s +%d -%d", f.Path, f.Added, f.Deleted)
	case ev.Command != nil:
		c := ev.Command
		status := fmt.Sprintf("exit %d", c.ExitCode)
		if c.TimedOut {
			status = "timed out"
		}
		word := "passed"
		if !c.Passed {
			word = "failed"
		}
		return "verify " + word, fmt.Sprintf("$ %s → %s (%s)", c.Command, status, FormatDuration(c.Duration))
	case ev.Refusal != nil:
		r := ev.Refusal
		dest := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
		if r.Path != "" {
			dest += " " + r.Method + " " + r.Path
		}
		return "egress refused", fmt.Sprintf("%s (%s): %s", dest, r.By, r.Reason)
	case ev.Verdict != nil:
		v := ev.Verdict
		if v.Error != "" {
			return "judged", "no valid verdict: " + v.Error
		}
		word := "accepted"
		if !v.Passed {
			word = "not accepted"
		}
		what := fmt.Sprintf("%s, confidence %.2f (%.2f needed)", word, v.Confidence, v.MinConfidence)
		if len(v.Failed) > 0 {
			what += "; unmet: " + strings.Join(v.Failed, "; ")
		}
		return "judged", what
	case ev.End != nil:
		e := ev.End
		what := e.Result
		if e.Summary != "" {
			what += ": " + e.Summary
		}
		if e.Commit != "" {
			what += " " + shortSHA(e.Commit)
		}
		what += fmt.Sprintf(" · the attempt cost %s, the run %s so far", cost.Format(e.CostUSD), cost.Format(e.RunCostUSD))
		if e.Estimated {
			what += " (estimated)"
		}
		if len(e.Dropped) > 0 {
			var n int
			for _, d := range e.Dropped {
				n += d
			}
			what += fmt.Sprintf(" · %d events past the timeline's bound not kept", n)
		}
		return "attempt ended", what
	}
	return string(ev.Kind), ""
}

func callText(c ModelCall) string {
	var b strings.Builder
	b.WriteString(c.Model)
	if c.Source != "" && c.Source != SourceProxy {
		b.WriteString(" (" + c.Source + ")")
	}
	switch {
	case c.Refused != "":
		fmt.Fprintf(&b, " %s %s refused: %s", c.Method, c.Path, c.Refused)
		return strings.TrimSpace(b.String())
	case c.Error != "":
		fmt.Fprintf(&b, " %s %s: %s", c.Method, c.Path, c.Error)
		return strings.TrimSpace(b.String())
	case c.Status != 0 && c.Status/100 != 2:
		fmt.Fprintf(&b, " %s %s: HTTP %d", c.Method, c.Path, c.Status)
		return strings.TrimSpace(b.String())
	}
	fmt.Fprintf(&b, ", %d in / %d out tokens", c.InputTokens, c.OutputTokens)
	if c.CacheRead > 0 {
		fmt.Fprintf(&b, " (%d read from cache)", c.CacheRead)
	}
	if c.Duration > 0 {
		b.WriteString(", " + FormatDuration(c.Duration))
	}
	if c.Streamed {
		b.WriteString(", streamed")
	}
	fmt.Fprintf(&b, ", %s", cost.Format(c.CostUSD))
	if c.Unpriced {
		b.WriteString(" (no price for this model)")
	}
	if c.Estimated {
		b.WriteString(" (estimated: the answer did not state its usage)")
	}
	return strings.TrimSpace(b.String())
}

func stepText(s Step) string {
	switch s.Type {
	case StepTool:
		what := s.Tool
		if s.Args != "" {
			what += " " + s.Args
		}
		what += fmt.Sprintf(" → %d bytes", s.ResultBytes)
		if s.ExitCode != nil {
			what += fmt.Sprintf(", exit %d", *s.ExitCode)
		}
		if s.Error {
			what += ", error"
		}
		return what
	case StepMessage:
		return "says: " + s.Text
	case StepResult:
		return "result: " + s.Text
	}
	return s.Type + ": " + s.Text
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
