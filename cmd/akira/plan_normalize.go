package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/sandbox"
)

// writeMarks says how each status mark the plan uses was read, and which readings are guesses.
func writeMarks(b *strings.Builder, marks []roadmap.MarkReading) {
	if len(marks) == 0 {
		return
	}
	b.WriteString("marks, as read:\n")
	for _, m := range marks {
		fmt.Fprintf(b, "  %s → %s", m.Mark, m.Reading)
		switch {
		case m.Meaning != "" && m.Guess:
			fmt.Fprintf(b, ", a guess: the legend on line %d says %q", m.Line, m.Meaning)
		case m.Meaning != "":
			fmt.Fprintf(b, ": the legend on line %d says %q", m.Line, m.Meaning)
		case m.Guess && strings.HasPrefix(m.Mark, "["):
			b.WriteString(", a guess: no legend says what it means")
		case m.Guess:
			b.WriteString(", a guess: Akira does not know these words")
		}
		fmt.Fprintf(b, " (%s)\n", plural(m.Tasks, "use"))
	}
}

// sourceLines are the lines of a plan as written, split once: a plan of 100,000 tasks asks for
// each task's line.
type sourceLines []string

func splitSource(data []byte) sourceLines {
	return strings.Split(strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n"), "\n")
}

// line is line n (1-based) as written, or "".
func (s sourceLines) line(n int) string {
	if n < 1 || n > len(s) {
		return ""
	}
	return strings.TrimRight(s[n-1], " \t")
}

// writePlanExplain prints, for each task, the line it was read from, how it was read, and each
// dependency with the words it was read from: what a person who disagrees with the reading needs.
func writePlanExplain(w io.Writer, r *roadmap.Roadmap, data []byte) error {
	src := splitSource(data)
	var b strings.Builder
	title := r.Title
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(&b, "%s\n%s, %s: %s; %s\n", title, r.Source, r.Format, plural(len(r.Tasks), "task"), roadmap.Describe(r.Convention))
	writeMarks(&b, r.Marks)
	for _, t := range r.Tasks {
		box := "[ ]"
		if t.Done {
			box = "[x]"
		}
		fmt.Fprintf(&b, "\n%s %s  %s\n", box, t.ID, t.Title)
		if t.Line > 0 {
			fmt.Fprintf(&b, "  line %d: %s\n", t.Line, strings.TrimSpace(src.line(t.Line)))
		}
		phase := ""
		if t.Phase != "" {
			phase = ", in phase " + t.Phase
		}
		fmt.Fprintf(&b, "  read as %s%s\n", t.ReadAs, phase)
		if t.MarkReading != "" {
			fmt.Fprintf(&b, "  mark: %s\n", t.MarkReading)
		}
		for _, g := range t.Guesses {
			if g != t.MarkReading {
				fmt.Fprintf(&b, "  guess: %s\n", g)
			}
		}
		if len(t.DependsFrom) == 0 {
			b.WriteString("  no dependencies\n")
		}
		// Dependencies read from the same words are listed together.
		for i := 0; i < len(t.DependsFrom); {
			j := i
			var ids []string
			for j < len(t.DependsFrom) && t.DependsFrom[j].Line == t.DependsFrom[i].Line && t.DependsFrom[j].Text == t.DependsFrom[i].Text {
				ids = append(ids, t.DependsFrom[j].ID)
				j++
			}
			d := t.DependsFrom[i]
			fmt.Fprintf(&b, "  after %s: line %d: %s\n", strings.Join(ids, ", "), d.Line, d.Text)
			i = j
		}
	}
	if len(r.NotTasks) > 0 {
		b.WriteString("\nnot read as tasks:\n")
		for _, n := range r.NotTasks {
			guess := ""
			if n.Guess {
				guess = " (a guess)"
			}
			fmt.Fprintf(&b, "  line %d: %s — %s%s\n", n.Line, strings.TrimSpace(src.line(n.Line)), n.Why, guess)
		}
	}
	var pending []string
	for _, id := range r.Order {
		if t := r.Task(id); t != nil && !t.Done && !t.Optional {
			pending = append(pending, id)
		}
	}
	if len(pending) == 0 {
		b.WriteString("\nExecution order: nothing left to do.\n")
	} else {
		fmt.Fprintf(&b, "\nExecution order: %s\n", strings.Join(pending, ", "))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return withExit(1, fmt.Errorf("plan: %w", err))
	}
	return nil
}

// runNormalize has the planner agent rewrite a plan that no format reads with confidence, shows the
// result beside the source lines each task came from and, with --write, writes it (the original
// kept as PATH.orig). Nothing runs.
func runNormalize(ctx context.Context, stdout, stderr io.Writer, o planOptions, path string, data []byte, a roadmap.Assessment) error {
	if a.Confident {
		return withExit(2, fmt.Errorf("%s is read as %s with %s: --normalize is for plans no format reads with confidence (akira plan --explain shows how it was read)",
			path, roadmap.Name(a.Closest), plural(a.Tasks, "task")))
	}
	if roadmap.FormatOf(path) != roadmap.FormatMarkdown {
		return withExit(2, fmt.Errorf("%s: --normalize rewrites markdown plans; fix the task list's errors instead", path))
	}
	f := o.agent
	if plannerName(f) == "" {
		return withExit(2, errors.New("--normalize needs a planner agent: --agent-cmd, --agent NAME, or a default_agent in --config / $AKIRA_CONFIG"))
	}
	op, err := config.LoadOperator(f.configFile)
	if err != nil {
		return withExit(2, err)
	}
	keys := profiles.ModelKeys(op, os.Getenv, f.env)
	ag, agentNet, keyWarnings, err := agentFromFlags(&f, op, keys, nil)
	if err != nil {
		return withExit(2, err)
	}
	box, warning, err := resolveSandbox(op, sandboxChoice{flag: f.sandbox, available: sandboxAvailable})
	if err != nil {
		return withExit(2, err)
	}
	box.Withhold = keys
	for _, w := range append([]string{warning}, keyWarnings...) {
		if w != "" {
			fmt.Fprintln(stderr, "akira: warning: "+w)
		}
	}
	fmt.Fprintln(stderr, a.Problem(path))
	fmt.Fprintf(stderr, "akira: asking the planner agent (%s) to rewrite %s as a checklist …\n", plannerName(f), path)
	res, err := runner.NormalizePlan(ctx, runner.NormalizeOptions{
		Source: path, Text: string(data), Problem: a.Problem(path), Agent: ag, AgentTimeout: f.agentTimeout,
		WorkDir: f.workDir, Sandbox: box, AgentNetwork: agentNet,
	})
	if errors.Is(err, runner.ErrNoPlan) {
		return withExit(1, fmt.Errorf("the planner agent's answers held no plan that parses (%s); nothing was written", strings.TrimPrefix(err.Error(), runner.ErrNoPlan.Error()+": ")))
	}
	if err != nil {
		return withExit(1, fmt.Errorf("plan: %w", err))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Proposed plan for %s (%s), beside the lines each task came from:\n\n", path, plural(len(res.Tasks), "task"))
	b.WriteString(sideBySide(res.Tasks, data))
	for _, c := range res.Dropped {
		fmt.Fprintf(&b, "\nDropped a verify command the agent wrote that %s does not contain: %s\n", path, c)
	}
	fmt.Fprintf(&b, "\nThe plan as it would be written:\n\n%s", indent(res.Plan, "    "))
	if !o.write {
		fmt.Fprintf(&b, "\nNothing was written or run. If every task matches its source lines, write it with:\n  akira plan --normalize --write %s\n"+
			"(the agent is asked again, so check what that run shows too; the original is kept as %s.orig)\n", path, path)
		_, err := io.WriteString(stdout, b.String())
		return err
	}
	orig := path + ".orig"
	if _, err := os.Lstat(orig); err == nil {
		return withExit(1, fmt.Errorf("%s exists: move it away first, so that no original plan is overwritten", orig))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return withExit(1, fmt.Errorf("plan: %w", err))
	}
	if err := os.WriteFile(orig, data, fi.Mode().Perm()); err != nil {
		return withExit(1, fmt.Errorf("plan: keep the original: %w", err))
	}
	if err := os.WriteFile(path, []byte(res.Plan), fi.Mode().Perm()); err != nil {
		return withExit(1, fmt.Errorf("plan: write %s: %w", path, err))
	}
	fmt.Fprintf(&b, "\nWrote %s (the original is %s). Nothing was run: read it with akira plan %s, run it with akira run.\n", path, orig, path)
	_, err = io.WriteString(stdout, b.String())
	return err
}

// sandboxAvailable is whether bubblewrap runs here; tests replace it.
var sandboxAvailable = func() error { return sandbox.Available("") }

// sideBySide prints each proposed task beside the source lines it came from.
func sideBySide(tasks []runner.NormalizedTask, data []byte) string {
	const leftMax, rightMax = 46, 70
	lefts := make([]string, len(tasks))
	width := len("proposed task")
	for i, t := range tasks {
		l := "[ ] " + t.ID + " " + t.Title
		if len(t.Depends) > 0 {
			l += " (after " + strings.Join(t.Depends, ", ") + ")"
		}
		lefts[i] = clip(l, leftMax)
		width = max(width, utf8.RuneCountInString(lefts[i]))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	src := splitSource(data)
	var b strings.Builder
	fmt.Fprintf(&b, "  %s │ source line\n", pad("proposed task"))
	fmt.Fprintf(&b, "  %s─┼─%s\n", strings.Repeat("─", width), strings.Repeat("─", 20))
	for i, t := range tasks {
		rights := []string{"(no source line)"}
		if len(t.SourceLines) > 0 {
			rights = rights[:0]
			for _, n := range t.SourceLines {
				r := fmt.Sprintf("%4d  %s", n, src.line(n))
				if t.Guessed {
					r = fmt.Sprintf("%4d  (guessed by its words) %s", n, strings.TrimSpace(src.line(n)))
				}
				rights = append(rights, clip(r, rightMax))
			}
		}
		for j, r := range rights {
			left := ""
			if j == 0 {
				left = lefts[i]
			}
			fmt.Fprintf(&b, "  %s │ %s\n", pad(left), strings.TrimRight(r, " "))
		}
	}
	return b.String()
}

// clip shortens s to n runes, ending in "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
