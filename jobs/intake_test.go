package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/jobstest"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
)

// commentAt is when the comments of these tests were written, in GitHub's clock.
var commentAt = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func comment(author, body string, number int) queue.IntakePayload {
	return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: author}, Event: queue.EventIssueComment,
		Body: &queue.CommentIntake{ID: 555, Number: number, Author: author, Body: body, CreatedAt: commentAt}}
}

// forkPush is the webhook of a push to eve/r's pull request number, showing head at GitHub's time at.
func forkPush(number int, head string, at time.Time) queue.IntakePayload {
	return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "eve"}, Event: queue.EventPullRequest,
		Body: &queue.PullRequestIntake{Number: number, Action: "synchronize", HeadRef: "feature", HeadSHA: head, Fork: "eve/r", UpdatedAt: at}}
}

func TestIntakeComments(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(*jobstest.GitHub)
		before []queue.IntakePayload // deliveries taken in first
		in     queue.IntakePayload
		runs   int
		resume []runner.DecisionKind
		// effects are what GitHub saw, in order; replies are matched by a fragment of their first line.
		effects []string
		// trigger, when set, is what the queued run must be: its trigger and the head it starts at.
		trigger lifecycle.Trigger
		head    string
	}{
		{
			name: "writer runs", in: comment("alice", "/akira run", 4), runs: 1,
			effects: []string{"react eyes to comment 555"},
		},
		{
			name: "maintainer approves", in: comment("mona", "/akira approve", 4), resume: []runner.DecisionKind{runner.DecisionApprove},
			effects: []string{"react eyes to comment 555"},
		},
		{
			name: "retry with guidance", in: comment("alice", "/akira retry use tabs", 4), resume: []runner.DecisionKind{runner.DecisionRetry},
			effects: []string{"react eyes to comment 555"},
		},
		{
			name: "reader is refused and nothing else", in: comment("rita", "/akira run", 4),
			effects: []string{"comment #4: Sorry @rita"},
		},
		{
			name: "reader asking for help gets only the refusal", in: comment("rita", "/akira help", 4),
			effects: []string{"comment #4: Sorry @rita"},
		},
		{
			name: "allowlisted reader runs",
			setup: func(f *jobstest.GitHub) {
				f.Files[":.github/akira.yml"] = "allowlist: [rita]\n"
			},
			in: comment("rita", "/akira run", 4), runs: 1, effects: []string{"react eyes to comment 555"},
		},
		{
			name: "help is answered", in: comment("alice", "/akira help", 4),
			effects: []string{"comment #4: "},
		},
		{
			name: "typo is answered", in: comment("alice", "/akira aprove", 4),
			effects: []string{"comment #4: "},
		},
		{
			name: "no command does nothing", in: comment("alice", "looks good", 4),
		},
		{
			name: "status replies and reacts", in: comment("alice", "/akira status", 4),
			effects: []string{"comment #4: ", "react eyes to comment 555"},
		},
		{
			name: "broken configuration is explained",
			setup: func(f *jobstest.GitHub) {
				f.Files[":.github/akira.yaml"] = "roadmap: [\n"
			},
			in: comment("alice", "/akira run", 4), effects: []string{"comment #4: "},
		},
		{
			name: "comment trigger off",
			setup: func(f *jobstest.GitHub) {
				f.Files[":.github/akira.yml"] = "triggers:\n  issue_comment: false\n"
			},
			in: comment("alice", "/akira run", 4),
		},
		{
			name: "a writer's run on a fork's pull request runs its head as a fork run",
			setup: func(f *jobstest.GitHub) {
				f.Pulls[4] = &ports.PullRequest{Number: 4, HeadRef: "feature", HeadRepo: "eve/r", HeadSHA: "f0f0"}
			},
			before: []queue.IntakePayload{forkPush(4, "f0f0", commentAt.Add(-time.Minute))},
			in: func() queue.IntakePayload {
				p := comment("alice", "/akira run", 4)
				p.Body.(*queue.CommentIntake).OnPullRequest = true
				return p
			}(),
			runs: 1, trigger: lifecycle.TriggerFork, head: "f0f0",
			effects: []string{"react eyes to comment 555"},
		},
		{
			name: "a reader's run on a fork's pull request is refused",
			setup: func(f *jobstest.GitHub) {
				f.Pulls[4] = &ports.PullRequest{Number: 4, HeadRef: "feature", HeadRepo: "eve/r", HeadSHA: "f0f0"}
			},
			in: func() queue.IntakePayload {
				p := comment("rita", "/akira run", 4)
				p.Body.(*queue.CommentIntake).OnPullRequest = true
				return p
			}(),
			effects: []string{"comment #4: Sorry @rita"},
		},
		{
			name: "run on a pull request whose fork was deleted is refused",
			setup: func(f *jobstest.GitHub) {
				f.Pulls[4] = &ports.PullRequest{Number: 4, HeadRef: "feature", HeadSHA: "f0f0"}
			},
			in: func() queue.IntakePayload {
				p := comment("alice", "/akira run", 4)
				p.Body.(*queue.CommentIntake).OnPullRequest = true
				return p
			}(),
			effects: []string{"comment #4: Akira cannot run this pull request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["mona"] = "maintain"
			jh.gh.Permissions["rita"] = "read"
			if tt.setup != nil {
				tt.setup(jh.gh)
			}
			for _, p := range tt.before {
				if err := jh.intake(p); err != nil {
					t.Fatalf("intake of what came before: %v", err)
				}
			}
			if err := jh.intake(tt.in); err != nil {
				t.Fatalf("intake: %v", err)
			}
			runs := queued[queue.RunPayload](jh, queue.TypeRun)
			if len(runs) != tt.runs {
				t.Errorf("runs queued = %+v, want %d", runs, tt.runs)
			}
			if tt.trigger != "" && (len(runs) != 1 || runs[0].Trigger != tt.trigger || runs[0].HeadSHA != tt.head || runs[0].Branch != "") {
				t.Errorf("runs queued = %+v, want one %s run at %s", runs, tt.trigger, tt.head)
			}
			var decisions []runner.DecisionKind
			for _, r := range queued[queue.ResumePayload](jh, queue.TypeResume) {
				decisions = append(decisions, r.Decision)
				if r.CommentID != 555 || r.Number != 4 {
					t.Errorf("resume = %+v, want comment 555 on #4", r)
				}
			}
			if !slices.Equal(decisions, tt.resume) {
				t.Errorf("decisions queued = %v, want %v", decisions, tt.resume)
			}
			effects := jh.gh.Effects()
			if len(effects) != len(tt.effects) {
				t.Fatalf("effects = %q, want %q", effects, tt.effects)
			}
			for i, want := range tt.effects {
				if !strings.HasPrefix(effects[i], want) {
					t.Errorf("effect %d = %q, want it to start with %q", i, effects[i], want)
				}
			}
		})
	}
}

