package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/roadmap"
)

func init() { subcommands = append(subcommands, newPlanCmd) }

func newPlanCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan [PATH]",
		Short: "Show the tasks of a roadmap and the order they will run in",
		Long: `Plan reads a roadmap (ROADMAP.md by default; a markdown checklist, a spec-kit tasks.md,
or a YAML/JSON task list chosen by extension), validates it and prints its tasks by phase
with the execution order; with --parallel N, the waves a run with up to N tasks at once goes in
(tasks marked [P], and tasks that declare their dependencies, may share a wave; any other task
runs alone). Nothing is run.

The markdown is read in the convention its marks show (a GSD roadmap, spec-kit or Kiro tasks, an
OpenSpec change, a checklist), which plan prints; --format forces one. --explain shows, for each
task, the line it was read from, how it was read, and the words each dependency was read from.

A plan that no format reads with confidence (no tasks, or not one dependency naming a task) is
an error that names the formats tried and the closest one. With a planner agent configured (the
agent of --config / $AKIRA_CONFIG, --agent or --agent-cmd, as for akira run), --normalize asks it
to rewrite the plan in Akira's checklist format and shows the result beside the source lines each
task came from; nothing is written unless --write is given (the original is kept as PATH.orig),
and nothing runs until you run it.

Exit status: 0 when the roadmap is valid, 2 when it is invalid or not read (every problem is
printed on stderr), 1 on other failures such as a missing file.`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path = "ROADMAP.md"
			if len(args) == 1 {
				o.path = args[0]
			}
			if o.parallel < 1 || o.parallel > 32 {
				return withExit(2, fmt.Errorf("--parallel: %d is out of range (1 to 32)", o.parallel))
			}
			if o.write && !o.normalize {
				return withExit(2, errors.New("--write writes what --normalize proposes: give both"))
			}
			ctx := cmd.Context()
			if o.normalize {
				// The planner agent's call stops with ctx, and its process with it.
				return runPlan(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
			}
			// Reading and parsing a plan never looks at ctx (a plan of 100,000 tasks takes minutes) and
			// writes nothing but the output: a signal ends the command at once.
			return atOnce(ctx, "plan", func() error { return runPlan(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o) })
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.asJSON, "json", false, "print the roadmap as JSON")
	fl.IntVar(&o.parallel, "parallel", 1, "show the waves of a run with up to this many tasks at once")
	fl.StringVar(&o.format, "format", "", "read the markdown as "+strings.Join(roadmap.Conventions, ", ")+" (default: detected)")
	fl.BoolVar(&o.explain, "explain", false, "show for each task the line it came from, how it was read and where each dependency was read")
	fl.BoolVar(&o.normalize, "normalize", false, "have the planner agent rewrite a plan no format reads as a checklist, shown beside its source lines")
	fl.BoolVar(&o.write, "write", false, "with --normalize: write the rewritten plan over PATH, keeping the original as PATH.orig")
	// The planner agent, chosen as akira run chooses its agent.
	fl.StringVar(&o.agent.agentCmd, "agent-cmd", "", "with --normalize: shell command of the planner agent (prompt on stdin and in $AKIRA_PROMPT_FILE)")
	fl.StringVar(&o.agent.agentName, "agent", "", "with --normalize: agent profile of --config, or a built-in agent: openai, anthropic (default: default_agent of --config)")
	fl.StringVar(&o.agent.model, "model", "", "with --normalize: model of the built-in agent, overriding the profile's")
	fl.StringVar(&o.agent.configFile, "config", os.Getenv("AKIRA_CONFIG"), "operator configuration file with agent profiles ($AKIRA_CONFIG)")
	fl.StringArrayVar(&o.agent.env, "env", nil, "with --normalize: environment variable passed to the agent, e.g. ANTHROPIC_API_KEY (repeatable)")
	fl.StringVar(&o.agent.sandbox, "sandbox", "", "with --normalize: confine the agent: bubblewrap or none (default: sandbox of --config, else bubblewrap when it runs here)")
	fl.DurationVar(&o.agent.agentTimeout, "agent-timeout", runner.DefaultAgentTimeout, "with --normalize: time limit of one agent call")
	fl.StringVar(&o.agent.workDir, "work-dir", "", "with --normalize: directory for the agent's scratch directory (default: $TMPDIR)")
	return cmd
}

