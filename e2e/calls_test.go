package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
)

// callCount is what one run cost GitHub, from the fake's own request log.
type callCount struct {
	rest, git int
	byOp      map[string]int
}

var idSegment = regexp.MustCompile(`/[0-9]+(/|$)`)

// countCalls sorts the fake's requests into REST calls and git smart HTTP requests. A 304 Not Modified
// is left out of the REST count: GitHub does not charge it to the rate limit.
func countCalls(reqs []githubtest.Request) callCount {
	c := callCount{byOp: map[string]int{}}
	for _, r := range reqs {
		switch {
		case strings.Contains(r.Path, ".git/"):
			c.git++
			c.byOp["git "+r.Method+" "+r.Path[strings.Index(r.Path, ".git/"):]+" "+r.Query.Get("service")]++
		case r.Status == http.StatusNotModified:
			c.byOp["304 "+r.Method+" "+idSegment.ReplaceAllString(r.Path, "/N$1")]++
		default:
			c.rest++
			c.byOp[r.Method+" "+idSegment.ReplaceAllString(idSegment.ReplaceAllString(r.Path, "/N$1"), "/N$1")]++
		}
	}
	return c
}

func (c callCount) String() string {
	keys := make([]string, 0, len(c.byOp))
	for k := range c.byOp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %3d %s\n", c.byOp[k], k)
	}
	return b.String()
}

// runTasks runs one issue of n trivial tasks through a fresh fake GitHub and counts the calls it made,
// from the /akira run comment to the run's last effect on GitHub. setup, when given, changes the
// repository first (a rule of its base branch).
func runTasks(t *testing.T, n int, setup ...func(*env)) callCount {
	e := newEnv(t, false)
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	for _, f := range setup {
		f(e)
	}
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "- [ ] Add thing %d\n", i+1)
	}
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Many things", User: "alice", Body: body.String()})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusSucceeded)
	e.eventually("every check run concluded and the final summary", func() bool {
		done := 0
		for _, cr := range e.latestCheckRuns() {
			if cr.Conclusion == "success" {
				done++
			}
		}
		pr := e.onlyPR(run.Branch)
		for _, c := range e.gh.Comments(e.owner, e.repo, pr.Number) {
			if strings.Contains(c.Body, "All tasks are done") {
				return done == n
			}
		}
		return false
	})
	return countCalls(e.gh.Requests())
}

// TestGitHubCallsPerTask measures the marginal GitHub cost of a task: the calls of an 11-task run
// minus those of a 1-task run, over 10. It reports the figures for `make bench` and holds the goal of
// issue 35, at most 3 REST calls per task.
func TestGitHubCallsPerTask(t *testing.T) {
	one := runTasks(t, 1)
	eleven := runTasks(t, 11)
	t.Logf("1 task: %d REST, %d git\n%s", one.rest, one.git, one)
	t.Logf("11 tasks: %d REST, %d git\n%s", eleven.rest, eleven.git, eleven)
	rest := float64(eleven.rest-one.rest) / 10
	git := float64(eleven.git-one.git) / 10
	t.Logf("akira-bench: github.rest_per_task %.1f", rest)
	t.Logf("akira-bench: github.git_per_task %.1f", git)
	// Counts, not times: a task is a check run created and concluded, a push (info/refs and
	// receive-pack), and a share of the summary's edits (one per minSummaryInterval at most).
	if rest > 3 {
		t.Errorf("%.1f REST calls per task, want at most 3", rest)
	}
	if git > 2 {
		t.Errorf("%.1f git requests per task, want at most 2 (one push)", git)
	}
}
