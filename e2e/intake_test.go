package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestGitHubSlowOrLimitedAtEveryCall stalls or rate-limits, in turn, each GitHub call that acting on a
// command needs: the permission check, the repository configuration, the pull request's files, the
// reaction and the reply. The webhook is acknowledged at once every time (the webhook server asks GitHub
// nothing), and the command is later carried out exactly once: help and a refusal get one reply each,
// a run starts once.
func TestGitHubSlowOrLimitedAtEveryCall(t *testing.T) {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n", "ROADMAP.md": "# Plan\n\n- [ ] 1.1 Add a thing\n"})
	e.gh.SetPermission(e.owner, e.repo, "rita", "read")
	faults := map[string]func(pattern string) githubtest.Fault{
		"slow": func(p string) githubtest.Fault {
			return githubtest.Fault{PathPattern: p, Delay: 3 * time.Second, Times: 1}
		},
		"rate-limited": func(p string) githubtest.Fault {
			return githubtest.Fault{PathPattern: p, Status: http.StatusForbidden, Times: 2}
		},
	}
	type scenario struct {
		call    string
		pattern string
		// act sends the delivery on a fresh issue (or pull request) and returns what to wait for.
		act func(e *env, number int) (what string, done func() bool)
	}
	help := func(e *env, number int) (string, func() bool) {
		e.comment(number, "alice", "/akira help", false, http.StatusAccepted)
		return "one help reply", func() bool { return len(e.commentsWith(number, "/akira retry <guidance>")) == 1 }
	}
	refusal := func(e *env, number int) (string, func() bool) {
		e.comment(number, "rita", "/akira run", false, http.StatusAccepted)
		return "one refusal", func() bool { return len(e.commentsWith(number, "Sorry @rita")) == 1 }
	}
	run := func(e *env, number int) (string, func() bool) {
		c := e.comment(number, "alice", "/akira run", false, http.StatusAccepted)
		return "the run and its reaction", func() bool {
			cm, _ := e.gh.Comment(c.ID)
			return e.runOf(number) != nil && len(cm.Reactions) == 1
		}
	}
	pullRequest := func(e *env, number int) (string, func() bool) {
		branch := fmt.Sprintf("spec-%d", number)
		sha := e.gh.PushCommit(e.owner, e.repo, githubtest.Push{Branch: branch, Files: map[string]string{"ROADMAP.md": "- [ ] 1.1 Add a thing\n- [ ] 1.2 And another\n"}})
		pr := e.gh.AddPullRequest(e.owner, e.repo, githubtest.PullRequest{Title: "spec", Head: branch, User: "alice"})
		repo := e.repository()
		e.deliver("pull_request", "pr-"+randomHex(e.t, 4), map[string]any{
			"action": "opened", "number": pr.Number, "installation": e.installation(), "repository": repo, "sender": user("alice"),
			"pull_request": map[string]any{"number": pr.Number, "user": user("alice"),
				"head": map[string]any{"ref": branch, "sha": sha, "repo": repo}, "base": map[string]any{"ref": "main", "repo": repo}},
		}, http.StatusAccepted)
		return "the pull request's run", func() bool { return e.runOf(pr.Number) != nil }
	}
	scenarios := []scenario{
		{"permission", "/collaborators/", help},
		{"permission", "/collaborators/", run},
		{"configuration", "/contents/.github", run},
		{"pull request files", "/files", pullRequest},
		{"reaction", "/reactions", run},
		{"reply", `^/repos/[^/]+/[^/]+/issues/\d+/comments$`, help},
		{"reply", `^/repos/[^/]+/[^/]+/issues/\d+/comments$`, refusal},
	}
	var numbers []int
	for _, sc := range scenarios {
		for _, kind := range []string{"slow", "rate-limited"} {
			t.Run(sc.call+"/"+kind, func(t *testing.T) {
				e := e.sub(t)
				number := e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Title: "issue", User: "alice", Body: "- [ ] 1.1 Add a thing\n"}).Number
				numbers = append(numbers, number)
				fault := faults[kind](sc.pattern)
				if sc.call == "reply" {
					fault.Method = http.MethodPost
				}
				e.gh.InjectFault(fault)
				defer e.gh.ClearFaults()
				start := time.Now()
				what, done := sc.act(e, number)
				t.Logf("acknowledged in %v", time.Since(start))
				e.eventually(what, done)
				// Exactly once: give a retry the time to do it twice, then look again.
				time.Sleep(1500 * time.Millisecond)
				if !done() {
					t.Fatalf("%s: no longer exactly once", what)
				}
			})
		}
	}
	if t.Failed() {
		return
	}
	// Nothing ran that should not have: every run above is on its own branch, one per issue.
	for _, n := range numbers {
		if r := e.runOf(n); r != nil && !strings.HasPrefix(r.Branch, "akira/issue-") && r.Trigger != lifecycle.TriggerPullRequest {
			t.Errorf("run %s of #%d on %s", r.ID, n, r.Branch)
		}
	}
}
