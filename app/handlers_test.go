package app

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/app/githubtest"
)

const roadmap = "# Roadmap\n\n- [ ] T1 Add the thing\n"

// newWorld is a repository acme/widgets with the app installed, a roadmap, and issue #1.
func newWorld(t *testing.T, opts ...harnessOption) (*harness, githubtest.Repo) {
	t.Helper()
	h := newHarness(t, opts...)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"README.md": "hi\n", "ROADMAP.md": roadmap})
	h.gh.AddIssue("acme", "widgets", githubtest.Issue{Title: "Add a thing", Body: "- [ ] do it"})
	return h, repo
}

// comment posts a comment on the fake, as a person would, then delivers its issue_comment webhook.
func (h *harness) comment(repo githubtest.Repo, number int, isPR bool, author, body string) (response, githubtest.Comment) {
	h.t.Helper()
	c := h.gh.AddComment(repo.Owner, repo.Name, number, author, body)
	h.gh.ResetRequests()
	return h.send("issue_comment", issueCommentJSON(repo, number, isPR, c.ID, author, body)), c
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

// reactions are the reactions on a comment, as "content by user".
func (h *harness) reactions(id int64) []string {
	c, ok := h.gh.Comment(id)
	if !ok {
		h.t.Fatalf("no comment %d", id)
	}
	var out []string
	for _, r := range c.Reactions {
		out = append(out, r.Content+" by "+r.User)
	}
	return out
}

func (h *harness) expectNothingEnqueued() {
	h.t.Helper()
	if runs, resumes := h.enq.enqueued(); len(runs)+len(resumes) != 0 {
		h.t.Fatalf("enqueued runs %+v resumes %+v", runs, resumes)
	}
}

func TestCommandPermissionLevels(t *testing.T) {
	h, repo := newWorld(t)
	for _, tt := range []struct {
		role    string
		allowed bool
	}{
		{"admin", true}, {"maintain", true}, {"write", true},
		{"triage", false}, {"read", false}, {"none", false},
	} {
		t.Run(tt.role, func(t *testing.T) {
			user := "user-" + tt.role
			h.gh.SetPermission("acme", "widgets", user, tt.role)
			_, resumesBefore := h.enq.enqueued()
			commentsBefore := len(h.botComments(repo, 1))

			got, c := h.comment(repo, 1, false, user, "Tried it locally.\n/akira approve")

			permURL := "GET /repos/acme/widgets/collaborators/" + user + "/permission"
			if calls := h.apiCalls(); !slices.Contains(calls, permURL) {
				t.Fatalf("permission not asked through the API; calls: %v", calls)
			}
			_, resumes := h.enq.enqueued()
			newComments := h.botComments(repo, 1)[commentsBefore:]
			if tt.allowed {
				expect(t, got, http.StatusAccepted, resultAccepted)
				if len(resumes) != len(resumesBefore)+1 {
					t.Fatalf("resumes = %+v", resumes)
				}
				r := resumes[len(resumes)-1]
				want := ResumeRequest{DeliveryID: r.DeliveryID, Source: SourceComment, CommentID: c.ID,
					InstallationID: repo.InstallationID, Owner: "acme", Repo: "widgets", Number: 1,
					Decision: DecisionApprove, Sender: user}
				if r != want || r.DeliveryID == "" {
					t.Fatalf("resume = %+v, want %+v", r, want)
				}
				if got := h.reactions(c.ID); !slices.Equal(got, []string{"eyes by " + h.gh.BotLogin()}) {
					t.Fatalf("reactions = %v", got)
				}
				if len(newComments) != 0 {
					t.Fatalf("unexpected replies: %q", newComments)
				}
				return
			}
			expect(t, got, http.StatusOK, resultRefused)
			if len(resumes) != len(resumesBefore) {
				t.Fatalf("a refused command was enqueued: %+v", resumes)
			}
			if len(newComments) != 1 || !strings.Contains(newComments[0], "@"+user) ||
				!strings.Contains(newComments[0], "/akira approve") || !strings.Contains(newComments[0], "**"+tt.role+"**") {
				t.Fatalf("refusal = %q", newComments)
			}
			if got := h.reactions(c.ID); len(got) != 0 {
				t.Fatalf("a refused command got reactions %v", got)
			}
		})
	}
	if runs, _ := h.enq.enqueued(); len(runs) != 0 {
		t.Fatalf("runs enqueued: %+v", runs)
	}
}

func TestCommandAllowlist(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{
		"ROADMAP.md":        roadmap,
		".github/akira.yml": "allowlist:\n  - \"@Reader-Friend\"\n",
	})
	h.gh.AddIssue("acme", "widgets", githubtest.Issue{Title: "x"})
	h.gh.SetPermission("acme", "widgets", "reader-friend", "read")
	h.gh.SetPermission("acme", "widgets", "stranger", "read")

	got, c := h.comment(repo, 1, false, "reader-friend", "/akira skip")
	expect(t, got, http.StatusAccepted, resultAccepted)
	if _, resumes := h.enq.enqueued(); len(resumes) != 1 || resumes[0].Decision != DecisionSkip || resumes[0].CommentID != c.ID {
		t.Fatalf("resumes = %+v", resumes)
	}

	got, _ = h.comment(repo, 1, false, "stranger", "/akira skip")
	expect(t, got, http.StatusOK, resultRefused)
	if _, resumes := h.enq.enqueued(); len(resumes) != 1 {
		t.Fatalf("resumes = %+v", resumes)
	}
	if calls := h.apiCalls(); !slices.Contains(calls, "GET /repos/acme/widgets/contents/.github/akira.yml") {
		t.Fatalf("allowlist not read from the default branch; calls: %v", calls)
	}
}

