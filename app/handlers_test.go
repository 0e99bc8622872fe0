package app

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
)

const roadmap = "# Roadmap\n\n- [ ] T1 Add the thing\n"

// newWorld is a repository acme/widgets with the app installed.
func newWorld(t *testing.T, opts ...harnessOption) (*harness, githubtest.Repo) {
	t.Helper()
	h := newHarness(t, opts...)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n", "ROADMAP.md": roadmap})
	return h, repo
}

// botComments are the comments the app posted on an issue.
func (h *harness) botComments(repo githubtest.Repo, number int) []string {
	var out []string
	for _, c := range h.gh.Comments(repo.Owner, repo.Name, number) {
		if c.User == h.gh.BotLogin() {
			out = append(out, c.Body)
		}
	}
	return out
}

// lastIntake is the intake task the last delivery enqueued, with the fields every delivery has checked.
func (h *harness) lastIntake(repo githubtest.Repo, event, sender string) queue.IntakePayload {
	h.t.Helper()
	all := h.enq.enqueued()
	if len(all) == 0 {
		h.t.Fatal("nothing enqueued")
	}
	p := all[len(all)-1]
	if p.Event != event || p.InstallationID != repo.InstallationID || p.Owner != repo.Owner || p.Repo != repo.Name ||
		p.DefaultBranch != repo.DefaultBranch || p.Sender != sender || p.DeliveryID == "" ||
		p.RepoURL != "https://github.com/"+repo.FullName() {
		h.t.Fatalf("intake = %+v", p)
	}
	return p
}

func TestCommentsEnqueued(t *testing.T) {
	h, repo := newWorld(t)
	// Whoever writes a command, and whatever it is, the edge only hands it on: the permission check,
	// replies and the run itself happen in the intake job.
	for _, body := range []string{"/akira run", "/akira run docs/plan.md", "/akira retry use v2\nand keep Foo", "/akira approve",
		"/akira status", "/akira help", "/akira aprove", "Thanks!\n\n/akira skip"} {
		t.Run(body, func(t *testing.T) {
			got := h.send("issue_comment", issueCommentJSON(repo, 1, false, 77, "rita", body))
			expect(t, got, http.StatusAccepted, resultAccepted)
			p := h.lastIntake(repo, queue.EventIssueComment, "rita")
			want := &queue.CommentIntake{ID: 77, Number: 1, Author: "rita", Body: body, CreatedAt: mustTime(t, commentCreatedAt)}
			if !reflect.DeepEqual(bodyOf[queue.CommentIntake](p), want) || bodyOf[queue.PushIntake](p) != nil || bodyOf[queue.PullRequestIntake](p) != nil || bodyOf[queue.CheckRunIntake](p) != nil {
				t.Fatalf("intake = %+v, comment %+v", p, bodyOf[queue.CommentIntake](p))
			}
		})
	}
	t.Run("on a pull request", func(t *testing.T) {
		expect(t, h.send("issue_comment", issueCommentJSON(repo, 2, true, 78, "alice", "/akira run")), http.StatusAccepted, resultAccepted)
		if p := h.lastIntake(repo, queue.EventIssueComment, "alice"); !bodyOf[queue.CommentIntake](p).OnPullRequest || bodyOf[queue.CommentIntake](p).Number != 2 {
			t.Fatalf("comment = %+v", bodyOf[queue.CommentIntake](p))
		}
	})
	if got := h.botComments(repo, 1); len(got) != 0 {
		t.Fatalf("the edge commented: %q", got)
	}
}

func TestCommentsDropped(t *testing.T) {
	h, repo := newWorld(t)
	edited := issueCommentJSON(repo, 1, false, 1, "alice", "/akira run")
	edited["action"] = "edited"
	botSender := issueCommentJSON(repo, 1, false, 1, "alice", "/akira run")
	botSender["sender"] = userJSON("renovate[bot]")
	noInstallation := issueCommentJSON(repo, 1, false, 1, "alice", "/akira run")
	delete(noInstallation, "installation")
	for _, tt := range []struct {
		name    string
		payload map[string]any
		reason  string
	}{
		{"no command", issueCommentJSON(repo, 1, false, 1, "alice", "LGTM, thanks!"), "no command in comment"},
		{"quoted command", issueCommentJSON(repo, 1, false, 1, "alice", "> /akira abort\nno"), "no command in comment"},
		{"command in a code block", issueCommentJSON(repo, 1, false, 1, "alice", "```\n/akira abort\n```"), "no command in comment"},
		{"edited", edited, "comment edited"},
		{"Akira itself", issueCommentJSON(repo, 1, false, 1, h.gh.BotLogin(), "/akira run"), "comment by a bot"},
		{"another bot", issueCommentJSON(repo, 1, false, 1, "dependabot[bot]", "/akira run"), "comment by a bot"},
		{"a bot sent it", botSender, "comment by a bot"},
		{"no installation", noInstallation, "no installation or repository in the payload"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := h.send("issue_comment", tt.payload)
			expect(t, got, http.StatusOK, resultIgnored)
			if got.Reason != tt.reason {
				t.Fatalf("reason = %q, want %q", got.Reason, tt.reason)
			}
		})
	}
	if got := h.enq.enqueued(); len(got) != 0 {
		t.Fatalf("enqueued %+v", got)
	}
}

