package runner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/roadmap"
)

const threeParallel = `# Roadmap

- [ ] T1 [P] First
- [ ] T2 [P] Second
- [ ] T3 [P] Third
- [ ] T4 Last, alone
`

// intervals reads the "<task> <start ns> <end ns>" lines scripted agents wrote.
func intervals(t *testing.T, f *fixture) map[string][2]int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.logs, "spans"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fs := strings.Fields(line)
		a, _ := strconv.ParseInt(fs[1], 10, 64)
		b, _ := strconv.ParseInt(fs[2], 10, 64)
		out[fs[0]] = [2]int64{a, b}
	}
	return out
}

// spanAgent records when each attempt ran, sleeping secs seconds in between.
func spanAgent(secs string) string {
	return logCall + `s=$(date +%s%N); sleep ` + secs + `; echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"; echo "$AKIRA_TASK_ID $s $(date +%s%N)" >> "$LOG/spans"`
}

// TestParallelTasksRunAtOnce: three [P] tasks run at the same time (their agents' spans overlap),
// the plain task after them alone; the branch is linear, one checkpoint per task.
func TestParallelTasksRunAtOnce(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeParallel})
	out, rec, err := f.run(t, Options{Limits: Limits{MaxParallel: 3}, Agent: f.agent(spanAgent("1"))})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone, "T4": TaskDone})
	spans := intervals(t, f)
	latestStart, earliestEnd := int64(0), int64(1<<62)
	for _, id := range []string{"T1", "T2", "T3"} {
		latestStart, earliestEnd = max(latestStart, spans[id][0]), min(earliestEnd, spans[id][1])
	}
	if latestStart >= earliestEnd {
		t.Errorf("the [P] tasks did not run at once: %v", spans)
	}
	if spans["T4"][0] < max(spans["T1"][1], spans["T2"][1], spans["T3"][1]) {
		t.Errorf("T4 (no [P], no dependencies) started before the parallel tasks ended: %v", spans)
	}
	log := f.log(t, "akira/roadmap")
	var tasks []string
	for _, l := range log {
		_, task, _ := strings.Cut(l, "|")
		tasks = append(tasks, task)
	}
	slices.Sort(tasks)
	if !slices.Equal(tasks, []string{"T1", "T2", "T3", "T4"}) {
		t.Errorf("checkpoints %v; want one per task", log)
	}
	if merges := gittest.Git(t, f.repo.Remote, "rev-list", "--merges", "main..akira/roadmap"); merges != "" {
		t.Errorf("merge commits on the branch: %s", merges)
	}
	roadmapFile := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:ROADMAP.md")
	if strings.Count(roadmapFile, "- [x]") != 4 {
		t.Errorf("roadmap on the branch:\n%s", roadmapFile)
	}
	if started := rec.of(EventRunStarted, ""); len(started) != 1 {
		t.Errorf("%d run_started events; want the run's one", len(started))
	}
}

// TestParallelSameFile: two parallel tasks change the same lines; the one that verifies second is
// sent back with the conflict as feedback, does its change again on top of the first, and both are
// checkpointed once.
func TestParallelSameFile(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 [P] Say one\n- [ ] T2 [P] Say two\n", "shared.txt": "start\n"})
	agent := f.agent(logCall + `if [ "$AKIRA_TASK_ID" = T2 ]; then sleep 1; fi; echo "$AKIRA_TASK_ID" >> shared.txt; if [ -n "$AKIRA_FEEDBACK_FILE" ]; then cp "$AKIRA_FEEDBACK_FILE" "$LOG/feedback-$AKIRA_TASK_ID"; fi`)
	out, _, err := f.run(t, Options{Limits: Limits{MaxParallel: 2}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone})
	shared := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:shared.txt")
	if shared != "start\nT1\nT2" {
		t.Errorf("shared.txt = %q; want both changes, T1's first", shared)
	}
	calls := f.calls(t)
	if !slices.Contains(calls, "T2:2") || slices.Contains(calls, "T1:2") {
		t.Errorf("calls = %v; want T2 sent back once, T1 once", calls)
	}
	fb, err := os.ReadFile(filepath.Join(f.logs, "feedback-T2"))
	if err != nil || !strings.Contains(string(fb), "conflicts in shared.txt") {
		t.Errorf("T2's feedback = %q, %v; want the conflict named", fb, err)
	}
	counts := map[string]int{}
	for _, l := range f.log(t, "akira/roadmap") {
		_, task, _ := strings.Cut(l, "|")
		counts[task]++
	}
	if counts["T1"] != 1 || counts["T2"] != 1 {
		t.Errorf("checkpoints = %v; want one each", counts)
	}
}

// TestParallelCombinationFailsVerification: a change that passes alone but not with the other
// task's is a failed attempt with that said; when it keeps failing, only that task parks.
func TestParallelCombinationFailsVerification(t *testing.T) {
	plan := "- [ ] T1 [P] Make a\n  - verify: `test -f a.txt`\n- [ ] T2 [P] Make b, alone\n  - verify: `test -f b.txt && test ! -f a.txt`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": plan})
	agent := f.agent(logCall + `if [ "$AKIRA_TASK_ID" = T2 ]; then sleep 1; echo b > b.txt; else echo a > a.txt; fi; if [ -n "$AKIRA_FEEDBACK_FILE" ]; then cp "$AKIRA_FEEDBACK_FILE" "$LOG/feedback-$AKIRA_TASK_ID"; fi`)
	out, _, err := f.run(t, Options{Limits: Limits{MaxParallel: 2, MaxAttempts: 2}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskParked})
	if out.Status != StatusParked || len(out.Parked) != 1 || out.Parked[0].TaskID != "T2" {
		t.Errorf("outcome %s, parked %+v; want only T2 parked", out.Status, out.Parked)
	}
	fb, _ := os.ReadFile(filepath.Join(f.logs, "feedback-T2"))
	if !strings.Contains(string(fb), "combination") {
		t.Errorf("T2's feedback does not say the combination failed:\n%s", fb)
	}
}