func TestCommandsRouted(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "write")

	t.Run("run on an issue", func(t *testing.T) {
		got, c := h.comment(repo, 1, false, "alice", "/akira run")
		expect(t, got, http.StatusAccepted, resultAccepted)
		runs, _ := h.enq.enqueued()
		r := runs[len(runs)-1]
		want := RunRequest{DeliveryID: r.DeliveryID, InstallationID: repo.InstallationID, Owner: "acme", Repo: "widgets",
			DefaultBranch: "main", Trigger: TriggerIssueComment, IssueNumber: 1, CommentID: c.ID, Sender: "alice"}
		if r != want {
			t.Fatalf("run = %+v, want %+v", r, want)
		}
		if got := h.reactions(c.ID); len(got) != 1 || got[0] != "eyes by "+h.gh.BotLogin() {
			t.Fatalf("reactions = %v", got)
		}
	})

	t.Run("run with a path", func(t *testing.T) {
		got, _ := h.comment(repo, 1, false, "alice", "/akira run docs/plan.md")
		expect(t, got, http.StatusAccepted, resultAccepted)
		runs, _ := h.enq.enqueued()
		if r := runs[len(runs)-1]; r.Path != "docs/plan.md" || r.Trigger != TriggerIssueComment {
			t.Fatalf("run = %+v", r)
		}
	})

	t.Run("retry with guidance over several lines", func(t *testing.T) {
		got, c := h.comment(repo, 1, false, "alice", "/akira retry use the v2 client\nand keep `Foo` exported")
		expect(t, got, http.StatusAccepted, resultAccepted)
		_, resumes := h.enq.enqueued()
		r := resumes[len(resumes)-1]
		if r.Decision != DecisionRetry || r.Guidance != "use the v2 client\nand keep `Foo` exported" || r.CommentID != c.ID {
			t.Fatalf("resume = %+v", r)
		}
	})

	for _, cmd := range []CommandName{CmdSkip, CmdAbort, CmdApprove} {
		t.Run(string(cmd), func(t *testing.T) {
			got, _ := h.comment(repo, 1, false, "alice", "/akira "+string(cmd))
			expect(t, got, http.StatusAccepted, resultAccepted)
			_, resumes := h.enq.enqueued()
			if r := resumes[len(resumes)-1]; r.Decision != Decision(cmd) || r.Source != SourceComment {
				t.Fatalf("resume = %+v", r)
			}
		})
	}

	t.Run("status is answered at once", func(t *testing.T) {
		runsBefore, resumesBefore := h.enq.enqueued()
		got, c := h.comment(repo, 1, false, "alice", "/akira status")
		expect(t, got, http.StatusOK, resultReplied)
		replies := h.botComments(repo, 1)
		if replies[len(replies)-1] != "Akira run `r1` is **running**." {
			t.Fatalf("replies = %q", replies)
		}
		if len(h.reactions(c.ID)) != 1 {
			t.Fatalf("status not acknowledged")
		}
		runs, resumes := h.enq.enqueued()
		if len(runs) != len(runsBefore) || len(resumes) != len(resumesBefore) {
			t.Fatal("status enqueued work")
		}
	})

	t.Run("help is a reply", func(t *testing.T) {
		runsBefore, resumesBefore := h.enq.enqueued()
		got, c := h.comment(repo, 1, false, "alice", "/akira help")
		expect(t, got, http.StatusOK, resultReplied)
		replies := h.botComments(repo, 1)
		if !strings.Contains(replies[len(replies)-1], "/akira retry") {
			t.Fatalf("help = %q", replies[len(replies)-1])
		}
		if len(h.reactions(c.ID)) != 0 {
			t.Fatal("help got a reaction")
		}
		runs, resumes := h.enq.enqueued()
		if len(runs) != len(runsBefore) || len(resumes) != len(resumesBefore) {
			t.Fatal("help enqueued work")
		}
	})

	t.Run("did you mean", func(t *testing.T) {
		got, _ := h.comment(repo, 1, false, "alice", "/akira aprove")
		expect(t, got, http.StatusOK, resultReplied)
		replies := h.botComments(repo, 1)
		if !strings.Contains(replies[len(replies)-1], "Did you mean `/akira approve`?") {
			t.Fatalf("reply = %q", replies[len(replies)-1])
		}
	})
}