func TestIntakeRunOnPullRequestTargetsItsBranch(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.Permissions["alice"] = "admin"
	jh.gh.Pulls[9] = &ports.PullRequest{Number: 9, HeadRef: "feature", HeadSHA: "abc", HeadRepo: "o/r"}
	p := comment("alice", "/akira run docs/PLAN.md", 9)
	p.Body.(*queue.CommentIntake).OnPullRequest = true
	if err := jh.intake(p); err != nil {
		t.Fatal(err)
	}
	runs := queued[queue.RunPayload](jh, queue.TypeRun)
	if len(runs) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	r := runs[0]
	if r.Trigger != lifecycle.TriggerPullRequest || r.Number != 9 || r.Branch != "feature" || r.HeadSHA != "abc" || r.Path != "docs/PLAN.md" || r.Sender != "alice" {
		t.Fatalf("run = %+v", r)
	}
}

// Each GitHub call of the intake failing (a 5xx, a secondary rate limit the client gave up on) fails
// the job, and asynq retries it; the retry does the work once. A reply GitHub made although its answer
// was lost is found again by its marker, not posted twice.
// TestIntakeRepliesOncePerDelivery: the same delivery handled twice as a new job (GitHub redelivered it
// after asynq had forgotten the task) answers help, status and a refusal once each.
func TestIntakeRepliesOncePerDelivery(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.Permissions["alice"] = "write"
	jh.gh.Permissions["rita"] = "read"
	for i, p := range []queue.IntakePayload{comment("alice", "/akira help", 4), comment("alice", "/akira status", 5), comment("rita", "/akira run", 6)} {
		p.DeliveryID = fmt.Sprintf("same-delivery-%d", i)
		for range 2 {
			if err := jh.intake(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range []int{4, 5, 6} {
		if got := jh.gh.CommentsOn(n); len(got) != 1 {
			t.Errorf("comments on #%d = %q, want one reply", n, got)
		}
	}
}

func TestIntakeRetriesWithoutDoublePosting(t *testing.T) {
	for _, op := range []string{"Permission", "GetFile", "CreateComment", "PullRequestFiles", "AddReaction"} {
		t.Run(op, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["rita"] = "read"
			jh.gh.PullFiles[9] = []string{"ROADMAP.md"}
			jh.gh.FailOnce(op, errors.New("GitHub answered 502"))
			jh.gh.LostAnswer["CreateComment"] = true // the first comment is made, its answer lost
			payloads := []queue.IntakePayload{
				comment("rita", "/akira run", 4),
				comment("alice", "/akira help", 5),
				{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventPullRequest, Body: &queue.PullRequestIntake{Number: 9, Action: "opened", HeadRef: "feature"}},
				comment("alice", "/akira run", 6),
			}
			jh.process(payloads...)
			if got := jh.gh.CommentsOn(4); len(got) != 1 || !strings.Contains(got[0], "@rita") {
				t.Errorf("comments on #4 = %q, want one refusal", got)
			}
			if got := jh.gh.CommentsOn(5); len(got) != 1 {
				t.Errorf("comments on #5 = %q, want one help", got)
			}
			var numbers []int
			for _, r := range queued[queue.RunPayload](jh, queue.TypeRun) {
				numbers = append(numbers, r.Number)
			}
			slices.Sort(numbers)
			if !slices.Equal(numbers, []int{6, 9}) {
				t.Errorf("runs for %v, want #6 and #9", numbers)
			}
		})
	}
}

func TestIntakePushAndPullRequest(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*jobstest.GitHub)
		in    queue.IntakePayload
		want  []lifecycle.Trigger
	}{
		{"push changing the roadmap", nil,
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", After: "abc", Changed: []string{"ROADMAP.md"}}},
			[]lifecycle.Trigger{lifecycle.TriggerPush}},
		{"push changing other files", nil,
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", Changed: []string{"README.md"}}}, nil},
		{"push cut at 20 commits", nil,
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", Truncated: true}}, []lifecycle.Trigger{lifecycle.TriggerPush}},
		{"push with the trigger off", func(f *jobstest.GitHub) { f.Files[":.github/akira.yaml"] = "triggers:\n  push: false\n" },
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", Changed: []string{"ROADMAP.md"}}}, nil},
		{"push with a configured roadmap", func(f *jobstest.GitHub) { f.Files[":.github/akira.yaml"] = "roadmap: docs/PLAN.md\n" },
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", Changed: []string{"docs/PLAN.md"}}}, []lifecycle.Trigger{lifecycle.TriggerPush}},
		{"push with a broken configuration", func(f *jobstest.GitHub) { f.Files[":.github/akira.yml"] = "nope: 1\n" },
			queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: "main", Changed: []string{"ROADMAP.md"}}}, nil},
		{"pull request changing a spec", func(f *jobstest.GitHub) { f.PullFiles[3] = []string{"specs/login/tasks.md"} },
			queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventPullRequest, Body: &queue.PullRequestIntake{Number: 3, Action: "opened", HeadRef: "spec"}},
			[]lifecycle.Trigger{lifecycle.TriggerPullRequest}},
		{"pull request changing code", func(f *jobstest.GitHub) { f.PullFiles[3] = []string{"main.go"} },
			queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventPullRequest, Body: &queue.PullRequestIntake{Number: 3, Action: "opened", HeadRef: "spec"}}, nil},
		{"pull request reopened by a triager", func(f *jobstest.GitHub) { f.PullFiles[3] = []string{"ROADMAP.md"} },
			queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "rita"}, Event: queue.EventPullRequest, Body: &queue.PullRequestIntake{Number: 3, Action: "reopened", HeadRef: "spec"}}, nil},
		{"pull request from Akira's own branch", func(f *jobstest.GitHub) { f.PullFiles[3] = []string{"ROADMAP.md"} },
			queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "alice"}, Event: queue.EventPullRequest, Body: &queue.PullRequestIntake{Number: 3, Action: "opened", HeadRef: "akira/issue-2"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Permissions["rita"] = "triage"
			if tt.setup != nil {
				tt.setup(jh.gh)
			}
			if err := jh.intake(tt.in); err != nil {
				t.Fatal(err)
			}
			var got []lifecycle.Trigger
			for _, r := range queued[queue.RunPayload](jh, queue.TypeRun) {
				got = append(got, r.Trigger)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("runs = %v, want %v", got, tt.want)
			}
			if effects := jh.gh.Effects(); len(effects) != 0 {
				t.Errorf("effects on GitHub = %q, want none", effects)
			}
		})
	}
}

