package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// TestPauseRestartResume: `/akira pause` during task 2 of 4 lets it finish and parks the run as
// paused, holding no worker; every worker process is then stopped and a new one started; `/akira
// resume` continues at task 3: tasks 3 and 4 run once each and task 2 is not repeated. Paused now
// now (through the API, `?now=1`), the attempt is discarded instead, its check run cancelled, and task
// 2 runs again from the last checkpoint after the resume (through the API too).
func TestPauseRestartResume(t *testing.T) {
	for _, now := range []bool{false, true} {
		name := "after the task"
		if now {
			name = "now"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, true)
			e.createRepo(map[string]string{"README.md": "# demo\n"})
			e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Long", User: "alice",
				Body: "- [ ] Add one\n- [ ] Add a slow thing\n- [ ] Add three\n- [ ] Add four\n"})
			first := e.startWorkerProcess("worker-1")
			e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
			e.waitFile("started-1.2")
			run := e.runOf(1)

			e.comment(1, "mallory", "/akira pause", false, http.StatusAccepted)
			e.eventually("the refusal", func() bool { return len(e.commentsWith(1, "Sorry @mallory")) == 1 })
			if r := e.runOf(1); r.Pause != nil {
				t.Fatal("a read-only user's pause was recorded")
			}
			var api *httptest.Server
			var ops string
			pausedBy := "alice"
			if now {
				api = e.adminServer()
				tok, err := e.store.CreateToken(context.Background(), "ops", store.ScopeControl)
				must(t, err)
				ops, pausedBy = tok, "ops (API)"
				if code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/pause?now=1", ops, ""); code != http.StatusAccepted || !strings.Contains(body, "pause requested now") {
					t.Fatalf("pause now: %d %s", code, body)
				}
			} else {
				e.comment(1, "alice", "/akira pause", false, http.StatusAccepted)
				e.eventually("the answer to /akira pause", func() bool { return len(e.commentsWith(1, "Pausing run")) == 1 })
				e.touch("release") // the task in progress may finish
			}
			paused := e.waitStatus(1, lifecycle.StatusPaused)
			if paused.ID != run.ID || paused.PausedBy != pausedBy {
				t.Fatalf("run %s paused by %q", paused.ID, paused.PausedBy)
			}
			want := map[string]int{"1.1": 1, "1.2": 1}
			if now {
				want = map[string]int{"1.1": 1}
				// The state changes first; its effects on GitHub follow.
				e.eventually("the check run of the task paused now to be cancelled", func() bool {
					return e.latestCheckRuns()["akira: 1.2 Add a slow thing"].Conclusion == "cancelled"
				})
			}
			if got := e.taskCommits(run.Branch); len(got) != len(want) || got["1.1"] != 1 || got["1.2"] != want["1.2"] {
				t.Fatalf("checkpoints when paused = %v, want %v", got, want)
			}
			pr := e.onlyPR(run.Branch)
			e.eventually("the summary to say the run is paused", func() bool {
				sum := e.commentsWith(pr.Number, templates.SummaryMarker(run.ID))
				return len(sum) == 1 && strings.Contains(sum[0].Body, "The run was paused by ")
			})

			// Every worker goes away; the paused run needs none. A new one starts, then the resume.
			must(t, first.Process.Signal(syscall.SIGTERM))
			_ = first.Wait()
			e.touch("release")
			e.startWorkerProcess("worker-2")
			if now {
				if code, body := apiCall(t, "POST", api.URL+"/api/v1/runs/"+run.ID+"/resume", ops, ""); code != http.StatusAccepted {
					t.Fatalf("resume: %d %s", code, body)
				}
			} else {
				e.comment(1, "alice", "/akira resume", false, http.StatusAccepted)
			}
			done := e.waitStatus(1, lifecycle.StatusSucceeded)
			if done.ID != run.ID {
				t.Errorf("the resume made run %s beside %s", done.ID, run.ID)
			}
			e.checkOneOfEach(done, "1.1", "1.2", "1.3", "1.4")
			wantTask2 := 1
			if now {
				wantTask2 = 2 // the discarded attempt, then the task again
			}
			if c2, c3, c4 := e.agentCalls("1.2"), e.agentCalls("1.3"), e.agentCalls("1.4"); c2 != wantTask2 || c3 != 1 || c4 != 1 {
				t.Errorf("agent calls: 1.2 %d, 1.3 %d, 1.4 %d; want 1.2 %d time(s), 1.3 and 1.4 once", c2, c3, c4, wantTask2)
			}
			if !now && len(e.commentsWith(1, "Resuming run")) != 1 {
				t.Error("no answer to /akira resume")
			}
		})
	}
}
