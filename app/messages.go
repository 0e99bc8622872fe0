package app

import (
	"fmt"
	"strings"
)

// The texts Akira posts from the webhook intake live here, in one place, so they can move to the templates
// package without touching the handlers.

// commandHelp is one line of the help text per command, in the order of commandNames.
var commandHelp = map[CommandName]string{
	CmdRun:     "`/akira run [path]`: run the tasks of this issue's checkboxes, or of the repository's roadmap (or `path`)",
	CmdApprove: "`/akira approve`: accept the parked task as it is and continue",
	CmdRetry:   "`/akira retry [guidance…]`: try the parked task again; the rest of the comment is passed to the agent",
	CmdSkip:    "`/akira skip`: leave the parked task undone and continue with the next",
	CmdAbort:   "`/akira abort`: stop the run; pushed checkpoints stay on the branch",
	CmdStatus:  "`/akira status`: show where the run is",
	CmdHelp:    "`/akira help`: show this message",
}

func helpText() string {
	var b strings.Builder
	b.WriteString("**Akira commands**\n\n")
	for _, c := range commandNames {
		b.WriteString("- ")
		b.WriteString(commandHelp[c])
		b.WriteString("\n")
	}
	b.WriteString("\nA command must start a line of a comment (not inside a code block or a quote). ")
	b.WriteString(whoMayText)
	return b.String()
}

const whoMayText = "Commands are accepted from people with write, maintain or admin permission on this repository, " +
	"and from the logins in the `allowlist` of `.github/akira.yml`."

func didYouMeanText(typed string, s CommandName) string {
	return fmt.Sprintf("Akira does not know `/akira %s`. Did you mean `/akira %s`?\n\nSay `/akira help` for the list of commands.",
		inlineSafe(typed), s)
}

func unknownCommandText(typed string) string {
	return fmt.Sprintf("Akira does not know `/akira %s`.\n\n%s", inlineSafe(typed), helpText())
}

func usageText(c CommandName) string {
	return fmt.Sprintf("That is not how `/akira %s` is used. Usage: %s", c, commandHelp[c])
}

func badPathText(p string) string {
	return fmt.Sprintf("`%s` is not a path inside this repository. Usage: %s", inlineSafe(p), commandHelp[CmdRun])
}

func refusalText(login string) string {
	return fmt.Sprintf("Sorry @%s, Akira only takes commands from people who may change this repository. %s",
		login, whoMayText)
}

const forkRefusalText = "Akira never runs on pull requests from forks: their code is not trusted with this repository's credentials. " +
	"Push the branch to this repository, or open an issue and say `/akira run` there."

func configErrorText(err error) string {
	return fmt.Sprintf("Akira could not read `%s` from the default branch, so nothing was started:\n\n```\n%s\n```\n",
		repoConfigPath, strings.ReplaceAll(err.Error(), "```", "'''"))
}

// inlineSafe keeps user text from breaking out of an inline code span.
func inlineSafe(s string) string {
	s = strings.ReplaceAll(s, "`", "'")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
