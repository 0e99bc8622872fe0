package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/akira-bot/akira/internal/browsertest"
	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/templates"
)

// tab is a headless Chromium tab on the dashboard, with screenshots kept under AKIRA_TEST_ARTIFACTS
// (else the test's temporary directory).
type tab struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
}

func newTab(t *testing.T) *tab {
	t.Helper()
	browser := browsertest.New(t)
	artifacts := os.Getenv("AKIRA_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	must(t, os.MkdirAll(artifacts, 0o755))
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	t.Cleanup(cancel)
	return &tab{t: t, ctx: ctx, artifacts: artifacts}
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// text is what a person reads of the element: its rendered text.
func (b *tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: text of %s: %v", sel, err)
	}
	return s
}

func (b *tab) eval(js string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", js, err)
	}
	return s
}

func (b *tab) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	must(b.t, os.WriteFile(filepath.Join(b.artifacts, "dashboard-"+name+".png"), png, 0o644))
}

// wantText fails the test for each phrase the page's text lacks, and for each it holds of avoid.
func wantText(t *testing.T, what, got string, want []string, avoid ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
	for _, a := range avoid {
		if strings.Contains(got, a) {
			t.Errorf("%s shows %q:\n%s", what, a, got)
		}
	}
}

// TestDecisionScreenInBrowser: a task changes two files and fails verification twice; in a real
// browser the runs list names the run by its issue and who started it, with its state in words and
// in colour; the parked run's page is the decision screen (the task's title, the reason in words,
// the failing output, the files changed, what each choice does, Abort apart); the task page says the
// same. The pull request's body says the run needs a decision, then, after Retry with guidance from
// the page, that it is finished. A running task's duration moves on its page, and a run stopped from
// the dashboard says who stopped it and how to continue. Screenshots of each page are kept.
func TestDecisionScreenInBrowser(t *testing.T) {
	b := newTab(t)
	e := newEnv(t, false)
	ui := e.adminServer()
	ops, err := e.store.CreateToken(context.Background(), "ops", store.ScopeControl)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n",
		"check.sh": "grep -q fixed out-1.2.txt || { echo '--- FAIL: TestDivide (0.00s)'; echo \"    want fixed, got $(cat out-1.2.txt)\"; exit 1; }\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Grow the calculator", User: "alice",
		Body: "- [ ] Add a stable thing\n- [ ] Add a breaking thing\n  - verify: `sh check.sh`\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	parked := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(parked.Branch)

	// On GitHub: the escalation lists the files; the pull request's body says what waits.
	esc := e.commentsWith(pr.Number, templates.EscalationMarker(parked.ID, "1.2"))
	if len(esc) != 1 {
		t.Fatalf("%d escalation comments", len(esc))
	}
	wantText(t, "the escalation comment", esc[0].Body, []string{"### Files the agent changed", "- `notes-1.2.txt`", "- `out-1.2.txt`",
		"**End of the output of `sh check.sh`**", "--- FAIL: TestDivide"}, "Attempt 2 failed:")
	e.eventually("the pull request's body to say a task needs a decision", func() bool {
		body := e.onlyPR(parked.Branch).Body
		return strings.Contains(body, "**✋ Needs a decision** on task `1.2` Add a breaking thing.") && strings.Contains(body, "- [x] `1.1` Add a stable thing") &&
			strings.Contains(body, "- [ ] `1.2` Add a breaking thing — **needs a decision**")
	})
	cr := e.latestCheckRuns()["akira: 1.2 Add a breaking thing"]
	wantText(t, "the escalated check run's text", cr.Text, []string{"End of the output of `sh check.sh`", "--- FAIL: TestDivide"},
		"Attempt 1 failed:", "Attempt 2 failed:", "exit code 1\n", "\n```\n````")

	b.do("log in", chromedp.Navigate(ui.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), ops), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#runs")))
	runs := b.text("#runs")
	b.shot("decide-runs")
	wantText(t, "the runs list", runs, []string{"Grow the calculator #1", "@alice", "needs a decision", "1.2 Add a breaking thing", "run " + parked.ID})
	if bg := b.eval(`getComputedStyle(document.querySelector("#runs .state-parked")).backgroundColor`); bg != "rgb(255, 248, 197)" {
		t.Errorf("the state of a run that needs a decision is not yellow: background %s", bg)
	}

	b.do("the parked run's page", chromedp.Click(chromedp.CSS(`#runs a[href="/ui/runs/`+parked.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS("#decision-1\\.2")))
	page := b.text("main")
	b.shot("decide-run-parked")
	wantText(t, "the decision screen", page, []string{
		"Task 1.2 “Add a breaking thing” needs a decision",
		"Why: the same failure happened twice in a row: verification failed: sh check.sh exited 1.",
		"What failed in attempt 2", "sh check.sh exited with code 1", "--- FAIL: TestDivide (0.00s)", "want fixed, got broken",
		"Files the agent changed", "notes-1.2.txt", "out-1.2.txt",
		"Retry: the agent tries the task again from the last checkpoint, with your guidance.",
		"Approve: accepts the agent's work as it is, although it failed verification",
		"Skip: leaves the task undone, its box unticked",
		"Abort the run", "Ends the run for good: no task starts again",
		"started by @alice", "Grow the calculator #1",
	}, "repeated_failure", "`", "parked")
	// Abort is apart from the three choices: outside the decision, after the tasks.
	if in := b.eval(`String(!!document.querySelector(".decision #abort"))`); in != "false" {
		t.Error("Abort is among the decision's choices")
	}

	b.do("the task page", chromedp.Navigate(ui.URL+"/ui/runs/"+parked.ID+"/tasks/1.2"), chromedp.WaitVisible(chromedp.CSS("#attempts")))
	task := b.text("main")
	b.shot("decide-task-parked")
	wantText(t, "the parked task's page", task, []string{"Task 1.2: Add a breaking thing", "needs a decision", "2 attempts",
		"--- FAIL: TestDivide", "out-1.2.txt", "Attempt 2: full log"}, "escalated", "`")

	// Retry from the page with guidance: the run finishes, and the pull request's body says so.
	b.do("retry with guidance", chromedp.Navigate(ui.URL+"/ui/runs/"+parked.ID), chromedp.WaitVisible(chromedp.CSS(".decision")),
		chromedp.SendKeys(chromedp.CSS(`.decision input[name="guidance"]`), "the check wants the MAGIC-WORD"),
		chromedp.Click(chromedp.CSS(".decision button.retry")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	done := e.waitStatus(1, lifecycle.StatusSucceeded)
	e.eventually("the pull request's body to say the run is finished", func() bool {
		body := e.onlyPR(done.Branch).Body
		return strings.Contains(body, "**✅ Finished: ready for review.**") && strings.Contains(body, "- [x] `1.2` Add a breaking thing") &&
			!strings.Contains(body, "stays a draft")
	})

	// A running task: its duration moves on its page; stopped from the dashboard, the run says who
	// stopped it and how to continue.
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 3, Title: "Take your time", User: "alice", Body: "- [ ] Add a slow thing\n"})
	e.comment(3, "alice", "/akira run", false, http.StatusAccepted)
	e.waitFile("started-1.1")
	working := e.runOf(3)
	b.do("the running task's page", chromedp.Navigate(ui.URL+"/ui/runs/"+working.ID+"/tasks/1.1"), chromedp.WaitVisible(chromedp.CSS("time.tick")))
	before := b.text("time.tick")
	b.do("a moment", chromedp.Sleep(2200*time.Millisecond))
	after := b.text("time.tick")
	b.shot("decide-task-running")
	if before == after {
		t.Errorf("the running task's duration stays %q", before)
	}
	b.do("stop", chromedp.Navigate(ui.URL+"/ui/runs/"+working.ID), chromedp.WaitVisible(chromedp.CSS("#stop")),
		chromedp.Click(chromedp.CSS("#stop")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	e.eventually("the agent to be ended", func() bool { return !e.agentAlive("1.1") })
	e.waitStatus(3, lifecycle.StatusStopped)
	b.do("the stopped run's page", chromedp.Navigate(ui.URL+"/ui/runs/"+working.ID), chromedp.WaitVisible(chromedp.CSS("#stopped")))
	stopped := b.text("#stopped")
	b.shot("decide-run-stopped")
	wantText(t, "the stopped run's page", stopped, []string{"Stopped by ops", "reply /akira run on the pull request; to end it, abort below"})
	t.Logf("dashboard screenshots in %s", b.artifacts)
}

// dashboardPage logs in to the dashboard with token and returns the page at path as HTML.
func dashboardPage(t *testing.T, base, token, path string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	must(t, err)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/ui/login", url.Values{"token": {token}, "next": {path}})
	must(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard %s: %d\n%s", path, resp.StatusCode, data)
	}
	return string(data)
}

// TestCostsAgree: one run, whose first task's judge calls a priced model ($0.0028, a fraction of a
// cent) and whose second task's agent reports $0.60, shows the same cost strings on the dashboard, in
// the summary comment, in the task's check run and in the command line's table: "$0.0028" for the
// task (not "$0.00" or "<$0.01") and "$0.6028" for the run, the sum of the tasks' costs as shown.
func TestCostsAgree(t *testing.T) {
	verdict := llmtest.Turn{Calls: []llmtest.Call{{Name: judge.ToolName, Args: map[string]any{
		"criteria": []any{map[string]any{"criterion": "no password is logged", "pass": true, "reason": "nothing is logged"}}, "confidence": 0.95}}},
		InputTokens: 2000, OutputTokens: 200}
	model := llmtest.NewOpenAI(t, "judge-mini", "sk-judge", verdict)
	t.Setenv("E2E_JUDGE_KEY", "sk-judge")
	e := newEnvWith(t, false, redisAddr(t), "judge:\n  kind: openai\n  model: judge-mini\n  base_url: "+model.BaseURL()+
		"\n  api_key_env: E2E_JUDGE_KEY\n  prices: {judge-mini: {input_per_mtok: 1, output_per_mtok: 4}}\n")
	ui := e.adminServer()
	reader, err := e.store.CreateToken(context.Background(), "viewer", store.ScopeRead)
	must(t, err)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Login", User: "alice",
		Body: "- [ ] Add the login form\n  - accept: no password is logged\n- [ ] Write the costly notes\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	const task, total = "$0.0028", "$0.6028" // 2000 in at $1 + 200 out at $4 per million; then $0.60 more

	if got := cost.Format(run.Task("1.1").CostUSD); got != task {
		t.Fatalf("task 1.1 cost %s; want the judge's %s (the test's premise)", got, task)
	}
	pr := e.onlyPR(run.Branch)
	var summary string
	e.eventually("the summary with both tasks' costs", func() bool {
		sums := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))
		if len(sums) == 1 {
			summary = sums[0].Body
		}
		return strings.Contains(summary, "$0.60 |")
	})
	check := e.latestCheckRuns()["akira: 1.1 Add the login form"].Summary
	page := dashboardPage(t, ui.URL, reader, "/ui/runs/"+run.ID)
	var cli strings.Builder
	out := runner.Outcome{RunID: run.ID, Status: runner.StatusSucceeded, Branch: run.Branch}
	for _, ts := range run.Tasks {
		out.Tasks = append(out.Tasks, runner.TaskResult{ID: ts.ID, Title: ts.Title, Status: runner.TaskDone, Attempts: ts.Attempts,
			Usage: agent.Usage{InputTokens: ts.InputTokens, OutputTokens: ts.OutputTokens, CostUSD: ts.CostUSD}})
	}
	must(t, runner.NewTerminal(&cli, false).Report(context.Background(), runner.Event{Type: runner.EventRunFinished, Outcome: &out}))

	for _, s := range []struct {
		surface, text string
		want          []string
	}{
		{"the dashboard", page, []string{`<td class="num">` + task + `</td>`, `<td class="num">$0.60</td>`, `id="total-cost">` + total + `<`, "cost " + total}},
		{"the summary comment", summary, []string{"| " + task + " |", "| $0.60 |", "· " + total}},
		{"the task's check run", check, []string{"· " + task + " ·"}},
		{"the command line", cli.String(), []string{" " + task + " ", " $0.60 ", "cost of the run: " + total}},
	} {
		wantText(t, s.surface, s.text, s.want, "<$0.01")
		if m := zeroCost.FindString(s.text); m != "" {
			t.Errorf("%s shows %q for a run that called a model:\n%s", s.surface, m, s.text)
		}
	}
}

// zeroCost is "$0.00" as a whole amount (not the start of "$0.0028").
var zeroCost = regexp.MustCompile(`\$0\.00([^0-9]|$)`)
