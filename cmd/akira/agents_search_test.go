package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/gittest"
)

// Claude Code's WebSearch tool does not search from the agent's machine: it asks the model API
// for Anthropic's provider-side web search (a request whose tools hold web_search_20250305), which
// would reach the web from outside the sandbox and bill per search. The scripted model asks the
// real, pinned Claude Code for a web search (the tool allowed, so that Claude Code does make that
// request): the proxy refuses it, the model server never gets it, the attempt's report lists it
// with the setting that would allow it, and Claude Code hands the model the failed search as the
// tool's result and goes on: the task is done and verified.
func TestRealAgentsWebSearchRefused(t *testing.T) {
	dir := agentsDir(t)
	sandboxtest.Require(t)
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	fake := modeltest.NewAnthropic(t, realKey)
	fake.WebSearch = "latest left-pad release"
	roadmap := "# R\n\n## P\n\n- [ ] 1.1 Write hello.txt\n  - verify: `grep -q 'hello from the model' hello.txt`\n"
	f := newRunFixture(t, roadmap)
	command := "claude -p --permission-mode acceptEdits --allowedTools WebSearch --output-format json --model claude-sonnet-4-5"
	cmd := f.command("run", "--agent-cmd", command, "--env", "ANTHROPIC_API_KEY", "--sandbox", "bubblewrap", "--sandbox-ro", dir,
		"--work-dir", f.workDir, "--non-interactive", "--json", "-v", "--agent-timeout", "90s", "--stall-timeout", "60s")
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY="+realKey, "ANTHROPIC_BASE_URL="+fake.BaseURL(),
		"PATH="+filepath.Join(dir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("akira run: %v\n%s\n%s", err, out, stderr)
	}
	var blocked []egress.Blocked
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev runner.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == runner.EventAgentFinished {
			blocked = append(blocked, ev.Blocked...)
		}
	}
	refused := 0
	for _, b := range blocked {
		if b.Method == "POST" && b.Path == "/v1/messages" && strings.Contains(b.Reason, "provider-side tool web_search (web_search_") &&
			strings.Contains(b.Fix, `server_tools: ["web_search"]`) {
			refused += b.Count
		}
	}
	if refused == 0 {
		t.Errorf("the report does not list the refused web search: %+v", blocked)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(string(r.Body), `"web_search_2`) && strings.Contains(string(r.Body), `"type":"web_search_`) {
			t.Errorf("the model server got a request with a provider-side web search: %.300s", r.Body)
		}
	}
	t.Logf("Claude Code told the model its search gave: %s", fake.SearchResult())
	if !strings.Contains(fake.SearchResult(), "akira egress proxy") {
		t.Errorf("the model never got the proxy's refusal as its search's result: %q", fake.SearchResult())
	}
	if got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello from the model" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
}
