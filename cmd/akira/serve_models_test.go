package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/runner/config"
)

// metricValue reads one unlabelled sample of a Prometheus text exposition; ok is false when the
// metric is not there.
func metricValue(exposition, name string) (float64, bool) {
	for _, line := range strings.Split(exposition, "\n") {
		if v, found := strings.CutPrefix(line, name+" "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// waitForMetrics waits until the exposition at url holds every line of wants. A job's metrics are
// counted as its handler returns, which may be a moment after the effect a test waited for (the
// pull request turned ready).
func waitForMetrics(t *testing.T, url string, wants ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		_, metrics := httpGet(t, url)
		var missing []string
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s after %s", strings.Join(missing, ", "), waitLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServePricesWithTheOperatorsTable: under `akira serve`, an exec profile's model calls, metered
// by the egress proxy, are priced by the operator's top-level prices: (the one table), not only by
// prices repeated inside the profile. The agent calls its model once through the proxy; the
// worker records the call's tokens at the top-level price.
func TestServePricesWithTheOperatorsTable(t *testing.T) {
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	model := modeltest.NewAnthropic(t, realKey)
	fake := githubtest.New(t)
	fake.CreateRepo("octo", "svc", map[string]string{"README.md": "svc\n"})
	fake.SetPermission("octo", "svc", "alice", "write")
	issue := fake.AddIssue("octo", "svc", githubtest.Issue{Title: "Add a file", User: "alice", Body: "Please:\n\n- [ ] Write the file\n"})
	agent := filepath.Join(t.TempDir(), "agent.sh")
	// The model is named in the call itself, so that only the price table decides the cost.
	mustWrite(t, agent, "#!/bin/sh\nset -e\n"+
		`curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' `+
		`-d '{"model":"house-model","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}' "$ANTHROPIC_BASE_URL/v1/messages" > /dev/null`+"\n"+
		"echo \"$AKIRA_TASK_TITLE\" > \"task-$AKIRA_TASK_ID.txt\"\n")
	operator := fmt.Sprintf("default_agent: script\nagents:\n  script:\n    kind: exec\n    command: sh %s\n    api: anthropic\n"+
		"    base_url: %s\n    model: house-model\n    network: allow\n"+
		"prices:\n  house-model: {input_per_mtok: 2.5, output_per_mtok: 10}\nsandbox:\n  mode: none\nci:\n  watch: off\n", agent, model.BaseURL())
	env := serveEnvOf(t, fake, operator)
	env["AKIRA_CONCURRENCY"] = "1"
	env["AKIRA_METRICS"] = "open" // as for a scraper without a token
	setServeEnv(t, env)
	t.Setenv("ANTHROPIC_API_KEY", realKey)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := serveInProcess(ctx)
	base, admin := "http://"+env["AKIRA_ADDR"], "http://"+env["AKIRA_ADMIN_ADDR"]
	waitFor(t, "akira serve to be ready", func() bool {
		select {
		case res := <-done:
			t.Fatalf("serve ended early: exit %d: %v", res.code, res.err)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	deliver(t, fake, base, "issue_comment", "prices-1", commentPayload(fake, issue, "alice", "/akira run"))
	branch := fmt.Sprintf("akira/issue-%d", issue.Number)
	waitFor(t, "the pull request to be marked ready", func() bool {
		return slices.ContainsFunc(fake.PullRequests("octo", "svc"), func(pr githubtest.PullRequest) bool { return pr.Head == branch && !pr.Draft })
	})
	calls := 0
	for _, r := range model.Requests() {
		if r.Method == http.MethodPost && r.Model == "house-model" {
			calls++
		}
	}
	if calls != 1 {
		t.Fatalf("the model server got %d calls for house-model, want 1: %+v", calls, model.Requests())
	}
	// The job's metrics are counted as the job returns, which may be a moment after the pull request
	// turned ready: wait for them, then hold them to the price.
	var in, usd float64
	waitFor(t, "the run job's usage in /metrics", func() bool {
		code, metrics := httpGet(t, admin+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("admin /metrics = %d", code)
		}
		var ok bool
		in, ok = metricValue(metrics, `akira_agent_tokens_total{direction="input"}`)
		usd, _ = metricValue(metrics, "akira_agent_cost_usd_total")
		return ok && in > 0
	})
	want := float64(model.Usage.Input)*2.5/1e6 + float64(model.Usage.Output)*10/1e6
	if in != float64(model.Usage.Input) || math.Abs(usd-want) > 1e-12 {
		t.Errorf("recorded %v input tokens at $%v; want %d at $%v, the operator's prices: for house-model", in, usd, model.Usage.Input, want)
	}
	cancel()
	if res := <-done; res.code != 0 {
		t.Fatalf("serve after its context ended: exit %d: %v", res.code, res.err)
	}
}

// TestServeUnpricedModelAtStart: a worker whose profile runs a model without a price (or names
// none, so that its CLI runs one of its own) stops at start when the operator's budget has a cost
// limit, naming the profile, the model and the fix; without a cost budget it only warns.
func TestServeUnpricedModelAtStart(t *testing.T) {
	fake := githubtest.New(t)
	operator := "default_agent: claude\nagents:\n" +
		"  claude:\n    kind: exec\n    command: sh agent.sh\n    api: anthropic\n    model: claude-opus-5-5\n" +
		"  codex:\n    kind: exec\n    command: sh agent.sh\n    api: openai\n" +
		"  priced:\n    kind: exec\n    command: sh agent.sh\n    api: openai\n    model: gpt-5\n" +
		"sandbox:\n  mode: none\nci:\n  watch: off\n"
	env := serveEnvOf(t, fake, operator+"budget: {cost_usd: 20}\n")
	env["AKIRA_BOT_LOGIN"] = "akira[bot]"
	setServeEnv(t, env)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant")
	t.Setenv("OPENAI_API_KEY", "sk-oai")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := <-serveInProcess(ctx, "--worker-only")
	if res.code != 2 {
		t.Fatalf("exit %d (%v), want 2", res.code, res.err)
	}
	for _, want := range []string{`agent claude: model "claude-opus-5-5" has no price: add it to prices:`, "agent codex: no model", "budget.cost_usd ($20.00)"} {
		if !strings.Contains(res.message(), want) {
			t.Errorf("the error does not say %q:\n%s", want, res.message())
		}
	}
	if strings.Contains(res.message(), "agent priced") {
		t.Errorf("the error names a profile whose model has a price:\n%s", res.message())
	}

	op, err := config.ParseOperator([]byte(operator))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := serveModelCheck(op)
	if err != nil || len(warnings) != 2 || !strings.Contains(warnings[0], `agent claude: model "claude-opus-5-5" has no price`) ||
		!strings.Contains(warnings[1], "agent codex: no model") {
		t.Errorf("without a cost budget: warnings %q, error %v; want a warning for claude and one for codex", warnings, err)
	}
}
