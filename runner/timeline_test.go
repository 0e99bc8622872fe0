package runner

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/timeline"
)

// timelineRecorder keeps what a run records, as JSON lines would carry it.
type timelineRecorder struct {
	mu     sync.Mutex
	events []timeline.Event
}

func (r *timelineRecorder) Record(_ context.Context, ev timeline.Event) error {
	// Through JSON, as a sink stores it: what does not survive the trip is not recorded.
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var back timeline.Event
	if err := json.Unmarshal(data, &back); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, back)
	return nil
}

// attempt returns the events of one attempt, in the order recorded.
func (r *timelineRecorder) attempt(task string, n int) []timeline.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []timeline.Event
	for _, ev := range r.events {
		if ev.TaskID == task && ev.Attempt == n {
			out = append(out, ev)
		}
	}
	return out
}

// checkOrder checks what every attempt's timeline holds in order: numbered from 1, in time, the
// start first and the end last, the agent's events (calls, steps, refusals) before the agent's end,
// then the files, then verification, then the verdict; and each event's cost so far is the sum of
// the calls up to it.
func checkOrder(t *testing.T, evs []timeline.Event) {
	t.Helper()
	phase := map[timeline.Kind]int{timeline.KindAttemptStarted: 0, timeline.KindModelCall: 1, timeline.KindAgentStep: 1,
		timeline.KindEgressRefused: 1, timeline.KindAgentFinished: 2, timeline.KindFileChanged: 3, timeline.KindVerify: 4,
		timeline.KindJudged: 6, timeline.KindAttemptEnded: 7}
	last, cost := -1, 0.0
	for i, ev := range evs {
		p := phase[ev.Kind]
		if ev.Kind == timeline.KindModelCall && ev.Call.Source == timeline.SourceJudge {
			p = 5
		}
		if ev.V != timeline.Version || ev.Seq != i+1 || (i > 0 && ev.Time.Before(evs[i-1].Time)) || p < last {
			t.Errorf("event %d out of order: %s seq %d v%d at %s (after phase %d)", i+1, ev.Kind, ev.Seq, ev.V, ev.Time, last)
		}
		last = p
		if ev.Call != nil {
			cost += ev.Call.CostUSD
		}
		if math.Abs(ev.CostUSD-cost) > 1e-12 {
			t.Errorf("event %d (%s): cost so far $%v, the calls so far cost $%v", i+1, ev.Kind, ev.CostUSD, cost)
		}
	}
	if len(evs) == 0 || evs[0].Kind != timeline.KindAttemptStarted || evs[len(evs)-1].Kind != timeline.KindAttemptEnded {
		t.Errorf("the timeline does not start with its start and end with its end: %v", kinds(evs))
	}
}

func kinds(evs []timeline.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Kind))
	}
	return out
}

