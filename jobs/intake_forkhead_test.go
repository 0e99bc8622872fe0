package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
)

// TestIntakeForkHeadBeforeCommand: a writer's /akira run on a fork's pull request runs the head only
// when a webhook showed it before the comment was written (both GitHub's times). A head pushed after
// the command, or never shown, is refused naming it, and nothing is queued; the refusal counts as a
// sighting, so the writer's next command runs it.
func TestIntakeForkHeadBeforeCommand(t *testing.T) {
	const head = "f0f0f0f0f0f0"
	onPR := func(author string, at time.Time) queue.IntakePayload {
		p := comment(author, "/akira run", 4)
		c := p.Body.(*queue.CommentIntake)
		c.OnPullRequest, c.CreatedAt = true, at
		return p
	}
	for _, tt := range []struct {
		name   string
		before []queue.IntakePayload
		in     queue.IntakePayload
		runs   int
		reply  string // a fragment of the one reply, or none
	}{
		{name: "pushed a minute before the command", before: []queue.IntakePayload{forkPush(4, head, commentAt.Add(-time.Minute))},
			in: onPR("alice", commentAt), runs: 1},
		{name: "pushed after the command, before the intake read the pull request",
			before: []queue.IntakePayload{forkPush(4, "0ld0ld", commentAt.Add(-time.Hour)), forkPush(4, head, commentAt.Add(5*time.Second))},
			in:     onPR("alice", commentAt), reply: "the fork's head `f0f0f0f` was pushed after `/akira run` was written"},
		{name: "pushed in the second of the command", before: []queue.IntakePayload{forkPush(4, head, commentAt)},
			in: onPR("alice", commentAt), reply: "was pushed after"},
		{name: "no webhook showed the head", before: []queue.IntakePayload{forkPush(4, "0ld0ld", commentAt.Add(-time.Hour))},
			in: onPR("alice", commentAt), reply: "had not been shown to Akira when `/akira run` was written"},
		{name: "the same head seen on another pull request", before: []queue.IntakePayload{forkPush(5, head, commentAt.Add(-time.Hour))},
			in: onPR("alice", commentAt), reply: "had not been shown to Akira"},
		{name: "a command without GitHub's time", before: []queue.IntakePayload{forkPush(4, head, commentAt.Add(-time.Hour))},
			in: onPR("alice", time.Time{}), reply: "was pushed after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jh := newJobsHarness(t)
			jh.gh.Permissions["alice"] = "write"
			jh.gh.Pulls[4] = &ports.PullRequest{Number: 4, HeadRef: "feature", HeadRepo: "eve/r", HeadSHA: head}
			for _, p := range tt.before {
				if err := jh.intake(p); err != nil {
					t.Fatalf("intake of a push: %v", err)
				}
			}
			if got := jh.gh.Effects(); len(got) != 0 {
				t.Fatalf("a push to a fork's pull request did %q on GitHub", got)
			}
			if err := jh.intake(tt.in); err != nil {
				t.Fatalf("intake: %v", err)
			}
			runs := queued[queue.RunPayload](jh, queue.TypeRun)
			if len(runs) != tt.runs || (tt.runs == 1 && (runs[0].Trigger != lifecycle.TriggerFork || runs[0].HeadSHA != head)) {
				t.Fatalf("runs queued = %+v, want %d fork run at %s", runs, tt.runs, head)
			}
			effects := jh.gh.Effects()
			if tt.reply == "" {
				if len(effects) != 1 || !strings.HasPrefix(effects[0], "react eyes") {
					t.Fatalf("effects = %q, want the command's reaction only", effects)
				}
				return
			}
			if len(effects) != 1 || !strings.HasPrefix(effects[0], "comment #4: Akira did not start:") || !strings.Contains(effects[0], tt.reply) {
				t.Fatalf("effects = %q, want one refusal saying %q", effects, tt.reply)
			}
		})
	}

	t.Run("the writer's next command, after the refusal, runs the head", func(t *testing.T) {
		jh := newJobsHarness(t)
		jh.gh.Permissions["alice"] = "write"
		jh.gh.Pulls[4] = &ports.PullRequest{Number: 4, HeadRef: "feature", HeadRepo: "eve/r", HeadSHA: head}
		for _, p := range []queue.IntakePayload{onPR("alice", commentAt), onPR("alice", commentAt.Add(30*time.Second))} {
			if err := jh.intake(p); err != nil {
				t.Fatalf("intake: %v", err)
			}
		}
		// The push's webhook, late, says GitHub showed the head after the first command: the
		// second still runs it, once.
		if err := jh.intake(forkPush(4, head, commentAt.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		if runs := queued[queue.RunPayload](jh, queue.TypeRun); len(runs) != 1 || runs[0].HeadSHA != head {
			t.Fatalf("runs queued = %+v, want the second command's", runs)
		}
		if refusals := jh.gh.Effects(); len(refusals) != 2 || !strings.Contains(refusals[0], "had not been shown") || !strings.HasPrefix(refusals[1], "react eyes") {
			t.Fatalf("effects = %q, want the first command refused, the second taken", refusals)
		}
	})
}