func TestCommandsIgnored(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "admin")
	for _, tt := range []struct {
		name    string
		payload func() map[string]any
	}{
		{"no command", func() map[string]any { return issueCommentJSON(repo, 1, false, 1, "alice", "LGTM, thanks!") }},
		{"quoted command", func() map[string]any {
			return issueCommentJSON(repo, 1, false, 1, "alice", "> /akira abort\n\nnot yet")
		}},
		{"command in code block", func() map[string]any {
			return issueCommentJSON(repo, 1, false, 1, "alice", "```\n/akira abort\n```")
		}},
		{"edited", func() map[string]any {
			m := issueCommentJSON(repo, 1, false, 1, "alice", "/akira abort")
			m["action"] = "edited"
			return m
		}},
		{"deleted", func() map[string]any {
			m := issueCommentJSON(repo, 1, false, 1, "alice", "/akira abort")
			m["action"] = "deleted"
			return m
		}},
		{"by Akira", func() map[string]any {
			return issueCommentJSON(repo, 1, false, 1, h.gh.BotLogin(), "Reply `/akira approve`\n/akira approve")
		}},
		{"by another bot", func() map[string]any { return issueCommentJSON(repo, 1, false, 1, "dependabot[bot]", "/akira run") }},
		{"by a bot account typed Bot", func() map[string]any {
			m := issueCommentJSON(repo, 1, false, 1, "ci-robot", "/akira run")
			m["comment"].(map[string]any)["user"] = map[string]any{"login": "ci-robot", "type": "Bot"}
			m["sender"] = map[string]any{"login": "ci-robot", "type": "Bot"}
			return m
		}},
		{"no installation", func() map[string]any {
			m := issueCommentJSON(repo, 1, false, 1, "alice", "/akira run")
			delete(m, "installation")
			return m
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.gh.ResetRequests()
			expect(t, h.send("issue_comment", tt.payload()), http.StatusOK, resultIgnored)
			if calls := h.apiCalls(); len(calls) != 0 {
				t.Fatalf("GitHub was called: %v", calls)
			}
		})
	}
	h.expectNothingEnqueued()
	if got := h.botComments(repo, 1); len(got) != 0 {
		t.Fatalf("replies: %q", got)
	}
}

func TestCommandRefusedForEveryKindOfAnswer(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "rita", "read")
	for _, body := range []string{"/akira run", "/akira retry try harder", "/akira status", "/akira help", "/akira aprove"} {
		got, c := h.comment(repo, 1, false, "rita", body)
		expect(t, got, http.StatusOK, resultRefused)
		if len(h.reactions(c.ID)) != 0 {
			t.Fatalf("%q: refused command got a reaction", body)
		}
	}
	h.expectNothingEnqueued()
	replies := h.botComments(repo, 1)
	if len(replies) != 5 {
		t.Fatalf("replies = %q", replies)
	}
	for _, r := range replies {
		if !strings.Contains(r, "Sorry @rita") {
			t.Fatalf("reply is not a refusal: %q", r)
		}
	}
	h.enq.mu.Lock()
	defer h.enq.mu.Unlock()
	if len(h.enq.statusAsks) != 0 {
		t.Fatalf("status read for a refused user: %v", h.enq.statusAsks)
	}
}