// planOptions are the flags of `akira plan`.
type planOptions struct {
	path, format                      string
	asJSON, explain, normalize, write bool
	parallel                          int
	agent                             runFlags // the planner agent's flags, as akira run reads them
}

func runPlan(ctx context.Context, stdout, stderr io.Writer, o planOptions) error {
	path, format := o.path, o.format
	if format != "" && !slices.Contains(roadmap.Conventions, format) {
		return withExit(2, fmt.Errorf("--format %q: want one of %s", format, strings.Join(roadmap.Conventions, ", ")))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "ROADMAP.md")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return withExit(1, fmt.Errorf("plan: %w", err))
	}
	assessed := roadmap.Assess(path, data, format)
	if o.normalize {
		return runNormalize(ctx, stdout, stderr, o, path, data, assessed)
	}
	// notRead is the one paragraph that says why no format reads the plan, and what to do.
	notRead := func() {
		fmt.Fprintln(stderr, assessed.Problem(path))
		if hint := normalizeHint(o.agent, path); hint != "" {
			fmt.Fprintln(stderr, hint)
		}
	}
	r, err := roadmap.ParseAs(path, data, format)
	if err != nil {
		var errs roadmap.Errors
		if !errors.As(err, &errs) {
			return withExit(1, fmt.Errorf("plan: %w", err))
		}
		for _, e := range errs {
			fmt.Fprintln(stderr, e.Error())
		}
		if !assessed.Confident {
			notRead()
		}
		return withExit(2, fmt.Errorf("%s: invalid roadmap (%s)", path, plural(len(errs), "error")))
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "warning: "+w.Error())
	}
	if !assessed.Confident && len(r.Tasks) == 0 {
		// Nothing to show but the reason; a script reading --json still gets the document.
		if o.asJSON {
			if err := writePlanJSON(stdout, r, o.explain, data); err != nil {
				return err
			}
		}
		notRead()
		return withExit(2, nil)
	}
	switch {
	case o.asJSON:
		err = writePlanJSON(stdout, r, o.explain, data)
	case o.explain && len(r.Tasks) > 0:
		err = writePlanExplain(stdout, r, data)
	default:
		err = writePlanText(stdout, r, o.parallel)
	}
	if err != nil {
		return err
	}
	if !assessed.Confident {
		// The plan is shown as read, but what it says about its order was not read: not a plan to run.
		notRead()
		return withExit(2, nil)
	}
	return nil
}

// plannerName names the planner agent the flags and the operator's file configure ("" for none),
// without building it.
func plannerName(f runFlags) string {
	switch {
	case strings.TrimSpace(f.agentCmd) != "":
		return "--agent-cmd"
	case f.agentName != "":
		return f.agentName
	}
	op, err := config.LoadOperator(f.configFile)
	if err != nil || (op.DefaultAgent == "" && len(op.Agents) == 0) {
		return ""
	}
	if name, _, err := profiles.Resolve(op, ""); err == nil {
		return name
	}
	return ""
}

// normalizeHint offers --normalize when a planner agent is configured.
func normalizeHint(f runFlags, path string) string {
	name := plannerName(f)
	if name == "" {
		return ""
	}
	return fmt.Sprintf("hint: akira plan --normalize %s asks the planner agent (%s) to rewrite it as a checklist, shown beside the lines each task came from; "+
		"nothing is written without --write, and nothing runs until you run it", path, name)
}

// planJSON is the documented shape of `akira plan --json`; arrays are never null.
type planJSON struct {
	Source string `json:"source"`
	Title  string `json:"title"`
	// Convention is how the plan was read: checklist, gsd, spec-kit, kiro, openspec or task-list.
	Convention string         `json:"convention"`
	Order      []string       `json:"order"`
	Tasks      []planTaskJSON `json:"tasks"`
	// With --explain: the status marks the plan uses and how each was read, and the checkbox lines
	// not read as tasks.
	Marks    []planMarkJSON    `json:"marks,omitempty"`
	NotTasks []planNotTaskJSON `json:"not_tasks,omitempty"`
}

type planMarkJSON struct {
	Mark    string `json:"mark"`
	Reading string `json:"reading"`
	Meaning string `json:"meaning,omitempty"`
	Line    int    `json:"line,omitempty"`
	Guess   bool   `json:"guess,omitempty"`
	Uses    int    `json:"uses"`
}