func TestPushes(t *testing.T) {
	h, repo := newWorld(t)
	sha := strings.Repeat("a", 40)
	var many []map[string]any
	for range 20 {
		many = append(many, commitJSON("c", nil, []string{"main.go"}))
	}
	deleted := pushJSON(repo, "refs/heads/main", sha, "alice")
	deleted["deleted"] = true
	for _, tt := range []struct {
		name    string
		payload map[string]any
		reason  string
		want    *queue.PushIntake
	}{
		{"changes the roadmap", pushJSON(repo, "refs/heads/main", sha, "alice", commitJSON("c1", []string{"docs/a.md"}, nil),
			commitJSON("c2", nil, []string{"ROADMAP.md"})), "",
			&queue.PushIntake{Branch: "main", After: sha, Changed: []string{"docs/a.md", "ROADMAP.md"}}},
		{"twenty commits may hide a change", pushJSON(repo, "refs/heads/main", sha, "alice", many...), "",
			&queue.PushIntake{Branch: "main", After: sha, Changed: []string{"main.go"}, Truncated: true}},
		// Another branch may be the base of Akira's runs: the intake marks them.
		{"another branch", pushJSON(repo, "refs/heads/release", sha, "alice", commitJSON("c", nil, []string{"main.go"})), "",
			&queue.PushIntake{Branch: "release", After: sha, Changed: []string{"main.go"}}},
		{"a tag", pushJSON(repo, "refs/tags/v1", sha, "alice"), "push to refs/tags/v1 is not to a branch", nil},
		{"deleted", deleted, "branch deleted", nil},
		{"by Akira", pushJSON(repo, "refs/heads/main", sha, h.gh.BotLogin()), "push by a bot", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.enq.enqueued())
			got := h.send("push", tt.payload)
			if tt.want == nil {
				expect(t, got, http.StatusOK, resultIgnored)
				if got.Reason != tt.reason || len(h.enq.enqueued()) != before {
					t.Fatalf("answer %s, enqueued %d", got, len(h.enq.enqueued())-before)
				}
				return
			}
			expect(t, got, http.StatusAccepted, resultAccepted)
			if p := h.lastIntake(repo, queue.EventPush, "alice"); !reflect.DeepEqual(bodyOf[queue.PushIntake](p), tt.want) {
				t.Fatalf("push = %+v, want %+v", bodyOf[queue.PushIntake](p), tt.want)
			}
		})
	}
}

func TestPullRequests(t *testing.T) {
	h, repo := newWorld(t)
	fork := repoJSON(githubtest.Repo{Owner: "mallory", Name: "widgets", DefaultBranch: "main"})
	pr := githubtest.PullRequest{Number: 3, Title: "Spec", Head: "spec", Base: "main", User: "alice"}
	head := strings.Repeat("e", 40)
	for _, tt := range []struct {
		name     string
		payload  map[string]any
		reason   string
		accepted bool
		// fork is the head repository an accepted fork's pull request names.
		fork string
	}{
		{"opened", pullRequestJSON(repo, "opened", pr, head, "alice", nil), "", true, ""},
		{"synchronize", pullRequestJSON(repo, "synchronize", pr, head, "alice", nil), "", true, ""},
		{"reopened", pullRequestJSON(repo, "reopened", pr, head, "alice", nil), "", true, ""},
		// Closed (or merged): the intake stops the pull request's run, if one still works.
		{"closed", pullRequestJSON(repo, "closed", pr, head, "alice", nil), "", true, ""},
		{"edited", pullRequestJSON(repo, "edited", pr, head, "alice", nil), "pull request edited", false, ""},
		{"Akira's own closed by a person", func() map[string]any {
			m := pullRequestJSON(repo, "closed", pr, head, "alice", nil)
			m["pull_request"].(map[string]any)["user"] = userJSON("akira-test[bot]")
			return m
		}(), "", true, ""},
		{"closed by a bot", pullRequestJSON(repo, "closed", pr, head, "renovate[bot]", nil), "pull request by a bot", false, ""},
		// A fork's pull request is never run by itself: opened, the intake says how a writer runs it;
		// every head is handed on so that the intake knows when GitHub showed it.
		{"opened from a fork", pullRequestJSON(repo, "opened", pr, head, "mallory", fork), "", true, "mallory/widgets"},
		{"reopened from a fork", pullRequestJSON(repo, "reopened", pr, head, "mallory", fork), "", true, "mallory/widgets"},
		{"pushed to from a fork", pullRequestJSON(repo, "synchronize", pr, head, "mallory", fork), "", true, "mallory/widgets"},
		{"head repository deleted", func() map[string]any {
			m := pullRequestJSON(repo, "opened", pr, head, "alice", nil)
			m["pull_request"].(map[string]any)["head"].(map[string]any)["repo"] = nil
			return m
		}(), "fork pull requests are never run", false, ""},
		{"by a bot", pullRequestJSON(repo, "opened", pr, head, "renovate[bot]", nil), "pull request by a bot", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.enq.enqueued())
			got := h.send("pull_request", tt.payload)
			if !tt.accepted {
				expect(t, got, http.StatusOK, resultIgnored)
				if got.Reason != tt.reason || len(h.enq.enqueued()) != before {
					t.Fatalf("answer %s", got)
				}
				return
			}
			expect(t, got, http.StatusAccepted, resultAccepted)
			p := h.lastIntake(repo, queue.EventPullRequest, tt.payload["sender"].(map[string]any)["login"].(string))
			want := &queue.PullRequestIntake{Number: 3, Action: tt.payload["action"].(string), HeadRef: "spec", HeadSHA: head, Fork: tt.fork,
				UpdatedAt: mustTime(t, pullRequestUpdatedAt)}
			if !reflect.DeepEqual(bodyOf[queue.PullRequestIntake](p), want) {
				t.Fatalf("pull request = %+v, want %+v", bodyOf[queue.PullRequestIntake](p), want)
			}
		})
	}
}

