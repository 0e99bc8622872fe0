package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/timeline"
	"github.com/akira-bot/akira/runner/verify"
)

// Terminal is the human view of a run: one line per step and a summary table at the end. With Live
// set (an interactive terminal) it also keeps a status line at the bottom — progress bar, current
// task, attempt, elapsed time — redrawn every second.
type Terminal struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	color bool

	total, settled int
	// running are the tasks in progress, in the order they started (several in a parallel run).
	running     []*liveTask
	statusShown bool
	paused      bool // while a human is asked, the status line stays away
	stop        chan struct{}
	stopped     chan struct{}
}

// liveTask is a task in progress as the status line shows it.
type liveTask struct {
	id, title    string
	attempt, max int
	start        time.Time
	phase        string // what the task is doing: agent, verify
}

func (t *Terminal) task(id string) *liveTask {
	for _, r := range t.running {
		if r.id == id {
			return r
		}
	}
	return &liveTask{id: id} // an event of a task not seen starting: shown nowhere
}

func (t *Terminal) done(id string) {
	t.running = slices.DeleteFunc(t.running, func(r *liveTask) bool { return r.id == id })
}

// indent starts the lines about a task: with several tasks in progress, they name it.
func (t *Terminal) indent(id string) string {
	if len(t.running) > 1 {
		return "  " + t.c(dim, "["+id+"]") + " "
	}
	return "  "
}

// NewTerminal writes the view to w; live enables the status line and colors.
func NewTerminal(w io.Writer, live bool) *Terminal {
	return &Terminal{w: w, live: live, color: live}
}

// Close stops the status line. It is safe to call more than once.
func (t *Terminal) Close() {
	t.mu.Lock()
	stop, stopped := t.stop, t.stopped
	t.stop = nil
	t.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	t.mu.Lock()
	t.clearStatus()
	t.mu.Unlock()
}

// Pause hides the status line until the next event, e.g. while a prompt waits for an answer.
func (t *Terminal) Pause() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearStatus()
	t.paused = true
}

// Report prints ev.
func (t *Terminal) Report(_ context.Context, ev Event) error {
	if ev.Type == EventRunFinished {
		t.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearStatus()
	t.paused = false
	t.print(ev)
	if ev.Type == EventTaskEscalated {
		t.paused = true
	}
	if ev.Type == EventRunStarted && t.live && t.stop == nil {
		t.stop, t.stopped = make(chan struct{}), make(chan struct{})
		go t.tick(t.stop, t.stopped)
	}
	t.drawStatus()
	return nil
}

func (t *Terminal) tick(stop, stopped chan struct{}) {
	defer close(stopped)
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
			t.mu.Lock()
			t.clearStatus()
			t.drawStatus()
			t.mu.Unlock()
		}
	}
}

const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

func (t *Terminal) c(color, s string) string {
	if !t.color {
		return s
	}
	return color + s + reset
}

func (t *Terminal) printf(format string, args ...any) { fmt.Fprintf(t.w, format, args...) }

