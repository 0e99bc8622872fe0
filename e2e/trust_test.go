package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestBotAccountsAreIgnored: a sender of type Bot is ignored whatever its login: GitHub's own agents
// act as accounts such as "Copilot", without "[bot]" in the login. It has write access here, so
// nothing but being a bot stops any of these events; each is answered 200 with the reason, never
// queued.
func TestBotAccountsAreIgnored(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": roadmapV1})
	const login = "Copilot"
	e.gh.SetPermission(e.owner, e.repo, login, "write")
	e.gh.SetUserType(login, "Bot")
	bot := map[string]any{"login": login, "id": 198982749, "type": "Bot"}
	repo := e.repository()
	issue := e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Title: "Work", User: "alice", Body: "- [ ] Add a thing\n"})
	head := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "akira/bot", Files: map[string]string{"ROADMAP.md": roadmapV2}})
	pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "Plan", User: login, Head: "akira/bot"})
	prBody := map[string]any{"number": pr.Number, "user": bot,
		"head": map[string]any{"ref": "akira/bot", "sha": head, "repo": repo}, "base": map[string]any{"ref": "main", "repo": repo}}
	c := e.gh.AddComment(e.owner, e.repo, issue.Number, login, "/akira run")
	after := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "main", Files: map[string]string{"ROADMAP.md": roadmapV2}})
	tests := []struct {
		event   string
		payload map[string]any
	}{
		{"issue_comment", map[string]any{"action": "created", "issue": map[string]any{"number": issue.Number},
			"comment": map[string]any{"id": c.ID, "body": "/akira run", "user": bot}}},
		{"pull_request", map[string]any{"action": "opened", "number": pr.Number, "pull_request": prBody}},
		{"pull_request_review", map[string]any{"action": "submitted", "pull_request": prBody,
			"review": map[string]any{"id": 501, "state": "changes_requested", "body": "make it LOUDER", "user": bot}}},
		{"pull_request_review_comment", map[string]any{"action": "created", "pull_request": prBody,
			"comment": map[string]any{"id": 502, "pull_request_review_id": 501, "body": "/akira fix louder", "user": bot}}},
		{"push", map[string]any{"ref": "refs/heads/main", "after": after, "pusher": map[string]any{"name": login},
			"head_commit": map[string]any{"id": after, "added": []string{}, "modified": []string{"ROADMAP.md"}}}},
		{"check_run", map[string]any{"action": "requested_action", "requested_action": map[string]any{"identifier": "approve"},
			"check_run": map[string]any{"id": 503, "external_id": "run1/1.1", "app": map[string]any{"id": e.gh.AppID()}}}},
		{"issues", map[string]any{"action": "labeled", "issue": map[string]any{"number": issue.Number}, "label": map[string]any{"name": "akira"}}},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			e := e.sub(t)
			tt.payload["installation"], tt.payload["repository"], tt.payload["sender"] = e.installation(), repo, bot
			body := e.deliver(tt.event, "bot-"+randomHex(t, 4), tt.payload, http.StatusOK)
			if !strings.Contains(body, `"result":"ignored"`) || !strings.Contains(body, "bot") {
				t.Errorf("%s by %s (type Bot) answered %s; want ignored as a bot's", tt.event, login, body)
			}
		})
	}
}

// TestDeletedHeadRepositoryIsAFork: a pull request whose head repository was deleted (`"repo": null`
// in GitHub's answer) proves nothing about where its head lives: it is a fork's. A writer's
// `/akira run` on it is refused like one, nothing runs and nothing is pushed; its webhook is ignored.
func TestDeletedHeadRepositoryIsAFork(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": roadmapV1})
	e.gh.Fork(e.owner, e.repo, "eve")
	head := e.gh.PushCommit("eve", e.repo, githubtest.Push{Branch: "feature", Files: map[string]string{"ROADMAP.md": roadmapV2}})
	pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "Plan", User: "eve", Head: "feature", HeadRepo: "eve/" + e.repo})
	e.gh.DeleteRepo("eve", e.repo)
	branches := e.gh.Branches(e.owner, e.repo)

	repo := e.repository()
	body := e.deliver("pull_request", "pr-"+randomHex(t, 4), map[string]any{
		"action": "synchronize", "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user("eve"),
		"pull_request": map[string]any{"number": pr.Number, "user": user("eve"),
			"head": map[string]any{"ref": "feature", "sha": head, "repo": nil}, "base": map[string]any{"ref": "main", "repo": repo}},
	}, http.StatusOK)
	if !strings.Contains(body, "fork pull requests are never run") {
		t.Errorf("the pull request's webhook answered %s; want it ignored as a fork's", body)
	}

	c := e.comment(pr.Number, "alice", "/akira run", true, http.StatusAccepted)
	answered := func() []githubtest.Comment {
		var out []githubtest.Comment
		for _, cm := range e.gh.Comments(e.owner, e.repo, pr.Number) {
			if cm.ID > c.ID && cm.User == e.gh.BotLogin() {
				out = append(out, cm)
			}
		}
		return out
	}
	e.eventually("an answer to /akira run, or its run", func() bool { return len(answered()) > 0 || e.runOf(pr.Number) != nil })
	if got := answered(); len(got) != 1 || !strings.Contains(got[0].Body, "forks") {
		t.Errorf("answers to /akira run on the pull request of a deleted repository: %+v; want the fork refusal", got)
	}
	if run := e.runOf(pr.Number); run != nil {
		t.Errorf("a run was queued on the pull request of a deleted repository: %+v", run)
	}
	if got := e.gh.Branches(e.owner, e.repo); !slices.Equal(got, branches) {
		t.Errorf("branches of the repository went from %v to %v", branches, got)
	}
}

