package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/runner"
)

func newRun(id, branch string) *lifecycle.Run {
	return &lifecycle.Run{ID: id, Owner: "Octo", Repo: "Hello", InstallationID: 1, Trigger: lifecycle.TriggerIssue, Issue: 4, Branch: branch,
		Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "one", Status: lifecycle.TaskStatusPending}, {ID: "1.2", Title: "two", Status: lifecycle.TaskStatusPending}}}
}

func TestStoreCreateAndFind(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()

	r, created, err := s.Create(ctx, newRun("r1", "akira/issue-4"))
	if err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if r.Status != lifecycle.StatusQueued || r.Rev != 1 || r.CreatedAt.IsZero() {
		t.Errorf("created run = status %s rev %d created %v", r.Status, r.Rev, r.CreatedAt)
	}
	// A retried job creates the same run again: it gets the stored one back, untouched.
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.Status = lifecycle.StatusRunning; return nil }); err != nil {
		t.Fatal(err)
	}
	again, created, err := s.Create(ctx, newRun("r1", "akira/issue-4"))
	if err != nil || created || again.Status != lifecycle.StatusRunning {
		t.Fatalf("second Create = %+v, %v, %v; want the stored running run", again, created, err)
	}
	// Owner and repository names are case-insensitive on GitHub.
	got, err := s.ByNumber(ctx, "octo", "hello", 4)
	if err != nil || got.ID != "r1" {
		t.Fatalf("ByNumber = %v, %v", got, err)
	}
	if _, err := s.ByNumber(ctx, "octo", "hello", 5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByNumber(5) = %v, want ErrNotFound", err)
	}
	// The PR opened later is indexed by the update that records it.
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.PR = 9; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ByNumber(ctx, "OCTO", "hello", 9); err != nil || got.ID != "r1" {
		t.Fatalf("ByNumber(PR) = %v, %v", got, err)
	}
	if got, err := s.ActiveOnBranch(ctx, "octo", "hello", "akira/issue-4"); err != nil || got.ID != "r1" {
		t.Fatalf("activeOnBranch = %v, %v", got, err)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(nope) = %v", err)
	}
}

func TestStoreOneActiveRunPerBranch(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	if _, _, err := s.Create(ctx, newRun("r1", "akira/roadmap")); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Create(ctx, newRun("r2", "akira/roadmap"))
	var busy *BranchBusyError
	if !errors.As(err, &busy) || busy.Active.ID != "r1" || !errors.Is(err, ErrBranchBusy) {
		t.Fatalf("Create on a busy branch = %v, want BranchBusyError naming r1", err)
	}
	if _, _, err := s.Create(ctx, newRun("r3", "akira/other")); err != nil {
		t.Fatalf("Create on another branch: %v", err)
	}
	// Parked still owns the branch.
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error {
		r.Status = lifecycle.StatusParked
		r.Parked = []lifecycle.Parked{{TaskID: "1.1"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, newRun("r2", "akira/roadmap")); !errors.Is(err, ErrBranchBusy) {
		t.Fatalf("Create while parked = %v, want ErrBranchBusy", err)
	}
	// A terminal run frees the branch.
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.Status = lifecycle.StatusSucceeded; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveOnBranch(ctx, "octo", "hello", "akira/roadmap"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("activeOnBranch after success = %v, want ErrNotFound", err)
	}
	if _, created, err := s.Create(ctx, newRun("r2", "akira/roadmap")); err != nil || !created {
		t.Fatalf("Create after the first run ended = %v, %v", created, err)
	}
	// The finished run's state expires; its index entry for #4 now belongs to r2 and must not.
	ttl, err := rdb.PTTL(ctx, s.runKey("r1")).Result()
	if err != nil || ttl <= 0 {
		t.Errorf("finished run TTL = %v, %v; want a retention", ttl, err)
	}
	if ttl, _ := rdb.PTTL(ctx, s.indexKey("octo", "hello", 4)).Result(); ttl != -1 {
		t.Errorf("index of #4 has TTL %v; it points at the new run and must not expire", ttl)
	}
}

func TestStoreStaleRunGivesUpBranch(t *testing.T) {
	rdb, prefix := testRedis(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewStore(rdb, prefix)
	s.Now = func() time.Time { return now }
	s.StaleAfter = time.Hour
	ctx := context.Background()
	if _, _, err := s.Create(ctx, newRun("dead", "b")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Minute)
	if _, _, err := s.Create(ctx, newRun("new", "b")); !errors.Is(err, ErrBranchBusy) {
		t.Fatalf("Create before the run is stale = %v, want ErrBranchBusy", err)
	}
	now = now.Add(2 * time.Minute)
	if _, created, err := s.Create(ctx, newRun("new", "b")); err != nil || !created {
		t.Fatalf("Create over a stale run = %v, %v", created, err)
	}
}

// TestStoreUpdateIsAtomic has many writers increment the same counter: with a GET-then-SET store some
// increments would be lost.
func TestStoreUpdateIsAtomic(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	if _, _, err := s.Create(ctx, newRun("r1", "b")); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.Jobs++; return nil })
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	r, err := s.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Jobs != writers*each || r.Rev != 1+writers*each {
		t.Fatalf("after %d updates: jobs %d rev %d", writers*each, r.Jobs, r.Rev)
	}
	sentinel := errors.New("no")
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error { r.Jobs = 0; return sentinel }); !errors.Is(err, sentinel) {
		t.Fatalf("Update with a failing fn = %v", err)
	}
	if r, _ := s.Get(ctx, "r1"); r.Jobs != writers*each {
		t.Fatalf("a failed update changed the run: jobs %d", r.Jobs)
	}
}