func (t *Terminal) print(ev Event) {
	switch ev.Type {
	case EventRunStarted:
		t.total = len(ev.Tasks)
		done, todo := 0, 0
		for _, r := range ev.Tasks {
			if r.Status == TaskPending {
				todo++
			} else {
				done++
			}
		}
		t.settled = done
		t.printf("%s %s → branch %s (%s)\n", t.c(bold, "akira run"), ev.Roadmap, t.c(bold, ev.Branch), ev.Message)
		t.printf("%s\n", t.c(dim, fmt.Sprintf("run %s · %s: %d to do, %d already done or skipped", ev.RunID, plural(len(ev.Tasks), "task"), todo, done)))
		for _, r := range ev.Tasks {
			if r.Status == TaskDone {
				t.printf("%s %s %s %s\n", t.c(green, "✓"), r.ID, r.Title, t.c(dim, "("+r.Note+")"))
			}
		}
	case EventSetupFinished, EventBaseChecked:
		t.envLine(ev)
	case EventTaskStarted:
		t.done(ev.TaskID)
		t.running = append(t.running, &liveTask{id: ev.TaskID, title: ev.TaskTitle, max: ev.MaxAttempts, start: ev.Time})
		phase := ""
		if ev.Phase != "" {
			phase = t.c(dim, "  ["+ev.Phase+"]")
		}
		t.printf("%s %s %s%s\n", t.c(bold, "▶"), t.c(bold, ev.TaskID), ev.TaskTitle, phase)
	case EventAttemptStarted:
		lt := t.task(ev.TaskID)
		lt.attempt, lt.phase = ev.Attempt, "agent"
		if ev.Attempt > 1 {
			t.printf("%s↻ attempt %d%s, with the feedback of the last one\n", t.indent(ev.TaskID), ev.Attempt, t.ofMax(ev.MaxAttempts))
		}
	case EventAgentFinished:
		if ev.Message != "" {
			msg := ev.Message
			if !strings.HasPrefix(msg, agent.ErrAgentFailed.Error()) {
				msg = "agent: " + msg
			}
			t.printf("%s%s %s %s\n", t.indent(ev.TaskID), t.c(red, "✗"), msg, t.c(dim, "("+FormatDuration(ev.Duration)+")"))
		} else {
			t.printf("%s· agent done %s\n", t.indent(ev.TaskID), t.c(dim, "("+FormatDuration(ev.Duration)+usageText(ev)+")"))
		}
		t.blocked(ev, "agent")
	case EventVerifyStarted:
		t.task(ev.TaskID).phase = "verify"
		msg := ev.Message
		if ev.VerifyPlan != nil && ev.VerifyPlan.Source == verify.SourceNone {
			msg = t.c(yellow, msg)
		}
		t.printf("%s· %s\n", t.indent(ev.TaskID), msg)
	case EventVerifyFinished:
		for _, r := range ev.Verify {
			mark := t.c(green, "✓")
			status := ""
			if !r.Passed() {
				mark, status = t.c(red, "✗"), fmt.Sprintf(" exit %d", r.ExitCode)
				if r.TimedOut {
					status = " timed out"
				}
			}
			t.printf("%s  %s %s%s %s\n", t.indent(ev.TaskID), mark, r.Command, status, t.c(dim, "("+FormatDuration(r.Duration)+")"))
		}
		t.blocked(ev, "verification")
	case EventJudged:
		if ev.Verdict == nil {
			t.printf("%s  %s judge: %s\n", t.indent(ev.TaskID), t.c(red, "✗"), ev.Message)
			break
		}
		mark, word := t.c(green, "✓"), "accepted"
		if !ev.Verdict.Passed(ev.MinConfidence) {
			mark, word = t.c(red, "✗"), "not accepted"
		}
		t.printf("%s  %s judge %s: %s, confidence %.2f\n", t.indent(ev.TaskID), mark, ev.Verdict.Model, word, ev.Verdict.Confidence)
		for _, c := range ev.Verdict.Criteria {
			if !c.Pass {
				t.printf("    %s %s: %s\n", t.c(dim, "│"), c.Criterion, c.Reason)
			}
		}
	case EventAttemptFailed:
		t.printf("%s%s attempt %d failed: %s\n", t.indent(ev.TaskID), t.c(red, "✗"), ev.Attempt, ev.Message)
		for _, r := range ev.Verify {
			if !r.Passed() {
				for _, l := range keyLines(r.Output, 6) {
					t.printf("    %s %s\n", t.c(dim, "│"), l)
				}
			}
		}
	case EventTaskCheckpointed:
		t.done(ev.TaskID)
		t.settled++
		note := ""
		if ev.Message != "" {
			note = ", " + ev.Message
		}
		if ev.Unverified {
			note += ", unverified: nothing checked it"
		}
		t.printf("%s %s %s → %s %s\n", t.c(green, "✓"), t.c(bold, ev.TaskID), ev.TaskTitle, short(ev.Commit),
			t.c(dim, fmt.Sprintf("(%s, %s%s)", plural(ev.Attempt, "attempt"), FormatDuration(ev.Duration), note)))
	case EventTaskEscalated:
		why := "after " + plural(ev.Attempt, "attempt")
		if ev.Escalation != nil && ev.Escalation.Reason == "repeated_failure" {
			why += ": the same failure twice in a row"
		}
		t.printf("%s %s %s needs a decision (%s)\n", t.c(yellow, "!"), t.c(bold, ev.TaskID), ev.TaskTitle, why)
		for _, l := range lastLines(ev.Feedback, 20) {
			t.printf("    %s %s\n", t.c(dim, "│"), l)
		}
	case EventTaskDecided:
		if ev.Decision != nil {
			g := ""
			if ev.Decision.Guidance != "" {
				g = ": " + oneLine(ev.Decision.Guidance)
			}
			t.printf("  · decision for %s: %s%s\n", ev.TaskID, ev.Decision.Kind, g)
		}
	case EventTaskParked:
		t.done(ev.TaskID)
		t.settled++
		ref := ""
		switch {
		case ev.Escalation == nil:
		case ev.Escalation.ParkedRef != "":
			ref = "; its work is saved on " + ev.Escalation.ParkedRef
		case ev.Escalation.ParkedCommit != "":
			// Only a dry run parks without a ref (see Escalation.ParkedRef).
			ref = "; dry run: its work is not kept, it goes with the temporary workspace"
		}
		t.printf("%s %s needs a decision: %s%s\n", t.c(yellow, "⏸"), t.c(bold, ev.TaskID), ev.Message, ref)
	case EventTaskSkipped:
		t.done(ev.TaskID)
		t.settled++
		t.printf("%s %s %s %s\n", t.c(dim, "–"), ev.TaskID, ev.TaskTitle, t.c(dim, "("+ev.Message+")"))
	case EventTaskBlocked:
		t.done(ev.TaskID)
		t.settled++
		t.printf("%s %s %s %s\n", t.c(dim, "–"), ev.TaskID, ev.TaskTitle, t.c(dim, "("+ev.Message+")"))
	case EventRunFinished:
		t.running = nil
		if ev.Outcome != nil {
			t.summary(*ev.Outcome)
		}
	}
}

