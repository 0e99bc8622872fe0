package e2e

import (
	"context"
	"encoding/json"
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

// TestSpendWarningOnceAMonth: the run that takes an installation past 80% of its monthly cap
// notifies the operator's sinks once; the next run of the month, still under the cap, does not
// again.
func TestSpendWarningOnceAMonth(t *testing.T) {
	hook := newSinkReceiver(t, 200, 0)
	t.Setenv("E2E_HOOK_SECRET", "hook-secret")
	e := newEnvWith(t, false, redisAddr(t), "spend:\n  monthly_usd: 1\nnotify:\n  sinks:\n    ops: {kind: webhook, url: "+hook.srv.URL+"/akira, secret_env: E2E_HOOK_SECRET}\n"+
		"  events:\n    spend_warning: [ops]\n")
	e.createRepo(map[string]string{"README.md": "# demo\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Notes", User: "alice", Body: "- [ ] Write the costly notes\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	e.waitStatus(1, lifecycle.StatusSucceeded) // $0.60 of $1: not yet
	more := e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Title: "More", User: "alice", Body: "- [ ] Write the plain notes\n- [ ] Write more costly notes\n"})
	e.comment(more.Number, "alice", "/akira run", false, http.StatusAccepted)
	e.waitStatus(more.Number, lifecycle.StatusSucceeded, lifecycle.StatusFailed, lifecycle.StatusPaused) // $1.20: past the cap during its last task
	e.eventually("the spend warning at the sink", func() bool { return len(hook.all()) >= 1 })
	time.Sleep(500 * time.Millisecond) // a second warning, were there one, is queued by now
	msgs := hook.all()
	if len(msgs) != 1 {
		t.Fatalf("%d notifications, want one warning", len(msgs))
	}
	var m struct{ Event, Title, Text string }
	if err := json.Unmarshal([]byte(msgs[0].body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Event != "spend_warning" || !strings.Contains(m.Text, "of its $1.00 cap for "+store.SpendMonth(time.Now())) {
		t.Errorf("the warning: %+v", m)
	}
}
