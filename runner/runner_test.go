package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/testproc"
	"github.com/akira-bot/akira/runner/verify"
)

// An agent that does each task right: one checkpoint per task, in dependency order, each ticking its
// box, with trailers, a body naming the verification, pushed to a new branch.
func TestCheckpointsWithTrailers(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks, "README.md": "demo\n"})
	out, rec, err := f.run(t, Options{Inputs: Inputs{RunID: "run-1"}, Agent: f.agent(logCall + `echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Status != StatusSucceeded || out.Branch != "akira/roadmap" || out.Base != "main" {
		t.Fatalf("outcome = %+v", out)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T2:1", "T3:1")
	if got, want := f.log(t, "akira/roadmap"), []string{"akira: T1 Create one|T1", "akira: T2 Create two|T2", "akira: T3 Create three|T3"}; !slices.Equal(got, want) {
		t.Fatalf("branch log = %q, want %q", got, want)
	}
	if out.Head != gittest.Git(t, f.repo.Remote, "rev-parse", "akira/roadmap") {
		t.Fatalf("Head %s is not the pushed branch head", out.Head)
	}
	msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", "akira/roadmap~2")
	for _, want := range []string{"Verified by:\n- test -f T1.txt", "Akira-Run: run-1\nAkira-Task: T1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("checkpoint message lacks %q:\n%s", want, msg)
		}
	}
	// Each checkpoint ticks exactly its own box, and nothing else of the roadmap changes.
	diff := gittest.Git(t, f.repo.Remote, "diff", "akira/roadmap~3", "akira/roadmap~2", "--", "ROADMAP.md")
	if !strings.Contains(diff, "-- [ ] T1: Create one\n+- [x] T1: Create one") || strings.Count(diff, "\n+") != 2 {
		t.Fatalf("T1 checkpoint roadmap diff:\n%s", diff)
	}
	final := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:ROADMAP.md")
	if final+"\n" != strings.ReplaceAll(threeTasks, "[ ]", "[x]") {
		t.Fatalf("final roadmap:\n%s", final)
	}
	if got := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:T2.txt"); got != "Create two" {
		t.Fatalf("T2.txt = %q", got)
	}
	cps := rec.of(EventTaskCheckpointed, "")
	if len(cps) != 3 || cps[0].Commit == "" || !slices.Contains(cps[0].Changed, "T1.txt") {
		t.Fatalf("checkpoint events = %+v", cps)
	}
	if fin := rec.of(EventRunFinished, ""); len(fin) != 1 || fin[0].Outcome.Status != StatusSucceeded {
		t.Fatalf("run_finished = %+v", fin)
	}
}

// The second attempt receives what failed (in $AKIRA_FEEDBACK_FILE and in the prompt) and only the
// successful attempt's work is committed.
func TestReflectionWithFeedback(t *testing.T) {
	roadmapMD := "# R\n\n- [ ] A1: Write the greeting\n  - verify: `grep -q hello out.txt || { echo 'MARKER: out.txt does not say hello'; exit 1; }`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": roadmapMD})
	script := logCall + `
if [ -n "${AKIRA_FEEDBACK_FILE:-}" ] && grep -q 'MARKER: out.txt does not say hello' "$AKIRA_FEEDBACK_FILE" &&
   grep -q 'What went wrong last time' "$AKIRA_PROMPT_FILE" && grep -q 'exit code 1' "$AKIRA_FEEDBACK_FILE"; then
  echo hello > out.txt
else
  echo goodbye > out.txt; echo wrong > junk.txt
fi`
	out, rec, err := f.run(t, Options{Agent: f.agent(script)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"A1": TaskDone})
	wantCalls(t, f, "A1:1", "A1:2")
	if out.Tasks[0].Attempts != 2 {
		t.Fatalf("attempts = %d", out.Tasks[0].Attempts)
	}
	failed := rec.of(EventAttemptFailed, "A1")
	if len(failed) != 1 || !strings.Contains(failed[0].Feedback, "MARKER") || len(failed[0].Verify) != 1 || failed[0].Verify[0].ExitCode != 1 {
		t.Fatalf("attempt_failed = %+v", failed)
	}
	if _, code := gittest.TryGit(t, f.repo.Remote, "cat-file", "-e", "akira/roadmap:junk.txt"); code == 0 {
		t.Fatal("work of the failed attempt was committed")
	}
	if got := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:out.txt"); got != "hello" {
		t.Fatalf("out.txt = %q", got)
	}
}

// The same failure twice in a row (apart from times and durations) escalates before max attempts;
// nothing of the failed work is committed and it is saved to the parked ref.
func TestEarlyEscalationOnRepeatedFailure(t *testing.T) {
	roadmapMD := "# R\n\n- [ ] B1: Impossible\n  - verify: `echo \"$(date +%H:%M:%S.%N) FAIL: TestThing (0.0$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')s)\"; exit 1`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": roadmapMD})
	out, rec, err := f.run(t, Options{Limits: Limits{MaxAttempts: 5}, Agent: f.agent(logCall + `echo attempt > work.txt`)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Status != StatusParked || len(out.Parked) != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	wantCalls(t, f, "B1:1", "B1:2")
	esc := out.Parked[0]
	if esc.Reason != "repeated_failure" || esc.Attempts != 2 || !strings.Contains(esc.Feedback, "FAIL: TestThing") {
		t.Fatalf("escalation = %+v", esc)
	}
	if esc.HeadSHA != gittest.Git(t, f.repo.Remote, "rev-parse", "main") {
		t.Fatalf("HeadSHA = %s, want the base head (no checkpoint yet)", esc.HeadSHA)
	}
	if got := f.log(t, "akira/roadmap"); got != nil {
		t.Fatalf("something was committed to the branch: %v", got)
	}
	if esc.ParkedRef != "refs/akira/parked/akira/roadmap/B1" {
		t.Fatalf("ParkedRef = %q", esc.ParkedRef)
	}
	if got := gittest.Git(t, f.repo.Remote, "show", esc.ParkedCommit+":work.txt"); got != "attempt" {
		t.Fatalf("parked work = %q", got)
	}
	if msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", esc.ParkedRef); strings.Contains(msg, "Akira-Task") {
		t.Fatalf("parked commit must not look like a checkpoint:\n%s", msg)
	}
	if len(rec.of(EventTaskEscalated, "B1")) != 1 || len(rec.of(EventTaskParked, "B1")) != 1 {
		t.Fatal("want one task_escalated and one task_parked event")
	}
}

// Failures that differ each time use every attempt.
func TestMaxAttemptsWhenFailuresDiffer(t *testing.T) {
	roadmapMD := "# R\n\n- [ ] C1: Flaky\n  - verify: `cat n.txt; exit 1`\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": roadmapMD})
	out, _, err := f.run(t, Options{Agent: f.agent(logCall + `echo "try $AKIRA_ATTEMPT" > n.txt`)})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "C1:1", "C1:2", "C1:3")
	if out.Status != StatusParked || out.Parked[0].Reason != "max_attempts" {
		t.Fatalf("outcome = %+v", out)
	}
}