func (t *Terminal) summary(o Outcome) {
	if len(o.Tasks) > 0 {
		t.printf("\n")
		tw := tabwriter.NewWriter(t.w, 0, 4, 2, ' ', 0)
		// Cost and tokens appear when an agent reported any.
		var total agent.Usage
		for _, r := range o.Tasks {
			total = total.Add(r.Usage)
		}
		usage := total != (agent.Usage{})
		if usage {
			fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tDURATION\tCOST\tTOKENS\tCOMMIT\tNOTE")
		} else {
			fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tDURATION\tCOMMIT\tNOTE")
		}
		for _, r := range o.Tasks {
			status := string(r.Status)
			if r.Unverified {
				status += " (unverified)"
			}
			dur := "-"
			if r.Duration > 0 {
				dur = FormatDuration(r.Duration)
			}
			commit := "-"
			if r.Commit != "" {
				commit = short(r.Commit)
			}
			if usage {
				spent, tokens := "-", "-"
				about := ""
				if r.Usage.Estimated {
					about = "~"
				}
				if r.Usage.CostUSD > 0 {
					spent = about + cost.Format(r.Usage.CostUSD)
				}
				if n := r.Usage.InputTokens + r.Usage.OutputTokens; n > 0 {
					tokens = fmt.Sprint(about, n)
				}
				fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, truncate(r.Title, 40), status, r.Attempts, dur, spent, tokens, commit, r.Note)
				continue
			}
			fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\t%s\t%s\n", r.ID, truncate(r.Title, 40), status, r.Attempts, dur, commit, r.Note)
		}
		tw.Flush()
		if usage && total.CostUSD > 0 {
			// The total is the tasks' costs as the column shows them, added up (internal/cost).
			costs := make([]float64, 0, len(o.Tasks))
			for _, r := range o.Tasks {
				costs = append(costs, r.Usage.CostUSD)
			}
			t.printf("cost of the run: %s\n", cost.Format(cost.Sum(costs...)))
		}
		if total.Estimated {
			t.printf("~ an estimate: the egress proxy metered a model answer that did not state its whole usage (from its bytes)\n")
		}
	}
	var line string
	switch o.Status {
	case StatusSucceeded:
		line = t.c(green, "done")
	case StatusParked:
		line = t.c(yellow, "needs a decision on "+plural(len(o.Parked), "task"))
	case StatusAborted:
		line = t.c(yellow, "aborted")
	default:
		// The error itself is the command's to say, once, after this view (akira run prints it).
		line = t.c(red, "failed")
	}
	branch := "branch " + o.Branch
	switch {
	case o.Branch == "":
		branch = "no branch"
	case o.NoBranch:
		branch += " not created (nothing pushed)"
	case o.Head != "":
		branch += " at " + short(o.Head)
	}
	t.printf("\n%s · %s · %s\n", line, branch, FormatDuration(o.Duration))
}

func (t *Terminal) ofMax(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("/%d", n)
}

