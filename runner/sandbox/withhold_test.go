package sandbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

const withheldKey = "sk-ant-withheld-0123456789abcdef"

// TestWithheldNeverReachACommand: the variables a run's Config withholds by name, and every variable
// whose value is or holds a withheld value, are missing from the environment of each policy's
// command, in both modes and under every network; the egress variables set after (the agent's
// placeholder under the key's own name) are there.
func TestWithheldNeverReachACommand(t *testing.T) {
	env := []string{
		"PATH=/usr/bin:/bin", "GOPROXY=https://proxy.golang.org",
		"ANTHROPIC_API_KEY=" + withheldKey,                        // by name
		"TEAM_TOKEN=" + withheldKey,                               // the same key under another name
		"LLM_URL=https://user:" + withheldKey + "@llm.example/v1", // a value that holds it
		"PIN=4711",             // exactly a short withheld value
		"BUILD_ID=build-47110", // holds the short value, which only counts when whole
	}
	cfg := sandbox.Config{Withhold: sandbox.Withheld{Names: []string{"ANTHROPIC_API_KEY"}, Values: []string{withheldKey, "4711"}}}
	want := []string{"PATH=/usr/bin:/bin", "GOPROXY=https://proxy.golang.org", "BUILD_ID=build-47110"}
	for _, mode := range []sandbox.Mode{sandbox.None, sandbox.Bubblewrap} {
		for _, net := range []sandbox.Network{sandbox.NetNone, sandbox.NetAllowlist, sandbox.NetAllow} {
			t.Run(string(mode)+"/"+string(net), func(t *testing.T) {
				cfg.Mode = mode
				p := cfg.Policy(net, "/w/repo", "", "")
				wantHere := want
				if net != sandbox.NetNone {
					p.Egress = &sandbox.Egress{Env: []string{"ANTHROPIC_API_KEY=akira-placeholder-1"}}
					wantHere = append(slices.Clone(want), "ANTHROPIC_API_KEY=akira-placeholder-1")
				}
				_, got, err := p.Command([]string{"env"}, env)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, wantHere) {
					t.Errorf("env = %q\nwant %q", got, wantHere)
				}
			})
		}
	}
}

// TestWithheldInTheRealSandbox: a command in bubblewrap that looks for the key everywhere it can
// (its environment, every /proc entry it sees) finds nothing, although the environment it was
// started with named the key twice.
func TestWithheldInTheRealSandbox(t *testing.T) {
	sandboxtest.Require(t)
	cfg := sandbox.Config{Mode: sandbox.Bubblewrap, Withhold: sandbox.Withheld{Names: []string{"ANTHROPIC_API_KEY"}, Values: []string{withheldKey}}}
	p := cfg.Policy(sandbox.NetNone, t.TempDir(), "", "")
	res, err := proc.Run(context.Background(), proc.Cmd{
		Shell: `env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f"; done; echo done`,
		Dir:   p.WorkTree, Env: []string{"PATH=/usr/bin:/bin", "ANTHROPIC_API_KEY=" + withheldKey, "ALIAS=" + withheldKey},
		Sandbox: p, Timeout: time.Minute,
	})
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Output), "done") {
		t.Fatalf("exit %d, %v: %s", res.ExitCode, err, res.Output)
	}
	if strings.Contains(string(res.Output), withheldKey) {
		t.Errorf("the sandboxed command found the key:\n%s", res.Output)
	}
}

// TestWithheldMerge: merging keeps each name and value once and drops empty ones (an unset key).
func TestWithheldMerge(t *testing.T) {
	w := sandbox.Withheld{Names: []string{"A"}, Values: []string{"v1"}}.Merge(sandbox.Withheld{Names: []string{"A", "B", ""}, Values: []string{"", "v1", "v2"}})
	if !slices.Equal(w.Names, []string{"A", "B"}) || !slices.Equal(w.Values, []string{"v1", "v2"}) {
		t.Errorf("Merge = %+v", w)
	}
	if w.Holds("") {
		t.Error("an empty value holds a secret")
	}
	if !w.Holds("v2") || w.Holds("x-v2") {
		t.Error("a short secret counts when it is the whole value, and only then")
	}
}
