package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// filesAgent changes the work tree the way its task's title says: the kinds of change a checkpoint
// made through GitHub's API must carry exactly (a binary file, a deletion, a rename, many files, an
// executable), and a workflow file.
const filesAgent = `#!/bin/sh
set -e
echo "$AKIRA_TASK_ID $AKIRA_ATTEMPT" >> "$E2E_LOG/calls"
case "$AKIRA_TASK_TITLE" in
*binary*) printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\377\376\000' > logo.png ;;
*delete*) rm gone.txt ;;
*rename*) mkdir -p new; mv old/name.txt new/name.txt ;;
*many*) mkdir -p gen; i=0; while [ $i -lt 300 ]; do echo "file $i" > "gen/f$i.txt"; i=$((i+1)); done ;;
*executable*) printf '#!/bin/sh\necho tool\n' > tool.sh; chmod +x tool.sh ;;
*workflow*) mkdir -p .github/workflows; printf 'on: pull_request\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps: [{run: make lint}]\n' > .github/workflows/lint.yml ;;
*) echo "$AKIRA_TASK_TITLE" > "out-$AKIRA_TASK_ID.txt" ;;
esac
`

// newFilesEnv is an environment whose operator offers filesAgent as the profile "files" (continuing the
// harness's agents mapping), with more of the operator's configuration after it.
func newFilesEnv(t *testing.T, operatorYAML string) *env {
	t.Helper()
	script := filepath.Join(t.TempDir(), "files.sh")
	must(t, os.WriteFile(script, []byte(filesAgent), 0o755))
	return newEnvWith(t, false, redisAddr(t), "  files:\n    kind: exec\n    command: sh "+script+"\n    env: [E2E_LOG]\n"+operatorYAML)
}

// apiCommits counts the fake's requests that make commits through the API (createCommitOnBranch and
// the Git database's commits) and the pushes over git.
func (e *env) apiCommits() (api, pushes int) {
	for _, r := range e.gh.Requests() {
		switch {
		case r.Method == http.MethodPost && r.Path == "/graphql" && strings.Contains(string(r.Body), "createCommitOnBranch"):
			api++
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/git/commits"):
			api++
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/git-receive-pack"):
			pushes++
		}
	}
	return api, pushes
}

// TestSignedCommitsThroughGitHub: where the base branch's ruleset requires signed commits, every
// commit the run adds — the start commit and one checkpoint per task — is made through GitHub's API,
// so GitHub signs it (Verified), with its trailers; none is pushed with git. The tasks' changes come
// out exactly: a binary file, a deletion, a rename, 300 new files and an executable; the pull request
// is not blocked by the rule. The operator's `commits: github` does the same without a rule; without
// either the run pushes with git, as before, and its commits are not signed.
func TestSignedCommitsThroughGitHub(t *testing.T) {
	plan := "- [ ] Add a binary logo\n- [ ] Clean up: delete gone.txt\n- [ ] Move it: rename old/name.txt\n" +
		"- [ ] Generate many files\n- [ ] Add an executable tool\n"
	files := map[string]string{"README.md": "# demo\n", "gone.txt": "bye\n", "old/name.txt": "moved\n",
		".github/akira.yml": "agent: files\n"}
	cases := []struct {
		name     string
		operator string
		rule     githubtest.SignatureRule
		signed   bool
	}{
		{name: "a ruleset requires signatures", rule: githubtest.SignaturesByRuleset, signed: true},
		{name: "the operator says commits: github", operator: "commits: github\n", signed: true},
		{name: "no rule", signed: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFilesEnv(t, tc.operator)
			e.createRepo(files)
			if tc.rule != "" {
				e.gh.RequireSignatures(e.owner, e.repo, "main", tc.rule)
			}
			e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Assets", User: "alice", Body: plan})
			e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
			run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusParked, lifecycle.StatusFailed)
			if run.Status != lifecycle.StatusSucceeded {
				t.Fatalf("run is %s: %s", run.Status, run.Error)
			}
			branch := run.Branch

			var added []githubtest.Commit
			for _, c := range e.gh.Log(e.owner, e.repo, branch) {
				if c.Trailers["Akira-Run"] == run.ID {
					added = append(added, c)
				}
			}
			tasks := e.taskCommits(branch)
			if len(added) != 6 || len(tasks) != 5 {
				t.Fatalf("the run added %d commits for tasks %v; want the start commit and one checkpoint for each of 5 tasks", len(added), tasks)
			}
			for id, n := range tasks {
				if n != 1 {
					t.Errorf("task %s has %d checkpoints", id, n)
				}
			}
			for _, c := range added {
				if got := e.gh.Verified(e.owner, e.repo, c.SHA); got != tc.signed {
					t.Errorf("%s %q: verified %v, want %v", c.SHA[:7], c.Subject, got, tc.signed)
				}
			}
			api, pushes := e.apiCommits()
			if tc.signed && (api < 6 || pushes != 0) {
				t.Errorf("%d commits through the API and %d pushes over git; want every commit through the API", api, pushes)
			}
			if !tc.signed && (api != 0 || pushes == 0) {
				t.Errorf("%d commits through the API and %d pushes over git; want git pushes only", api, pushes)
			}

			// The tree GitHub holds is the tasks' work, byte for byte.
			if logo, ok := e.gh.FileAt(e.owner, e.repo, branch, "logo.png"); !ok || logo != "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff\xfe\x00" {
				t.Errorf("logo.png = %q, %v", logo, ok)
			}
			if _, ok := e.gh.FileAt(e.owner, e.repo, branch, "gone.txt"); ok {
				t.Error("gone.txt is still there")
			}
			if got, ok := e.gh.FileAt(e.owner, e.repo, branch, "new/name.txt"); !ok || got != "moved\n" {
				t.Errorf("new/name.txt = %q, %v", got, ok)
			}
			if _, ok := e.gh.FileAt(e.owner, e.repo, branch, "old/name.txt"); ok {
				t.Error("old/name.txt is still there after the rename")
			}
			if got, ok := e.gh.FileAt(e.owner, e.repo, branch, "gen/f299.txt"); !ok || got != "file 299\n" {
				t.Errorf("gen/f299.txt = %q, %v", got, ok)
			}
			out, err := gitOutput(e.gh.GitDir(e.owner, e.repo), "ls-tree", "-r", "refs/heads/"+branch, "--", "tool.sh", "gen")
			must(t, err)
			if !strings.Contains(out, "100755 blob") || !strings.Contains(out, "tool.sh") || strings.Count(out, "\n") != 301 {
				t.Errorf("tool.sh and gen/ on the branch:\n%.400s", out)
			}

			pr := e.onlyPR(branch)
			if pr.Draft {
				t.Error("the pull request is still a draft")
			}
			if m := e.gh.PullMergeability(e.owner, e.repo, pr.Number); m.State != "clean" {
				t.Errorf("the pull request is %q; want clean (signed commits satisfy the rule)", m.State)
			}
		})
	}
}

