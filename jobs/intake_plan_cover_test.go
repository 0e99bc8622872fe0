package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/templates"
)

// planAgent answers a planning request with the plan in answer and works a task like agentScript.
func planAgent(t *testing.T, answer string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "agent.sh")
	body := "#!/bin/sh\nset -eu\nif [ \"$AKIRA_TASK_ID\" != '" + runner.PlanTaskID + "' ]; then echo \"$AKIRA_TASK_ID\" > \"done-$AKIRA_TASK_ID.txt\"; exit 0; fi\ncat <<'EOF'\n" + answer + "\nEOF\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AKIRA_TEST_AGENT", script)
}

func (jh *jobsHarness) planJob(p queue.PlanPayload) error {
	jh.t.Helper()
	task, err := queue.TaskOptions{}.NewPlanTask(p)
	if err != nil {
		jh.t.Fatal(err)
	}
	return jh.h.planner.HandlePlan(context.Background(), task)
}

func planFor(number int, delivery string) queue.PlanPayload {
	return queue.PlanPayload{TaskHeader: queue.TaskHeader{DeliveryID: delivery, InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}, DefaultBranch: "main", Number: number}
}

func TestPlanJobPostsOnePlanThenTheRunFollowsIt(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Greet people", Body: "Say hello somewhere.", Author: "alice"}
	planAgent(t, "Here is the plan:\n\n```markdown\n- [ ] 1.1 Add a greeting\n- [ ] 1.2 Test the greeting\n```")
	ctx := context.Background()

	if err := jh.planJob(planFor(4, "d-plan")); err != nil {
		t.Fatalf("plan job: %v", err)
	}
	// Asked again (another /akira plan), the plan comment is edited, not posted twice.
	if err := jh.planJob(planFor(4, "d-plan-2")); err != nil {
		t.Fatal(err)
	}
	comments := jh.gh.CommentsOn(4)
	if len(comments) != 1 || !strings.Contains(comments[0], templates.PlanMarker(4)) || !strings.Contains(comments[0], "1.2 Test the greeting") {
		t.Fatalf("comments on #4 = %q, want the one plan", comments)
	}
	if n := len(queued[queue.RunPayload](jh, queue.TypeRun)); n != 0 {
		t.Errorf("/akira plan queued %d runs, want none", n)
	}

	// `/akira run` on the prose issue follows the plan posted on it.
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || run.Status != lifecycle.StatusSucceeded || len(run.Tasks) != 2 || run.Tasks[1].Title != "Test the greeting" {
		t.Fatalf("run = %+v, %v; want the plan's two tasks done", run, err)
	}
}

func TestPlanJobUnderPlanAutoRunsForAWriterOnly(t *testing.T) {
	for _, tc := range []struct {
		author string
		runs   int
	}{{"alice", 1}, {"rita", 0}} {
		t.Run(tc.author, func(t *testing.T) {
			jh, _ := runWorld(t, map[string]string{"README.md": "hi\n", ".github/akira.yml": "plan: auto\n"})
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["rita"] = "read"
			jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Greet", Body: "Say hello.", Author: tc.author}
			planAgent(t, "- [ ] 1.1 Add a greeting")
			p := planFor(4, "d-auto")
			p.FromRun = true
			if err := jh.planJob(p); err != nil {
				t.Fatal(err)
			}
			runs := queued[queue.RunPayload](jh, queue.TypeRun)
			if len(runs) != tc.runs {
				t.Fatalf("runs = %+v, want %d", runs, tc.runs)
			}
			if tc.runs == 1 && (runs[0].Number != 4 || runs[0].Trigger != lifecycle.TriggerIssue) {
				t.Errorf("run = %+v, want issue 4", runs[0])
			}
			if got := jh.gh.CommentsOn(4); len(got) != 1 || !strings.Contains(got[0], "1.1 Add a greeting") {
				t.Errorf("comments = %q, want the plan", got)
			}
		})
	}
}

