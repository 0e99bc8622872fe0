package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/gittest"
	attempt "github.com/akira-bot/akira/runner/timeline"
)

// EnvAgentsDir names the directory where `make test-agents` installed the pinned coding-agent CLIs
// (node_modules/.bin/claude and codex). Without it the tests of the real CLIs are skipped, unless
// EnvAgentsRequired is set (CI), where that is a failure.
const (
	EnvAgentsDir      = "AKIRA_TEST_AGENTS_DIR"
	EnvAgentsRequired = "AKIRA_TEST_AGENTS_REQUIRED"
)

func agentsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvAgentsDir)
	if dir == "" {
		if os.Getenv(EnvAgentsRequired) != "" {
			t.Fatalf("%s is not set: run make test-agents", EnvAgentsDir)
		}
		t.Skipf("the real coding-agent CLIs are not installed: run make test-agents (sets %s)", EnvAgentsDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// shippedConfig is the operator's file of the deploy image, as it ships.
const shippedConfig = "../../deploy/akira.yaml"

// realAgent is one run of `akira run` with a profile of the shipped configuration, unchanged, and
// the real CLI it names, against a scripted model server.
type realAgent struct {
	profile  string // of deploy/akira.yaml
	keyEnv   string // where Akira's environment holds the real key (the profile's api_key_env)
	baseEnv  string // where it names the model endpoint, the scripted server
	sandbox  string
	fake     *modeltest.Server
	repo     map[string]string // files committed to the repository besides the roadmap
	realKey  string
	bin, dir string
}

// realAgentRun is what a run left: its JSON events, the branch's files and the directory of the
// attempts it kept.
type realAgentRun struct {
	f      *runFixture
	events []runner.Event
	runs   string
}

func (a realAgent) run(t *testing.T) realAgentRun {
	t.Helper()
	roadmap := "# R\n\n## P\n\n- [ ] 1.1 Write hello.txt\n  - verify: `grep -q 'hello from the model' hello.txt`\n"
	f := newRunFixture(t, roadmap)
	if len(a.repo) > 0 {
		gittest.WriteFiles(t, f.repo.Work, a.repo)
		for name := range a.repo {
			gittest.Git(t, f.repo.Work, "add", "--", name)
		}
		gittest.Git(t, f.repo.Work, "commit", "-q", "-m", "The repository's own agent settings")
		f.snapshot = gittest.Snapshot(t, f.repo.Work)
	}
	// What the CLI's process sees of its environment becomes part of the checkpoint: a shim of the
	// same name, first on PATH, writes it down and hands over. The profile's command is unchanged.
	shims := t.TempDir()
	cli := filepath.Join(a.bin, config.ProgramOf(a.command(t)))
	mustWrite(t, filepath.Join(shims, filepath.Base(cli)), "#!/bin/sh\nenv > \"$AKIRA_WORKSPACE/seen-env.txt\"\nexec "+cli+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(shims, filepath.Base(cli)), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath, err := filepath.Abs(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	cmd := f.command("run", "--config", cfgPath, "--agent", a.profile, "--sandbox", a.sandbox, "--sandbox-ro", a.dir, "--sandbox-ro", shims,
		"--work-dir", f.workDir, "--non-interactive", "--json", "-v", "--agent-timeout", "90s", "--stall-timeout", "60s")
	runs := t.TempDir()
	cmd.Env = append(cmd.Env, a.keyEnv+"="+a.realKey, a.baseEnv+"="+a.fake.BaseURL(), "AKIRA_RUNS_DIR="+runs,
		"PATH="+shims+string(os.PathListSeparator)+a.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("akira run: %v\n%s\n%s\nrequests: %+v", err, out, stderr, a.fake.Requests())
	}
	run := realAgentRun{f: f, runs: runs}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev runner.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			run.events = append(run.events, ev)
		}
	}
	return run
}

// command is the profile's command in the shipped configuration.
func (a realAgent) command(t *testing.T) string {
	t.Helper()
	return a.shipped(t).Command
}

func (a realAgent) shipped(t *testing.T) config.AgentProfile {
	t.Helper()
	op, err := config.LoadOperator(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := op.Agent(a.profile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recorded sums the usage of the run's agent_finished events.
func (r realAgentRun) recorded() (in, out int64, usd float64) {
	for _, ev := range r.events {
		if ev.Type == runner.EventAgentFinished && ev.Usage != nil {
			in, out, usd = in+ev.Usage.InputTokens, out+ev.Usage.OutputTokens, usd+ev.Usage.CostUSD
		}
	}
	return in, out, usd
}

// modelCalls are the calls the scripted server answered as a model (not /models, not token counts).
func modelCalls(fake *modeltest.Server) []modeltest.Request {
	var calls []modeltest.Request
	for _, r := range fake.Requests() {
		if r.Method == "POST" && (strings.HasSuffix(r.Path, "/messages") || strings.HasSuffix(r.Path, "/responses") || strings.HasSuffix(r.Path, "/chat/completions")) {
			calls = append(calls, r)
		}
	}
	return calls
}

// checkModelAndCost: every call the model server got asked for the profile's model, with the real
// key; the run's recorded tokens are the server's, and its cost those tokens at Akira's price for
// that model.
func checkModelAndCost(t *testing.T, p config.AgentProfile, fake *modeltest.Server, run realAgentRun, realKey string) {
	t.Helper()
	calls := modelCalls(fake)
	if len(calls) == 0 {
		t.Fatalf("no model call reached the model server: %+v", fake.Requests())
	}
	for _, r := range fake.Requests() {
		if r.Key != realKey {
			t.Errorf("the model server got key %q on %s %s, want the real key", r.Key, r.Method, r.Path)
		}
	}
	var wantUSD float64
	for _, c := range calls {
		if c.Model != p.Model {
			t.Errorf("the CLI asked the model server for %q on %s; the profile names %q", c.Model, c.Path, p.Model)
		}
		usd, ok := profiles.Pricer(p.Prices)(c.Model, egress.Tokens{Input: fake.Usage.Input, Output: fake.Usage.Output})
		if !ok {
			t.Fatalf("Akira has no price for %q", c.Model)
		}
		wantUSD += usd
	}
	n := int64(len(calls))
	in, out, usd := run.recorded()
	if in != n*fake.Usage.Input || out != n*fake.Usage.Output {
		t.Errorf("recorded tokens = %d in, %d out; the model server answered %d calls of %+v", in, out, n, fake.Usage)
	}
	if math.Abs(usd-wantUSD) > 1e-9 {
		t.Errorf("recorded cost = $%.6f; want $%.6f: %d calls of %+v at Akira's price for %s", usd, wantUSD, n, fake.Usage, p.Model)
	}
}

// checkTimeline: the attempt's timeline holds each call the model server answered as a model, at
// the cost recorded, the steps the CLI reported (want: the tool call that wrote the file, as the
// CLI names it) and the file the work tree gained.
func checkTimeline(t *testing.T, fake *modeltest.Server, run realAgentRun, want func(attempt.Step) bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(run.runs, "*", "1.1", "1.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the attempt's timeline: %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := readEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	var usd float64
	var stepped, wrote bool
	for _, ev := range events {
		switch {
		case ev.Call != nil && ev.Call.InputTokens > 0:
			calls++
			usd += ev.Call.CostUSD
		case ev.Step != nil && want(*ev.Step):
			stepped = true
		case ev.File != nil && ev.File.Path == "hello.txt" && ev.File.Status == attempt.FileAdded:
			wrote = true
		}
	}
	_, _, recorded := run.recorded()
	if calls != len(modelCalls(fake)) || math.Abs(usd-recorded) > 1e-9 {
		t.Errorf("the timeline holds %d calls at $%v; the server answered %d, the run recorded $%v", calls, usd, len(modelCalls(fake)), recorded)
	}
	if !stepped || !wrote {
		t.Errorf("the timeline lacks the CLI's step (%v) or the file it wrote (%v):\n%+v", stepped, wrote, events)
	}
}

// The real Claude Code and Codex CLIs, as the deploy image pins them, run the profiles of the deploy
// image's configuration as they ship (deploy/akira.yaml: no --model or other change by the test)
// through `akira run`, against scripted model servers speaking the real protocols: in the default
// sandbox (network allowlist: the egress proxy holds the key and meters the calls) and with
// --sandbox none. The CLI creates the file, the task verifies, the checkpoint lands; every call the
// model server got asked for the profile's model, with the real key, while the agent held a
// placeholder; and the recorded cost is the server's tokens at Akira's price for that model. The
// attempt's timeline holds the calls and the step the CLI reported writing the file.
func TestRealAgents(t *testing.T) {
	dir := agentsDir(t)
	bin := filepath.Join(dir, "node_modules", ".bin")
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	cases := []struct {
		profile, keyEnv, agentKeyEnv, baseEnv string
		fake                                  func(testing.TB, string) *modeltest.Server
		wrote                                 func(attempt.Step) bool
	}{
		{profile: "claude", keyEnv: "ANTHROPIC_API_KEY", agentKeyEnv: "ANTHROPIC_API_KEY", baseEnv: "ANTHROPIC_BASE_URL", fake: modeltest.NewAnthropic,
			wrote: func(s attempt.Step) bool {
				return s.Agent == attempt.AgentClaudeCode && s.Tool == "Write" && strings.HasSuffix(s.Args, "/hello.txt") && !s.Error
			}},
		{profile: "codex", keyEnv: "OPENAI_API_KEY", agentKeyEnv: "CODEX_API_KEY", baseEnv: "OPENAI_BASE_URL", fake: modeltest.NewOpenAI,
			wrote: func(s attempt.Step) bool {
				return s.Agent == attempt.AgentCodex && s.Tool == "command" && strings.Contains(s.Args, "hello.txt") && s.ExitCode != nil && *s.ExitCode == 0
			}},
	}
	for _, c := range cases {
		for _, box := range []string{"bubblewrap", "none"} {
			t.Run(c.profile+"/"+box, func(t *testing.T) {
				if box == "bubblewrap" {
					sandboxtest.Require(t)
				}
				a := realAgent{profile: c.profile, keyEnv: c.keyEnv, baseEnv: c.baseEnv, sandbox: box,
					fake: c.fake(t, realKey), realKey: realKey, bin: bin, dir: dir}
				p := a.shipped(t)
				run := a.run(t)
				if !a.fake.Wrote() {
					t.Errorf("the model was never offered a tool to write the file: %+v", a.fake.Requests())
				}
				if got := gittest.Git(t, run.f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello from the model" {
					t.Errorf("hello.txt on the branch = %q", got)
				}
				checkModelAndCost(t, p, a.fake, run, realKey)
				checkTimeline(t, a.fake, run, c.wrote)
				seen := gittest.Git(t, run.f.repo.Work, "show", "akira/roadmap:seen-env.txt")
				if strings.Contains(seen, realKey) {
					t.Error("the agent's environment held the real key")
				}
				for _, want := range []string{c.agentKeyEnv + "=akira-placeholder-", c.baseEnv + "=http://127.0.0.1:", "AKIRA_MODEL=" + p.Model + "\n"} {
					if !strings.Contains(seen, want) {
						t.Errorf("the agent's environment lacks %s:\n%s", want, seen)
					}
				}
			})
		}
	}
}

// TestRealAgentsHostileRepository: a repository steers Claude Code (the shipped profile, in the
// sandbox) towards other models, as anyone who can push a file may: its .claude/settings.json sets
// the main model to a dearer one, and a subagent definition of its own names a model Akira has no
// price for, which the scripted model then asks for. The profile's --model holds the main loop,
// and the egress proxy refuses the subagent's unpriced model: the model server only ever sees the
// profile's model, and the recorded cost is its tokens at Akira's price.
func TestRealAgentsHostileRepository(t *testing.T) {
	dir := agentsDir(t)
	sandboxtest.Require(t)
	const realKey = "sk-real-key-held-by-the-proxy-0123456789"
	fake := modeltest.NewAnthropic(t, realKey)
	fake.Subagent = "cheap"
	a := realAgent{profile: "claude", keyEnv: "ANTHROPIC_API_KEY", baseEnv: "ANTHROPIC_BASE_URL", sandbox: "bubblewrap",
		fake: fake, realKey: realKey, bin: filepath.Join(dir, "node_modules", ".bin"), dir: dir,
		repo: map[string]string{
			".claude/settings.json":   `{"env": {"ANTHROPIC_MODEL": "claude-opus-4-5"}}` + "\n",
			".claude/agents/cheap.md": "---\nname: cheap\ndescription: Lists files.\nmodel: claude-mythos-5\n---\nYou list the files you are asked about.\n",
		}}
	p := a.shipped(t)
	run := a.run(t)
	if _, ok := profiles.Pricer(p.Prices)("claude-mythos-5", egress.Tokens{}); ok {
		t.Fatal("claude-mythos-5 has a price: the test needs a model without one")
	}
	if got := gittest.Git(t, run.f.repo.Work, "show", "akira/roadmap:hello.txt"); got != "hello from the model" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	checkModelAndCost(t, p, fake, run, realKey)
}
