package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/judge"
)

// TestJudgeThroughGitHub: the operator configures a judge; a task with acceptance criteria whose
// first attempt the judge turns down is tried again with the judge's reasons, then accepted; the
// task's check run shows both verdicts and the summary has the Judge column. A task without
// criteria is not sent to the judge.
func TestJudgeThroughGitHub(t *testing.T) {
	verdict := func(pass bool, conf float64, reason string) llmtest.Turn {
		return llmtest.Turn{Calls: []llmtest.Call{{Name: judge.ToolName, Args: map[string]any{
			"criteria": []any{map[string]any{"criterion": "no password is logged", "pass": pass, "reason": reason}}, "confidence": conf}}},
			InputTokens: 1000, OutputTokens: 100}
	}
	model := llmtest.NewOpenAI(t, "judge-mini", "sk-judge",
		verdict(false, 0.9, "the handler logs the request body"), verdict(true, 0.95, "nothing logs the body any more"))
	t.Setenv("E2E_JUDGE_KEY", "sk-judge")
	e := newEnvWith(t, false, redisAddr(t), "judge:\n  kind: openai\n  model: judge-mini\n  base_url: "+model.BaseURL()+
		"\n  api_key_env: E2E_JUDGE_KEY\n  prices: {judge-mini: {input_per_mtok: 1, output_per_mtok: 4}}\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Login", User: "alice",
		Body: "- [ ] Add the login form\n  - accept: no password is logged\n- [ ] Write the notes\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)

	if model.Remaining() != 0 || model.Requests() != 2 {
		t.Errorf("the judge was asked %d times with %d answers left; want 2 and 0", model.Requests(), model.Remaining())
	}
	if p := e.promptOf("1.1"); !strings.Contains(p, "the handler logs the request body") {
		t.Errorf("the second attempt's prompt lacks the judge's reason:\n%s", p)
	}
	cr := e.latestCheckRuns()["akira: 1.1 Add the login form"]
	for _, want := range []string{"**Acceptance judge** (`judge-mini`): ✅ accepted · confidence 0.95", "| no password is logged | ✅ met | nothing logs the body any more |"} {
		if !strings.Contains(cr.Summary, want) {
			t.Errorf("check run summary lacks %q:\n%s", want, cr.Summary)
		}
	}
	if !strings.Contains(cr.Text, "| no password is logged | ❌ not met | the handler logs the request body |") {
		t.Errorf("check run text lacks attempt 1's verdict:\n%s", cr.Text)
	}
	if cr2 := e.latestCheckRuns()["akira: 1.2 Write the notes"]; strings.Contains(cr2.Summary, "Acceptance") {
		t.Errorf("the task without criteria mentions a judge:\n%s", cr2.Summary)
	}
	pr := e.onlyPR(run.Branch)
	sums := e.commentsWith(pr.Number, "<!-- akira:summary")
	if len(sums) != 1 || !strings.Contains(sums[0].Body, "| Judge |") || !strings.Contains(sums[0].Body, "| ✅ 0.95 |") {
		t.Errorf("the summary has no Judge column with the verdict:\n%v", sums)
	}
	// The judge's calls are part of the task's cost: 2 × (1000 in + 100 out) at $1/$4 per million.
	if got := run.Task("1.1").CostUSD; got < 0.0027 || got > 0.0029 {
		t.Errorf("task 1.1 cost $%g; want the judge's $0.0028", got)
	}
}