func TestPlanJobSaysWhyThereIsNoPlan(t *testing.T) {
	for _, tc := range []struct {
		name, config, answer, want string
	}{
		{"the answer holds no tasks", "", "I would rather not.", "no task checkboxes"},
		{"an agent the operator does not define (a configuration error)", "agent: gpt-9\n", "- [ ] 1.1 x", `agent "gpt-9" is not one of the profiles the operator defined (sh)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"README.md": "hi\n"}
			if tc.config != "" {
				files[".github/akira.yml"] = tc.config
			}
			jh, _ := runWorld(t, files)
			jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Greet", Body: "Say hello.", Author: "alice"}
			planAgent(t, tc.answer)
			if err := jh.planJob(planFor(4, "d-none")); err != nil {
				t.Fatalf("plan job = %v, want it to end (another try would fail alike)", err)
			}
			got := jh.gh.CommentsOn(4)
			if len(got) != 1 || !strings.Contains(got[0], tc.want) || strings.Contains(got[0], templates.PlanMarker(4)) {
				t.Errorf("comments = %q, want one reply saying %q", got, tc.want)
			}
		})
	}
}

func TestPlanJobExplainsABrokenConfiguration(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n", ".github/akira.yml": "roadmap: [\n"})
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Greet", Body: "Say hello.", Author: "alice"}
	planAgent(t, "- [ ] 1.1 x")
	if err := jh.planJob(planFor(4, "d-bad")); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(4); len(got) != 1 || !strings.Contains(got[0], "akira.yml") {
		t.Errorf("comments = %q, want one naming the broken configuration", got)
	}
}

func TestIssueTriggers(t *testing.T) {
	trigger := func(actor, action, label string) queue.IntakePayload {
		return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: actor}, Event: queue.EventIssues, Body: &queue.TriggerIntake{Number: 4, Actor: actor, Action: action, Label: label}}
	}
	tests := []struct {
		name    string
		config  string
		running bool
		in      queue.IntakePayload
		runs    int
		replies int
	}{
		{name: "writer assigns", in: trigger("alice", queue.TriggerAssigned, ""), runs: 1},
		{name: "writer adds the label", in: trigger("alice", queue.TriggerLabeled, "akira"), runs: 1},
		{name: "another label", in: trigger("alice", queue.TriggerLabeled, "bug")},
		{name: "a label of the repository's choice", config: "triggers:\n  label: go-bot\n", in: trigger("alice", queue.TriggerLabeled, "Go-Bot"), runs: 1},
		{name: "reader assigns", in: trigger("rita", queue.TriggerAssigned, ""), replies: 1},
		{name: "reader unassigns", in: trigger("rita", queue.TriggerUnassigned, "")},
		{name: "unassigned with no run", in: trigger("alice", queue.TriggerUnassigned, "")},
		{name: "unlabelled while running", running: true, in: trigger("alice", queue.TriggerUnlabeled, "akira"), replies: 1},
		{name: "triggers off", config: "triggers:\n  issue_comment: false\n", in: trigger("alice", queue.TriggerAssigned, "")},
		{name: "broken configuration", config: "roadmap: [\n", in: trigger("alice", queue.TriggerAssigned, ""), replies: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["rita"] = "read"
			if tt.config != "" {
				jh.gh.Files[":.github/akira.yml"] = tt.config
			}
			if tt.running {
				r := newRun("busy", "akira/issue-4")
				r.Owner, r.Repo = "o", "r"
				if _, _, err := jh.store.Create(context.Background(), r); err != nil {
					t.Fatal(err)
				}
			}
			if err := jh.intake(tt.in); err != nil {
				t.Fatal(err)
			}
			runs := queued[queue.RunPayload](jh, queue.TypeRun)
			if len(runs) != tt.runs {
				t.Errorf("runs = %+v, want %d", runs, tt.runs)
			}
			for _, r := range runs {
				if r.Number != 4 || r.Trigger != lifecycle.TriggerIssue || r.Sender != "alice" {
					t.Errorf("run = %+v, want issue 4 by alice", r)
				}
			}
			replies := jh.gh.CommentsOn(4)
			if len(replies) != tt.replies {
				t.Errorf("replies = %q, want %d", replies, tt.replies)
			}
			if tt.running && len(replies) == 1 && (!strings.Contains(replies[0], "busy") || !strings.Contains(replies[0], "/akira stop")) {
				t.Errorf("reply = %q, want it to name run busy and /akira stop", replies[0])
			}
		})
	}
}
