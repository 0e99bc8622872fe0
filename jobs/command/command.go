package command

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/akira-bot/akira/runner"
)

// CommandName is a slash-command subcommand: /akira <name>.
type CommandName string

// The commands Akira runs. Help is answered by the parser itself. The four decisions are spelled as
// the engine's decision kinds, so a command, a check-run button and a stored decision are one value.
const (
	CmdRun      CommandName = "run"
	CmdPlan     CommandName = "plan"
	CmdFix      CommandName = "fix"
	CmdStop     CommandName = "stop"
	CmdPause    CommandName = "pause"
	CmdResume   CommandName = "resume"
	CmdRollback CommandName = "rollback"
	CmdRemember CommandName = "remember"
	CmdForget   CommandName = "forget"
	CmdApprove              = CommandName(runner.DecisionApprove)
	CmdRetry                = CommandName(runner.DecisionRetry)
	CmdSkip                 = CommandName(runner.DecisionSkip)
	CmdAbort                = CommandName(runner.DecisionAbort)
	CmdStatus   CommandName = "status"
	CmdHelp     CommandName = "help"
)

// spec is one command: its name and its grammar, one anchored expression applied to the text after
// "/akira ". Only retry, plan, fix, remember and rollback --retry read past their own line, because
// their text may span lines.
type spec struct {
	Name    CommandName
	Pattern *regexp.Regexp
}

// commands are every command Akira knows, in the order help lists them and did-you-mean tries them.
// A new command is a constant, a line here and its handler in the intake's list (jobs/intake.go).
var commands = []spec{
	{CmdRun, regexp.MustCompile(`(?i)^run((?:[ \t]+\S+)*)$`)},
	{CmdPlan, regexp.MustCompile(`(?is)^plan(?:\s+(.*))?$`)},
	{CmdFix, regexp.MustCompile(`(?is)^fix(?:\s+(.*))?$`)},
	{CmdStop, regexp.MustCompile(`(?i)^stop$`)},
	{CmdPause, regexp.MustCompile(`(?i)^pause(?:[ \t]+(--now))?$`)},
	{CmdResume, regexp.MustCompile(`(?i)^resume$`)},
	// A task id is a word (1.2, T3, WP-01); --retry may carry guidance to the end of the comment.
	{CmdRollback, regexp.MustCompile(`(?is)^rollback[ \t]+([A-Za-z0-9][A-Za-z0-9._#-]{0,63})(?:[ \t]+(--retry)(?:\s+(.*))?)?\s*$`)},
	{CmdRemember, regexp.MustCompile(`(?is)^remember\s+(\S.*)$`)},
	{CmdForget, regexp.MustCompile(`(?i)^forget[ \t]+(L[0-9a-f]{8})$`)},
	{CmdApprove, regexp.MustCompile(`(?i)^approve$`)},
	{CmdRetry, regexp.MustCompile(`(?is)^retry(?:\s+(.*))?$`)},
	{CmdSkip, regexp.MustCompile(`(?i)^skip$`)},
	{CmdAbort, regexp.MustCompile(`(?i)^abort$`)},
	{CmdStatus, regexp.MustCompile(`(?i)^status$`)},
	{CmdHelp, regexp.MustCompile(`(?is)^help(?:\s.*)?$`)},
}

// commandNames and commandREs are the list read by name and by order.
var (
	commandNames = func() []CommandName {
		out := make([]CommandName, len(commands))
		for i, c := range commands {
			out[i] = c.Name
		}
		return out
	}()
	commandREs = func() map[CommandName]*regexp.Regexp {
		out := make(map[CommandName]*regexp.Regexp, len(commands))
		for _, c := range commands {
			out[c.Name] = c.Pattern
		}
		return out
	}()
)

// Names are every command, in the order help lists them.
func Names() []CommandName { return slices.Clone(commandNames) }

// ParseResult is what a comment asks of Akira: a Command, a Reply to post at once, or Ignore.
type ParseResult interface{ parseResult() }

