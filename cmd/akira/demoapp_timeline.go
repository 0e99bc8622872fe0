//go:build demoapp

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/templates"
)

// timeline prints what a team sees on GitHub while Akira works: every change the App makes, in the
// order the fake GitHub receives it, and what the people of the demo write.
type timeline struct {
	out         io.Writer
	gh          *githubtest.Server
	owner, repo string

	mu sync.Mutex
	// heads are the branches' commits already shown, to tell a push's new commits.
	heads map[string]string
	// summary is the last state of the run's summary shown, so that an edit that changes nothing
	// the team reads at a glance is not shown again.
	summary string
}

var (
	reactionPath  = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/comments/(\d+)/reactions$`)
	newCommentAt  = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)/comments$`)
	editedComment = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/comments/(\d+)$`)
	newPull       = regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls$`)
	newCheckRun   = regexp.MustCompile(`^/repos/[^/]+/[^/]+/check-runs$`)
	editedCheck   = regexp.MustCompile(`^/repos/[^/]+/[^/]+/check-runs/(\d+)$`)
	gitPush       = regexp.MustCompile(`\.git/git-receive-pack$`)
	markerLine    = regexp.MustCompile(`(?m)^\s*<!--.*-->\s*\n?`)
)

// The hidden lines that tell a run's summary comment and its escalation comments, whatever the run
// and the task; summaryMarker's group is the run's id.
var (
	summaryMarker    = markerPattern(templates.SummaryMarker("RUN"))
	escalationMarker = markerPattern(templates.EscalationMarker("RUN", "TASK"))
)

func markerPattern(marker string) *regexp.Regexp {
	q := regexp.QuoteMeta(marker)
	q = strings.Replace(q, "RUN", `([0-9A-Za-z_-]+)`, 1)
	return regexp.MustCompile(strings.Replace(q, "TASK", `\S+`, 1))
}

// observe is the fake GitHub's request hook: it shows each change the App made, once GitHub answered it.
func (t *timeline) observe(r githubtest.Request) {
	if r.Status < 200 || r.Status > 299 || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var body struct {
		Body, Title, Head, Base, Name, Status, Conclusion, Content string
		Draft                                                      bool
		Output                                                     struct{ Title string }
		Actions                                                    []struct{ Label string }
		Query                                                      string
	}
	_ = json.Unmarshal(r.Body, &body)
	bot := t.gh.BotLogin()
	switch {
	case r.Method == http.MethodPost && reactionPath.MatchString(r.Path):
		id, _ := strconv.ParseInt(reactionPath.FindStringSubmatch(r.Path)[1], 10, 64)
		c, _ := t.gh.Comment(id)
		t.printf("#%d  %s reacted %s to %s's comment\n", c.IssueNumber, bot, emoji(body.Content), c.User)
	case r.Method == http.MethodPost && newCommentAt.MatchString(r.Path):
		n, _ := strconv.Atoi(newCommentAt.FindStringSubmatch(r.Path)[1])
		what := "commented"
		switch {
		case summaryMarker.MatchString(body.Body):
			what = "posted the run's summary (edited in place from now on)"
			t.summary = summaryState(body.Body)
		case escalationMarker.MatchString(body.Body):
			what = "asks for a decision"
		}
		t.printf("#%d  %s %s:\n%s", n, bot, what, quote(body.Body))
	case r.Method == http.MethodPatch && editedComment.MatchString(r.Path):
		id, _ := strconv.ParseInt(editedComment.FindStringSubmatch(r.Path)[1], 10, 64)
		c, _ := t.gh.Comment(id)
		if summaryMarker.MatchString(body.Body) {
			if state := summaryState(body.Body); state != t.summary {
				t.summary = state
				t.printf("#%d  %s updated the summary: %s\n", c.IssueNumber, bot, state)
			}
			return
		}
		t.printf("#%d  %s edited a comment:\n%s", c.IssueNumber, bot, quote(body.Body))
	case r.Method == http.MethodPost && newPull.MatchString(r.Path):
		kind := "a pull request"
		if body.Draft {
			kind = "a draft pull request"
		}
		number := 0
		for _, pr := range t.gh.PullRequests(t.owner, t.repo) {
			if pr.Head == body.Head {
				number = pr.Number
			}
		}
		t.printf("#%d  %s opened %s: %s (%s into %s)\n%s", number, bot, kind, body.Title, body.Head, body.Base, quote(body.Body))
	case r.Method == http.MethodPost && r.Path == "/graphql" && strings.Contains(body.Query, "markPullRequestReadyForReview"):
		for _, pr := range t.gh.PullRequests(t.owner, t.repo) {
			if bytes.Contains(r.Body, []byte(pr.NodeID)) {
				t.printf("#%d  %s marked the pull request ready for review\n", pr.Number, bot)
			}
		}
	case r.Method == http.MethodPost && newCheckRun.MatchString(r.Path):
		t.printf("      check run %q: %s\n", body.Name, checkState(body.Status, body.Conclusion, body.Output.Title, body.Actions))
	case r.Method == http.MethodPatch && editedCheck.MatchString(r.Path):
		id, _ := strconv.ParseInt(editedCheck.FindStringSubmatch(r.Path)[1], 10, 64)
		cr, _ := t.gh.CheckRun(id)
		t.printf("      check run %q: %s\n", cr.Name, checkState(body.Status, body.Conclusion, body.Output.Title, body.Actions))
	case r.Method == http.MethodPost && gitPush.MatchString(r.Path):
		t.pushed(bot)
	}
}

