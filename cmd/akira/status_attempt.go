package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/runner"
	attempt "github.com/akira-bot/akira/runner/timeline"
)

// parseAttempt reads --attempt TASK/N (a task id may hold "/": N is after the last one).
func parseAttempt(s string) (task string, n int, err error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("--attempt %q: want TASK/N, e.g. 1.2/3", s)
	}
	n, err = strconv.Atoi(s[i+1:])
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("--attempt %q: the attempt number must be 1 or more, as in 1.2/3", s)
	}
	return s[:i], n, nil
}

// printAttempt shows an attempt's timeline: when each step came (from the attempt's start), what
// the attempt had cost by then, and what happened.
func printAttempt(out io.Writer, a localAttempt, task string, n int) {
	fmt.Fprintf(out, "run %s · task %s, attempt %d · branch %s · plan %s\n", a.info.RunID, task, n, a.info.Branch, a.info.Roadmap)
	var start time.Time
	if len(a.events) > 0 {
		start = a.events[0].Time
		fmt.Fprintf(out, "started %s\n", start.Local().Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCOST SO FAR\tSTEP\tWHAT")
	ended := false
	for _, ev := range a.events {
		step, what := describe(ev)
		if ev.Kind == attempt.KindAttemptEnded {
			ended = true
		}
		// The files are the user's, but what they quote is the agent's: nothing in them reaches the
		// terminal as a control sequence.
		fmt.Fprintf(tw, "+%s\t%s\t%s\t%s\n", runner.FormatDuration(ev.Time.Sub(start)), usd(ev.CostUSD), step, attempt.Shorten(what, 1<<12))
		if ev.Command != nil && !ev.Command.Passed {
			for _, l := range lastLinesOf(attempt.Printable(ev.Command.Tail), 3) {
				fmt.Fprintf(tw, "\t\t\t  │ %s\n", strings.ReplaceAll(l, "\t", " "))
			}
		}
	}
	_ = tw.Flush()
	if !ended {
		fmt.Fprintln(out, "\n(no end recorded: the attempt is still running, or its run was stopped)")
	}
	fmt.Fprintf(out, "\nevents: %s\n", a.timeline)
	if a.log != "" {
		fmt.Fprintf(out, "log:    %s\n", a.log)
	}
}

// usd writes a cost as every surface does (internal/cost).
func usd(v float64) string { return cost.Format(v) }

// describe is an event's step and what it says, on one line.
func describe(ev attempt.Event) (string, string) {
	switch {
	case ev.Start != nil:
		what := "from " + shortSHA(ev.Start.Commit)
		if ev.Start.Retry {
			what += ", told what failed before"
		}
		return "attempt started", what + fmt.Sprintf("; the run had cost %s", usd(ev.Start.RunCostUSD))
	case ev.Call != nil:
		return "model call", callText(*ev.Call)
	case ev.Step != nil:
		return "agent", stepText(*ev.Step)
	case ev.Agent != nil:
		what := "returned after " + runner.FormatDuration(ev.Agent.Duration)
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
		return "verify " + word, fmt.Sprintf("$ %s → %s (%s)", c.Command, status, runner.FormatDuration(c.Duration))
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
		what += fmt.Sprintf(" · the attempt cost %s, the run %s so far", usd(e.CostUSD), usd(e.RunCostUSD))
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

func callText(c attempt.ModelCall) string {
	var b strings.Builder
	b.WriteString(c.Model)
	if c.Source != attempt.SourceProxy {
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
		b.WriteString(", " + runner.FormatDuration(c.Duration))
	}
	if c.Streamed {
		b.WriteString(", streamed")
	}
	fmt.Fprintf(&b, ", %s", usd(c.CostUSD))
	if c.Unpriced {
		b.WriteString(" (no price for this model)")
	}
	if c.Estimated {
		b.WriteString(" (estimated: the answer did not state its usage)")
	}
	return strings.TrimSpace(b.String())
}

func stepText(s attempt.Step) string {
	switch s.Type {
	case attempt.StepTool:
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
	case attempt.StepMessage:
		return "says: " + s.Text
	case attempt.StepResult:
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

func lastLinesOf(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
