package jobs

import (
	"context"
	"strings"
	"testing"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/runner/config"
)

// withNotify gives the harness's operator a sink "ops" that gets the events named.
func withNotify(t *testing.T, jh *jobsHarness, events ...string) {
	t.Helper()
	y := "agents:\n  sh:\n    kind: exec\n    command: sh \"$AKIRA_TEST_AGENT\"\n    env: [AKIRA_TEST_AGENT]\ndefault_agent: sh\nci:\n  watch: off\n" +
		"notify:\n  sinks:\n    ops:\n      kind: ntfy\n      url: https://ntfy.example.invalid/akira\n  events:\n"
	for _, e := range events {
		y += "    " + e + ": [ops]\n"
	}
	op, err := config.ParseOperator([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	jh.h.d.Operator = op
}

func TestRunNotifiesTheOperatorsSinks(t *testing.T) {
	jh, _ := runWorld(t, map[string]string{"ROADMAP.md": "# Plan\n\n- [ ] 1.1 Works\n- [ ] 1.2 Does fail\n"})
	withNotify(t, jh, "escalation", "run_finished")
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "Roadmap", Body: "Please run the roadmap."}
	ctx := context.Background()
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	run, err := jh.store.ByNumber(ctx, "o", "r", 4)
	if err != nil || run.Status != lifecycle.StatusParked {
		t.Fatalf("run = %+v, %v; want parked", run, err)
	}
	msgs := queued[queue.NotifyPayload](jh, queue.TypeNotify)
	if len(msgs) != 1 {
		t.Fatalf("notifications = %+v, want the escalation only", msgs)
	}
	m := msgs[0]
	if m.Sink != "ops" || m.Message.Event != "escalation" || m.Message.TaskID != "1.2" || m.Message.Repo != "o/r" || m.Message.RunID != run.ID ||
		m.Message.Title == "" || !strings.Contains(m.Message.Reply, "/akira") {
		t.Errorf("notification = %+v", m)
	}
	// Delivered again, the same escalation is not notified twice.
	if err := jh.runJob(roadmapRun(4)); err != nil {
		t.Fatal(err)
	}
	if n := len(queued[queue.NotifyPayload](jh, queue.TypeNotify)); n != 1 {
		t.Errorf("notifications after a redelivery = %d, want 1", n)
	}
}

func TestRepositoryChoosesItsNotifications(t *testing.T) {
	// The repository turns run_finished off for itself; the operator routes it to ops.
	jh, _ := runWorld(t, map[string]string{"README.md": "hi\n", ".github/akira.yml": "notify:\n  run_finished: []\n"})
	withNotify(t, jh, "run_finished")
	jh.gh.Issues[4] = ports.Issue{Number: 4, Title: "One thing", Body: "- [ ] 1.1 First\n"}
	if err := jh.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	if run, err := jh.store.ByNumber(context.Background(), "o", "r", 4); err != nil || run.Status != lifecycle.StatusSucceeded {
		t.Fatalf("run = %+v, %v", run, err)
	}
	if msgs := queued[queue.NotifyPayload](jh, queue.TypeNotify); len(msgs) != 0 {
		t.Errorf("notifications = %+v, want none (the repository turned them off)", msgs)
	}

	// Without the repository's choice, the operator's routing holds.
	jh2, _ := runWorld(t, map[string]string{"README.md": "hi\n"})
	withNotify(t, jh2, "run_finished")
	jh2.gh.Issues[4] = ports.Issue{Number: 4, Title: "One thing", Body: "- [ ] 1.1 First\n"}
	if err := jh2.runJob(issueRun(4)); err != nil {
		t.Fatal(err)
	}
	msgs := queued[queue.NotifyPayload](jh2, queue.TypeNotify)
	if len(msgs) != 1 || msgs[0].Message.Event != "run_finished" || msgs[0].Sink != "ops" {
		t.Errorf("notifications = %+v, want run_finished to ops", msgs)
	}
}