// pushed shows the commits a push added: those of each branch that moved and that no other branch
// already had (a new branch starts from the default branch, whose history the team has seen).
// Callers hold t.mu.
func (t *timeline) pushed(bot string) {
	seen := map[string]bool{}
	for _, head := range t.heads {
		for _, c := range t.gh.Log(t.owner, t.repo, head) {
			seen[c.SHA] = true
		}
	}
	for _, branch := range t.gh.Branches(t.owner, t.repo) {
		head := t.gh.Branch(t.owner, t.repo, branch)
		if head == "" || t.heads[branch] == head {
			continue
		}
		var fresh []githubtest.Commit
		for _, c := range t.gh.Log(t.owner, t.repo, branch) {
			if seen[c.SHA] {
				break
			}
			fresh = append(fresh, c)
		}
		t.heads[branch] = head
		for i := len(fresh) - 1; i >= 0; i-- {
			t.printf("      %s pushed %s to %s: %s\n", bot, fresh[i].SHA[:7], branch, fresh[i].Subject)
		}
	}
}

// play is the team's part: alice opens an issue with the demo's tasks and writes /akira run; once
// Akira escalates a task she answers /akira retry with guidance; the demo ends when the pull request
// is ready and its summary says the run is done. It returns the run's id.
func (t *timeline) play(ctx context.Context, served chan error, issueBody string) (string, error) {
	issue := t.gh.AddIssue(t.owner, t.repo, githubtest.Issue{Title: demoIssue, User: demoPerson, Body: issueBody})
	t.issueOpened(issue)
	if err := t.say(issue.Number, "/akira run"); err != nil {
		return "", err
	}
	var pr int
	if err := t.waitFor(ctx, served, "the escalation comment", func() (bool, error) {
		var ok bool
		pr, ok = t.escalated()
		return ok, t.failed()
	}); err != nil {
		return "", err
	}
	if err := t.say(pr, demoRetryCmd); err != nil {
		return "", err
	}
	if err := t.waitFor(ctx, served, "the pull request to be marked ready", func() (bool, error) {
		return t.ready(pr), t.failed()
	}); err != nil {
		return "", err
	}
	return t.final(pr), nil
}

// issueOpened shows the issue the demo starts from.
func (t *timeline) issueOpened(is githubtest.Issue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.gh.Branches(t.owner, t.repo) {
		t.heads[b] = t.gh.Branch(t.owner, t.repo, b)
	}
	t.printf("#%d  %s opened the issue %q:\n%s", is.Number, is.User, is.Title, quote(is.Body))
}

// say posts a comment as the demo's person and delivers its webhook, as GitHub would.
func (t *timeline) say(number int, body string) error {
	t.mu.Lock()
	t.printf("#%d  %s commented:\n%s", number, demoPerson, quote(body))
	t.mu.Unlock()
	_, status, answer, err := t.gh.PostComment(t.owner, t.repo, number, demoPerson, body)
	if err != nil {
		return fmt.Errorf("demo-app: deliver %s's comment: %w", demoPerson, err)
	}
	if status != http.StatusAccepted {
		return fmt.Errorf("demo-app: the webhook answered %s's comment with %d: %s", demoPerson, status, answer)
	}
	return nil
}

// escalated returns the pull request that holds an escalation comment of the App.
func (t *timeline) escalated() (int, bool) {
	for _, pr := range t.gh.PullRequests(t.owner, t.repo) {
		for _, c := range t.gh.Comments(t.owner, t.repo, pr.Number) {
			if c.User == t.gh.BotLogin() && escalationMarker.MatchString(c.Body) {
				return pr.Number, true
			}
		}
	}
	return 0, false
}

