package admin

import (
	"context"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// What the dashboard's pages show of a run, in the words a person uses: a run is named by its issue
// or pull request, its state is a phrase ("needs a decision", not "parked"), and a parked task comes
// with what a person needs to decide on it. The API keeps the state names; these are the pages' only.

// taskWords are the task statuses the pages say otherwise; a run's state is said as lifecycle
// phrases it.
var taskWords = map[string]string{lifecycle.TaskStatusEscalated: "needs a decision"}

// words is a run's or a task's state as the pages say it.
func words(state string) string {
	if slices.Contains(lifecycle.RunStatuses, lifecycle.RunStatus(state)) {
		return lifecycle.RunStatus(state).Phrase()
	}
	if w, ok := taskWords[state]; ok {
		return w
	}
	return strings.ReplaceAll(state, "_", " ")
}

// runName is what a run is called on the pages: its issue's or pull request's title and number.
type runName struct {
	Title string
	// Ref is "#12" and RefURL its page, when the run came from an issue or a pull request; Kind is
	// "issue" or "pull request".
	Ref, RefURL, Kind string
	// By is who started it ("@alice", "ops (API)"); "" when not known.
	By string
}

func nameOf(r *lifecycle.Run) runName {
	n := runName{Title: r.Title}
	num, kind := r.Issue, "issues"
	if num == 0 && r.PR > 0 {
		num, kind = r.PR, "pull"
	}
	if num > 0 {
		n.Ref, n.Kind = "#"+strconv.Itoa(num), "issue"
		if kind == "pull" {
			n.Kind = "pull request"
		}
		if r.RepoURL != "" {
			n.RefURL = r.RepoURL + "/" + kind + "/" + strconv.Itoa(num)
		} else if kind == "pull" {
			n.RefURL = r.PRURL
		}
	}
	if n.Title == "" {
		n.Title = r.Source
	}
	if n.Title == "" {
		n.Title = r.Branch
	}
	if r.Sender != "" {
		n.By = templates.Who(r.Sender)
	}
	return n
}

// runRow is a run in the runs list.
type runRow struct {
	RunSummary
	Name runName
	// Waiting is the task that needs a decision, with its title.
	Waiting string
}

func rowOf(r *lifecycle.Run) runRow {
	row := runRow{RunSummary: summaryOf(r), Name: nameOf(r)}
	if len(r.Parked) > 0 {
		row.Waiting = r.Parked[0].TaskID
		if t := r.Task(r.Parked[0].TaskID); t != nil {
			row.Waiting += " " + t.Title
		}
	}
	return row
}

// decision is a parked task as the run page shows it to the person deciding.
type decision struct {
	TaskID, Title string
	// Why is the reason in plain words, code in <code>.
	Why   template.HTML
	Since time.Time
	// Attempt is the attempt whose output is shown, LogURL its whole log.
	Attempt int
	LogURL  string
	// Failed are the attempt's failing verification commands with the end of their output; Output the
	// end of the log when no command failed (the agent's own failure).
	Failed  []failedCommand
	Output  string
	Changed []string
	// Gate is "before" or "after" for a task stopped at a gate; Budget says the run's budget is spent.
	Gate   string
	Budget bool
}

// failedCommand is a verification command that failed, and the end of its output.
type failedCommand struct {
	Command, Result, Output string
}

// outputLines is how much of a failing command's output the decision screen shows.
const outputLines = 40

func (s *server) decisionsOf(ctx context.Context, r *lifecycle.Run) []decision {
	var out []decision
	for _, p := range r.Parked {
		d := decision{TaskID: p.TaskID, Title: p.TaskID, Why: plainWords(reasonWords(p.Reason, p.Summary)), Since: p.At, Attempt: p.Attempt,
			Changed: p.Changed}
		if t := r.Task(p.TaskID); t != nil {
			d.Title = t.Title
			if d.Attempt == 0 {
				d.Attempt = t.Attempts
			}
		}
		switch p.Reason {
		case runner.ReasonGateBefore:
			d.Gate = "before"
		case runner.ReasonGateAfter:
			d.Gate = "after"
		case runner.ReasonBudget:
			d.Budget = true
		}
		if d.Attempt > 0 && d.Gate != "before" {
			d.LogURL = "/ui/runs/" + r.ID + "/tasks/" + p.TaskID + "/attempts/" + strconv.Itoa(d.Attempt) + "/log"
			if text, err := s.d.Store.Log(ctx, r.ID, p.TaskID, d.Attempt); err == nil {
				d.Failed = failedCommands(text)
				if len(d.Failed) == 0 {
					d.Output = lastLines(text, outputLines)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// reasonWords says why a task needs a decision, in words: the engine's codes (repeated_failure) are
// for the API.
func reasonWords(reason, summary string) string {
	var why string
	switch reason {
	case "repeated_failure":
		why = "the same failure happened twice in a row"
	case "max_attempts":
		why = "every attempt failed"
	case runner.ReasonGateBefore:
		why = "the plan puts a gate before this task: a person approves it before the agent starts"
	case runner.ReasonGateAfter:
		why = "the plan puts a gate after this task: its work passed verification and waits for a person's approval"
	case runner.ReasonBudget:
		why = "the run's budget is spent"
	case lifecycle.ReasonCIFailed:
		why = "the pull request's CI stays red"
	case lifecycle.ReasonCITimeout:
		why = "the pull request's CI did not finish"
	case "awaiting_decision", "":
	default:
		why = strings.ReplaceAll(reason, "_", " ")
	}
	summary = strings.TrimPrefix(summary, "the run's budget is reached: ")
	switch {
	case why == "":
		return summary
	case summary == "":
		return why
	}
	return why + ": " + summary
}

var codeSpan = regexp.MustCompile("`+([^`]+)`+")

// plainWords is text for a page: escaped, its `code spans` shown as code rather than backticks.
func plainWords(s string) template.HTML {
	esc := template.HTMLEscapeString(s)
	return template.HTML(codeSpan.ReplaceAllString(esc, "<code>$1</code>"))
}

// failedCommands reads the failing commands of an attempt's log (its last "==> Verification"
// section, as the reporter writes it: "$ cmd", "(exit 1, 2.1s)", the output).
func failedCommands(log string) []failedCommand {
	const head = "\n==> Verification\n"
	i := strings.LastIndex(log, head)
	if i < 0 {
		return nil
	}
	sec := log[i+len(head):]
	if j := strings.Index(sec, "\n==> "); j >= 0 {
		sec = sec[:j]
	}
	var out []failedCommand
	for _, part := range strings.Split("\n"+strings.TrimLeft(sec, "\n"), "\n$ ")[1:] {
		lines := strings.SplitN(part, "\n", 3)
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "(") {
			continue
		}
		result, _, _ := strings.Cut(strings.Trim(lines[1], "()"), ", ")
		if result == "exit 0" {
			continue
		}
		c := failedCommand{Command: lines[0], Result: strings.Replace(result, "exit ", "exited with code ", 1)}
		if len(lines) == 3 {
			c.Output = lastLines(lines[2], outputLines)
		}
		out = append(out, c)
	}
	return out
}

// lastLines is the last n lines of s, found from its end: a log can be megabytes, and only its end
// is shown.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	i := len(s)
	for ; n > 0; n-- {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return s
		}
		i = j
	}
	return s[i+1:]
}
