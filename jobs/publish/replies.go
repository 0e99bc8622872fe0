package publish

import (
	"context"
	"errors"
	"strings"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/templates"
)

// The texts Akira posts outside the summary, check runs and escalations: every one is a template.

// Render renders a template whose data the tests of this package cover; the fallback only matters if a
// template and its data type drift apart, and then a plain answer beats none.
func Render(name string, data any, fallback string) string {
	out, err := templates.Render(name, data)
	if err != nil {
		return fallback
	}
	return out
}

// CommandElsewhereText answers a command given where it does not apply.
func CommandElsewhereText(c command.CommandName) string {
	return Render("command_elsewhere", templates.CommandElsewhere{Command: string(c)}, command.HelpFallback)
}

// RefusalText answers a command from someone who may not give it.
func RefusalText(login, command, permission string) string {
	return Render("refusal", templates.Refusal{User: login, Command: clip(command), Permission: permission},
		"Sorry @"+login+", Akira only takes commands from people with write access to this repository.")
}

// ForkRefusalText answers a command that would run a fork's work on its own.
func ForkRefusalText() string {
	return Render("fork_refusal", templates.ForkRefusal{}, "Akira never runs on pull requests from forks.")
}

// ConfigErrorText explains a configuration file that cannot be used, linking it when the repository's
// web page is known.
func ConfigErrorText(ce *config.RepoError, action, repoURL, ref string) string {
	var fileURL string
	if repoURL != "" && ref != "" {
		fileURL = repoURL + "/blob/" + ref + "/" + ce.Path
	}
	return Render("config_error", templates.ConfigError{
		Path: ce.Path, Ref: ref, FileURL: fileURL, Problems: ce.Problems, Keys: config.RepoKeys(), Action: action,
	}, "Akira cannot use "+ce.Path+": "+strings.Join(ce.Problems, "; "))
}

// CommandText is how a refusal names what was asked.
func CommandText(res command.ParseResult) string {
	if r, ok := res.(command.Command); ok {
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

// replyMarker is hidden in a reply so that a retried job finds it instead of posting it again.
func replyMarker(key string) string { return "<!-- akira:reply " + key + " -->" }

// ReplyOnce posts body on an issue or pull request once per key: a key Redis has seen answered is not
// answered again (the same delivery twice, a redelivery after asynq forgot the task). A try that died
// between posting and recording is covered by the search for the hidden marker, which only retries
// make: on a job's first try nothing can have been posted yet.
func ReplyOnce(ctx context.Context, st *store.Dedupe, c ports.Comments, owner, repo string, number int, key, body string, retried bool) error {
	if done, err := st.Replied(ctx, key); err != nil || done {
		return err
	}
	marker := replyMarker(key)
	if retried {
		_, _, err := c.FindComment(ctx, owner, repo, number, marker)
		if err == nil {
			return st.MarkReplied(ctx, key)
		}
		if !errors.Is(err, ports.ErrGitHubNotFound) {
			return err
		}
	}
	if _, _, err := c.CreateComment(ctx, owner, repo, number, strings.TrimRight(body, "\n")+"\n\n"+marker+"\n"); err != nil {
		return err
	}
	return st.MarkReplied(ctx, key)
}
