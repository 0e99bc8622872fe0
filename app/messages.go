package app

import (
	"fmt"
	"strings"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/templates"
)

// The texts the intake posts. Help, refusal, did-you-mean and configuration errors come from the templates
// package; the short usage answers that have no template are here.

// render renders a template whose data the tests of this package cover; the fallback only matters if a
// template and its data type drift apart, and then a plain answer beats none.
func render(name string, data any, fallback string) string {
	out, err := templates.Render(name, data)
	if err != nil {
		return fallback
	}
	return out
}

func helpText() string {
	return render("help", templates.Help{}, "Say `/akira run`, `/akira approve`, `/akira retry <guidance>`, `/akira skip`, `/akira abort` or `/akira status`.")
}

// didYouMeanText answers an unknown command; suggestion is empty when nothing known is close.
func didYouMeanText(typed string, suggestion CommandName) string {
	return render("didyoumean", templates.DidYouMean{Input: clip(typed), Suggestion: string(suggestion)},
		"Akira does not know that command. Reply `/akira help` to see every command.")
}

// usageOf is the usage line of a command as the help reply shows it.
func usageOf(c CommandName) string {
	for _, hc := range templates.Commands {
		if hc.Usage == "/akira "+string(c) || strings.HasPrefix(hc.Usage, "/akira "+string(c)+" ") {
			return hc.Usage
		}
	}
	return "/akira " + string(c)
}

func usageText(c CommandName) string {
	return fmt.Sprintf("That is not how `/akira %s` is used. Usage: `%s`. Reply `/akira help` to see every command.", c, usageOf(c))
}

func badPathText(p string) string {
	return fmt.Sprintf("`%s` is not a path inside this repository. Usage: `%s`.", strings.ReplaceAll(clip(p), "`", "'"), usageOf(CmdRun))
}

func refusalText(login, command, permission string) string {
	return render("refusal", templates.Refusal{User: login, Command: clip(command), Permission: permission},
		fmt.Sprintf("Sorry @%s, Akira only takes commands from people with write, maintain or admin access to this repository, and from its allowlist.", login))
}

const forkRefusalText = "Akira never runs on pull requests from forks: their code is not trusted with this repository's credentials. " +
	"Push the branch to this repository, or open an issue and say `/akira run` there.\n"

func configErrorText(ce *gh.ConfigError, action, fileURL string) string {
	return render("config_error", templates.ConfigError{
		Path: ce.Path, Ref: ce.Ref, FileURL: fileURL, Problems: ce.Problems, Keys: gh.RepoConfigKeys(), Action: action,
	}, "Akira cannot use "+ce.Path+": "+strings.Join(ce.Problems, "; "))
}

// commandText is how a refusal names what was asked.
func commandText(res ParseResult) string {
	switch r := res.(type) {
	case Command:
		if r.Path != "" {
			return string(r.Name) + " " + r.Path
		}
		return string(r.Name)
	}
	return ""
}

// clip keeps user text in an answer short.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