func ofKind(evs []timeline.Event, k timeline.Kind) []timeline.Event {
	var out []timeline.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// The case end to end, in the sandbox, through the real egress proxy: a first attempt calls
// the model twice through the proxy, runs a command, changes two files, tries a host that is not
// allowed and fails verification; a second attempt calls the model once and passes, and the judge
// accepts it. Each attempt's timeline holds all of it in order, the files as git sees the work tree
// (not as the agent says), each call at Akira's price, the cost so far on every event, the end
// with the attempt's cost and the run's so far; the costs agree with the task's; and the secret the
// agent's command carried is masked.
func TestAttemptTimeline(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	const secret = "tok-0123456789-not-for-logs"
	fake := modeltest.NewAnthropic(t, "sk-real")
	price := func(_ string, tk egress.Tokens) (float64, bool) {
		return float64(tk.Input)*3/1e6 + float64(tk.Output)*15/1e6, true
	}
	perCall, _ := price("m", egress.Tokens{Input: fake.Usage.Input, Output: fake.Usage.Output})
	verdict := llmtest.Turn{Calls: []llmtest.Call{{Name: judge.ToolName, Args: map[string]any{"confidence": 0.95,
		"criteria": []map[string]any{{"criterion": "ok.txt says ok", "pass": true, "reason": "it does"}}}}}, InputTokens: 900, OutputTokens: 80}
	j, _ := newJudge(t, "anthropic", verdict)
	judgeCost := 900*1/1e6 + 80*5/1e6

	f := newFixture(t, map[string]string{"README.md": "# greet\n",
		"ROADMAP.md": "# R\n\n- [ ] 1.1 Greet\n  - verify: `test -f ok.txt`\n  - accept: ok.txt says ok\n"})
	call := func(stream bool) string {
		return `curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' -d '{"model":"m","stream":` +
			map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[]}' "$ANTHROPIC_BASE_URL/v1/messages" > /dev/null || exit 9
`
	}
	// The agent reports its steps as Claude Code does (stream-json), and says it changed a third
	// file it never touched: the timeline takes the files from the work tree.
	ag := f.agent(`if [ "$AKIRA_ATTEMPT" = 1 ]; then
` + call(true) + call(false) + `
echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"TOKEN=` + secret + ` ./configure"}}]}}'
printf '%s\n' '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 2\nconfigure: not found","is_error":true}]}}'
echo "hello" >> README.md
mkdir -p src && printf 'echo hi\n' > src/greet.sh
echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Write","input":{"file_path":"never-written.txt","content":"x"}}]}}'
echo '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"File created"}]}}'
curl -sf https://not-listed.example/ > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"done"}'
else
` + call(false) + `
echo ok > ok.txt
fi
`)
	ag.Model = &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: fake.BaseURL(), Key: "sk-real", KeyEnv: "AKIRA_TEST_REAL_KEY",
		KeyVar: "ANTHROPIC_API_KEY", BaseURLVar: "ANTHROPIC_BASE_URL", Model: "m", Price: price}
	box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, Egress: egress.New(egress.Config{})}
	sink := &timelineRecorder{}
	out, _, err := f.run(t, Options{Hooks: Hooks{Timeline: sink, Secrets: []string{secret}}, Agent: ag, Sandbox: box, AgentNetwork: sandbox.NetAllowlist, Judge: j})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"1.1": TaskDone})

	first, second := sink.attempt("1.1", 1), sink.attempt("1.1", 2)
	checkOrder(t, first)
	checkOrder(t, second)
	if got := kinds(first); !slices.Equal(got[:1], []string{"attempt_started"}) || len(ofKind(first, timeline.KindModelCall)) != 2 ||
		len(ofKind(first, timeline.KindAgentStep)) != 3 || len(ofKind(first, timeline.KindEgressRefused)) != 1 ||
		len(ofKind(first, timeline.KindJudged)) != 0 {
		t.Errorf("attempt 1 = %v", got)
	}
	for i, ev := range ofKind(first, timeline.KindModelCall) {
		c := ev.Call
		if c.Source != timeline.SourceProxy || c.Model != "m" || c.Streamed != (i == 0) || c.Status != 200 || c.InputTokens != fake.Usage.Input ||
			c.OutputTokens != fake.Usage.Output || math.Abs(c.CostUSD-perCall) > 1e-12 || c.Duration <= 0 || c.Path != "/v1/messages" {
			t.Errorf("attempt 1's call %d = %+v, want the fake's usage at $%v", i+1, c, perCall)
		}
	}
	steps := ofKind(first, timeline.KindAgentStep)
	if s := steps[0].Step; s.Tool != "Bash" || s.Args != "TOKEN=[masked] ./configure" || s.ExitCode == nil || *s.ExitCode != 2 || !s.Error {
		t.Errorf("the command step = %+v", s)
	}
	if s := steps[2].Step; s.Type != timeline.StepResult || s.Text != "success after 3 turns: done" {
		t.Errorf("the result step = %+v", s)
	}
	if r := ofKind(first, timeline.KindEgressRefused)[0].Refusal; r.By != timeline.ByAgent || r.Host != "not-listed.example" || r.Port != 443 {
		t.Errorf("refusal = %+v", r)
	}
	var files []timeline.File
	for _, ev := range ofKind(first, timeline.KindFileChanged) {
		files = append(files, *ev.File)
	}
	if want := []timeline.File{{Path: "README.md", Status: "modified", Added: 1}, {Path: "src/greet.sh", Status: "added", Added: 1}}; !slices.Equal(files, want) {
		t.Errorf("attempt 1's files = %+v, want %+v", files, want)
	}
	if v := ofKind(first, timeline.KindVerify); len(v) != 1 || v[0].Command.Command != "test -f ok.txt" || v[0].Command.Passed || v[0].Command.ExitCode != 1 {
		t.Errorf("attempt 1's verification = %+v", v)
	}
	end1 := first[len(first)-1].End
	if end1.Result != timeline.ResultFailed || !strings.Contains(end1.Summary, "test -f ok.txt") || math.Abs(end1.CostUSD-2*perCall) > 1e-12 ||
		math.Abs(end1.RunCostUSD-2*perCall) > 1e-12 {
		t.Errorf("attempt 1's end = %+v, want failed at $%v", end1, 2*perCall)
	}

	if s := second[0].Start; s == nil || !s.Retry || math.Abs(s.RunCostUSD-2*perCall) > 1e-12 || s.Commit == "" {
		t.Errorf("attempt 2's start = %+v", s)
	}
	if v := ofKind(second, timeline.KindVerify); len(v) != 1 || !v[0].Command.Passed {
		t.Errorf("attempt 2's verification = %+v", v)
	}
	if f := ofKind(second, timeline.KindFileChanged); len(f) != 1 || f[0].File.Path != "ok.txt" {
		t.Errorf("attempt 2's files = %+v", f)
	}
	calls := ofKind(second, timeline.KindModelCall)
	if len(calls) != 2 || calls[1].Call.Source != timeline.SourceJudge || math.Abs(calls[1].Call.CostUSD-judgeCost) > 1e-12 || calls[1].Call.Duration <= 0 {
		t.Errorf("attempt 2's calls = %+v, want the agent's and the judge's ($%v)", calls, judgeCost)
	}
	if v := ofKind(second, timeline.KindJudged); len(v) != 1 || !v[0].Verdict.Passed || v[0].Verdict.Confidence != 0.95 {
		t.Errorf("verdict = %+v", v)
	}
	end2 := second[len(second)-1].End
	total := 3*perCall + judgeCost
	if end2.Result != timeline.ResultCheckpointed || end2.Commit != out.Tasks[0].Commit || math.Abs(end2.CostUSD-(perCall+judgeCost)) > 1e-12 ||
		math.Abs(end2.RunCostUSD-total) > 1e-12 {
		t.Errorf("attempt 2's end = %+v, want the checkpoint %s at $%v, the run at $%v", end2, out.Tasks[0].Commit, perCall+judgeCost, total)
	}
	if math.Abs(out.Tasks[0].Usage.CostUSD-total) > 1e-12 {
		t.Errorf("the task cost $%v; its attempts' timelines say $%v", out.Tasks[0].Usage.CostUSD, total)
	}
	all, _ := json.Marshal(sink.events)
	if strings.Contains(string(all), secret) {
		t.Error("the timeline keeps the secret")
	}
}

// An agent decides how much it reports: past timeline.MaxEvents the steps are counted, not kept,
// and the attempt's verification and end are still recorded.
func TestAttemptTimelineBounded(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] 1.1 One\n  - verify: `test -f 1.1.txt`\n"})
	n := timeline.MaxEvents + 50
	ag := f.agent(`i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do echo '{"type":"assistant","message":{"content":[{"type":"text","text":"step"}]}}'; i=$((i+1)); done; echo > 1.1.txt`)
	sink := &timelineRecorder{}
	if _, _, err := f.run(t, Options{Hooks: Hooks{Timeline: sink}, Agent: ag}); err != nil {
		t.Fatal(err)
	}
	evs := sink.attempt("1.1", 1)
	checkOrder(t, evs)
	steps, files := len(ofKind(evs, timeline.KindAgentStep)), len(ofKind(evs, timeline.KindFileChanged))
	end := evs[len(evs)-1].End
	if steps != timeline.MaxEvents || files != 0 || end == nil || end.Dropped[timeline.KindAgentStep] != n-timeline.MaxEvents ||
		end.Dropped[timeline.KindFileChanged] != 1 || len(ofKind(evs, timeline.KindVerify)) != 1 {
		t.Errorf("%d steps, %d files kept; end %+v", steps, files, end)
	}
}