func TestRunOnPullRequest(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "write")
	sha := h.gh.PushCommit("acme", "widgets", githubtest.Push{Branch: "feature", Files: map[string]string{"x.go": "package x\n"}})
	pr := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Feature", Head: "feature", User: "alice"})

	got, _ := h.comment(repo, pr.Number, true, "alice", "/akira run")
	expect(t, got, http.StatusAccepted, resultAccepted)
	runs, _ := h.enq.enqueued()
	if len(runs) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	if r := runs[0]; r.PRNumber != pr.Number || r.IssueNumber != pr.Number || r.Branch != "feature" || r.HeadSHA != sha {
		t.Fatalf("run = %+v", r)
	}

	t.Run("from a fork", func(t *testing.T) {
		h.gh.Fork("acme", "widgets", "mallory")
		h.gh.PushCommit("mallory", "widgets", githubtest.Push{Branch: "evil", Files: map[string]string{"ROADMAP.md": "- [ ] T9 curl | sh\n"}})
		fork := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Evil", Head: "evil", HeadRepo: "mallory/widgets", User: "mallory"})
		got, c := h.comment(repo, fork.Number, true, "alice", "/akira run")
		expect(t, got, http.StatusOK, resultRefused)
		if runs, _ := h.enq.enqueued(); len(runs) != 1 {
			t.Fatalf("a fork's run was enqueued: %+v", runs)
		}
		replies := h.botComments(repo, fork.Number)
		if len(replies) != 1 || !strings.Contains(replies[0], "forks") {
			t.Fatalf("replies = %q", replies)
		}
		if len(h.reactions(c.ID)) != 0 {
			t.Fatal("refused run got a reaction")
		}
	})
}

func TestRunWithBadRepoConfig(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{
		"ROADMAP.md":        roadmap,
		".github/akira.yml": "max_attempts: 99\nroadmpa: x.md\n",
	})
	h.gh.AddIssue("acme", "widgets", githubtest.Issue{Title: "x"})
	h.gh.SetPermission("acme", "widgets", "alice", "write")

	got, _ := h.comment(repo, 1, false, "alice", "/akira run")
	expect(t, got, http.StatusOK, resultReplied)
	h.expectNothingEnqueued()
	replies := h.botComments(repo, 1)
	if len(replies) != 1 || !strings.Contains(replies[0], "roadmpa") || !strings.Contains(replies[0], ".github/akira.yml") ||
		!strings.Contains(replies[0], "https://github.com/acme/widgets/blob/main/.github/akira.yml") {
		t.Fatalf("replies = %q", replies)
	}

	// Steering a run needs no configuration, so a broken file does not block it.
	got, _ = h.comment(repo, 1, false, "alice", "/akira approve")
	expect(t, got, http.StatusAccepted, resultAccepted)
}

func TestRunTriggerDisabled(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{
		"ROADMAP.md":        roadmap,
		".github/akira.yml": "triggers:\n  issue_comment: false\n  push: false\n  pull_request: false\n",
	})
	h.gh.AddIssue("acme", "widgets", githubtest.Issue{Title: "x"})
	h.gh.SetPermission("acme", "widgets", "alice", "write")

	got, _ := h.comment(repo, 1, false, "alice", "/akira run")
	expect(t, got, http.StatusOK, resultIgnored)

	sha := h.gh.PushCommit("acme", "widgets", githubtest.Push{Files: map[string]string{"ROADMAP.md": roadmap + "- [ ] T2 More\n"}})
	got = h.send("push", pushJSON(repo, "refs/heads/main", sha, "alice", commitJSON(sha, nil, []string{"ROADMAP.md"})))
	expect(t, got, http.StatusOK, resultIgnored)

	head := h.gh.PushCommit("acme", "widgets", githubtest.Push{Branch: "plan", Files: map[string]string{"ROADMAP.md": roadmap + "- [ ] T3\n"}})
	pr := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Plan", Head: "plan", User: "alice"})
	got = h.send("pull_request", pullRequestJSON(repo, "opened", pr, head, "alice", nil))
	expect(t, got, http.StatusOK, resultIgnored)

	h.expectNothingEnqueued()
}

