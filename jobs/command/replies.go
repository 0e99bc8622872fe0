package command

import (
	"strings"

	"github.com/akira-bot/akira/templates"
)

// The replies the parser gives at once (help, a typo, a command's usage): every one is a template.

// render renders a template whose data the tests of this package cover; the fallback only matters if a
// template and its data type drift apart, and then a plain answer beats none.
func render(name string, data any, fallback string) string {
	out, err := templates.Render(name, data)
	if err != nil {
		return fallback
	}
	return out
}

// clip keeps what a person typed short enough to quote in a reply.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// HelpFallback is the help in one line, for a template that cannot render.
const HelpFallback = "Say `/akira run`, `/akira approve`, `/akira retry <guidance>`, `/akira skip`, `/akira abort` or `/akira status`."

func helpText() string { return render("help", templates.Help{}, HelpFallback) }

// didYouMeanText answers an unknown command; suggestion is empty when nothing known is close.
func didYouMeanText(typed string, suggestion CommandName) string {
	return render("didyoumean", templates.DidYouMean{Input: clip(typed), Suggestion: string(suggestion)}, HelpFallback)
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
	return render("usage", templates.CommandUsage{Command: string(c), Usage: usageOf(c)}, HelpFallback)
}

func badPathText(p string) string {
	return render("bad_path", templates.BadPath{Path: clip(p), Usage: usageOf(CmdRun)}, HelpFallback)
}
