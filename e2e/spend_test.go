package e2e

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestMonthlyCapStopsASecondRun: an installation capped at $0.50 a month runs a task that costs
// $0.60; the month is then spent, so the next /akira run does not start: the run fails before any
// agent runs, and what people read on GitHub names the cap, what is spent and when the month resets.
func TestMonthlyCapStopsASecondRun(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), "spend:\n  monthly_usd: 0.5\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Notes", User: "alice", Body: "- [ ] Write the costly notes\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	first := e.waitStatus(1, lifecycle.StatusSucceeded)
	month := store.SpendMonth(time.Now())
	if usd, err := e.store.InstallationSpend(context.Background(), first.InstallationID, month); err != nil || math.Abs(usd-0.6) > 1e-9 {
		t.Fatalf("the installation spent $%v (%v) in %s; want the first run's $0.60", usd, err, month)
	}

	// The first run's pull request took number 2.
	more := e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Title: "More notes", User: "alice", Body: "- [ ] Write the plain notes\n"})
	e.comment(more.Number, "alice", "/akira run", false, http.StatusAccepted)
	second := e.waitStatus(more.Number, lifecycle.StatusFailed)
	for _, ts := range second.Tasks {
		if ts.Attempts != 0 {
			t.Errorf("the capped run made %d attempts of task %s", ts.Attempts, ts.ID)
		}
	}
	want := "the monthly spend cap of this installation is reached: $0.60 of $0.50 in " + month
	if !strings.Contains(second.Error, want) {
		t.Errorf("the run's error %q lacks %q", second.Error, want)
	}
	e.eventually("a comment naming the cap", func() bool {
		for _, n := range []int{more.Number, second.PR} {
			if n == 0 {
				continue
			}
			for _, c := range e.gh.Comments(e.owner, e.repo, n) {
				if strings.Contains(c.Body, "monthly spend cap") && strings.Contains(c.Body, "resets on") {
					return true
				}
			}
		}
		return false
	})
}

// TestMonthlyCapPausesARunAtItsNextTask: a run whose first task spends the installation's month
// pauses before its second, keeping the first's checkpoint; the pause says the cap asked for it.
func TestMonthlyCapPausesARunAtItsNextTask(t *testing.T) {
	e := newEnvWith(t, false, redisAddr(t), "spend:\n  installations: {30001: 0.5}\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Notes", User: "alice",
		Body: "- [ ] Write the costly notes\n- [ ] Write the plain notes\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusPaused)
	if run.Task("1.1").Checkpoint == "" || run.Task("1.2").Attempts != 0 {
		t.Errorf("paused with tasks %+v; want 1.1 checkpointed and 1.2 not tried", run.Tasks)
	}
	if run.PausedBy != "the monthly spend cap" {
		t.Errorf("paused by %q; want the monthly spend cap", run.PausedBy)
	}
}
