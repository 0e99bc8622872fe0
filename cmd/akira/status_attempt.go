package main

import (
	"fmt"
	"io"
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
		step, what := attempt.Describe(ev)
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