// TestParallelEscalationParksOnlyItsTask: of three parallel tasks, the one that keeps failing parks;
// the other two are checkpointed.
func TestParallelEscalationParksOnlyItsTask(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 [P] One\n- [ ] T2 [P] Two fails\n  - verify: `false`\n- [ ] T3 [P] Three\n"})
	out, _, err := f.run(t, Options{Limits: Limits{MaxParallel: 3, MaxAttempts: 2}, Agent: f.agent(logCall + `echo x > "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskParked, "T3": TaskDone})
	if out.Status != StatusParked {
		t.Errorf("status %s; want parked", out.Status)
	}
}

// TestWaves: [P] tasks and tasks with declared dependencies share waves; a plain task is alone.
func TestWaves(t *testing.T) {
	rm, err := roadmap.Parse("ROADMAP.md", []byte(`- [ ] T1 [P] a
- [ ] T2 [P] b
- [ ] T3 c (depends: T1)
- [ ] T4 d (depends: T1, T2)
- [ ] T5 plain
- [ ] T6 [P] f
`))
	if err != nil {
		t.Fatal(err)
	}
	got := Waves(rm, 3)
	want := [][]string{{"T1", "T2", "T6"}, {"T3", "T4"}, {"T5"}}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("Waves = %v; want %v", got, want)
	}
	if got := Waves(rm, 1); len(got) != 6 {
		t.Errorf("Waves with 1 at a time = %v; want six waves", got)
	}
}

// TestUnverifiedTasks: a checkpoint with no verification command and no acceptance criteria is
// marked unverified; one with either is not; the criteria are reported when the task starts.
func TestUnverifiedTasks(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 Docs\n- [ ] T2 Checked\n  - verify: `test -f T2.txt`\n- [ ] T3 Reviewed\n  - accept: the page reads well\n"})
	out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `echo x > "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range out.Tasks {
		got[r.ID] = r.Unverified
	}
	if !got["T1"] || got["T2"] || got["T3"] {
		t.Errorf("unverified = %v; want only T1", got)
	}
	if cp := rec.of(EventTaskCheckpointed, "T1"); len(cp) != 1 || !cp[0].Unverified {
		t.Errorf("T1's checkpoint event does not say unverified: %+v", cp)
	}
	if st := rec.of(EventTaskStarted, "T3"); len(st) != 1 || !slices.Equal(st[0].Accept, []string{"the page reads well"}) {
		t.Errorf("T3's start event carries %+v; want its criterion", st)
	}
}

// TestWavesAreTheRunsWaves: what akira plan --parallel shows (Waves, the plan's own computation) is
// what a run does wave after wave (engine.wave, with every task succeeding), on random plans of
// [P] tasks, dependencies, priorities, done and optional tasks.
func TestWavesAreTheRunsWaves(t *testing.T) {
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 48))
		var b strings.Builder
		n := 1 + rng.IntN(40)
		for i := 1; i <= n; i++ {
			box := "[ ]"
			switch rng.IntN(8) {
			case 0:
				box = "[x]"
			case 1:
				box = "[ ]*"
			}
			fmt.Fprintf(&b, "- %s T%d", box, i)
			if rng.IntN(2) == 0 {
				b.WriteString(" [P]")
			}
			fmt.Fprintf(&b, " task %d", i)
			if i > 1 && rng.IntN(3) == 0 {
				fmt.Fprintf(&b, " (depends: T%d)", 1+rng.IntN(i-1))
			}
			b.WriteString("\n")
			if p := rng.IntN(6); p < 2 {
				fmt.Fprintf(&b, "  - priority: %s\n", []string{"high", "low"}[p])
			}
		}
		rm, err := roadmap.Parse("ROADMAP.md", []byte(b.String()))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, max := range []int{1, 2, 3, 8} {
			if got, want := Waves(rm, max), engineWaves(rm, max); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
				t.Fatalf("seed %d, %d at once: Waves = %v\nthe run goes %v\n%s", seed, max, got, want, b.String())
			}
		}
	}
}

// engineWaves runs the engine's own choice of waves over a plan, every task succeeding.
func engineWaves(rm *roadmap.Roadmap, maxParallel int) [][]string {
	e := &engine{rm: rm, results: map[string]*TaskResult{}, o: Options{Limits: Limits{MaxParallel: maxParallel}}}
	e.indexTasks()
	for _, t := range rm.Tasks {
		status := TaskPending
		switch {
		case t.Done:
			status = TaskDone
		case t.Optional:
			status = TaskSkipped
		}
		e.results[t.ID] = &TaskResult{ID: t.ID, Status: status}
	}
	var waves [][]string
	for {
		w := e.wave()
		if len(w) == 0 {
			return waves
		}
		ids := make([]string, len(w))
		for i, t := range w {
			ids[i] = t.ID
			e.results[t.ID].Status = TaskDone
		}
		waves = append(waves, ids)
	}
}
