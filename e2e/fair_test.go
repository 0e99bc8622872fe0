package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner/config"
)

// onAccount is e on a repository of another account: another installation of the same App, on the
// same fake GitHub, webhook server and workers.
func (e *env) onAccount(owner, repo string) *env {
	c := *e
	c.owner, c.repo = owner, repo
	return &c
}

// fairCall is one call of the test agent: its order among all calls (the agent numbers its
// prompts), the run it worked for (the tag in its task's title), and when it was made.
type fairCall struct {
	n   int
	run string
	at  time.Time
}

var (
	promptFileRE = regexp.MustCompile(`^prompt-.+-(\d+)\.md$`)
	taskHeadRE   = regexp.MustCompile(`(?m)^# Task \S+: Add (\S+) piece`)
)

// fairCalls reads the prompts the agent kept, in the order of the calls.
func (e *env) fairCalls() []fairCall {
	e.t.Helper()
	entries, err := os.ReadDir(e.logDir)
	must(e.t, err)
	var out []fairCall
	for _, de := range entries {
		m := promptFileRE.FindStringSubmatch(de.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(e.logDir, de.Name()))
		must(e.t, err)
		head := taskHeadRE.FindStringSubmatch(string(data))
		if head == nil {
			continue
		}
		info, err := de.Info()
		must(e.t, err)
		n, _ := strconv.Atoi(m[1])
		out = append(out, fairCall{n: n, run: head[1], at: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n < out[j].n
		}
		return out[i].at.Before(out[j].at)
	})
	return out
}

// queueRuns starts runs on e's repository: one issue per run, each with tasks tasks titled
// "Add <tag> piece <j>, paced" (tag is prefix and the issue number; the agent takes a second on a
// paced task), each started by `/akira run`.
func (e *env) queueRuns(prefix string, runs, tasks int) {
	e.t.Helper()
	for k := 1; k <= runs; k++ {
		var body strings.Builder
		for j := 1; j <= tasks; j++ {
			fmt.Fprintf(&body, "- [ ] Add %s%02d piece %d, paced\n", prefix, k, j)
		}
		e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: k, Title: fmt.Sprintf("%s%02d", prefix, k), User: "alice", Body: body.String()})
		e.comment(k, "alice", "/akira run", false, 202)
	}
}

// waitQueued waits until the fair gate holds n runs (running or waiting) of e's installation.
func (e *env) waitQueued(n int) {
	e.t.Helper()
	fg := fair.New(e.rdb, e.spec.Prefix, config.Fair{}, e.spec.Concurrency)
	inst := e.gh.InstallationID(e.owner, e.repo)
	e.eventually(fmt.Sprintf("%d runs of installation %d in the fair queue", n, inst), func() bool {
		q, err := fg.Queue(context.Background())
		if err != nil {
			return false
		}
		for _, iq := range q.Installations {
			if iq.InstallationID == inst {
				return len(iq.Running)+len(iq.Waiting) >= n
			}
		}
		return false
	})
}