// TestIntakeForkPullRequest: a fork's pull request that changes plan files queues nothing; it gets
// one answer saying how a writer runs it, however often it is opened again, and a fork's branch
// named like Akira's is answered all the same. One that changes only code gets nothing.
func TestIntakeForkPullRequest(t *testing.T) {
	fork := func(action, head string) queue.IntakePayload {
		return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: "eve"}, Event: queue.EventPullRequest,
			Body: &queue.PullRequestIntake{Number: 3, Action: action, HeadRef: head, HeadSHA: "f0f0", Fork: "eve/r"}}
	}
	tests := []struct {
		name    string
		files   []string
		in      []queue.IntakePayload
		effects []string
	}{
		{"spec changes, opened then reopened", []string{"specs/login/tasks.md", "main.go"},
			[]queue.IntakePayload{fork("opened", "spec"), fork("reopened", "spec")},
			[]string{"comment #3: This pull request comes from the fork `eve/r` and changes plan files Akira can run (`specs/login/tasks.md`). Akira does not run a fork's work by itself."}},
		{"a fork's branch named like Akira's", []string{"ROADMAP.md"}, []queue.IntakePayload{fork("opened", "akira/issue-2")},
			[]string{"comment #3: This pull request comes from the fork `eve/r` and changes plan files Akira can run (`ROADMAP.md`). Akira does not run a fork's work by itself."}},
		{"code only", []string{"main.go"}, []queue.IntakePayload{fork("opened", "spec")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.PullFiles[3] = tt.files
			for _, in := range tt.in {
				if err := jh.intake(in); err != nil {
					t.Fatal(err)
				}
			}
			if runs := queued[queue.RunPayload](jh, queue.TypeRun); len(runs) != 0 {
				t.Errorf("runs queued for a fork's pull request: %+v", runs)
			}
			if got := jh.gh.Effects(); !slices.Equal(got, tt.effects) {
				t.Errorf("effects on GitHub = %q, want %q", got, tt.effects)
			}
		})
	}
}