// gitOutput runs git on a bare repository of the fake GitHub, as a test reads it.
func gitOutput(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...).Output()
	return string(out), err
}

// TestSignedCallsPerTask measures what a signed checkpoint costs GitHub: the marginal calls of a task
// (1 vs 11 tasks) when a ruleset on the base requires signatures, so that every checkpoint goes
// through the API, next to the same runs pushed with git, measured in the same run (`make bench`).
func TestSignedCallsPerTask(t *testing.T) {
	ruleset := func(e *env) { e.gh.RequireSignatures(e.owner, e.repo, "main", githubtest.SignaturesByRuleset) }
	perTask := func(one, eleven callCount) (rest, git float64) {
		return float64(eleven.rest-one.rest) / 10, float64(eleven.git-one.git) / 10
	}
	signedOne, signedEleven := runTasks(t, 1, ruleset), runTasks(t, 11, ruleset)
	gitOne, gitEleven := runTasks(t, 1), runTasks(t, 11)
	t.Logf("signed, 11 tasks: %d REST, %d git\n%s", signedEleven.rest, signedEleven.git, signedEleven)
	signedRest, signedGit := perTask(signedOne, signedEleven)
	gitRest, gitGit := perTask(gitOne, gitEleven)
	t.Logf("akira-bench: github.signed.rest_per_task %.1f", signedRest)
	t.Logf("akira-bench: github.signed.git_per_task %.1f", signedGit)
	t.Logf("akira-bench: github.pushed.rest_per_task %.1f", gitRest)
	t.Logf("akira-bench: github.pushed.git_per_task %.1f", gitGit)
	// Counts, not times: a signed checkpoint is one createCommitOnBranch instead of a push, and the
	// fetch of GitHub's commit. (The summary's edits follow the clock: half a call of slack.)
	if signedRest > gitRest+1.5 {
		t.Errorf("%.1f REST calls per signed task, %.1f per pushed one: want one more (the commit)", signedRest, gitRest)
	}
}

// TestSignedRollback: where a ruleset requires signed commits, `/akira rollback` makes its revert
// through GitHub's API like the checkpoints (a revert pushed with git would be refused): the revert
// is Verified, carries its trailers, undoes the task's files (an executable's deletion), and nothing
// is pushed with git; the task is pending again.
func TestSignedRollback(t *testing.T) {
	e := newFilesEnv(t, "")
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "agent: files\n"})
	e.gh.RequireSignatures(e.owner, e.repo, "main", githubtest.SignaturesByRuleset)
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Assets", User: "alice",
		Body: "- [ ] Add a binary logo\n- [ ] Add an executable tool\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded, lifecycle.StatusParked, lifecycle.StatusFailed)
	if run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run is %s: %s", run.Status, run.Error)
	}
	pr := e.onlyPR(run.Branch)
	e.comment(pr.Number, "alice", "/akira rollback 1.2", true, http.StatusAccepted)
	e.eventually("the rollback's reply", func() bool { return len(e.commentsWith(pr.Number, "rolled back on")) == 1 })

	last := e.gh.Log(e.owner, e.repo, run.Branch)[0] // newest first
	if last.Trailers["Akira-Revert"] != "1.2" || !e.gh.Verified(e.owner, e.repo, last.SHA) {
		t.Errorf("the newest commit %s %q (trailers %v): want the Verified revert of 1.2", last.SHA[:7], last.Subject, last.Trailers)
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, run.Branch, "tool.sh"); ok {
		t.Error("tool.sh is still on the branch")
	}
	if _, ok := e.gh.FileAt(e.owner, e.repo, run.Branch, "logo.png"); !ok {
		t.Error("the rollback of 1.2 took 1.1's logo.png too")
	}
	if _, pushes := e.apiCommits(); pushes != 0 {
		t.Errorf("%d pushes over git; want every commit, the revert too, through the API", pushes)
	}
	if tk := e.waitStatus(1, lifecycle.StatusStopped).Task("1.2"); tk.Status != lifecycle.TaskStatusPending {
		t.Errorf("task 1.2 after the rollback: %+v", tk)
	}
}
