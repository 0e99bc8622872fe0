package runs

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
)

func testOperator(t *testing.T) config.Operator {
	t.Helper()
	op, err := config.ParseOperator([]byte("agents:\n  sh:\n    kind: exec\n    command: sh agent.sh\n  other:\n    kind: exec\n    command: sh other.sh\ndefault_agent: sh\nmax_attempts: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestPlanRunOfAProseIssueNeedsAPlan(t *testing.T) {
	p := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d", InstallationID: 7, Owner: "o", Repo: "r"}, Trigger: lifecycle.TriggerIssue, Number: 4}
	in := RunInputs{Repo: ports.RepoInfo{DefaultBranch: "main"}, Config: config.DefaultRepo(), Issue: &ports.Issue{Number: 4, Body: "Please fix the login."}}
	if _, err := PlanRun(p, "run1", in, testOperator(t)); !errors.Is(err, ErrNeedsPlan) {
		t.Fatalf("planRun = %v, want errNeedsPlan", err)
	}
}

func TestPlanRun(t *testing.T) {
	info := ports.RepoInfo{DefaultBranch: "main", CloneURL: "https://gh.example/o/r.git", HTMLURL: "https://gh.example/o/r"}
	base := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d", InstallationID: 7, Owner: "o", Repo: "r", Sender: "alice"}}
	tests := []struct {
		name  string
		edit  func(*queue.RunPayload, *RunInputs)
		check func(t *testing.T, r *lifecycle.Run)
		err   string
	}{
		{
			name: "issue with task checkboxes runs them",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number = lifecycle.TriggerIssue, 4
				in.Issue = &ports.Issue{Number: 4, Title: "Add login", Body: "- [ ] 1.1 Form\n- [ ] 1.2 Session\n", URL: "https://gh.example/o/r/issues/4"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Branch != "akira/issue-4" || r.Issue != 4 || r.Plan == "" || r.PlanSource != "issue #4" || r.Roadmap != "" ||
					r.Title != "Add login" || r.SourceURL != "https://gh.example/o/r/issues/4" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "a plan pasted under /akira run runs instead of the issue's checklist",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.CommentID, p.Plan = lifecycle.TriggerIssue, 4, 77, "- [ ] 9 Pasted\n"
				in.Issue = &ports.Issue{Number: 4, Title: "Add login", Body: "- [ ] 1.1 Form\n"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Plan != "- [ ] 9 Pasted\n" || r.PlanFromComment || r.Roadmap != "" || r.PlanSource != "the plan in a comment on #4" ||
					r.SourceURL != "https://gh.example/o/r/issues/4#issuecomment-77" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "issue in prose with Akira's plan runs the plan",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number = lifecycle.TriggerIssue, 4
				in.Issue = &ports.Issue{Number: 4, Title: "Fix it", Body: "Please fix the login."}
				in.postedPlan, in.PostedPlanURL = "- [ ] 1 Fix it\n", "https://gh.example/o/r/issues/4#issuecomment-9"
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Plan != "- [ ] 1 Fix it\n" || !r.PlanFromComment || r.Roadmap != "" || r.SourceURL != "https://gh.example/o/r/issues/4#issuecomment-9" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "issue in prose with a path runs the file",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.Path = lifecycle.TriggerIssue, 4, "ROADMAP.md"
				in.Issue = &ports.Issue{Number: 4, Title: "Fix it", Body: "Please fix the login."}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Plan != "" || r.Roadmap != "ROADMAP.md" || r.Source != "ROADMAP.md" || r.SourceURL != "https://gh.example/o/r/blob/main/ROADMAP.md" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "a path wins over the issue's checkboxes",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.Path = lifecycle.TriggerIssue, 4, "docs/PLAN.md"
				in.Issue = &ports.Issue{Number: 4, Body: "- [ ] one\n"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				// Another file than the roadmap: its tasks are scoped by its path, so the issue's
				// branch's checkpoints of another plan are never taken for them.
				if r.Plan != "" || r.Roadmap != "ROADMAP.md" || !slices.Equal(r.Plans, []string{"docs/PLAN.md"}) ||
					r.ScopeFor("docs/PLAN.md") != "docs/PLAN.md" || r.Title != "Akira: docs/PLAN.md" || r.Branch != "akira/issue-4" ||
					r.SourceURL != "https://gh.example/o/r/blob/main/docs/PLAN.md" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "push runs the configured roadmap on its branch",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger = lifecycle.TriggerPush
				in.Config.Roadmap, in.Config.BranchPrefix, in.Config.Agent, in.Config.MaxAttempts = "docs/ROADMAP.md", "bot/", "other", 2
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Branch != "bot/roadmap" || r.Roadmap != "docs/ROADMAP.md" || r.Agent != "other" || r.MaxAttempts != 2 || r.PR != 0 {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "pull request runs on its own branch into its base",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.Branch = lifecycle.TriggerPullRequest, 9, "spec"
				in.PR = &ports.PullRequest{Number: 9, URL: "https://gh.example/o/r/pull/9", NodeID: "PR_9", HeadRef: "spec", BaseRef: "develop", HeadRepo: "O/R"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Branch != "spec" || r.Base != "develop" || r.PR != 9 || r.PRNodeID != "PR_9" || r.MaxAttempts != 4 || r.Agent != "sh" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "pull request from a fork is never run",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.Branch = lifecycle.TriggerPullRequest, 9, "spec"
				in.PR = &ports.PullRequest{Number: 9, HeadRef: "spec", HeadRepo: "mallory/r"}
			},
			err: "fork",
		},
		{
			name: "a fork's pull request runs on a branch of the repository at the head asked for",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.HeadSHA, p.CommentID = lifecycle.TriggerFork, 9, "f0f0", 77
				in.PR = &ports.PullRequest{Number: 9, URL: "https://gh.example/o/r/pull/9", HeadRef: "spec", HeadSHA: "f0f0", BaseRef: "develop", HeadRepo: "eve/r"}
				in.PlanFiles = []string{"specs/login/tasks.md"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				want := lifecycle.Fork{Number: 9, URL: "https://gh.example/o/r/pull/9", Repo: "eve/r", Ref: "spec", Head: "f0f0"}
				if r.Branch != "akira/pr-9" || r.Base != "develop" || r.PR != 0 || r.Fork == nil || *r.Fork != want ||
					strings.Join(r.Plans, ",") != "specs/login/tasks.md" || r.Title != "Akira: specs/login/tasks.md (from #9)" ||
					r.SourceURL != "https://gh.example/o/r/blob/akira/pr-9/specs/login/tasks.md" {
					t.Errorf("run = %+v, fork %+v", r, r.Fork)
				}
				if got := r.Numbers(); len(got) != 1 || got[0] != 9 {
					t.Errorf("the run is found by %v; want the fork's pull request", got)
				}
			},
		},
		{
			name: "a fork's pull request that changes the roadmap runs it from the run's branch",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.HeadSHA = lifecycle.TriggerFork, 9, "f0f0"
				in.PR = &ports.PullRequest{Number: 9, HeadRef: "spec", HeadSHA: "f0f0", BaseRef: "main", HeadRepo: "eve/r"}
				in.PlanFiles = []string{"ROADMAP.md"}
			},
			check: func(t *testing.T, r *lifecycle.Run) {
				if r.Branch != "akira/pr-9" || r.Roadmap != "ROADMAP.md" || len(r.Plans) != 0 ||
					r.SourceURL != "https://gh.example/o/r/blob/akira/pr-9/ROADMAP.md" || r.Title != "Akira: ROADMAP.md (from #9)" {
					t.Errorf("run = %+v", r)
				}
			},
		},
		{
			name: "a fork run of a pull request whose fork is gone",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.HeadSHA = lifecycle.TriggerFork, 9, "f0f0"
				in.PR = &ports.PullRequest{Number: 9, HeadRef: "spec", HeadSHA: "f0f0"}
			},
			err: "fork that exists",
		},
		{
			name: "pull request whose branch changed",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger, p.Number, p.Branch = lifecycle.TriggerPullRequest, 9, "spec"
				in.PR = &ports.PullRequest{Number: 9, HeadRef: "other", HeadRepo: "o/r"}
			},
			err: "now comes from other",
		},
		{
			name: "an agent the operator does not offer",
			edit: func(p *queue.RunPayload, in *RunInputs) {
				p.Trigger = lifecycle.TriggerPush
				in.Config.Agent = "gpt-9"
			},
			err: "agent",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			in := RunInputs{Repo: info, Config: config.DefaultRepo()}
			tt.edit(&p, &in)
			run, err := PlanRun(p, "run1", in, testOperator(t))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("planRun = %+v, %v; want an error about %q", run, err, tt.err)
				}
				if _, isConfig := flow.AsRepoConfigError(err); !isConfig && !errors.Is(err, asynq.SkipRetry) {
					t.Fatalf("error %v is neither a configuration error nor final", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if run.ID != "run1" || run.Status != lifecycle.StatusQueued || run.CloneURL != info.CloneURL || run.Sender != "alice" {
				t.Errorf("run = %+v", run)
			}
			tt.check(t, run)
		})
	}
}

// TestPlanRunRefusesAFork: a fork's pull request that changes workflow files, or whose head moved
// after the writer's command, is answered, not run.
func TestPlanRunRefusesAFork(t *testing.T) {
	p := queue.RunPayload{TaskHeader: queue.TaskHeader{DeliveryID: "d", InstallationID: 7, Owner: "o", Repo: "r"}, Trigger: lifecycle.TriggerFork, Number: 9, HeadSHA: "f0f0"}
	tests := []struct {
		name      string
		head      string
		workflows []string
		want      ForkRefusedError
	}{
		{"workflow files", "f0f0", []string{".github/workflows/ci.yml"}, ForkRefusedError{Workflows: []string{".github/workflows/ci.yml"}}},
		{"head moved", "e1e1", nil, ForkRefusedError{Asked: "f0f0", Now: "e1e1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := RunInputs{Repo: ports.RepoInfo{DefaultBranch: "main"}, Config: config.DefaultRepo(), Workflows: tt.workflows,
				PR: &ports.PullRequest{Number: 9, HeadRef: "spec", HeadSHA: tt.head, BaseRef: "main", HeadRepo: "eve/r"}, PlanFiles: []string{"ROADMAP.md"}}
			run, err := PlanRun(p, "run1", in, testOperator(t))
			fr, ok := errors.AsType[*ForkRefusedError](err)
			if !ok || strings.Join(fr.Workflows, ",") != strings.Join(tt.want.Workflows, ",") || fr.Asked != tt.want.Asked || fr.Now != tt.want.Now {
				t.Fatalf("PlanRun = %+v, %v; want %+v", run, err, tt.want)
			}
		})
	}
}