// A push to a branch marks the branches of Akira's runs standing on it (their next job merges it) and
// starts a run only on the default branch: a push to another branch marks and starts nothing else.
func TestIntakePushMarksTheBranchesOnItsBase(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	for _, b := range []struct{ base, branch string }{{"main", "akira/issue-1"}, {"release", "akira/pr-7"}} {
		if err := jh.store.WatchBase(ctx, "o", "r", b.base, b.branch); err != nil {
			t.Fatal(err)
		}
	}
	push := func(branch, after string, changed ...string) {
		t.Helper()
		if err := jh.intake(queue.IntakePayload{Event: queue.EventPush, Body: &queue.PushIntake{Branch: branch, After: after, Changed: changed}}); err != nil {
			t.Fatal(err)
		}
	}
	marks := func() []string {
		var out []string
		for _, b := range []string{"akira/issue-1", "akira/pr-7"} {
			m, err := jh.store.BaseMark(ctx, "o", "r", b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b+"="+m)
		}
		return out
	}
	push("release", "r1", "ROADMAP.md")
	if got, want := marks(), []string{"akira/issue-1=", "akira/pr-7=r1"}; !slices.Equal(got, want) {
		t.Fatalf("marks after a push to release = %v, want %v", got, want)
	}
	if runs := queued[queue.RunPayload](jh, queue.TypeRun); len(runs) != 0 {
		t.Fatalf("a push to release queued runs %+v (only the default branch's roadmap starts one)", runs)
	}
	push("main", "m1", "README.md")
	if got, want := marks(), []string{"akira/issue-1=m1", "akira/pr-7=r1"}; !slices.Equal(got, want) {
		t.Fatalf("marks after a push to main = %v, want %v", got, want)
	}
	if effects := jh.gh.Effects(); len(effects) != 0 {
		t.Errorf("effects on GitHub = %q, want none", effects)
	}
}