func TestEnqueueFailures(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "write")

	t.Run("duplicate delivery is still accepted", func(t *testing.T) {
		h.enq.set(func(e *recordingEnqueuer) { e.err = fmt.Errorf("enqueue: %w", ErrDuplicate) })
		got, c := h.comment(repo, 1, false, "alice", "/akira approve")
		expect(t, got, http.StatusAccepted, resultAccepted)
		if got.Reason != "already enqueued" {
			t.Fatalf("reason = %q", got.Reason)
		}
		// The first delivery reacted already.
		if len(h.reactions(c.ID)) != 0 {
			t.Fatal("duplicate reacted again")
		}
	})

	t.Run("queue down is a 503", func(t *testing.T) {
		h.enq.set(func(e *recordingEnqueuer) { e.err = fmt.Errorf("dial tcp 127.0.0.1:6379: connection refused") })
		got, c := h.comment(repo, 1, false, "alice", "/akira run")
		expect(t, got, http.StatusServiceUnavailable, resultUnavailable)
		if len(h.reactions(c.ID)) != 0 {
			t.Fatal("a command that was not queued got a reaction")
		}
		if !strings.Contains(h.logs.String(), "connection refused") {
			t.Fatal("enqueue error not logged")
		}
	})
	h.enq.set(func(e *recordingEnqueuer) { e.err = nil })

	t.Run("GitHub down is a 503", func(t *testing.T) {
		h.gh.InjectFault(githubtest.Fault{PathPattern: "/permission", Status: http.StatusBadGateway})
		defer h.gh.ClearFaults()
		got, _ := h.comment(repo, 1, false, "alice", "/akira approve")
		expect(t, got, http.StatusServiceUnavailable, resultUnavailable)
	})

	t.Run("status store down is a 503", func(t *testing.T) {
		h.enq.set(func(e *recordingEnqueuer) { e.statusErr = fmt.Errorf("redis: timeout") })
		defer h.enq.set(func(e *recordingEnqueuer) { e.statusErr = nil })
		got, _ := h.comment(repo, 1, false, "alice", "/akira status")
		expect(t, got, http.StatusServiceUnavailable, resultUnavailable)
	})

	t.Run("a failed reaction does not fail the delivery", func(t *testing.T) {
		h.gh.InjectFault(githubtest.Fault{PathPattern: "/reactions", Status: http.StatusInternalServerError})
		defer h.gh.ClearFaults()
		got, _ := h.comment(repo, 1, false, "alice", "/akira skip")
		expect(t, got, http.StatusAccepted, resultAccepted)
	})
	h.expectNothingEnqueuedExcept(t, 0, 1)
}

// expectNothingEnqueuedExcept checks how many runs and resumes were enqueued in all.
func (h *harness) expectNothingEnqueuedExcept(t *testing.T, runs, resumes int) {
	t.Helper()
	r, s := h.enq.enqueued()
	if len(r) != runs || len(s) != resumes {
		t.Fatalf("enqueued %d runs and %d resumes, want %d and %d: %+v %+v", len(r), len(s), runs, resumes, r, s)
	}
}

