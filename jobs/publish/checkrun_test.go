package publish

import (
	"context"
	"errors"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// TestCheckRunLookupOnlyAfterACrash: a task's check run is created with one request (no lookup);
// the mark written before the create stays when the job dies before the id is stored, and the next
// create then asks GitHub to look for the check run a dead job may have made.
func TestCheckRunLookupOnlyAfterACrash(t *testing.T) {
	jh := newHarness(t)
	ctx := context.Background()
	run, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "r-checks", Owner: "o", Repo: "r", Branch: "akira/issue-4", Issue: 4, PR: 5,
		Status: lifecycle.StatusRunning, Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusRunning}, {ID: "1.2", Title: "Two", Status: lifecycle.TaskStatusRunning}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReporter(jh.gh, jh.store, nil, nil, run)
	rep.head = "abc1234"
	if err := rep.checks.openCheckRun(ctx, "1.1", 1); err != nil {
		t.Fatal(err)
	}
	stored, _ := jh.store.Get(ctx, run.ID)
	first := stored.Task("1.1")
	if first.CheckRunID == 0 || first.CheckRunAsked || first.CheckRunHead != "abc1234" || jh.gh.CheckRuns[first.CheckRunID].MayExist {
		t.Fatalf("first open: %+v (may exist %v); want an id, no mark left, no lookup", first, jh.gh.CheckRuns[first.CheckRunID].MayExist)
	}

	// A job died between the create and the storing of its id: the mark is there.
	jh.gh.FailOnce("CreateCheckRun", errors.New("github: 502 Bad Gateway"))
	if err := rep.checks.openCheckRun(ctx, "1.2", 1); err == nil {
		t.Fatal("the create failed, the open must fail")
	}
	if marked, _ := jh.store.Get(ctx, run.ID); !marked.Task("1.2").CheckRunAsked {
		t.Fatal("no mark left by a create that did not finish")
	}
	again := NewReporter(jh.gh, jh.store, nil, nil, mustGet(t, jh.store, run.ID))
	again.head = "abc1234"
	if err := again.checks.openCheckRun(ctx, "1.2", 1); err != nil {
		t.Fatal(err)
	}
	done, _ := jh.store.Get(ctx, run.ID)
	if cr := jh.gh.CheckRuns[done.Task("1.2").CheckRunID]; cr == nil || !cr.MayExist || done.Task("1.2").CheckRunAsked {
		t.Fatalf("after a crash: check run %+v, task %+v; want a create that looks first, and the mark gone", cr, done.Task("1.2"))
	}

	// A run rebuilt from its branch lost its marks with Redis: its creates look first.
	rebuilt, _, err := jh.store.Create(ctx, &lifecycle.Run{ID: "r-rebuilt", Owner: "o", Repo: "r", Branch: "akira/issue-6", Issue: 6, PR: 7,
		Status: lifecycle.StatusRunning, Rebuilt: "d-rebuild", Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One", Status: lifecycle.TaskStatusRunning}}})
	if err != nil {
		t.Fatal(err)
	}
	rep = NewReporter(jh.gh, jh.store, nil, nil, rebuilt)
	rep.head = "def5678"
	if err := rep.checks.openCheckRun(ctx, "1.1", 1); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, jh.store, rebuilt.ID); !jh.gh.CheckRuns[r.Task("1.1").CheckRunID].MayExist {
		t.Error("a rebuilt run's create did not look for the check run its lost record knew")
	}
}

func mustGet(t *testing.T, s *store.Store, id string) *lifecycle.Run {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