// Command is a command to run once the author's permission is checked.
type Command struct {
	Name CommandName
	// Path is the roadmap to run instead of the repository's (run only, optional).
	Path string
	// TrustPlan is --trust-plan (run only): the commenter vouches for a plan written by someone
	// without write access.
	TrustPlan bool
	// BudgetUSD is --budget <usd> (run only): the run's cost limit.
	BudgetUSD float64
	// Confirm is --confirm (run only): run the plan Akira proposed from an issue checklist it could
	// not read with confidence.
	Confirm bool
	// AllowRedBase is --allow-red-base (run only): start although the base branch fails its
	// repository-wide verification (the plan's first task fixes the build).
	AllowRedBase bool
	// Guidance is the text after /akira retry or /akira plan, up to the end of the comment (optional),
	// cut at MaxUserText.
	Guidance string
	// TaskID is the task /akira rollback undoes; Retry is its --retry (with Guidance).
	TaskID string
	Retry  bool
	// Now is /akira pause --now: discard the current attempt instead of letting the task finish.
	Now bool
}

// Decision is the decision a command carries: approve, retry, skip or abort.
func (c Command) Decision() (runner.DecisionKind, bool) {
	switch c.Name {
	case CmdApprove, CmdRetry, CmdSkip, CmdAbort:
		return runner.DecisionKind(c.Name), true
	}
	return "", false
}

// Reply is an answer to post at once without running anything: help, usage, did-you-mean.
type Reply struct{ Text string }

// Ignore means the comment holds no command.
type Ignore struct{}

func (Command) parseResult() {}
func (Reply) parseResult()   {}
func (Ignore) parseResult()  {}

var (
	// A command starts a line, with at most three spaces of indentation as in Markdown (four make a code
	// block). "/akira" must be followed by whitespace or the end of the line so "/akiraX" is not ours.
	commandLineRE = regexp.MustCompile(`(?i)^ {0,3}/akira(?:[ \t]+(.*?))?[ \t]*$`)
	quoteRE       = regexp.MustCompile(`^ {0,3}>`)
	fenceOpenRE   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
)

// ParseComment finds the first /akira command in a comment body. Lines inside fenced code blocks and block quotes
// do not count, so quoting someone's command or showing an example never triggers anything.
func ParseComment(body string) ParseResult {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	lines := strings.Split(body, "\n")
	var fence string // the opening fence while inside a fenced block
	for i, line := range lines {
		if fence != "" {
			if closesFence(line, fence) {
				fence = ""
			}
			continue
		}
		if m := fenceOpenRE.FindStringSubmatch(line); m != nil {
			// A backtick fence's info string cannot contain backticks; such a line is inline code.
			if m[1][0] != '`' || !strings.Contains(m[2], "`") {
				fence = m[1]
				continue
			}
		}
		if quoteRE.MatchString(line) {
			continue
		}
		m := commandLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rest := m[1]
		if i+1 < len(lines) {
			rest += "\n" + strings.Join(lines[i+1:], "\n")
		}
		return parseCommand(m[1], rest)
	}
	return Ignore{}
}

func closesFence(line, open string) bool {
	t := strings.TrimRight(line, " \t")
	trimmed := strings.TrimLeft(t, " ")
	if len(t)-len(trimmed) > 3 {
		return false
	}
	return len(trimmed) >= len(open) && strings.Trim(trimmed, open[:1]) == ""
}