func TestCheckRuns(t *testing.T) {
	h, repo := newWorld(t)
	appID := h.gh.AppID()
	for _, tt := range []struct {
		name     string
		payload  map[string]any
		reason   string
		decision runner.DecisionKind
	}{
		{"approve button", checkRunJSON(repo, "requested_action", appID, "run1/1.2", 5, "alice", "approve"), "", runner.DecisionApprove},
		{"skip button", checkRunJSON(repo, "requested_action", appID, "run1/1.2", 5, "alice", "skip"), "", runner.DecisionSkip},
		{"re-run", checkRunJSON(repo, "rerequested", appID, "run1/1.2", 5, "alice", ""), "", runner.DecisionRetry},
		{"unknown button", checkRunJSON(repo, "requested_action", appID, "run1/1.2", 5, "alice", "merge"), "unknown check run action merge", ""},
		{"another app", checkRunJSON(repo, "requested_action", appID+1, "run1/1.2", 5, "alice", "approve"), "check run of another app", ""},
		{"not a task", checkRunJSON(repo, "requested_action", appID, "lint", 5, "alice", "approve"), "check run is not an Akira task", ""},
		{"completed", checkRunJSON(repo, "completed", appID, "run1/1.2", 5, "alice", ""), "check run completed", ""},
		{"by a bot", checkRunJSON(repo, "rerequested", appID, "run1/1.2", 5, "ci[bot]", ""), "check run action by a bot", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.enq.enqueued())
			got := h.send("check_run", tt.payload)
			if tt.decision == "" {
				expect(t, got, http.StatusOK, resultIgnored)
				if got.Reason != tt.reason || len(h.enq.enqueued()) != before {
					t.Fatalf("answer %s", got)
				}
				return
			}
			expect(t, got, http.StatusAccepted, resultAccepted)
			p := h.lastIntake(repo, queue.EventCheckRun, "alice")
			want := &queue.CheckRunIntake{ID: 424242, RunID: "run1", TaskID: "1.2", Decision: tt.decision, Number: 5,
				Rerequested: tt.payload["action"] == "rerequested"}
			if !reflect.DeepEqual(bodyOf[queue.CheckRunIntake](p), want) {
				t.Fatalf("check run = %+v, want %+v", bodyOf[queue.CheckRunIntake](p), want)
			}
		})
	}
}

func TestEnqueueFailures(t *testing.T) {
	h, repo := newWorld(t)
	body := issueCommentJSON(repo, 1, false, 9, "alice", "/akira run")

	h.enq.set(func(r *recordingEnqueuer) { r.err = errors.New("dial tcp 127.0.0.1:6379: connection refused") })
	got := h.send("issue_comment", body)
	expect(t, got, http.StatusServiceUnavailable, resultUnavailable)

	h.enq.set(func(r *recordingEnqueuer) { r.err = queue.ErrDuplicate })
	got = h.send("issue_comment", body)
	expect(t, got, http.StatusAccepted, resultAccepted)
	if got.Reason != "already enqueued" {
		t.Fatalf("reason = %q", got.Reason)
	}
}

// bodyOf is the intake's event body when it is a T, else nil.
func bodyOf[T any](p queue.IntakePayload) *T {
	b, _ := any(p.Body).(*T)
	return b
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