func TestPush(t *testing.T) {
	h, repo := newWorld(t)
	change := func(files map[string]string) string {
		return h.gh.PushCommit("acme", "widgets", githubtest.Push{Files: files})
	}

	t.Run("roadmap changed on the default branch", func(t *testing.T) {
		sha := change(map[string]string{"ROADMAP.md": roadmap + "- [ ] T2 More\n"})
		got := h.send("push", pushJSON(repo, "refs/heads/main", sha, "alice",
			commitJSON("a1", []string{"notes.md"}, nil), commitJSON(sha, nil, []string{"ROADMAP.md"})))
		expect(t, got, http.StatusAccepted, resultAccepted)
		runs, _ := h.enq.enqueued()
		r := runs[len(runs)-1]
		want := RunRequest{DeliveryID: r.DeliveryID, InstallationID: repo.InstallationID, Owner: "acme", Repo: "widgets",
			DefaultBranch: "main", Trigger: TriggerPush, Branch: "main", HeadSHA: sha, Sender: "alice"}
		if r != want {
			t.Fatalf("run = %+v, want %+v", r, want)
		}
	})

	t.Run("roadmap added", func(t *testing.T) {
		got := h.send("push", pushJSON(repo, "refs/heads/main", "abc", "alice", commitJSON("abc", []string{"ROADMAP.md"}, nil)))
		expect(t, got, http.StatusAccepted, resultAccepted)
	})

	t.Run("a push cut at 20 commits may hide the change", func(t *testing.T) {
		var commits []map[string]any
		for i := range 20 {
			commits = append(commits, commitJSON(fmt.Sprint(i), nil, []string{"src.go"}))
		}
		got := h.send("push", pushJSON(repo, "refs/heads/main", "abc", "alice", commits...))
		expect(t, got, http.StatusAccepted, resultAccepted)
	})

	runsBefore, _ := h.enq.enqueued()
	for _, tt := range []struct {
		name    string
		payload map[string]any
	}{
		{"other files", pushJSON(repo, "refs/heads/main", "abc", "alice", commitJSON("abc", []string{"x.go"}, []string{"README.md"}))},
		{"roadmap removed", pushJSON(repo, "refs/heads/main", "abc", "alice",
			map[string]any{"id": "abc", "added": []string{}, "modified": []string{}, "removed": []string{"ROADMAP.md"}})},
		{"other branch", pushJSON(repo, "refs/heads/feature", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"}))},
		{"Akira's branch", pushJSON(repo, "refs/heads/akira/roadmap", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"}))},
		{"tag", pushJSON(repo, "refs/tags/v1.0.0", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"}))},
		{"by Akira", pushJSON(repo, "refs/heads/main", "abc", h.gh.BotLogin(), commitJSON("abc", nil, []string{"ROADMAP.md"}))},
		{"by another bot", pushJSON(repo, "refs/heads/main", "abc", "renovate[bot]", commitJSON("abc", nil, []string{"ROADMAP.md"}))},
		{"pusher is Akira, sender a person", func() map[string]any {
			m := pushJSON(repo, "refs/heads/main", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"}))
			m["pusher"] = map[string]any{"name": h.gh.BotLogin()}
			return m
		}()},
		{"branch deleted", func() map[string]any {
			m := pushJSON(repo, "refs/heads/main", strings.Repeat("0", 40), "alice")
			m["deleted"] = true
			return m
		}()},
		{"no installation", func() map[string]any {
			m := pushJSON(repo, "refs/heads/main", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"}))
			delete(m, "installation")
			return m
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, h.send("push", tt.payload), http.StatusOK, resultIgnored)
		})
	}
	if runs, _ := h.enq.enqueued(); len(runs) != len(runsBefore) {
		t.Fatalf("ignored pushes enqueued runs: %+v", runs[len(runsBefore):])
	}
}

func TestPushRoadmapFromConfig(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{
		"docs/PLAN.md":      roadmap,
		".github/akira.yml": "roadmap: docs/PLAN.md\n",
	}, githubtest.DefaultBranch("trunk"))
	got := h.send("push", pushJSON(repo, "refs/heads/trunk", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"})))
	expect(t, got, http.StatusOK, resultIgnored)
	got = h.send("push", pushJSON(repo, "refs/heads/trunk", "abc", "alice", commitJSON("abc", nil, []string{"docs/PLAN.md"})))
	expect(t, got, http.StatusAccepted, resultAccepted)
	if runs, _ := h.enq.enqueued(); len(runs) != 1 || runs[0].Branch != "trunk" {
		t.Fatalf("runs = %+v", runs)
	}
}

func TestPushWithBadConfigIsIgnored(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"ROADMAP.md": roadmap, ".github/akira.yml": "verify: [\n"})
	got := h.send("push", pushJSON(repo, "refs/heads/main", "abc", "alice", commitJSON("abc", nil, []string{"ROADMAP.md"})))
	expect(t, got, http.StatusOK, resultIgnored)
	h.expectNothingEnqueued()
}

func TestPullRequest(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "write")
	h.gh.SetPermission("acme", "widgets", "tom", "triage")

	openPR := func(branch string, files map[string]string) (githubtest.PullRequest, string) {
		sha := h.gh.PushCommit("acme", "widgets", githubtest.Push{Branch: branch, Files: files})
		return h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: branch, Head: branch, User: "alice"}), sha
	}
	roadmapPR, roadmapSHA := openPR("more-tasks", map[string]string{"ROADMAP.md": roadmap + "- [ ] T2 More\n"})
	specPR, _ := openPR("spec", map[string]string{"specs/login/tasks.md": "- [ ] S1 Login\n"})
	codePR, _ := openPR("code", map[string]string{"main.go": "package main\n"})

	for _, action := range []string{"opened", "synchronize", "reopened"} {
		t.Run(action, func(t *testing.T) {
			got := h.send("pull_request", pullRequestJSON(repo, action, roadmapPR, roadmapSHA, "alice", nil))
			expect(t, got, http.StatusAccepted, resultAccepted)
			runs, _ := h.enq.enqueued()
			r := runs[len(runs)-1]
			want := RunRequest{DeliveryID: r.DeliveryID, InstallationID: repo.InstallationID, Owner: "acme", Repo: "widgets",
				DefaultBranch: "main", Trigger: TriggerPullRequest, PRNumber: roadmapPR.Number, Branch: "more-tasks",
				HeadSHA: roadmapSHA, Sender: "alice"}
			if r != want {
				t.Fatalf("run = %+v, want %+v", r, want)
			}
		})
	}
	t.Run("spec file", func(t *testing.T) {
		expect(t, h.send("pull_request", pullRequestJSON(repo, "opened", specPR, "s", "alice", nil)), http.StatusAccepted, resultAccepted)
	})

	runsBefore, _ := h.enq.enqueued()
	t.Run("code only", func(t *testing.T) {
		expect(t, h.send("pull_request", pullRequestJSON(repo, "opened", codePR, "c", "alice", nil)), http.StatusOK, resultIgnored)
	})
	for _, action := range []string{"closed", "edited", "ready_for_review", "labeled"} {
		t.Run(action, func(t *testing.T) {
			h.gh.ResetRequests()
			expect(t, h.send("pull_request", pullRequestJSON(repo, action, roadmapPR, roadmapSHA, "alice", nil)), http.StatusOK, resultIgnored)
			if calls := h.apiCalls(); len(calls) != 0 {
				t.Fatalf("GitHub was called: %v", calls)
			}
		})
	}
	t.Run("opened by a bot", func(t *testing.T) {
		pr := roadmapPR
		pr.User = "dependabot[bot]"
		expect(t, h.send("pull_request", pullRequestJSON(repo, "opened", pr, roadmapSHA, "dependabot[bot]", nil)), http.StatusOK, resultIgnored)
	})
	t.Run("Akira's own branch", func(t *testing.T) {
		pr, sha := openPR("akira/issue-1", map[string]string{"ROADMAP.md": roadmap + "- [x] T1\n"})
		expect(t, h.send("pull_request", pullRequestJSON(repo, "synchronize", pr, sha, "alice", nil)), http.StatusOK, resultIgnored)
	})
	t.Run("reopened by someone who may not start runs", func(t *testing.T) {
		got := h.send("pull_request", pullRequestJSON(repo, "reopened", roadmapPR, roadmapSHA, "tom", nil))
		expect(t, got, http.StatusOK, resultRefused)
	})
	t.Run("no installation", func(t *testing.T) {
		m := pullRequestJSON(repo, "opened", roadmapPR, roadmapSHA, "alice", nil)
		delete(m, "installation")
		expect(t, h.send("pull_request", m), http.StatusOK, resultIgnored)
	})
	if runs, _ := h.enq.enqueued(); len(runs) != len(runsBefore) {
		t.Fatalf("ignored pull requests enqueued runs: %+v", runs[len(runsBefore):])
	}
}

// A fork's pull request is never run, whoever opens it and whatever it touches, and GitHub is not even asked.
func TestForkPullRequestNeverRuns(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "admin")
	fork := h.gh.Fork("acme", "widgets", "mallory")
	sha := h.gh.PushCommit("mallory", "widgets", githubtest.Push{Branch: "main", Files: map[string]string{"ROADMAP.md": "- [ ] T1 rm -rf /\n"}})
	pr := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Evil", Head: "main", HeadRepo: "mallory/widgets", User: "mallory"})

	for _, tt := range []struct {
		name     string
		action   string
		sender   string
		headRepo map[string]any
	}{
		{"opened", "opened", "mallory", repoJSON(fork)},
		{"synchronize", "synchronize", "mallory", repoJSON(fork)},
		{"reopened by an admin", "reopened", "alice", repoJSON(fork)},
		{"head repository deleted", "reopened", "alice", map[string]any(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.gh.ResetRequests()
			m := pullRequestJSON(repo, tt.action, pr, sha, tt.sender, tt.headRepo)
			if tt.headRepo == nil {
				m["pull_request"].(map[string]any)["head"].(map[string]any)["repo"] = nil
			}
			got := h.send("pull_request", m)
			expect(t, got, http.StatusOK, resultIgnored)
			if got.Reason != "fork pull requests are never run" {
				t.Fatalf("reason = %q", got.Reason)
			}
			if calls := h.apiCalls(); len(calls) != 0 {
				t.Fatalf("GitHub was called: %v", calls)
			}
		})
	}
	h.expectNothingEnqueued()
}

func TestPullRequestWithBadConfig(t *testing.T) {
	h := newHarness(t)
	repo := h.gh.CreateRepo("acme", "widgets", map[string]string{"ROADMAP.md": roadmap, ".github/akira.yml": "max_attempts: -1\n"})
	h.gh.SetPermission("acme", "widgets", "alice", "write")
	sha := h.gh.PushCommit("acme", "widgets", githubtest.Push{Branch: "plan", Files: map[string]string{"ROADMAP.md": roadmap + "- [ ] T2\n"}})
	pr := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Plan", Head: "plan", User: "alice"})

	expect(t, h.send("pull_request", pullRequestJSON(repo, "opened", pr, sha, "alice", nil)), http.StatusOK, resultReplied)
	expect(t, h.send("pull_request", pullRequestJSON(repo, "synchronize", pr, sha, "alice", nil)), http.StatusOK, resultIgnored)
	replies := h.botComments(repo, pr.Number)
	if len(replies) != 1 || !strings.Contains(replies[0], "max_attempts") {
		t.Fatalf("replies = %q", replies)
	}
	h.expectNothingEnqueued()
}

func TestCheckRun(t *testing.T) {
	h, repo := newWorld(t)
	h.gh.SetPermission("acme", "widgets", "alice", "maintain")
	h.gh.SetPermission("acme", "widgets", "rita", "read")
	pr := h.gh.AddPullRequest("acme", "widgets", githubtest.PullRequest{Title: "Run", Head: "akira/issue-1", User: h.gh.BotLogin()})
	appID := h.gh.AppID()

	for _, tt := range []struct {
		action, identifier string
		decision           Decision
		source             ResumeSource
	}{
		{"requested_action", "approve", DecisionApprove, SourceCheckRunAction},
		{"requested_action", "retry", DecisionRetry, SourceCheckRunAction},
		{"requested_action", "skip", DecisionSkip, SourceCheckRunAction},
		{"rerequested", "", DecisionRetry, SourceCheckRunRerequested},
	} {
		t.Run(tt.action+" "+tt.identifier, func(t *testing.T) {
			got := h.send("check_run", checkRunJSON(repo, tt.action, appID, "run-7/T3", pr.Number, "alice", tt.identifier))
			expect(t, got, http.StatusAccepted, resultAccepted)
			_, resumes := h.enq.enqueued()
			r := resumes[len(resumes)-1]
			want := ResumeRequest{DeliveryID: r.DeliveryID, Source: tt.source, CheckRunID: 424242,
				InstallationID: repo.InstallationID, Owner: "acme", Repo: "widgets", Number: pr.Number,
				Decision: tt.decision, Sender: "alice", RunID: "run-7", TaskID: "T3"}
			if r != want {
				t.Fatalf("resume = %+v, want %+v", r, want)
			}
		})
	}
	t.Run("not attached to a pull request", func(t *testing.T) {
		got := h.send("check_run", checkRunJSON(repo, "requested_action", appID, "run-7/T3", 0, "alice", "skip"))
		expect(t, got, http.StatusAccepted, resultAccepted)
		if _, resumes := h.enq.enqueued(); resumes[len(resumes)-1].Number != 0 {
			t.Fatalf("resume = %+v", resumes[len(resumes)-1])
		}
	})

	_, before := h.enq.enqueued()
	for _, tt := range []struct {
		name    string
		payload map[string]any
	}{
		{"created", checkRunJSON(repo, "created", appID, "run-7/T3", pr.Number, "alice", "")},
		{"completed", checkRunJSON(repo, "completed", appID, "run-7/T3", pr.Number, "alice", "")},
		{"unknown button", checkRunJSON(repo, "requested_action", appID, "run-7/T3", pr.Number, "alice", "deploy")},
		{"another app's check run", checkRunJSON(repo, "rerequested", appID+1, "run-7/T3", pr.Number, "alice", "")},
		{"not an Akira task", checkRunJSON(repo, "rerequested", appID, "", pr.Number, "alice", "")},
		{"pressed by a bot", checkRunJSON(repo, "requested_action", appID, "run-7/T3", pr.Number, "mergify[bot]", "approve")},
		{"no app", func() map[string]any {
			m := checkRunJSON(repo, "rerequested", appID, "run-7/T3", pr.Number, "alice", "")
			delete(m["check_run"].(map[string]any), "app")
			return m
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, h.send("check_run", tt.payload), http.StatusOK, resultIgnored)
		})
	}
	t.Run("pressed by a reader", func(t *testing.T) {
		got := h.send("check_run", checkRunJSON(repo, "requested_action", appID, "run-7/T3", pr.Number, "rita", "approve"))
		expect(t, got, http.StatusOK, resultRefused)
		replies := h.botComments(repo, pr.Number)
		if len(replies) != 1 || !strings.Contains(replies[0], "@rita") || !strings.Contains(replies[0], "/akira approve") {
			t.Fatalf("replies = %q", replies)
		}
	})
	if _, after := h.enq.enqueued(); len(after) != len(before) {
		t.Fatalf("ignored check runs enqueued: %+v", after[len(before):])
	}
}