// parseCommand parses the text after "/akira" on the command line (line) and the same text followed by the
// rest of the comment (rest).
func parseCommand(line, rest string) ParseResult {
	word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	word, _, _ = strings.Cut(word, "\t")
	name := CommandName(strings.ToLower(word))
	if name == "" {
		return Reply{Text: helpText()}
	}
	re, known := commandREs[name]
	if !known {
		if s, ok := suggest(string(name)); ok {
			return Reply{Text: didYouMeanText(word, s)}
		}
		return Reply{Text: didYouMeanText(word, "")}
	}
	subject := strings.TrimSpace(line)
	if name == CmdRetry || name == CmdPlan || name == CmdFix || name == CmdHelp || name == CmdRollback || name == CmdRemember {
		subject = strings.TrimSpace(rest)
	}
	if name == CmdRollback && !strings.Contains(strings.ToLower(line), "--retry") {
		// Only --retry's guidance reads past the command's line.
		subject = strings.TrimSpace(line)
	}
	m := re.FindStringSubmatch(subject)
	if m == nil {
		return Reply{Text: usageText(name)}
	}
	switch name {
	case CmdHelp:
		return Reply{Text: helpText()}
	case CmdRun:
		return parseRun(strings.Fields(m[1]))
	case CmdRetry, CmdPlan, CmdFix:
		return Command{Name: name, Guidance: CapUserText(strings.TrimSpace(m[1]))}
	case CmdRollback:
		return Command{Name: name, TaskID: m[1], Retry: strings.EqualFold(m[2], "--retry"), Guidance: CapUserText(strings.TrimSpace(m[3]))}
	case CmdRemember:
		return Command{Name: name, Guidance: CapUserText(strings.TrimSpace(m[1]))}
	case CmdForget:
		return Command{Name: name, TaskID: m[1]}
	case CmdPause:
		return Command{Name: name, Now: m[1] != ""}
	}
	return Command{Name: name}
}

// parseRun reads `/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]`. Nothing a user writes is ever passed to git as
// an option: a word that starts with "-" and is not one of those flags is refused, never taken as a path.
func parseRun(args []string) ParseResult {
	cmd := Command{Name: CmdRun}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.EqualFold(a, "--trust-plan"):
			cmd.TrustPlan = true
		case strings.EqualFold(a, "--confirm"):
			cmd.Confirm = true
		case strings.EqualFold(a, "--allow-red-base"):
			cmd.AllowRedBase = true
		case strings.EqualFold(a, "--budget") || strings.HasPrefix(strings.ToLower(a), "--budget="):
			v, ok := strings.CutPrefix(strings.ToLower(a), "--budget=")
			if !ok {
				if i+1 == len(args) {
					return Reply{Text: usageText(CmdRun)}
				}
				i++
				v = args[i]
			}
			usd, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
			if err != nil || usd <= 0 || usd > 1e6 || usd != usd {
				return Reply{Text: usageText(CmdRun)}
			}
			cmd.BudgetUSD = usd
		case strings.HasPrefix(a, "-"):
			return Reply{Text: usageText(CmdRun)}
		case cmd.Path != "":
			return Reply{Text: usageText(CmdRun)}
		case !validRoadmapPath(a):
			return Reply{Text: badPathText(a)}
		default:
			cmd.Path = a
		}
	}
	return cmd
}

// MaxUserText caps what Akira stores of a comment's free text (retry guidance): the run state lives
// in Redis and is read on every job.
const MaxUserText = 64 << 10

// CapUserText cuts s at MaxUserText, on a character boundary, and says so.
func CapUserText(s string) string {
	if len(s) <= MaxUserText {
		return s
	}
	cut := MaxUserText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n\n[Akira: guidance cut at %d KB of %d KB]", MaxUserText>>10, len(s)>>10)
}

// validRoadmapPath accepts a relative path inside the repository; the job reads it from the default branch.
func validRoadmapPath(p string) bool {
	if path.IsAbs(p) || strings.HasPrefix(p, "-") || strings.Contains(p, `\`) || strings.ContainsAny(p, "\x00:") {
		return false
	}
	c := path.Clean(p)
	return c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// suggest returns the command closest to word when it is a plausible typo: at most two edits away, and fewer
// edits than the word has letters (so "x" does not suggest "run").
func suggest(word string) (CommandName, bool) {
	best, bestDist := CommandName(""), 3
	for _, c := range commandNames {
		if d := editDistance(word, string(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != "" && bestDist < len([]rune(word))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