// A parked task blocks its dependents; independent tasks still run.
func TestDependentsBlockedIndependentContinue(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `[ "$AKIRA_TASK_ID" = T1 ] && exit 1; touch "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskParked, "T2": TaskBlocked, "T3": TaskDone})
	if out.Status != StatusParked {
		t.Fatalf("status = %s", out.Status)
	}
	// The agent's exit status 1 is the same failure twice: escalated early.
	wantCalls(t, f, "T1:1", "T1:2", "T3:1")
	if got := f.log(t, "akira/roadmap"); !slices.Equal(got, []string{"akira: T3 Create three|T3"}) {
		t.Fatalf("branch log = %v", got)
	}
	blocked := rec.of(EventTaskBlocked, "T2")
	if len(blocked) != 1 || !strings.Contains(blocked[0].Message, "T1 (parked)") {
		t.Fatalf("task_blocked = %+v", blocked)
	}
}

// Running again continues the branch: finished tasks are never redone, the parked task is retried.
func TestResumeWithoutRepeats(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	failT2 := f.agent(logCall + `[ "$AKIRA_TASK_ID" = T2 ] && [ ! -f "$LOG/fixed" ] && exit 1; touch "$AKIRA_TASK_ID.txt"`)
	out, _, err := f.run(t, Options{Agent: failT2})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskParked, "T3": TaskDone})
	gittest.WriteFiles(t, f.logs, map[string]string{"fixed": ""})

	out2, rec, err := f.run(t, Options{Agent: failT2})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out2, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T2:1", "T2:2", "T3:1", "T2:1")
	if got, want := f.log(t, "akira/roadmap"), []string{"akira: T1 Create one|T1", "akira: T3 Create three|T3", "akira: T2 Create two|T2"}; !slices.Equal(got, want) {
		t.Fatalf("branch log = %v, want %v", got, want)
	}
	started := rec.of(EventRunStarted, "")
	if len(started) != 1 || started[0].Message != "continuing the branch" {
		t.Fatalf("run_started = %+v", started)
	}
	if _, code := gittest.TryGit(t, f.repo.Remote, "rev-parse", "--verify", "-q", "refs/akira/parked/akira/roadmap/T2"); code == 0 {
		t.Fatal("parked work of T2 still on the remote after T2 was done")
	}

	// A third run has nothing to do.
	out3, rec3, err := f.run(t, Options{Agent: failT2})
	if err != nil || out3.Status != StatusSucceeded || len(rec3.of(EventTaskStarted, "")) != 0 {
		t.Fatalf("third run: %+v %v", out3, err)
	}
}

// An external plan (an issue body) ticks nothing; done-ness comes from the trailers alone.
func TestExternalPlanResumesFromTrailers(t *testing.T) {
	f := newFixture(t, map[string]string{"README.md": "x\n"})
	plan := []byte("Please do:\n\n- [ ] P1: First\n- [ ] P2: Second\n  - verify: `test -f P1.txt`\n")
	agentFailP2 := f.agent(logCall + `[ "$AKIRA_TASK_ID" = P2 ] && [ ! -f "$LOG/fixed" ] && exit 1; touch "$AKIRA_TASK_ID.txt"`)
	opts := Options{Inputs: Inputs{Plan: plan, PlanSource: "issue #7", Branch: "akira/issue-7"}, Agent: agentFailP2}
	out, _, err := f.run(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"P1": TaskDone, "P2": TaskParked})
	gittest.WriteFiles(t, f.logs, map[string]string{"fixed": ""})
	out, _, err = f.run(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"P1": TaskDone, "P2": TaskDone})
	wantCalls(t, f, "P1:1", "P2:1", "P2:2", "P2:1")
	if got := f.log(t, "akira/issue-7"); !slices.Equal(got, []string{"akira: P1 First|P1", "akira: P2 Second|P2"}) {
		t.Fatalf("branch log = %v", got)
	}
	if files := gittest.Git(t, f.repo.Remote, "ls-tree", "--name-only", "akira/issue-7"); files != "P1.txt\nP2.txt\nREADME.md" {
		t.Fatalf("files = %q", files)
	}
}

func TestSkip(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	out, rec, err := f.run(t, Options{Inputs: Inputs{Skip: []string{"T1"}}, Agent: f.agent(logCall + `touch "$AKIRA_TASK_ID.txt"`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskSkipped, "T2": TaskBlocked, "T3": TaskDone})
	if out.Status != StatusSucceeded {
		t.Fatalf("a deliberate skip is not a failure: status %s", out.Status)
	}
	wantCalls(t, f, "T3:1")
	if len(rec.of(EventTaskSkipped, "T1")) != 1 {
		t.Fatal("no task_skipped event")
	}
	if _, _, err := f.run(t, Options{Inputs: Inputs{Skip: []string{"NOPE"}}, Agent: f.agent("true")}); !errors.Is(err, ErrUsage) {
		t.Fatalf("unknown --skip id: err = %v, want ErrUsage", err)
	}
}

// Approve in the same process: the failed work (still in the workspace) becomes the checkpoint.
func TestApproveInProcess(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	var asked []Escalation
	handler := func(_ context.Context, esc Escalation) (Decision, error) {
		asked = append(asked, esc)
		return Decision{Kind: DecisionApprove}, nil
	}
	// T1 writes the wrong file name, so its verification fails.
	out, _, err := f.run(t, Options{
		Limits: Limits{
			MaxAttempts: 1,
		},
		Hooks: Hooks{
			Escalate: handler,
		},
		Agent: f.agent(logCall + `touch "wrong-$AKIRA_TASK_ID.txt"; [ "$AKIRA_TASK_ID" = T1 ] || touch "$AKIRA_TASK_ID.txt"`),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	if len(asked) != 1 || asked[0].TaskID != "T1" || !strings.Contains(asked[0].Feedback, "test -f T1.txt") {
		t.Fatalf("escalations = %+v", asked)
	}
	msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", "akira/roadmap~2")
	if !strings.Contains(msg, "Approved by a human without passing verification") || !strings.Contains(msg, "Akira-Task: T1") {
		t.Fatalf("approved checkpoint message:\n%s", msg)
	}
	gittest.Git(t, f.repo.Remote, "cat-file", "-e", "akira/roadmap~2:wrong-T1.txt")
}

// Approve in a later run (the GitHub flow): the parked work is taken as the checkpoint, on top of
// checkpoints that landed after it was parked.
func TestApproveParkedWorkInLaterRun(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	script := logCall + `echo "$AKIRA_TASK_ID work" > "work-$AKIRA_TASK_ID.txt"; [ "$AKIRA_TASK_ID" = T1 ] || touch "$AKIRA_TASK_ID.txt"`
	out, _, err := f.run(t, Options{Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskParked, "T2": TaskBlocked, "T3": TaskDone})

	out, rec, err := f.run(t, Options{Inputs: Inputs{Decisions: map[string]Decision{"T1": {Kind: DecisionApprove}}}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	// T1 was approved without running the agent again.
	wantCalls(t, f, "T1:1", "T1:2", "T3:1", "T2:1")
	if got := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap~1:work-T1.txt"); got != "T1 work" {
		t.Fatalf("approved work = %q", got)
	}
	if d := rec.of(EventTaskDecided, "T1"); len(d) != 1 || d[0].Decision.Kind != DecisionApprove {
		t.Fatalf("task_decided = %+v", d)
	}
	if _, code := gittest.TryGit(t, f.repo.Remote, "rev-parse", "--verify", "-q", "refs/akira/parked/akira/roadmap/T1"); code == 0 {
		t.Fatal("parked ref left after approval")
	}
}

// A decision to keep a task parked does not run it again (a resume for another task must not
// retry it uninvited).
func TestDecisionParkKeepsTaskParked(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	script := logCall + `[ "$AKIRA_TASK_ID" = T1 ] && exit 1; touch "$AKIRA_TASK_ID.txt"`
	if _, _, err := f.run(t, Options{Agent: f.agent(script)}); err != nil {
		t.Fatal(err)
	}
	out, _, err := f.run(t, Options{Inputs: Inputs{Decisions: map[string]Decision{"T1": {Kind: DecisionPark}}}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskParked, "T2": TaskBlocked, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T1:2", "T3:1")
	if out.Status != StatusParked || out.Parked[0].ParkedCommit == "" {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestRetryWithGuidance(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] G1: Pick a fruit\n  - verify: `grep -q banana fruit.txt`\n"})
	decisions := []Decision{{Kind: DecisionRetry, Guidance: "The fruit is a banana."}}
	handler := func(_ context.Context, esc Escalation) (Decision, error) {
		if len(decisions) == 0 {
			t.Fatal("asked twice")
		}
		d := decisions[0]
		decisions = decisions[1:]
		return d, nil
	}
	script := logCall + `if [ -n "${AKIRA_FEEDBACK_FILE:-}" ] && grep -q 'The fruit is a banana' "$AKIRA_FEEDBACK_FILE" && grep -q 'The fruit is a banana' "$AKIRA_PROMPT_FILE"; then echo banana > fruit.txt; else echo apple > fruit.txt; fi`
	out, _, err := f.run(t, Options{Limits: Limits{MaxAttempts: 1}, Hooks: Hooks{Escalate: handler}, Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"G1": TaskDone})
	wantCalls(t, f, "G1:1", "G1:2")
}

func TestAbortDecision(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	handler := func(context.Context, Escalation) (Decision, error) { return Decision{Kind: DecisionAbort}, nil }
	out, _, err := f.run(t, Options{Hooks: Hooks{Escalate: handler}, Agent: f.agent(logCall + `exit 1`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusAborted {
		t.Fatalf("status = %s", out.Status)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskPending, "T2": TaskPending, "T3": TaskPending})
	wantCalls(t, f, "T1:1", "T1:2")
	if f.log(t, "akira/roadmap") != nil {
		t.Fatal("commits after an abort")
	}
}

// The agent never sees Akira's secrets; neither the commits nor any ref of the remote holds them,
// including the git credential of GitAuth.
func TestNoSecretInAgentEnvironmentOrCommits(t *testing.T) {
	const token, appToken, header = "ghs_secretTokenValue123", "ghs_appSecret456", "Authorization: Basic Z2hzX2F1dGhTZWNyZXQ3ODk="
	t.Setenv("GITHUB_TOKEN", token)
	t.Setenv("AKIRA_GITHUB_TOKEN", appToken)
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] S1: Dump the environment\n- [ ] S2: Fail\n  - verify: `env; false`\n"})
	authCalls := 0
	out, rec, err := f.run(t, Options{
		Limits: Limits{
			MaxAttempts: 1,
		},
		Agent: f.agent(`env > "$LOG/env-$AKIRA_TASK_ID"; env > "env-$AKIRA_TASK_ID.txt"`),
		GitAuth: func(context.Context) (string, error) {
			authCalls++
			return header, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"S1": TaskDone, "S2": TaskParked})
	if authCalls == 0 {
		t.Fatal("GitAuth never called")
	}
	env, err := os.ReadFile(filepath.Join(f.logs, "env-S1"))
	if err != nil {
		t.Fatal(err)
	}
	everything := string(env) + gittest.Git(t, f.repo.Remote, "log", "-p", "--all", "--format=%H%n%B")
	for _, ev := range rec.events {
		everything += ev.Feedback + ev.Message
		for _, r := range ev.Verify {
			everything += r.Output
		}
	}
	for _, secret := range []string{token, appToken, "Z2hzX2F1dGhTZWNyZXQ3ODk", "GITHUB_TOKEN", "GIT_CONFIG_"} {
		if strings.Contains(everything, secret) {
			t.Errorf("%q leaked into the agent's environment, a commit, the parked work or an event", secret)
		}
	}
	if !strings.Contains(string(env), "AKIRA_TASK_ID=S1") {
		t.Fatalf("agent env lacks its own variables:\n%s", env)
	}
}

func TestProtectedPathsFailTheAttempt(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] W1: Add CI\n  - verify: `true`\n"})
	script := logCall + `if [ -n "${AKIRA_FEEDBACK_FILE:-}" ] && grep -q 'protected paths' "$AKIRA_FEEDBACK_FILE"; then echo ok > ci-notes.md; else mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml; fi`
	out, rec, err := f.run(t, Options{Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"W1": TaskDone})
	wantCalls(t, f, "W1:1", "W1:2")
	failed := rec.of(EventAttemptFailed, "W1")
	if len(failed) != 1 || !strings.Contains(failed[0].Message, ".github/workflows/ci.yml") {
		t.Fatalf("attempt_failed = %+v", failed)
	}
	if files := gittest.Git(t, f.repo.Remote, "ls-tree", "-r", "--name-only", "akira/roadmap"); strings.Contains(files, ".github") {
		t.Fatalf("protected file committed:\n%s", files)
	}
}

// An agent that exceeds its timeout is killed with its whole process group.
func TestAgentTimeoutKillsProcessGroup(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] K1: Hang\n"})
	pidFile := filepath.Join(f.logs, "pid")
	out, rec, err := f.run(t, Options{
		Limits: Limits{
			AgentTimeout: 500 * time.Millisecond,
			MaxAttempts:  1,
		},
		Agent: f.agent(`sleep 60 & echo $! > "$LOG/pid"; wait`),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"K1": TaskParked})
	if failed := rec.of(EventAttemptFailed, "K1"); len(failed) != 1 || !strings.Contains(failed[0].Message, "timed out") {
		t.Fatalf("attempt_failed = %+v", failed)
	}
	testproc.WaitGoneFromFile(t, pidFile)
}

// Without any verification the task is still checkpointed, and the run says so.
func TestNoVerificationIsVisible(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] N1: Anything\n"})
	out, rec, err := f.run(t, Options{Agent: f.agent(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"N1": TaskDone})
	vs := rec.of(EventVerifyStarted, "N1")
	if len(vs) != 1 || vs[0].VerifyPlan.Source != verify.SourceNone || !strings.HasPrefix(vs[0].Message, "no verification") {
		t.Fatalf("verify_started = %+v", vs)
	}
	// No change by the agent: the checkpoint is the ticked box alone.
	if stat := gittest.Git(t, f.repo.Remote, "show", "--stat", "--format=%B", "akira/roadmap"); !strings.Contains(stat, "No verification") || !strings.Contains(stat, "ROADMAP.md | 2 +-") {
		t.Fatalf("checkpoint:\n%s", stat)
	}
}

func TestDetectedVerificationAndFallback(t *testing.T) {
	files := map[string]string{
		"ROADMAP.md": "# R\n\n- [ ] D1: Make it pass\n",
		"Makefile":   "test:\n\ttest -f done.txt\n",
	}
	f := newFixture(t, files)
	out, rec, err := f.run(t, Options{Agent: f.agent(logCall + `[ "$AKIRA_ATTEMPT" = 2 ] && touch done.txt; true`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"D1": TaskDone})
	vs := rec.of(EventVerifyStarted, "D1")
	if len(vs) != 2 || vs[0].VerifyPlan.Source != verify.SourceDetected || vs[0].VerifyPlan.Commands[0] != "make test" {
		t.Fatalf("verify_started = %+v", vs)
	}

	// A configured fallback wins over detection.
	f2 := newFixture(t, files)
	out, rec, err = f2.run(t, Options{Inputs: Inputs{Verify: []string{"true", "test -f Makefile"}}, Agent: f2.agent(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"D1": TaskDone})
	if vs := rec.of(EventVerifyStarted, "D1"); vs[0].VerifyPlan.Source != verify.SourceConfigured {
		t.Fatalf("verify_started = %+v", vs)
	}
}

func TestRepoConfigChoosesRoadmapAndVerify(t *testing.T) {
	for _, name := range config.RepoPaths {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]string{
				name:           "roadmap: docs/Plan.md\nverify: [\"test -f x.txt\"]\nmax_attempts: 1\n",
				"docs/Plan.md": "# Plan\n\n- [ ] X1: Make x\n",
			})
			// The repository-wide verify fails on the base (x.txt is the task's to make): allowed here.
			out, _, err := f.run(t, Options{Limits: Limits{AllowRedBase: true}, Agent: f.agent(`touch x.txt`)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Branch != "akira/plan" || out.Roadmap != "docs/Plan.md" {
				t.Fatalf("outcome = %+v", out)
			}
			wantStatuses(t, out, map[string]TaskStatus{"X1": TaskDone})
			if msg := gittest.Git(t, f.repo.Remote, "log", "-1", "--format=%B", "akira/plan"); !strings.Contains(msg, "- test -f x.txt") {
				t.Fatalf("message:\n%s", msg)
			}
		})
	}
	t.Run("a broken file names itself", func(t *testing.T) {
		f := newFixture(t, map[string]string{".github/akira.yaml": "roadmap: [\n", "ROADMAP.md": "- [ ] X1: x\n"})
		_, _, err := f.run(t, Options{Agent: f.agent(`true`)})
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), ".github/akira.yaml") {
			t.Fatalf("err = %v, want a usage error naming .github/akira.yaml", err)
		}
	})
}

// StartCommit gives a new branch one empty commit before the first task, pushed, so that a pull request
// can be opened from it; a branch that has one, or a plan with nothing to do, gets none.
func TestStartCommit(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] T1: one\n- [ ] T2: two (depends: T1)\n"})
	var started []Event
	rep := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventRunStarted {
			started = append(started, ev)
			// The pull request is opened from what the remote has when the run starts.
			if got := gittest.Git(t, f.repo.Remote, "rev-parse", "akira/roadmap"); got != ev.Commit {
				t.Errorf("run started at %s, the remote branch is at %s", ev.Commit, got)
			}
		}
		return nil
	})
	stop := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventAttemptStarted {
			return errors.New("crash before the first task")
		}
		return nil
	})
	if _, _, err := f.run(t, Options{Inputs: Inputs{RunID: "r1", StartCommit: true}, Hooks: Hooks{Reporter: reporters(rep, stop)}, Agent: f.agent(`true`)}); err == nil ||
		!strings.Contains(err.Error(), "crash before the first task") {
		t.Fatalf("run = %v, want the crash", err)
	}
	log := gittest.Git(t, f.repo.Remote, "log", "--format=%s%n%b", "main..akira/roadmap")
	if !strings.HasPrefix(log, "akira: start run r1") || !strings.Contains(log, TrailerRun+": r1") || strings.Contains(log, TrailerTask) {
		t.Fatalf("branch log:\n%s", log)
	}
	out, _, err := f.run(t, Options{Inputs: Inputs{RunID: "r1", StartCommit: true}, Hooks: Hooks{Reporter: rep}, Agent: f.agent(`echo $AKIRA_TASK_ID > $AKIRA_TASK_ID.txt`)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone})
	if n := gittest.Git(t, f.repo.Remote, "rev-list", "--count", "--grep=akira: start run", "main..akira/roadmap"); n != "1" {
		t.Fatalf("%s start commits after a resumed run, want 1", n)
	}
	if len(started) != 2 || started[0].Commit != started[1].Commit {
		t.Fatalf("run starts = %+v", started)
	}

	done := newFixture(t, map[string]string{"ROADMAP.md": "- [x] T1: done\n"})
	if _, _, err := done.run(t, Options{Inputs: Inputs{RunID: "r2", StartCommit: true}, Agent: done.agent(`true`)}); err != nil {
		t.Fatal(err)
	}
	if _, code := gittest.TryGit(t, done.repo.Remote, "rev-parse", "--verify", "--quiet", "akira/roadmap"); code == 0 {
		t.Fatal("a plan with nothing to do got a branch")
	}
}

func TestInvalidRoadmap(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": "# R\n\n- [ ] A: one (depends: B)\n- [ ] B: two (depends: A)\n"})
	_, _, err := f.run(t, Options{Agent: f.agent(`true`)})
	var errs roadmap.Errors
	if !errors.Is(err, ErrInvalidPlan) || !errors.As(err, &errs) {
		t.Fatalf("err = %v, want ErrInvalidPlan with roadmap.Errors", err)
	}
	_, _, err = f.run(t, Options{Inputs: Inputs{Roadmap: "MISSING.md"}, Agent: f.agent(`true`)})
	if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "MISSING.md not found") {
		t.Fatalf("missing roadmap: err = %v", err)
	}
}

// Someone pushing to the branch during the run makes the next push fail clearly; the run stops.
func TestPushRejectedWhenBranchMoved(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	moved := false
	interloper := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventTaskStarted && ev.TaskID == "T2" && !moved {
			moved = true
			other := filepath.Join(t.TempDir(), "other")
			gittest.Git(t, f.logs, "clone", "-q", "--branch", "akira/roadmap", f.repo.Remote, other)
			gittest.Git(t, other, "commit", "-q", "--allow-empty", "-m", "someone else")
			gittest.Git(t, other, "push", "-q", "origin", "akira/roadmap")
		}
		return nil
	})
	out, _, err := f.run(t, Options{Hooks: Hooks{Reporter: interloper}, Agent: f.agent(`touch "$AKIRA_TASK_ID.txt"`)})
	if !errors.Is(err, ErrPushRejected) {
		t.Fatalf("err = %v, want ErrPushRejected", err)
	}
	if out.Status != StatusFailed {
		t.Fatalf("status = %s", out.Status)
	}
}

func TestReporterErrorStopsRun(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	boom := errors.New("github is down")
	r := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventTaskCheckpointed {
			return boom
		}
		return nil
	})
	out, _, err := f.run(t, Options{Hooks: Hooks{Reporter: r}, Agent: f.agent(logCall + `touch "$AKIRA_TASK_ID.txt"`)})
	if !errors.Is(err, boom) || out.Status != StatusFailed {
		t.Fatalf("err = %v, status %s", err, out.Status)
	}
	wantCalls(t, f, "T1:1")
}

// Cancelling the run (Ctrl-C) kills the agent, removes the workspace and leaves the branch at its
// last checkpoint.
func TestCancelStopsAgentAndKeepsLastCheckpoint(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventAttemptStarted && ev.TaskID == "T2" {
			go func() {
				// Cancel once the agent is running (it writes its pid first, whole: renamed into place, so
				// the file never exists empty).
				for i := 0; i < 1000; i++ {
					if _, err := os.Stat(filepath.Join(f.logs, "pid")); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}()
		}
		return nil
	})
	script := `if [ "$AKIRA_TASK_ID" = T2 ]; then sleep 60 & echo $! > "$LOG/pid.tmp"; mv "$LOG/pid.tmp" "$LOG/pid"; wait; fi; touch "$AKIRA_TASK_ID.txt"`
	out, err := Run(ctx, Options{Inputs: Inputs{Repo: f.repo.Remote}, Hooks: Hooks{Reporter: r}, WorkDir: f.workDir, Agent: f.agent(script)})
	if !errors.Is(err, context.Canceled) || out.Status != StatusAborted {
		t.Fatalf("err = %v, status %s", err, out.Status)
	}
	testproc.WaitGoneFromFile(t, filepath.Join(f.logs, "pid"))
	if got := f.log(t, "akira/roadmap"); !slices.Equal(got, []string{"akira: T1 Create one|T1"}) {
		t.Fatalf("branch log = %v", got)
	}
}

func TestDefaultBranch(t *testing.T) {
	tests := []struct{ prefix, path, want string }{
		{"", "ROADMAP.md", "akira/roadmap"},
		{"akira/", "docs/Plan v2.md", "akira/plan-v2"},
		{"bot/", "specs/001/tasks.md", "bot/tasks"},
		{"", "issue #12", "akira/issue-12"},
		{"", "...", "akira/roadmap"},
	}
	for _, tt := range tests {
		if got := DefaultBranch(tt.prefix, tt.path); got != tt.want {
			t.Errorf("DefaultBranch(%q, %q) = %q, want %q", tt.prefix, tt.path, got, tt.want)
		}
	}
}

// The agent may tick its own box but not otherwise edit the roadmap (e.g. weaken a later task's
// verify line).
func TestAgentMustNotRewriteRoadmap(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	script := logCall + `touch "$AKIRA_TASK_ID.txt"
if [ "$AKIRA_TASK_ID" = T1 ] && [ "$AKIRA_ATTEMPT" = 1 ]; then sed -i 's/test -f T2.txt/true/' ROADMAP.md; fi
if [ "$AKIRA_TASK_ID" = T1 ] && [ "$AKIRA_ATTEMPT" = 2 ]; then sed -i 's/- \[ \] T1:/- [x] T1:/' ROADMAP.md; fi`
	out, rec, err := f.run(t, Options{Agent: f.agent(script)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskDone})
	wantCalls(t, f, "T1:1", "T1:2", "T2:1", "T3:1")
	if failed := rec.of(EventAttemptFailed, "T1"); len(failed) != 1 || !strings.Contains(failed[0].Message, "only Akira edits it") {
		t.Fatalf("attempt_failed = %+v", failed)
	}
	final := gittest.Git(t, f.repo.Remote, "show", "akira/roadmap:ROADMAP.md")
	if final+"\n" != strings.ReplaceAll(threeTasks, "[ ]", "[x]") {
		t.Fatalf("final roadmap:\n%s", final)
	}
}

// Retry and skip decisions passed in by a later run (the GitHub flow's /akira retry and /akira skip).
func TestDecisionsInLaterRun(t *testing.T) {
	f := newFixture(t, map[string]string{"ROADMAP.md": threeTasks})
	script := logCall + `if [ "$AKIRA_TASK_ID" = T1 ] && ! grep -q 'use the blue folder' "${AKIRA_FEEDBACK_FILE:-/dev/null}"; then exit 1; fi; touch "$AKIRA_TASK_ID.txt"`
	if _, _, err := f.run(t, Options{Inputs: Inputs{Skip: []string{"T3"}}, Agent: f.agent(script)}); err != nil {
		t.Fatal(err)
	}
	out, _, err := f.run(t, Options{
		Inputs: Inputs{
			Decisions: map[string]Decision{
				"T1": {Kind: DecisionRetry, Guidance: "use the blue folder"},
				"T3": {Kind: DecisionSkip},
			},
		},
		Agent: f.agent(script),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone, "T2": TaskDone, "T3": TaskSkipped})
	wantCalls(t, f, "T1:1", "T1:2", "T1:1", "T2:1")
}
