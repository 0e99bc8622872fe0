package jobs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner"
)

// TestIntakePayloadWire: a task queued before the body became one field (each event's body under its
// own key) reads into the same body, and a payload written now has that layout, so workers of either
// release read each other's tasks during a rolling deploy.
func TestIntakePayloadWire(t *testing.T) {
	sha := strings.Repeat("a", 40)
	tests := []struct {
		event, key, body string
		want             queue.IntakeBody
	}{
		{queue.EventIssueComment, "comment", `{"id":1,"number":2,"on_pull_request":true,"author":"a","body":"/akira run"}`,
			&queue.CommentIntake{ID: 1, Number: 2, OnPullRequest: true, Author: "a", Body: "/akira run"}},
		{queue.EventPush, "push", `{"branch":"main","after":"abc","changed":["ROADMAP.md"]}`,
			&queue.PushIntake{Branch: "main", After: "abc", Changed: []string{"ROADMAP.md"}}},
		{queue.EventPullRequest, "pull_request", `{"number":3,"action":"opened","head_ref":"f","head_sha":"s"}`,
			&queue.PullRequestIntake{Number: 3, Action: "opened", HeadRef: "f", HeadSHA: "s"}},
		{queue.EventCheckRun, "check_run", `{"id":4,"run_id":"r","task_id":"1.1","decision":"skip","number":5}`,
			&queue.CheckRunIntake{ID: 4, RunID: "r", TaskID: "1.1", Decision: runner.DecisionSkip, Number: 5}},
		{queue.EventReviewComment, "review", `{"number":5,"review_id":6,"comment_id":7,"author":"a","head_ref":"akira/x"}`,
			&queue.ReviewIntake{Number: 5, ReviewID: 6, CommentID: 7, Author: "a", HeadRef: "akira/x"}},
		{queue.EventStatus, "ci", `{"head_sha":"` + sha + `","branches":["b"]}`,
			&queue.CIIntake{HeadSHA: sha, Branches: []string{"b"}}},
		{queue.EventIssues, "trigger", `{"number":7,"action":"labeled","actor":"a","label":"akira"}`,
			&queue.TriggerIntake{Number: 7, Action: queue.TriggerLabeled, Actor: "a", Label: "akira"}},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			raw := fmt.Sprintf(`{"v":2,"delivery_id":"d","event":%q,"installation_id":1,"owner":"o","repo":"r","sender":"a",%q:%s}`,
				tt.event, tt.key, tt.body)
			p, err := queue.DecodeIntakePayload(asynq.NewTask(queue.TypeIntake, []byte(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Body, tt.want) || p.DeliveryID != "d" || p.InstallationID != 1 || p.Sender != "a" {
				t.Fatalf("decoded %+v with body %+v, want body %+v", p, p.Body, tt.want)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(raw), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("encoded %s\nwant the layout %s", out, raw)
			}
		})
	}
}

// TestHeaderWire: the payloads that share TaskHeader keep the layout they had with the header's
// fields of their own, so a task queued by the previous release reads the same.
func TestHeaderWire(t *testing.T) {
	head := `"v":2,"delivery_id":"d","installation_id":1,"owner":"o","repo":"r","sender":"a"`
	want := queue.TaskHeader{Version: 2, DeliveryID: "d", InstallationID: 1, Owner: "o", Repo: "r", Sender: "a"}
	tests := []struct {
		typ, rest string
		decode    func(*asynq.Task) (queue.TaskHeader, error)
	}{
		{queue.TypeRun, `"trigger":"issue","number":4`, func(t *asynq.Task) (queue.TaskHeader, error) {
			p, err := queue.DecodeRunPayload(t)
			return p.TaskHeader, err
		}},
		{queue.TypeResume, `"number":4,"comment_id":9,"decision":"skip"`, func(t *asynq.Task) (queue.TaskHeader, error) {
			p, err := queue.DecodeResumePayload(t)
			return p.TaskHeader, err
		}},
		{queue.TypeRollback, `"number":4,"task_id":"1.1"`, func(t *asynq.Task) (queue.TaskHeader, error) {
			p, err := queue.DecodeRollbackPayload(t)
			return p.TaskHeader, err
		}},
		{queue.TypePlan, `"number":4`, func(t *asynq.Task) (queue.TaskHeader, error) {
			p, err := queue.DecodePlanPayload(t)
			return p.TaskHeader, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			got, err := tt.decode(asynq.NewTask(tt.typ, []byte("{"+head+","+tt.rest+"}")))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("header = %+v, want %+v", got, want)
			}
		})
	}
}
