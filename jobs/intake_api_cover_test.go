package jobs

import (
	"context"
	"errors"
	"github.com/akira-bot/akira/jobs/intake"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
)

func TestTokensCreateFindRevoke(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := store.NewStore(rdb, prefix)
	ctx := context.Background()

	secret, err := s.CreateToken(ctx, "ops-1", store.ScopeControl)
	if err != nil || !strings.HasPrefix(secret, "akira_") {
		t.Fatalf("CreateToken = %q, %v", secret, err)
	}
	if _, err := s.CreateToken(ctx, "reader", store.ScopeRead); err != nil {
		t.Fatal(err)
	}
	// Redis keeps the hash only: the secret itself is nowhere under the prefix.
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	for _, k := range keys {
		if vals, _ := rdb.HGetAll(ctx, k).Result(); strings.Contains(strings.Join(mapValues(vals), " ")+strings.Join(mapKeys(vals), " "), secret) {
			t.Errorf("key %s holds the token's secret", k)
		}
	}

	got, err := s.TokenFor(ctx, secret)
	if err != nil || got.Name != "ops-1" || !got.CanControl() || got.Created.IsZero() {
		t.Fatalf("TokenFor = %+v, %v", got, err)
	}
	if got, err := s.TokenByHash(ctx, store.TokenHash(secret)); err != nil || got.Name != "ops-1" {
		t.Fatalf("TokenByHash = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "nope", "akira_" + strings.Repeat("0", 64)} {
		if _, err := s.TokenFor(ctx, bad); !errors.Is(err, store.ErrBadToken) {
			t.Errorf("TokenFor(%q) = %v, want ErrBadToken", bad, err)
		}
	}

	list, err := s.Tokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "ops-1" || list[1].Name != "reader" || list[1].CanControl() {
		t.Fatalf("Tokens = %+v, %v; want ops-1 (control) then reader (read)", list, err)
	}

	for _, tc := range []struct{ name, scope, want string }{
		{"ops-1", store.ScopeRead, `a token named "ops-1" exists`},
		{"bad name", store.ScopeRead, `token name "bad name"`},
		{"", store.ScopeRead, `token name ""`},
		{"x", "admin", `token scope "admin": want read, start or control`},
	} {
		if _, err := s.CreateToken(ctx, tc.name, tc.scope); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CreateToken(%q, %q) = %v, want an error with %q", tc.name, tc.scope, err, tc.want)
		}
	}

	if ok, err := s.RevokeToken(ctx, "ops-1"); err != nil || !ok {
		t.Fatalf("RevokeToken = %v, %v", ok, err)
	}
	if _, err := s.TokenFor(ctx, secret); !errors.Is(err, store.ErrBadToken) {
		t.Errorf("revoked token still found: %v", err)
	}
	if ok, err := s.RevokeToken(ctx, "ops-1"); err != nil || ok {
		t.Errorf("second RevokeToken = %v, %v; want false", ok, err)
	}
	// The name is free again once revoked.
	if _, err := s.CreateToken(ctx, "ops-1", store.ScopeRead); err != nil {
		t.Errorf("CreateToken after revoke: %v", err)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestAuditLogNewestFirst(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := store.NewStore(rdb, prefix)
	ctx := context.Background()
	for _, a := range []string{"stop", "retry", "abort"} {
		if err := s.Audit(ctx, store.AuditEntry{Token: "ops", Action: a, RunID: "r1", Result: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.AuditLog(ctx, 2)
	if err != nil || len(got) != 2 || got[0].Action != "abort" || got[1].Action != "retry" {
		t.Fatalf("AuditLog(2) = %+v, %v; want abort then retry", got, err)
	}
}

func TestRunsFilter(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := store.NewStore(rdb, prefix)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, tc := range []struct {
		id, owner, repo string
		status          lifecycle.RunStatus
	}{
		{"a", "Octo", "Hello", lifecycle.StatusRunning},
		{"b", "octo", "hello", lifecycle.StatusSucceeded},
		{"c", "other", "repo", lifecycle.StatusRunning},
	} {
		now := base.Add(time.Duration(i) * time.Hour)
		s.Now = func() time.Time { return now }
		r := newRun(tc.id, "akira/"+tc.id)
		r.Owner, r.Repo = tc.owner, tc.repo
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, tc.id, func(r *lifecycle.Run) error { r.Status = tc.status; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []*lifecycle.Run) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name string
		f    store.RunFilter
		want string
	}{
		{"all, newest first", store.RunFilter{}, "c,b,a"},
		{"repository in any case", store.RunFilter{Repo: "OCTO/hello"}, "b,a"},
		{"status", store.RunFilter{Status: []lifecycle.RunStatus{lifecycle.StatusRunning}}, "c,a"},
		{"both", store.RunFilter{Repo: "octo/hello", Status: []lifecycle.RunStatus{lifecycle.StatusSucceeded}}, "b"},
		{"limit", store.RunFilter{Limit: 1}, "c"},
		{"nothing", store.RunFilter{Repo: "no/such"}, ""},
	} {
		got, err := s.Runs(ctx, tc.f)
		if err != nil || ids(got) != tc.want {
			t.Errorf("%s: Runs = %q, %v; want %q", tc.name, ids(got), err, tc.want)
		}
	}
}

func TestSessionKeyIsSharedAndStable(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	a, err := store.NewStore(rdb, prefix).SessionKey(ctx)
	if err != nil || len(a) != 32 {
		t.Fatalf("SessionKey = %x, %v", a, err)
	}
	// A second web process gets the same key.
	b, err := store.NewStore(rdb, prefix).SessionKey(ctx)
	if err != nil || string(a) != string(b) {
		t.Fatalf("second SessionKey = %x, %v; want %x", b, err, a)
	}
}

// controlRun stores a run of o/r on pull request 9 in the given state.
func controlRun(t *testing.T, s *store.Store, id string, status lifecycle.RunStatus, parked ...lifecycle.Parked) {
	t.Helper()
	r := newRun(id, "akira/"+id)
	r.Owner, r.Repo, r.InstallationID, r.PR = "o", "r", 7, 9
	if _, _, err := s.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(context.Background(), id, func(r *lifecycle.Run) error { r.Status, r.Parked = status, parked; return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestControlActions(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	c := &intake.Controller{Store: jh.store, Enqueuer: jh.h.d.Enqueuer}
	controlRun(t, jh.store, "working", lifecycle.StatusRunning)
	controlRun(t, jh.store, "parked", lifecycle.StatusParked, lifecycle.Parked{TaskID: "1.2"})
	controlRun(t, jh.store, "parked-none", lifecycle.StatusParked)
	controlRun(t, jh.store, "done", lifecycle.StatusSucceeded)
	controlRun(t, jh.store, "queued", lifecycle.StatusQueued)
	ops := store.Token{Name: "ops", Scope: store.ScopeControl}

	for _, tc := range []struct {
		name            string
		req             intake.ControlRequest
		want, wantError string
	}{
		{"stop a working run", intake.ControlRequest{RunID: "working", Action: intake.ActionStop}, "stop requested", ""},
		{"stop a finished run", intake.ControlRequest{RunID: "done", Action: intake.ActionStop}, "", "run done is succeeded, not working"},
		{"retry a working run", intake.ControlRequest{RunID: "working", Action: intake.ActionRetry}, "", "not waiting for a decision"},
		{"retry a finished run", intake.ControlRequest{RunID: "done", Action: intake.ActionRetry}, "", "run done is succeeded"},
		{"approve with nothing parked", intake.ControlRequest{RunID: "parked-none", Action: intake.ActionApprove}, "", "has no task waiting"},
		{"skip a task that is not parked", intake.ControlRequest{RunID: "parked", Action: intake.ActionSkip, TaskID: "1.1"}, "", "task 1.1 of run parked is not waiting"},
		{"unknown action", intake.ControlRequest{RunID: "parked", Action: "explode"}, "", `unknown action "explode"`},
		{"retry the parked task", intake.ControlRequest{RunID: "parked", Action: intake.ActionRetry, Guidance: "use the v2 API", RequestID: "q1"}, "retry queued", ""},
		{"abort a queued run", intake.ControlRequest{RunID: "queued", Action: intake.ActionAbort, RequestID: "q2"}, "abort requested", ""},
	} {
		tc.req.Token, tc.req.Via = ops, "api"
		got, err := c.Control(ctx, tc.req)
		if tc.wantError != "" {
			if !errors.Is(err, intake.ErrNotNow) || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%s: Control = %q, %v; want ErrNotNow with %q", tc.name, got, err, tc.wantError)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: Control = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := c.Control(ctx, intake.ControlRequest{RunID: "nope", Action: intake.ActionStop, Token: ops}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Control of an unknown run = %v, want ErrNotFound", err)
	}

	// The stop is written into the run's record for its job to find, naming who asked.
	if r, _ := jh.store.Get(ctx, "working"); r.Stop == nil || r.Stop.By != "ops (api)" || r.Stop.Abort {
		t.Errorf("working run's stop = %+v, want a stop by ops (api)", r.Stop)
	}
	if r, _ := jh.store.Get(ctx, "queued"); r.Stop == nil || !r.Stop.Abort {
		t.Errorf("queued run's stop = %+v, want an abort", r.Stop)
	}
	// The retry goes through the resume job with the parked task and the guidance.
	resumes := queued[queue.ResumePayload](jh, queue.TypeResume)
	if len(resumes) != 1 || resumes[0].RunID != "parked" || resumes[0].TaskID != "1.2" || resumes[0].Decision != runner.DecisionKind(intake.ActionRetry) ||
		resumes[0].Guidance != "use the v2 API" || resumes[0].Sender != "ops (api)" || resumes[0].Number != 9 || !resumes[0].ByButton {
		t.Errorf("resume jobs = %+v, want one retry of task 1.2 of run parked", resumes)
	}
	// Every action is audited, the refused ones with the reason.
	log, err := jh.store.AuditLog(ctx, 100)
	if err != nil || len(log) != 9 {
		t.Fatalf("audit = %d entries, %v; want 9", len(log), err)
	}
	if e := log[len(log)-1]; e.Action != intake.ActionStop || e.RunID != "working" || e.Result != "stop requested" || e.Repo != "o/r" || e.Via != "api" {
		t.Errorf("first audit entry = %+v", e)
	}
	if e := log[len(log)-2]; !strings.HasPrefix(e.Result, "refused: ") {
		t.Errorf("refused action audited as %q", e.Result)
	}
	// The actions that happened are mirrored on the pull request by a job each.
	lines := queued[queue.AuditLinePayload](jh, queue.TypeAuditLine)
	if len(lines) != 3 {
		t.Fatalf("audit lines = %+v, want 3 (stop, retry, abort)", lines)
	}
	for _, l := range lines {
		if l.Number != 9 || l.Owner != "o" || l.Body == "" || !strings.Contains(l.Body, "ops") {
			t.Errorf("audit line %+v, want a line on o/r#9 naming ops", l)
		}
	}
}

func TestHandleAuditLinePostsAndRetries(t *testing.T) {
	jh := newJobsHarness(t)
	ctx := context.Background()
	p := queue.AuditLinePayload{Version: queue.PayloadVersion, ID: "q1-stop", InstallationID: 7, Owner: "o", Repo: "r", Number: 9, Body: "stop through the api by ops."}
	task, err := queue.TaskOptions{}.NewAuditLineTask(p)
	if err != nil {
		t.Fatal(err)
	}
	jh.gh.FailOnce("CreateComment", errors.New("502 bad gateway"))
	if err := jh.h.api.HandleAuditLine(ctx, task); err == nil || !strings.Contains(err.Error(), "o/r#9") {
		t.Fatalf("HandleAuditLine with GitHub down = %v, want an error naming o/r#9", err)
	}
	if err := jh.h.api.HandleAuditLine(ctx, task); err != nil {
		t.Fatal(err)
	}
	if got := jh.gh.CommentsOn(9); len(got) != 1 || got[0] != p.Body {
		t.Errorf("comments on #9 = %q, want the line once", got)
	}
	if p.JobID() != "audit-line:q1-stop" {
		t.Errorf("JobID = %q", p.JobID())
	}
	if err := (queue.AuditLinePayload{Version: queue.PayloadVersion}).Validate(); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("Validate of an empty payload = %v", err)
	}
}
