package lifecycle

import (
	"fmt"
	"slices"
	"strings"
)

// Diagram draws the run's transition table as a Mermaid state diagram: an arrow per (from, to) pair,
// labelled with the events that take it. The README shows it, and a test keeps the two the same.
func Diagram() string {
	type edge struct{ from, to string }
	labels := map[edge][]string{}
	var order []edge
	name := func(s RunStatus) string {
		if s == StatusNew {
			return "[*]"
		}
		return string(s)
	}
	for _, rule := range Table {
		for _, m := range rule.Moves {
			if m.From == m.To {
				continue // progress within a state is in the table below the diagram, not drawn
			}
			e := edge{name(m.From), name(m.To)}
			if _, seen := labels[e]; !seen {
				order = append(order, e)
			}
			labels[e] = append(labels[e], string(rule.Event))
		}
	}
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	for _, e := range order {
		fmt.Fprintf(&b, "    %s --> %s: %s\n", e.from, e.to, strings.Join(labels[e], ", "))
	}
	for _, s := range RunStatuses {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", s)
		}
	}
	return b.String()
}

// TableMarkdown lists every row of the run's table with its effects, for the README beside the
// diagram.
func TableMarkdown() string {
	var b strings.Builder
	b.WriteString("| event | from | to | effects | outbox |\n|---|---|---|---|---|\n")
	join := func(ss []RunStatus) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = string(s)
			if s == StatusNew {
				out[i] = "(new)"
			}
		}
		return strings.Join(out, ", ")
	}
	for _, rule := range Table {
		var from, to []RunStatus
		for _, m := range rule.Moves {
			if !slices.Contains(from, m.From) {
				from = append(from, m.From)
			}
			if !slices.Contains(to, m.To) {
				to = append(to, m.To)
			}
		}
		effects := make([]string, len(rule.Effects))
		for i, e := range rule.Effects {
			effects[i] = string(e)
		}
		durable := ""
		if rule.Durable {
			durable = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", rule.Event, join(from), join(to), strings.Join(effects, ", "), durable)
	}
	return b.String()
}