type planNotTaskJSON struct {
	Line  int    `json:"line"`
	Why   string `json:"why"`
	Guess bool   `json:"guess,omitempty"`
}

type planTaskJSON struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Phase    string            `json:"phase"`
	Line     int               `json:"line"`
	Done     bool              `json:"done"`
	Parallel bool              `json:"parallel"`
	Gate     string            `json:"gate,omitempty"`
	Priority int               `json:"priority,omitempty"`
	Labels   []string          `json:"labels"`
	Depends  []string          `json:"depends"`
	Verify   []string          `json:"verify"`
	Accept   []string          `json:"accept"`
	Subtasks []planSubtaskJSON `json:"subtasks"`
	Notes    string            `json:"notes"`
	Optional bool              `json:"optional,omitempty"`
	// Context are the plan and spec files the task names, which go into its prompt.
	Context []string `json:"context"`
	// With --explain: the line the task was read from, how it was read, and where each dependency
	// was read.
	SourceText  string        `json:"source_text,omitempty"`
	ReadAs      string        `json:"read_as,omitempty"`
	DependsFrom []planDepJSON `json:"depends_from,omitempty"`
	// Mark and MarkReading: a status mark other than a plain box, and how it was read; Guesses:
	// the readings of the task that are guesses.
	Mark        string   `json:"mark,omitempty"`
	MarkReading string   `json:"mark_reading,omitempty"`
	Guesses     []string `json:"guesses,omitempty"`
}

type planDepJSON struct {
	ID   string `json:"id"`
	Line int    `json:"line"`
	Text string `json:"text"`
	// PhaseOrder is set on a dependency that only keeps the plan's phases in order.
	PhaseOrder bool `json:"phase_order,omitempty"`
}