// drawStatus writes the status line without a newline; clearStatus removes it. Both hold t.mu.
func (t *Terminal) drawStatus() {
	if !t.live || t.paused || len(t.running) == 0 || t.total == 0 {
		return
	}
	const width = 20
	filled := t.settled * width / t.total
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	if len(t.running) > 1 {
		// Several tasks at once: each one short, the line must stay one line.
		parts := make([]string, 0, len(t.running))
		for _, r := range t.running {
			parts = append(parts, fmt.Sprintf("%s %s %s", r.id, cmp.Or(r.phase, "starting"), FormatDuration(time.Since(r.start).Truncate(time.Second))))
		}
		t.printf("%s %d/%d · %s", bar, t.settled, t.total, strings.Join(parts, " · "))
		t.statusShown = true
		return
	}
	r := t.running[0]
	attempt := ""
	if r.attempt > 0 {
		attempt = fmt.Sprintf(" · attempt %d%s", r.attempt, t.ofMax(r.max))
	}
	phase := ""
	if r.phase != "" {
		phase = " · " + r.phase
	}
	t.printf("%s %d/%d · %s %s%s%s · %s", bar, t.settled, t.total, r.id, truncate(r.title, 40), attempt, phase,
		FormatDuration(time.Since(r.start).Truncate(time.Second)))
	t.statusShown = true
}

func (t *Terminal) clearStatus() {
	if t.statusShown {
		t.printf("\r\x1b[2K")
		t.statusShown = false
	}
}

// FormatDuration prints a duration for people: 850ms, 4.2s, 3m05s, 1h02m.
func FormatDuration(d time.Duration) string { return timeline.FormatDuration(d) }

func usageText(ev Event) string {
	if ev.Usage == nil || (ev.Usage.InputTokens == 0 && ev.Usage.OutputTokens == 0) {
		return ""
	}
	s := fmt.Sprintf(", %d+%d tokens", ev.Usage.InputTokens, ev.Usage.OutputTokens)
	if ev.Usage.CostUSD > 0 {
		s += ", " + cost.Format(ev.Usage.CostUSD)
	}
	if ev.Usage.Estimated {
		s += " (estimated: a model answer did not state its whole usage)"
	}
	return s
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var keyLineRE = regexp.MustCompile(`(?i)(panic:|--- FAIL|\bFAIL:|\berror\b|exception|assert|expected|\bwant\b)`)

// keyLines picks the lines of a failure output that say what broke (up to n), or else its last lines.
func keyLines(s string, n int) []string {
	var key []string
	for _, l := range strings.Split(s, "\n") {
		if keyLineRE.MatchString(l) && len(key) < n {
			key = append(key, strings.TrimRight(l, "\r"))
		}
	}
	if len(key) > 0 {
		return key
	}
	return lastLines(s, n)
}

func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// blocked lists the destinations the egress proxy refused to who (the agent, verification), each
// with what would allow it.
func (t *Terminal) blocked(ev Event, who string) {
	if len(ev.Blocked) == 0 {
		return
	}
	t.printf("%s%s the network refused %s %d destination(s):\n", t.indent(ev.TaskID), t.c(yellow, "!"), who, len(ev.Blocked))
	for _, b := range ev.Blocked {
		dest := net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
		if b.Path != "" {
			dest += " " + b.Method + " " + b.Path
		}
		t.printf("%s  %s %s ×%d: %s %s\n", t.indent(ev.TaskID), t.c(dim, "│"), dest, b.Count, b.Reason,
			t.c(dim, "(allow it: "+AllowLine(b)+")"))
	}
}

// envLine prints the setup's or the base check's outcome, with the tail of what failed.
func (t *Terminal) envLine(ev Event) {
	switch {
	case ev.Setup != nil && ev.Setup.Proposed != "":
		t.printf("%s\n", t.c(dim, "setup: "+ev.Message))
	case ev.Setup != nil:
		if f := ev.Setup.Failed(); f != nil {
			t.printf("%s setup: %s\n%s\n", t.c(red, "✗"), ev.Message, t.c(dim, strings.TrimRight(f.Tail, "\n")))
			return
		}
		what := "setup"
		if ev.Setup.Detected != "" {
			what = "setup (detected from " + ev.Setup.Detected + ")"
		}
		t.printf("%s %s: %s %s\n", t.c(green, "✓"), what, ev.Message, t.c(dim, "("+ev.Setup.Duration.Round(100*time.Millisecond).String()+")"))
	case ev.BaseCheck != nil:
		if ev.BaseCheck.Passed {
			t.printf("%s %s\n", t.c(green, "✓"), ev.Message)
			return
		}
		t.printf("%s %s\n%s\n", t.c(red, "✗"), ev.Message, t.c(dim, strings.TrimRight(ev.BaseCheck.Tail, "\n")))
	}
}