// ready reports whether the pull request is out of draft and its summary says the run is done.
func (t *timeline) ready(number int) bool {
	pr, ok := t.gh.PullRequest(t.owner, t.repo, number)
	if !ok || pr.Draft {
		return false
	}
	summary, _ := t.summaryOf(number)
	return summaryState(summary.Body) == "done" || strings.HasPrefix(summaryState(summary.Body), "done ")
}

// failed returns an error when a summary says the run ended without finishing its tasks.
func (t *timeline) failed() error {
	for _, pr := range t.gh.PullRequests(t.owner, t.repo) {
		c, ok := t.summaryOf(pr.Number)
		if !ok {
			continue
		}
		state, _, _ := strings.Cut(summaryState(c.Body), " ")
		switch state {
		case "failed", "aborted", "stopped":
			return fmt.Errorf("demo-app: the run ended %s:\n%s", state, quote(c.Body))
		}
	}
	return nil
}

// summaryOf returns the App's summary comment on a pull request.
func (t *timeline) summaryOf(number int) (githubtest.Comment, bool) {
	for _, c := range t.gh.Comments(t.owner, t.repo, number) {
		if c.User == t.gh.BotLogin() && summaryMarker.MatchString(c.Body) {
			return c, true
		}
	}
	return githubtest.Comment{}, false
}

// final shows the pull request as the team finds it at the end, its summary and its check runs, and
// returns the run's id.
func (t *timeline) final(number int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	summary, _ := t.summaryOf(number)
	t.printf("\nThe pull request #%d at the end. Its summary comment:\n%s", number, quote(summary.Body))
	t.printf("\nIts check runs:\n")
	latest := map[string]githubtest.CheckRun{}
	var names []string
	for _, cr := range t.gh.CheckRuns(t.owner, t.repo) {
		if _, ok := latest[cr.Name]; !ok {
			names = append(names, cr.Name)
		}
		latest[cr.Name] = cr
	}
	for _, name := range names {
		cr := latest[name]
		t.printf("  %s %s  %s\n", conclusionMark(cr.Conclusion), name, cr.DetailsURL)
	}
	if m := summaryMarker.FindStringSubmatch(summary.Body); m != nil {
		return m[1]
	}
	return ""
}

// waitFor polls cond until it holds or fails, the server stops, or demoWait passes.
func (t *timeline) waitFor(ctx context.Context, served chan error, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(demoWait)
	for {
		done, err := cond()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case err := <-served:
			served <- err
			return fmt.Errorf("demo-app: the server stopped while waiting for %s: %v", what, err)
		case <-ctx.Done():
			return withExit(130, nil)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo-app: gave up waiting for %s after %s", what, demoWait)
		}
	}
}

// printf writes to the output; callers hold t.mu.
func (t *timeline) printf(format string, args ...any) { fmt.Fprintf(t.out, format, args...) }

// quote is a comment's text as GitHub shows it (hidden lines left out), indented under its header.
func quote(body string) string {
	body = strings.TrimSpace(markerLine.ReplaceAllString(body, ""))
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		b.WriteString("    │ " + line)
		b.WriteString("\n")
	}
	return strings.ReplaceAll(b.String(), "│ \n", "│\n")
}

// summaryState is the State line of a summary comment, without its markdown.
func summaryState(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "**State:**") {
			state, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "**State:**")), " · ")
			return state + tally(body)
		}
	}
	return "edited"
}

// tally is the summary's Totals line, when it has one.
func tally(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "**Totals:** "); ok {
			return " · " + rest
		}
	}
	return ""
}

func checkState(status, conclusion, title string, actions []struct{ Label string }) string {
	s := strings.ReplaceAll(status, "_", " ")
	if conclusion != "" {
		s = conclusionMark(conclusion) + " " + strings.ReplaceAll(conclusion, "_", " ")
	}
	if title != "" {
		s += ": " + title
	}
	if len(actions) > 0 {
		var labels []string
		for _, a := range actions {
			labels = append(labels, "["+a.Label+"]")
		}
		s += " " + strings.Join(labels, " ")
	}
	return s
}

func conclusionMark(conclusion string) string {
	switch conclusion {
	case "success":
		return "✓"
	case "neutral", "skipped":
		return "○"
	case "action_required":
		return "!"
	case "":
		return "…"
	}
	return "✗"
}

func emoji(content string) string {
	if content == "eyes" {
		return "👀"
	}
	return ":" + content + ":"
}