// TestConfigComesFromTheDefaultBranch: a same-repository pull request whose own .github/akira.yml
// points the roadmap elsewhere, asks for a verification that cannot pass and puts a reader on the
// allowlist changes nothing: the run does the pull request's roadmap task with the default branch's
// verification and succeeds, and the reader is refused.
func TestConfigComesFromTheDefaultBranch(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": roadmapV1,
		".github/akira.yml": "verify: [\"test -f out-1.2.txt\"]\n"})
	head := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "feature", From: "main", Message: "Plan", Files: map[string]string{
		"ROADMAP.md":        roadmapV1 + "- [ ] 1.2: Add a parser\n",
		"HEAD-PLAN.md":      "- [ ] 9.1: A task only the head's configuration names\n",
		".github/akira.yml": "roadmap: HEAD-PLAN.md\nverify: [\"test -f head-config-was-read\"]\nallowlist: [mallory]\n",
	}})
	pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "Plan the parser", User: "alice", Head: "feature", Base: "main"})
	repo := e.repository()
	e.deliver("pull_request", "pr-"+randomHex(t, 4), map[string]any{
		"action": "opened", "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user("alice"),
		"pull_request": map[string]any{"number": pr.Number, "user": user("alice"),
			"head": map[string]any{"ref": "feature", "sha": head, "repo": repo},
			"base": map[string]any{"ref": "main", "sha": e.gh.Branch(e.owner, e.repo, "main"), "repo": repo}},
	}, http.StatusAccepted)

	run := e.waitStatus(pr.Number, lifecycle.StatusSucceeded, lifecycle.StatusParked, lifecycle.StatusFailed, lifecycle.StatusAborted)
	if run.Status != lifecycle.StatusSucceeded || run.Roadmap != "ROADMAP.md" {
		t.Errorf("run %s on roadmap %q; want it to succeed on ROADMAP.md, as the default branch's configuration says", run.Status, run.Roadmap)
	}
	if got := e.taskCommits("feature"); len(got) != 1 || got["1.2"] != 1 {
		t.Errorf("checkpoints on the pull request's branch = %v; want 1.2 alone", got)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, "feature", "out-9.1.txt"); ok {
		t.Error("the task of the head's roadmap ran")
	}

	c := e.comment(pr.Number, "mallory", "/akira run", true, http.StatusAccepted)
	e.eventually("an answer to mallory", func() bool {
		cm, _ := e.gh.Comment(c.ID)
		return len(e.commentsWith(pr.Number, "@mallory")) > 0 || len(cm.Reactions) > 0
	})
	if cm, _ := e.gh.Comment(c.ID); len(cm.Reactions) > 0 || len(e.commentsWith(pr.Number, "Sorry @mallory")) != 1 {
		t.Errorf("mallory, a reader on the head's allowlist only, was not refused (reactions %v)", cm.Reactions)
	}
}

// TestApproveWithAnUnreadableConfig: once .github/akira.yml on the default branch stops parsing,
// the allowlist grants nothing: a reader's `/akira approve` is refused and queues nothing, while a
// writer's, which needs no configuration, is queued and decides the parked task.
func TestApproveWithAnUnreadableConfig(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "allowlist: [mallory]\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flaky", User: "alice", Body: "- [ ] Add a flaky thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(run.Branch)
	e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: "main", Files: map[string]string{".github/akira.yml": "allowlist: [mallory\nmax_attempts: {\n"}})

	// answer waits for what Akira says to a comment: a reaction, or a later reply naming its author.
	answer := func(c githubtest.Comment, login string) (reacted, refused bool) {
		e.t.Helper()
		replies := func(s string) int {
			n := 0
			for _, cm := range e.commentsWith(pr.Number, s) {
				if cm.ID > c.ID {
					n++
				}
			}
			return n
		}
		e.eventually(fmt.Sprintf("an answer to %s's /akira approve", login), func() bool {
			cm, _ := e.gh.Comment(c.ID)
			return len(cm.Reactions) > 0 || replies("@"+login) > 0
		})
		cm, _ := e.gh.Comment(c.ID)
		return len(cm.Reactions) > 0, replies("Sorry @"+login) > 0
	}

	c := e.comment(pr.Number, "mallory", "/akira approve", true, http.StatusAccepted)
	if reacted, refused := answer(c, "mallory"); reacted || !refused {
		t.Errorf("a reader's /akira approve under an unreadable configuration: reacted %v, refused %v; want refused", reacted, refused)
	}
	if r := e.runOf(1); r.Status != lifecycle.StatusParked || len(r.Decisions) != 0 {
		t.Fatalf("after the reader's approve the run is %s with decisions %v; want it parked, undecided", r.Status, r.Decisions)
	}

	c = e.comment(pr.Number, "alice", "/akira approve", true, http.StatusAccepted)
	if reacted, refused := answer(c, "alice"); !reacted || refused {
		t.Fatalf("a writer's /akira approve under an unreadable configuration: reacted %v, refused %v; want it queued", reacted, refused)
	}
	e.eventually("the writer's decision on the parked task", func() bool {
		r := e.runOf(1)
		return r != nil && (len(r.Decisions) > 0 || r.Status != lifecycle.StatusParked)
	})
}