func TestIntakeCheckRunButtons(t *testing.T) {
	button := func(sender string) queue.IntakePayload {
		return queue.IntakePayload{TaskHeader: queue.TaskHeader{Sender: sender}, Event: queue.EventCheckRun,
			Body: &queue.CheckRunIntake{ID: 1, RunID: "run1", TaskID: "1.2", Decision: runner.DecisionSkip, Number: 5}}
	}
	jh := newJobsHarness(t)
	jh.gh.Permissions["alice"] = "write"
	if err := jh.intake(button("alice")); err != nil {
		t.Fatal(err)
	}
	if err := jh.intake(button("rita")); err != nil {
		t.Fatal(err)
	}
	resumes := queued[queue.ResumePayload](jh, queue.TypeResume)
	if len(resumes) != 1 || resumes[0].RunID != "run1" || resumes[0].TaskID != "1.2" || resumes[0].Decision != runner.DecisionSkip || !resumes[0].ByButton {
		t.Fatalf("resumes = %+v", resumes)
	}
	if c := jh.gh.CommentsOn(5); len(c) != 1 || !strings.Contains(c[0], "@rita") {
		t.Fatalf("comments = %q, want one refusal", c)
	}
}

func TestIntakePayloadValidate(t *testing.T) {
	good := withDefaults(comment("a", "/akira run", 1))
	good.DeliveryID = "d"
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*queue.IntakePayload)
		want string
	}{
		{"no body", func(p *queue.IntakePayload) { p.Body = nil }, "0 event bodies"},
		{"two bodies", func(p *queue.IntakePayload) { addBody(t, p, "push", `{"branch":"main"}`) }, "2 event bodies"},
		{"wrong body", func(p *queue.IntakePayload) { p.Event = queue.EventPush }, "event push without its body"},
		{"unknown event", func(p *queue.IntakePayload) { p.Event = "fork" }, `unknown event "fork"`},
		{"comment without id", func(p *queue.IntakePayload) { p.Body.(*queue.CommentIntake).ID = 0 }, "comment without an id"},
		{"no delivery", func(p *queue.IntakePayload) { p.DeliveryID = "" }, "no delivery id"},
		{"old version", func(p *queue.IntakePayload) { p.Version = 1 }, "version 1, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			c := *good.Body.(*queue.CommentIntake)
			p.Body = &c
			tt.edit(&p)
			if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
	task := asynq.NewTask(queue.TypeIntake, []byte(`{"v":2}`))
	if _, err := queue.DecodeIntakePayload(task); !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("decode of an invalid payload = %v, want SkipRetry", err)
	}
}

// addBody gives p's JSON a second event body under key, as a malformed task payload would have it.
func addBody(t *testing.T, p *queue.IntakePayload, key, body string) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data[:len(data)-1], `,"`+key+`":`+body+`}`...)
	if err := json.Unmarshal(data, p); err != nil {
		t.Fatal(err)
	}
}

// TestIntakeUnknownRepositoryIsNotRetried: a delivery naming a repository GitHub does not know (a 404)
// is dropped for good, never retried as if GitHub were down.
func TestIntakeUnknownRepositoryIsNotRetried(t *testing.T) {
	jh := newJobsHarness(t)
	jh.gh.Fail["Permission"] = fmt.Errorf("get permission: %w", ports.ErrGitHubNotFound)
	err := jh.intake(comment("alice", "/akira run", 4))
	if !errors.Is(err, asynq.SkipRetry) || !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("intake = %v, want a not-found error that asynq does not retry", err)
	}
	if effects := jh.gh.Effects(); len(effects) != 0 {
		t.Fatalf("effects = %q, want none", effects)
	}
}
