package jobs

import (
	"context"
	"errors"
	"github.com/akira-bot/akira/jobs/intake"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// TestStartHandoffOncePerKey: concurrent repeats of a request with the same Idempotency-Key start
// one run and queue one handoff job; another token's same key is another request.
func TestStartHandoffOncePerKey(t *testing.T) {
	jh := newJobsHarness(t)
	ctl := &intake.Controller{Store: jh.store, Enqueuer: jh.h.d.Enqueuer}
	req := queue.HandoffRequest{Owner: "octo", Repo: "demo", Plan: "- [ ] 1 One\n", Token: store.Token{ID: "t-1", Name: "editor", Scope: store.ScopeStart}, Key: "k"}
	const n = 8
	var wg sync.WaitGroup
	ids, created := make([]string, n), make([]bool, n)
	for i := range n {
		wg.Go(func() {
			h, c, err := ctl.StartHandoff(context.Background(), req, 1)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], created[i] = h.ID, c
		})
	}
	wg.Wait()
	firsts := 0
	for i := range n {
		if created[i] {
			firsts++
		}
		if ids[i] != ids[0] {
			t.Errorf("request %d started run %s, request 0 run %s", i, ids[i], ids[0])
		}
	}
	if firsts != 1 {
		t.Errorf("%d requests created a run, want 1", firsts)
	}
	if got := queued[queue.HandoffPayload](jh, queue.TypeHandoff); len(got) != 1 || queue.RunIDFor(got[0].DeliveryID) != ids[0] {
		t.Fatalf("handoff jobs %+v, want one for run %s", got, ids[0])
	}
	// Another token's key is another request, whatever its name.
	other := req
	other.Token.ID = "t-2"
	h, c, err := ctl.StartHandoff(context.Background(), other, 1)
	if err != nil || !c || h.ID == ids[0] {
		t.Errorf("another token's key: %+v created %v err %v", h, c, err)
	}
	// The same token's key with another request is refused, naming the run the key started.
	for _, change := range []func(*queue.HandoffRequest){
		func(r *queue.HandoffRequest) { r.Plan = "- [ ] 1 Something else\n" },
		func(r *queue.HandoffRequest) { r.BudgetUSD = 5 },
		func(r *queue.HandoffRequest) { r.Base = "release" },
		func(r *queue.HandoffRequest) { r.Notify = map[string][]string{"run_finished": {"team"}} },
	} {
		changed := req
		change(&changed)
		_, c, err := ctl.StartHandoff(context.Background(), changed, 1)
		if reused, ok := errors.AsType[*store.KeyReusedError](err); !ok || reused.RunID != ids[0] || c {
			t.Errorf("the key with %+v: created %v, err %v; want the run %s it started named", changed, c, err, ids[0])
		}
	}
	if got := queued[queue.HandoffPayload](jh, queue.TypeHandoff); len(got) != 2 {
		t.Errorf("%d handoff jobs, want 2 (one per token)", len(got))
	}
}

func TestTokenAllows(t *testing.T) {
	for _, tc := range []struct {
		repos []string
		repo  string
		want  bool
	}{
		{nil, "octo/demo", true},
		{[]string{"octo/demo"}, "OCTO/Demo", true},
		{[]string{"octo/demo"}, "octo/demo2", false},
		{[]string{"octo/a", "octo/b"}, "octo/b", true},
	} {
		if got := (store.Token{Repos: tc.repos}).Allows(tc.repo); got != tc.want {
			t.Errorf("token for %v allows %s: %v, want %v", tc.repos, tc.repo, got, tc.want)
		}
	}
}

func TestCheckPlanText(t *testing.T) {
	for _, tc := range []struct {
		plan    string
		tasks   int
		problem string
	}{
		{"- [ ] 1 One\n- [ ] 2 Two\n", 2, ""},
		{"- [ ] 1 One\n- [ ] 1 Again\n", 0, "plan:2: duplicate task id 1"},
		{"Just do it.\n", 0, "no tasks"},
	} {
		n, err := intake.CheckPlanText(tc.plan)
		if n != tc.tasks || (err == nil) != (tc.problem == "") || (err != nil && !strings.Contains(err.Error(), tc.problem)) {
			t.Errorf("CheckPlanText(%q) = %d, %v; want %d, %q", tc.plan, n, err, tc.tasks, tc.problem)
		}
	}
}