type planSubtaskJSON struct {
	Title string `json:"title"`
	Done  bool   `json:"done"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writePlanJSON(w io.Writer, r *roadmap.Roadmap, explain bool, data []byte) error {
	out := planJSON{Source: r.Source, Title: r.Title, Convention: r.Convention, Order: nonNil(r.Order), Tasks: []planTaskJSON{}}
	var src sourceLines
	if explain {
		src = splitSource(data)
		for _, m := range r.Marks {
			out.Marks = append(out.Marks, planMarkJSON{Mark: m.Mark, Reading: m.Reading, Meaning: m.Meaning, Line: m.Line, Guess: m.Guess, Uses: m.Tasks})
		}
		for _, n := range r.NotTasks {
			out.NotTasks = append(out.NotTasks, planNotTaskJSON(n))
		}
	}
	for _, t := range r.Tasks {
		subs := []planSubtaskJSON{}
		for _, s := range t.Subtasks {
			subs = append(subs, planSubtaskJSON(s))
		}
		out.Tasks = append(out.Tasks, planTaskJSON{
			ID: t.ID, Title: t.Title, Phase: t.Phase, Line: t.Line, Done: t.Done, Parallel: t.Parallel, Gate: t.Gate, Priority: t.Priority,
			Labels: nonNil(t.Labels), Depends: nonNil(t.Depends), Verify: nonNil(t.Verify), Accept: nonNil(t.Accept),
			Subtasks: subs, Notes: t.Notes, Optional: t.Optional, Context: nonNil(t.Context),
		})
		if explain {
			j := &out.Tasks[len(out.Tasks)-1]
			j.SourceText, j.ReadAs, j.DependsFrom = src.line(t.Line), t.ReadAs, []planDepJSON{}
			j.Mark, j.MarkReading, j.Guesses = t.Mark, t.MarkReading, t.Guesses
			for _, d := range t.DependsFrom {
				j.DependsFrom = append(j.DependsFrom, planDepJSON{ID: d.ID, Line: d.Line, Text: d.Text, PhaseOrder: d.PhaseOrder})
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return withExit(1, fmt.Errorf("plan: write json: %w", err))
	}
	return nil
}

// writePlanText prints tasks grouped by phase (consecutive tasks of the same phase form a group),
// then the order in which the pending tasks will run.
func writePlanText(w io.Writer, r *roadmap.Roadmap, parallel int) error {
	var b strings.Builder
	title := r.Title
	if title == "" {
		title = "(untitled)"
	}
	done := 0
	for _, t := range r.Tasks {
		if t.Done {
			done++
		}
	}
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "%s, %s: %s, %d done, %d pending; %s\n", r.Source, r.Format, plural(len(r.Tasks), "task"), done, len(r.Tasks)-done,
		roadmap.Describe(r.Convention))
	if len(r.Tasks) == 0 {
		b.WriteString("\nNo tasks: a task is a list item with a checkbox, such as \"- [ ] Write the parser\".\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	for start := 0; start < len(r.Tasks); {
		end := start
		for end < len(r.Tasks) && r.Tasks[end].Phase == r.Tasks[start].Phase {
			end++
		}
		group := r.Tasks[start:end]
		phase := group[0].Phase
		if phase == "" {
			phase = "(no phase)"
		}
		gdone := 0
		for _, t := range group {
			if t.Done {
				gdone++
			}
		}
		fmt.Fprintf(&b, "\n%s (%d done, %d pending)\n", phase, gdone, len(group)-gdone)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, t := range group {
			box := "[ ]"
			if t.Done {
				box = "[x]"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", box, t.ID, t.Title, details(t))
		}
		if err := tw.Flush(); err != nil {
			return withExit(1, fmt.Errorf("plan: %w", err))
		}
		start = end
	}
	var pending []string
	for _, id := range r.Order {
		if t := r.Task(id); t != nil && !t.Done && !t.Optional {
			pending = append(pending, id)
		}
	}
	switch {
	case len(pending) == 0:
		b.WriteString("\nExecution order: nothing left to do.\n")
	case done > 0:
		fmt.Fprintf(&b, "\nExecution order: %s (done tasks are skipped)\n", strings.Join(pending, ", "))
	default:
		fmt.Fprintf(&b, "\nExecution order: %s\n", strings.Join(pending, ", "))
	}
	if parallel > 1 {
		writeWaves(&b, runner.Waves(r, parallel), parallel)
	}
	// The table pads every title; lines without details would otherwise end in spaces.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	if _, err := io.WriteString(w, strings.Join(lines, "\n")); err != nil {
		return withExit(1, fmt.Errorf("plan: %w", err))
	}
	return nil
}

// writeWaves prints the waves of a run with up to parallel tasks at once.
func writeWaves(b *strings.Builder, waves [][]string, parallel int) {
	if len(waves) == 0 {
		return
	}
	fmt.Fprintf(b, "\nWaves, up to %d tasks at once:\n", parallel)
	for i, w := range waves {
		fmt.Fprintf(b, "  %d. %s\n", i+1, strings.Join(w, ", "))
	}
}

// details summarises what else a task carries, in one column of the table.
func details(t *roadmap.Task) string {
	var parts []string
	var written, phaseOrder []string
	for i, d := range t.Depends {
		if i < len(t.DependsFrom) && t.DependsFrom[i].PhaseOrder {
			phaseOrder = append(phaseOrder, d)
		} else {
			written = append(written, d)
		}
	}
	if len(written) > 0 {
		parts = append(parts, "after "+strings.Join(written, ", "))
	}
	if len(phaseOrder) > 0 {
		parts = append(parts, "phase order: after "+strings.Join(phaseOrder, ", "))
	}
	if t.Parallel {
		parts = append(parts, "parallel")
	}
	if t.Mark != "" {
		parts = append(parts, "marked "+t.Mark)
	}
	if t.Optional {
		parts = append(parts, "optional (skipped unless included)")
	}
	if len(t.Context) > 0 {
		parts = append(parts, "reads "+strings.Join(t.Context, ", "))
	}
	if t.Gate != "" {
		parts = append(parts, "gate "+t.Gate)
	}
	switch t.Priority {
	case roadmap.PriorityHigh:
		parts = append(parts, "priority high")
	case roadmap.PriorityLow:
		parts = append(parts, "priority low")
	}
	if len(t.Labels) > 0 {
		parts = append(parts, strings.Join(t.Labels, " "))
	}
	if n := len(t.Subtasks); n > 0 {
		subDone := 0
		for _, s := range t.Subtasks {
			if s.Done {
				subDone++
			}
		}
		parts = append(parts, fmt.Sprintf("%d/%d subtasks", subDone, n))
	}
	if n := len(t.Verify); n > 0 {
		parts = append(parts, "verify: "+strings.Join(t.Verify, "; "))
	}
	return strings.Join(parts, " · ")
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
