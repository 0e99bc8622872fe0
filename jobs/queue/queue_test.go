package queue

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
)

func validRun() RunPayload {
	return RunPayload{TaskHeader: TaskHeader{DeliveryID: "d-1", InstallationID: 7, Owner: "o", Repo: "r"}, Trigger: lifecycle.TriggerIssue, Number: 3}
}

func validResume() ResumePayload {
	return ResumePayload{TaskHeader: TaskHeader{InstallationID: 7, Owner: "o", Repo: "r"}, CommentID: 99, Number: 3, Decision: runner.DecisionRetry, Guidance: "use tabs"}
}

func TestRunPayloadValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*RunPayload)
		wantErr string
	}{
		{"issue", func(*RunPayload) {}, ""},
		{"push", func(p *RunPayload) { p.Trigger, p.Number = lifecycle.TriggerPush, 0 }, ""},
		{"pull request", func(p *RunPayload) { p.Trigger, p.Branch = lifecycle.TriggerPullRequest, "feature" }, ""},
		{"pull request without branch", func(p *RunPayload) { p.Trigger = lifecycle.TriggerPullRequest }, "without a number and a branch"},
		{"fork", func(p *RunPayload) { p.Trigger, p.HeadSHA = lifecycle.TriggerFork, "f0f0" }, ""},
		{"fork without its head", func(p *RunPayload) { p.Trigger = lifecycle.TriggerFork }, "without a pull request number and its head"},
		{"continue", func(p *RunPayload) { p.Trigger, p.RunID = lifecycle.TriggerContinue, "abc" }, ""},
		{"continue without run", func(p *RunPayload) { p.Trigger = lifecycle.TriggerContinue }, "continue without a run id"},
		{"issue without number", func(p *RunPayload) { p.Number = 0 }, "without an issue number"},
		{"unknown trigger", func(p *RunPayload) { p.Trigger = "cron" }, `unknown trigger "cron"`},
		{"no delivery", func(p *RunPayload) { p.DeliveryID = "" }, "no delivery id"},
		{"no installation", func(p *RunPayload) { p.InstallationID = 0 }, "no installation id"},
		{"no repo", func(p *RunPayload) { p.Repo = "" }, "no repository"},
		{"future version", func(p *RunPayload) { p.Version = 3 }, "version 3, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validRun()
			p.Version = PayloadVersion
			tt.edit(&p)
			err := p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestResumePayloadValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*ResumePayload)
		wantErr string
	}{
		{"reply", func(*ResumePayload) {}, ""},
		{"button", func(p *ResumePayload) {
			p.Number, p.CommentID, p.DeliveryID, p.RunID, p.TaskID = 0, 0, "d-2", "run1", "1.1"
		}, ""},
		{"no key", func(p *ResumePayload) { p.CommentID = 0 }, "neither a delivery id nor a comment id"},
		{"no run", func(p *ResumePayload) { p.Number = 0 }, "neither an issue number nor a run id"},
		{"unknown decision", func(p *ResumePayload) { p.Decision = "merge" }, `unknown decision "merge"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validResume()
			p.Version = PayloadVersion
			tt.edit(&p)
			err := p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestJobIDs(t *testing.T) {
	if got := validRun().JobID(); got != "run:d-1" {
		t.Errorf("run JobID = %q", got)
	}
	r := validResume()
	r.DeliveryID = "d-9"
	if got := r.JobID(); got != "resume:comment:99" {
		t.Errorf("resume JobID with a comment = %q, want the comment id to win over the delivery", got)
	}
	r.CommentID = 0
	if got := r.JobID(); got != "resume:d-9" {
		t.Errorf("resume JobID without a comment = %q", got)
	}
	first, again := RunIDFor("d-1"), RunIDFor("d-1")
	if first != again || first == RunIDFor("d-2") || len(RunIDFor("x")) != 12 {
		t.Errorf("RunIDFor must be stable, distinct per delivery and 12 characters: %q %q", RunIDFor("d-1"), RunIDFor("d-2"))
	}
}

func TestDecodeRejectsWithoutRetry(t *testing.T) {
	good, err := TaskOptions{}.NewRunTask(validRun())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := DecodeRunPayload(good); err != nil || p.Number != 3 || p.Version != PayloadVersion {
		t.Fatalf("DecodeRunPayload(good) = %+v, %v", p, err)
	}
	future, _ := json.Marshal(RunPayload{TaskHeader: TaskHeader{Version: 99, DeliveryID: "d", InstallationID: 1, Owner: "o", Repo: "r"}, Trigger: lifecycle.TriggerPush})
	tests := []struct {
		name string
		task *asynq.Task
	}{
		{"not json", asynq.NewTask(TypeRun, []byte("{"))},
		{"invalid", asynq.NewTask(TypeRun, []byte(`{"v":1}`))},
		{"future version", asynq.NewTask(TypeRun, future)},
		{"wrong type", asynq.NewTask(TypeResume, good.Payload())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRunPayload(tt.task)
			if !errors.Is(err, asynq.SkipRetry) {
				t.Fatalf("DecodeRunPayload = %v, want an error wrapping asynq.SkipRetry", err)
			}
		})
	}
	if _, err := DecodeResumePayload(asynq.NewTask(TypeResume, []byte(`{"v":2,"decision":"merge"}`))); !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("DecodeResumePayload(bad) = %v, want SkipRetry", err)
	}
}

// TestEnqueuer enqueues into a real Redis and reads the tasks back with asynq's inspector: the options
// must be on the stored task, and the second enqueue of the same delivery must be ErrDuplicate.
func TestEnqueuer(t *testing.T) {
	rdb, prefix := redistest.Prefixed(t)
	queue := strings.TrimSuffix(prefix, ":")
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true) })
	ctx := context.Background()
	e := NewEnqueuer(client, TaskOptions{Queue: queue, Timeout: 90 * time.Minute, MaxRetry: 2})

	if err := e.EnqueueRun(ctx, validRun()); err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	if err := e.EnqueueRun(ctx, validRun()); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second EnqueueRun = %v, want ErrDuplicate", err)
	}
	info, err := insp.GetTaskInfo(queue, "run:d-1")
	if err != nil {
		t.Fatalf("GetTaskInfo: %v", err)
	}
	if info.Type != TypeRun || info.Timeout != 90*time.Minute || info.MaxRetry != 2 || info.Retention != DefaultRetention {
		t.Errorf("stored task = type %s timeout %v max retry %d retention %v", info.Type, info.Timeout, info.MaxRetry, info.Retention)
	}

	if err := e.EnqueueResume(ctx, validResume()); err != nil {
		t.Fatalf("EnqueueResume: %v", err)
	}
	again := validResume()
	again.DeliveryID = "another-delivery-of-the-edited-comment"
	if err := e.EnqueueResume(ctx, again); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("EnqueueResume of the same comment = %v, want ErrDuplicate", err)
	}
	if err := e.EnqueueRun(ctx, RunPayload{}); err == nil || errors.Is(err, ErrDuplicate) {
		t.Fatalf("EnqueueRun(empty) = %v, want a validation error", err)
	}

	intake := IntakePayload{TaskHeader: TaskHeader{DeliveryID: "d-7", InstallationID: 7, Owner: "o", Repo: "r"}, Event: EventPush, Body: &PushIntake{Branch: "main"}}
	if err := e.EnqueueIntake(ctx, intake); err != nil {
		t.Fatalf("EnqueueIntake: %v", err)
	}
	if err := e.EnqueueIntake(ctx, intake); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second EnqueueIntake = %v, want ErrDuplicate", err)
	}
	info, err = insp.GetTaskInfo(queue, "intake:d-7")
	if err != nil || info.Type != TypeIntake || info.MaxRetry != IntakeMaxRetry || info.Timeout != IntakeTimeout {
		t.Fatalf("intake task = %+v, %v", info, err)
	}
}

// TestStaleAfterOutlivesAJob: the store deems a run stale only after any job of it would have timed
// out, so a run whose job is merely slow keeps its branch.
func TestStaleAfterOutlivesAJob(t *testing.T) {
	if store.DefaultStaleAfter <= DefaultTimeout {
		t.Errorf("store.DefaultStaleAfter = %v; want longer than DefaultTimeout %v", store.DefaultStaleAfter, DefaultTimeout)
	}
}