// TestFairShareAcrossInstallations: installation A queues 100 tasks across 10 runs, then
// installation B queues a run of one task. With two workers and the default cap (half of them), B's
// agent call comes before A's third run starts: B does not wait behind A's backlog. Without the
// gate, asynq's one FIFO queue gives the worker A's first run frees to A's third.
//
// It also reports, for `make bench`, the time from B's `/akira run` to its agent call next to one
// task's time in the same run (the median time between two agent calls of A's first run, an agent
// call taking a second), without asserting anything on them.
func TestFairShareAcrossInstallations(t *testing.T) {
	e := newEnv(t, false)
	a, b := e, e.onAccount("acme", "web")
	a.createRepo(map[string]string{"README.md": "# demo\n"})
	b.createRepo(map[string]string{"README.md": "# web\n"})
	if a.gh.InstallationID(a.owner, a.repo) == b.gh.InstallationID(b.owner, b.repo) {
		t.Fatal("the two accounts must be two installations")
	}
	a.queueRuns("A", 10, 10)
	a.waitQueued(10)
	bQueued := time.Now()
	b.queueRuns("B", 1, 1)
	b.waitStatus(1, lifecycle.StatusSucceeded)

	calls := e.fairCalls()
	var before []string // A's runs that had started when B's agent was first called
	seen := map[string]bool{}
	bAt := -1
	for i, c := range calls {
		if strings.HasPrefix(c.run, "B") {
			bAt = i
			break
		}
		if !seen[c.run] {
			seen[c.run] = true
			before = append(before, c.run)
		}
	}
	if bAt < 0 {
		t.Fatalf("B's agent was never called; calls: %+v", calls)
	}
	t.Logf("B's first agent call is call %d; A's runs started before it: %v", bAt+1, before)
	if len(before) >= 3 {
		t.Fatalf("A's runs %v had started before B's first agent call; want B's call before A's third run starts", before)
	}

	// The figures: one task's time from A's first run, once it has done a few.
	var first []time.Time
	e.eventually("five agent calls of A's first run", func() bool {
		first = first[:0]
		for _, c := range e.fairCalls() {
			if c.run == before[0] {
				first = append(first, c.at)
			}
		}
		return len(first) >= 5
	})
	var gaps []float64
	for i := 1; i < len(first); i++ {
		gaps = append(gaps, first[i].Sub(first[i-1]).Seconds())
	}
	sort.Float64s(gaps)
	t.Logf("akira-bench: fair.first_call.seconds %.3f", calls[bAt].at.Sub(bQueued).Seconds())
	t.Logf("akira-bench: fair.task.seconds %.3f", gaps[len(gaps)/2])
}

// TestRateLimitSlowsOnlyItsInstallation: GitHub rate-limits installation A (403 with Retry-After
// on its permission checks). The intake that met the limit waits it out; A's next delivery is held
// back in the queue without calling GitHub (its installation is paused) instead of taking the
// second worker, which serves installation B's run meanwhile. When the limit is over, A's runs go on.
func TestRateLimitSlowsOnlyItsInstallation(t *testing.T) {
	e := newEnv(t, false)
	a, b := e, e.onAccount("acme", "web")
	a.createRepo(map[string]string{"README.md": "# demo\n"})
	b.createRepo(map[string]string{"README.md": "# web\n"})
	permPath := "/repos/octo/demo/collaborators/alice/permission"
	e.gh.InjectFault(githubtest.Fault{Method: "GET", PathPattern: permPath, Status: 403, Header: http.Header{"Retry-After": {"30"}}})
	limitedCalls := func() int {
		n := 0
		for _, r := range e.gh.Requests() {
			if r.Path == permPath {
				n++
			}
		}
		return n
	}
	a.gh.AddIssue(a.owner, a.repo, githubtest.Issue{Number: 1, Title: "A01", User: "alice", Body: "- [ ] Add A01 piece 1\n"})
	a.comment(1, "alice", "/akira run", false, 202)
	e.eventually("A's first permission check to meet the rate limit", func() bool { return limitedCalls() >= 1 })
	a.gh.AddIssue(a.owner, a.repo, githubtest.Issue{Number: 2, Title: "A02", User: "alice", Body: "- [ ] Add A02 piece 1\n"})
	a.comment(2, "alice", "/akira run", false, 202)
	b.queueRuns("B", 1, 1)
	b.waitStatus(1, lifecycle.StatusSucceeded)
	// The worker A's second delivery reached did not ask GitHub: it left the slot to B.
	if n := limitedCalls(); n != 1 {
		t.Fatalf("A's rate-limited permission check was called %d times while B ran, want 1 (A's other delivery must wait out the limit in the queue)", n)
	}
	for _, c := range e.fairCalls() {
		if strings.HasPrefix(c.run, "A") {
			t.Fatalf("A's agent was called while GitHub rate-limited A: %+v", c)
		}
	}
	e.gh.ClearFaults()
	a.waitStatus(1, lifecycle.StatusSucceeded)
	a.waitStatus(2, lifecycle.StatusSucceeded)
}