func TestStoreDecide(t *testing.T) {
	park := func(r *lifecycle.Run) error {
		r.Status = lifecycle.StatusParked
		r.Parked = []lifecycle.Parked{{TaskID: "1.2", Attempt: 3}}
		r.Head = "aaaaaaaaaa"
		r.EditTask("1.2").Status = lifecycle.TaskStatusEscalated
		return nil
	}
	tests := []struct {
		name       string
		setup      func(*lifecycle.Run) error
		decision   lifecycle.Decision
		head       string
		wantErr    string
		wantStatus lifecycle.RunStatus
	}{
		{"retry", park, lifecycle.Decision{TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "use tabs", By: "ann"}}, "aaaaaaaaaa", "", lifecycle.StatusQueued},
		{"reply names no task", park, lifecycle.Decision{Decision: runner.Decision{Kind: runner.DecisionSkip, By: "ann"}}, "aaaaaaaaaa", "", lifecycle.StatusQueued},
		{"abort", park, lifecycle.Decision{Decision: runner.Decision{Kind: runner.DecisionAbort, By: "ann"}}, "aaaaaaaaaa", "", lifecycle.StatusAborted},
		{"head moved", park, lifecycle.Decision{Decision: runner.Decision{Kind: runner.DecisionApprove}}, "bbbbbbbbbb", "moved from aaaaaaa to bbbbbbb", lifecycle.StatusParked},
		{"queued by another decision", func(r *lifecycle.Run) error {
			r.Status = lifecycle.StatusQueued
			r.Parked = []lifecycle.Parked{{TaskID: "1.2"}}
			r.Decisions = map[string]lifecycle.Decision{"1.1": {TaskID: "1.1", Decision: runner.Decision{Kind: runner.DecisionSkip}}}
			return nil
		}, lifecycle.Decision{TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "again"}}, "", "", lifecycle.StatusQueued},
		{"other task", park, lifecycle.Decision{TaskID: "1.1", Decision: runner.Decision{Kind: runner.DecisionApprove}}, "aaaaaaaaaa", "waits on task 1.2, not 1.1", lifecycle.StatusParked},
		{"running", func(r *lifecycle.Run) error { r.Status = lifecycle.StatusRunning; return nil }, lifecycle.Decision{Decision: runner.Decision{Kind: runner.DecisionApprove}}, "x", "is running, not waiting", lifecycle.StatusRunning},
		// Parked while the job still runs (or after its worker died): the answer is taken at once; the
		// branch moving under the job's own checkpoints does not refuse it.
		{"parked while running", func(r *lifecycle.Run) error {
			r.Status = lifecycle.StatusRunning
			r.Parked = []lifecycle.Parked{{TaskID: "1.2", Attempt: 3}}
			r.Head = "aaaaaaaaaa"
			return nil
		}, lifecycle.Decision{TaskID: "1.2", Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: "smaller steps"}}, "cccccccccc", "", lifecycle.StatusRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, prefix := testRedis(t)
			s := NewStore(rdb, prefix)
			ctx := context.Background()
			if _, _, err := s.Create(ctx, newRun("r1", "b")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(ctx, "r1", tt.setup); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Decide(ctx, "r1", tt.decision, tt.head)
			var np *NotParkedError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Decide: %v", err)
			case tt.wantErr != "" && (!errors.As(err, &np) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Decide = %v, want NotParkedError containing %q", err, tt.wantErr)
			}
			r, err := s.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.wantStatus {
				t.Fatalf("status = %s, want %s", r.Status, tt.wantStatus)
			}
			switch tt.wantStatus {
			case lifecycle.StatusRunning:
				if tt.wantErr == "" && (len(r.Parked) != 0 || r.Decisions["1.2"].Guidance != tt.decision.Guidance) {
					t.Errorf("after decision: parked %+v decisions %+v", r.Parked, r.Decisions)
				}
			case lifecycle.StatusQueued:
				d := r.Decisions["1.2"]
				if len(r.Parked) != 0 || d.Kind != tt.decision.Kind || d.Guidance != tt.decision.Guidance || d.TaskID != "1.2" {
					t.Errorf("after decision: parked %+v decisions %+v", r.Parked, r.Decisions)
				}
			case lifecycle.StatusAborted:
				if r.AbortedBy != "ann" || r.Tasks[0].Status != lifecycle.TaskStatusAborted || r.Tasks[1].Status != lifecycle.TaskStatusAborted {
					t.Errorf("after abort: by %q tasks %+v", r.AbortedBy, r.Tasks)
				}
				if _, err := s.ActiveOnBranch(ctx, "octo", "hello", "b"); !errors.Is(err, ErrNotFound) {
					t.Errorf("an aborted run still owns its branch: %v", err)
				}
			}
		})
	}
}

