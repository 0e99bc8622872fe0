package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/gittest"
)

// The model route forwards only what Akira meters, and the pinned Claude Code and Codex need
// nothing else: each CLI does a whole task in the sandbox through the proxy, then the same agent
// asks the route for a paid endpoint whose answer states no tokens (a batch, images). Every call
// the CLI made reached the model server and none was refused; the probe was refused in the
// provider's error shape, never reached the server, and is in the attempt's report with its method
// and path. What each CLI asked for is logged: that is how the allowlist was drawn. Codex's
// WebSocket upgrade, refused apart (it falls back to HTTP), is listed in the report too; Codex runs
// with its web search off, as the shipped profile runs it, since the proxy refuses that
// provider-side tool.
func TestRealAgentsModelRoute(t *testing.T) {
	dir := agentsDir(t)
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	cases := []struct {
		name, keyVar, baseVar, command, probe string
		fake                                  func(testing.TB, string) *modeltest.Server
	}{
		{name: "claude", keyVar: "ANTHROPIC_API_KEY", baseVar: "ANTHROPIC_BASE_URL",
			command: "claude -p --permission-mode acceptEdits --output-format json --model claude-sonnet-4-5",
			probe: `curl -s -o probe.json -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' ` +
				`-d '{"requests":[{"custom_id":"1","params":{"model":"claude-sonnet-4-5","max_tokens":64000,"messages":[]}}]}' "$ANTHROPIC_BASE_URL/v1/messages/batches"`,
			fake: modeltest.NewAnthropic},
		{name: "codex", keyVar: "CODEX_API_KEY", baseVar: "OPENAI_BASE_URL",
			command: `codex exec -c openai_base_url="$OPENAI_BASE_URL" -c web_search=disabled -s workspace-write --skip-git-repo-check --json -m gpt-5 -`,
			probe: `curl -s -o probe.json -H "Authorization: Bearer $CODEX_API_KEY" -H 'content-type: application/json' ` +
				`-d '{"model":"gpt-image-1","prompt":"a cat","n":10}' "$OPENAI_BASE_URL/images/generations"`,
			fake: modeltest.NewOpenAI},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := c.fake(t, realKey)
			roadmap := "# R\n\n## P\n\n- [ ] 1.1 Write hello.txt\n  - verify: `grep -q 'hello from the model' hello.txt`\n"
			f := newRunFixture(t, roadmap)
			cmd := f.command("run", "--agent-cmd", c.command+"; "+c.probe, "--env", c.keyVar,
				"--sandbox", "bubblewrap", "--sandbox-ro", dir, "--work-dir", f.workDir, "--non-interactive", "--json", "-v",
				"--agent-timeout", "90s", "--stall-timeout", "60s")
			cmd.Env = append(cmd.Env, c.keyVar+"="+realKey, c.baseVar+"="+fake.BaseURL(),
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("akira run: %v\n%s\n%s\nrequests: %+v", err, out, stderr, fake.Requests())
			}
			asked := map[string]int{}
			for _, r := range fake.Requests() {
				asked[r.Method+" "+r.Path]++
			}
			var blocked []egress.Blocked
			calls := 0
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var ev runner.Event
				if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != runner.EventAgentFinished {
					continue
				}
				blocked = append(blocked, ev.Blocked...)
				if ev.Usage != nil && ev.Usage.InputTokens > 0 {
					calls++
				}
			}
			var refused, hosts, websockets []string
			for _, b := range blocked {
				switch {
				case b.Path == "":
					hosts = append(hosts, fmt.Sprintf("%s:%d", b.Host, b.Port)) // the CLI's own telemetry and update checks
				case b.Reason == egress.ReasonWebSocket:
					websockets = append(websockets, b.Method+" "+b.Path)
				default:
					refused = append(refused, b.Method+" "+b.Path)
				}
			}
			if c.name == "codex" && !slices.Equal(websockets, []string{"GET /responses"}) {
				t.Errorf("the report lists the WebSocket tries %q, want Codex's on GET /responses", websockets)
			}
			t.Logf("%s: the model server got %v; the model route refused %q and the WebSocket tries %q; the proxy refused the hosts %q", c.name, asked, refused, websockets, hosts)
			if got := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello from the model" {
				t.Errorf("hello.txt on the branch = %q", got)
			}
			if calls == 0 {
				t.Errorf("no metered usage on the attempt")
			}
			probe := gittest.Git(t, f.repo.Work, "show", "akira/roadmap:probe.json")
			if !strings.Contains(probe, "akira egress proxy") || !strings.Contains(probe, "refused") {
				t.Errorf("the probe's answer does not say the proxy refused it: %s", probe)
			}
			for path := range asked {
				if strings.HasSuffix(path, "/batches") || strings.HasSuffix(path, "/generations") {
					t.Errorf("%s reached the model server", path)
				}
			}
			want := []string{"POST /v1/messages/batches"}
			if c.name == "codex" {
				want = []string{"POST /images/generations"}
			}
			if !slices.Equal(refused, want) {
				t.Errorf("the model route refused %q, want exactly the probe %q: any other refusal is a call the CLI needs", refused, want)
			}
		})
	}
}