// TestStoreDecideOnce: two replies race for one parked task; exactly one decision applies.
func TestStoreDecideOnce(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	if _, _, err := s.Create(ctx, newRun("r1", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error {
		r.Status, r.Parked, r.Head = lifecycle.StatusParked, []lifecycle.Parked{{TaskID: "1.1"}}, "h"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const n = 6
	results := make(chan error, n)
	for i := range n {
		go func() {
			_, _, err := s.Decide(ctx, "r1", lifecycle.Decision{Decision: runner.Decision{Kind: runner.DecisionRetry, Guidance: string(rune('a' + i))}}, "h")
			results <- err
		}()
	}
	ok := 0
	for range n {
		err := <-results
		var np *NotParkedError
		switch {
		case err == nil:
			ok++
		case !errors.As(err, &np):
			t.Fatalf("Decide: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d decisions applied to one parked task, want 1", ok)
	}
}

// TestStoreDecideIsIdempotent: a resume job retried after its decision was stored sees the decision as
// taken, not as a refusal.
func TestStoreDecideIsIdempotent(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	if _, _, err := s.Create(ctx, newRun("r1", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "r1", func(r *lifecycle.Run) error {
		r.Status, r.Parked = lifecycle.StatusParked, []lifecycle.Parked{{TaskID: "1.1"}, {TaskID: "1.2"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	d := lifecycle.Decision{Key: "resume:comment:1", Decision: runner.Decision{Kind: runner.DecisionSkip}}
	r, already, err := s.Decide(ctx, "r1", d, "")
	if err != nil || already || r.Decisions["1.1"].Kind != runner.DecisionSkip || len(r.Parked) != 1 {
		t.Fatalf("first Decide = %+v, %v, %v", r, already, err)
	}
	r, already, err = s.Decide(ctx, "r1", d, "")
	if err != nil || !already || len(r.Parked) != 1 || r.Parked[0].TaskID != "1.2" {
		t.Fatalf("repeated Decide = parked %+v, already %v, %v; want the stored run unchanged", r.Parked, already, err)
	}
	// Another request on the remaining task still applies while the run is queued.
	r, already, err = s.Decide(ctx, "r1", lifecycle.Decision{Key: "resume:comment:2", Decision: runner.Decision{Kind: runner.DecisionApprove}}, "")
	if err != nil || already || r.Decisions["1.2"].Kind != runner.DecisionApprove || len(r.Parked) != 0 || r.Status != lifecycle.StatusQueued {
		t.Fatalf("second decision = %+v, %v, %v", r, already, err)
	}
}
