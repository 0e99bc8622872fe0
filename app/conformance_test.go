package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/queue"
)

// fixturesDir finds the shared GitHub fixtures: the "shared" folder beside the repository root. The
// test is skipped without them.
func fixturesDir(t *testing.T) string {
	t.Helper()
	fx, err := findFixtures()
	if err != nil {
		t.Skip(err)
	}
	return fx
}

func findFixtures() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
	fx := filepath.Join(dir, "..", "shared", "fixtures", "github")
	if _, err := os.Stat(filepath.Join(fx, "webhooks")); err != nil {
		return "", fmt.Errorf("no shared GitHub fixtures beside the repository (%w)", err)
	}
	return fx, nil
}

// fixtureOutcomes is what the webhook server answers to each of GitHub's example payloads. It acts on
// the payload alone (the intake job asks GitHub the rest), so an example is accepted when it is of a
// kind Akira may act on, whatever repository it names.
var fixtureOutcomes = map[string]string{
	// Not Akira's buttons: other actions, an unknown identifier ("lgtm|26764"), another app's check runs.
	"check_run/completed.1.payload.json":                   resultIgnored,
	"check_run/completed.payload.json":                     resultIgnored,
	"check_run/completed.with-organization.payload.json":   resultIgnored,
	"check_run/created.payload.json":                       resultIgnored,
	"check_run/created.with-organization.payload.json":     resultIgnored,
	"check_run/requested_action.payload.json":              resultIgnored,
	"check_run/rerequested.payload.json":                   resultIgnored,
	"check_run/rerequested.with-organization.payload.json": resultIgnored,

	"check_suite/requested.payload.json":                                    resultIgnored,
	"check_suite/requested.payload.with-email-with-special-characters.json": resultIgnored,
	"check_suite/requested.with-organization.payload.json":                  resultIgnored,
	"check_suite/rerequested.payload.json":                                  resultIgnored,
	"check_suite/rerequested.with-organization.payload.json":                resultIgnored,

	// The pull request's own CI: a suite or workflow run completed, or a status, goes to the intake,
	// which finds the run waiting for that commit (if any). GitHub's examples of completed suites and
	// workflow runs carry no installation, so they are ignored; requested runs, jobs and a pending state
	// say nothing Akira waits for.
	"check_suite/completed.1.payload.json":                 resultIgnored,
	"check_suite/completed.payload.json":                   resultIgnored,
	"check_suite/completed.with-organization.payload.json": resultIgnored,

	"status/payload.json":                            resultIgnored,
	"status/with-author-committer-null.payload.json": resultIgnored,
	"status/with-installation.payload.json":          resultAccepted,

	"workflow_job/completed.failure.with-organization.payload.json": resultIgnored,
	"workflow_job/completed.success.with-organization.payload.json": resultIgnored,
	"workflow_job/in_progress.payload.json":                         resultIgnored,
	"workflow_job/queued.payload.json":                              resultIgnored,

	"workflow_run/completed.payload.json":                    resultIgnored,
	"workflow_run/completed.with-pull-requests.payload.json": resultIgnored,
	"workflow_run/requested.payload.json":                    resultIgnored,
	"workflow_run/requested.with-conclusion.payload.json":    resultIgnored,

	"installation/created.payload.json":                resultAcknowledged,
	"installation/created.with-requester.payload.json": resultAcknowledged,
	"installation/deleted.payload.json":                resultAcknowledged,
	"installation_repositories/added.payload.json":     resultAcknowledged,

	// Comments without a command, and edits and deletions.
	"issue_comment/created.1.payload.json":                 resultIgnored,
	"issue_comment/created.payload.json":                   resultIgnored,
	"issue_comment/created.with-installation.payload.json": resultIgnored,
	"issue_comment/created.with-organization.payload.json": resultIgnored,
	"issue_comment/deleted.payload.json":                   resultIgnored,
	"issue_comment/deleted.with-organization.payload.json": resultIgnored,
	"issue_comment/edited.payload.json":                    resultIgnored,
	"issue_comment/edited.with-organization.payload.json":  resultIgnored,

	// Assigned to someone else than Akira's bot, or labelled without an installation: ignored.
	// TestFixtureTriggers turns the same payloads into the ones that start a run.
	"issues/assigned.payload.json":                   resultIgnored,
	"issues/assigned.with-installation.payload.json": resultIgnored,
	"issues/assigned.with-organization.payload.json": resultIgnored,
	"issues/labeled.payload.json":                    resultIgnored,
	"issues/labeled.with-organization.payload.json":  resultIgnored,
	"issues/opened.payload.json":                     resultIgnored,
	"issues/opened.with-empty-body.payload.json":     resultIgnored,
	"issues/opened.with-organization.payload.json":   resultIgnored,
	"issues/opened.with-transfer.payload.json":       resultIgnored,

	"ping/payload.json":                   resultAcknowledged,
	"ping/with-app_id.payload.json":       resultAcknowledged,
	"ping/with-organization.payload.json": resultAcknowledged,

	"pull_request/closed.payload.json":                             resultAccepted,
	"pull_request/closed.with-organization.payload.json":           resultAccepted,
	"pull_request/opened.payload.json":                             resultAccepted,
	"pull_request/opened.with-null-body.json":                      resultAccepted,
	"pull_request/opened.with-organization.payload.json":           resultAccepted,
	"pull_request/ready_for_review.payload.json":                   resultIgnored,
	"pull_request/ready_for_review.with-installation.payload.json": resultIgnored,
	"pull_request/ready_for_review.with-organization.payload.json": resultIgnored,
	"pull_request/reopened.payload.json":                           resultAccepted,
	"pull_request/reopened.with-organization.payload.json":         resultAccepted,
	"pull_request/synchronize.payload.json":                        resultAccepted,

	// A review comment without /akira fix, a review that only comments or was dismissed, and review
	// threads never act; TestFixtureReviews turns the same payloads into the reviews that do.
	"pull_request_review_comment/created.payload.json":                   resultIgnored,
	"pull_request_review_comment/created.with-organization.payload.json": resultIgnored,

	"pull_request_review/dismissed.payload.json":                   resultIgnored,
	"pull_request_review/submitted.payload.json":                   resultIgnored,
	"pull_request_review/submitted.with-organization.payload.json": resultIgnored,
	"pull_request_review_thread/resolved.payload.json":             resultIgnored,
	"pull_request_review_thread/unresolved.payload.json":           resultIgnored,

	// Deleted branches, and pushes to the default branch: whether one changed the roadmap depends on
	// .github/akira.yml, which the intake job reads.
	"push/1.payload.json":                          resultIgnored,
	"push/payload.json":                            resultIgnored,
	"push/with-installation.payload.json":          resultIgnored,
	"push/with-new-branch.payload.json":            resultAccepted,
	"push/with-no-username-committer.payload.json": resultAccepted,
	"push/with-organization.payload.json":          resultIgnored,
}

// TestFixtureConformance feeds every example payload GitHub documents through the server: each must be
// accepted or ignored as designed, never answered with a 4xx or a 5xx, and an accepted one must be
// unpacked into the intake task its fields say.
func TestFixtureConformance(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "webhooks")
	h := newHarness(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		rel := filepath.ToSlash(strings.TrimPrefix(file, dir+string(filepath.Separator)))
		event := filepath.Base(filepath.Dir(file))
		if event == "schema" {
			continue
		}
		seen[rel] = true
		t.Run(rel, func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := fixtureOutcomes[rel]
			if !ok {
				t.Fatalf("no expected outcome for %s; add one to fixtureOutcomes", rel)
			}
			before := len(h.enq.enqueued())
			got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, event, "fixture-"+rel, body))
			wantStatus := http.StatusOK
			if want == resultAccepted {
				wantStatus = http.StatusAccepted
			}
			if got.Status != wantStatus || got.Result != want {
				t.Fatalf("answer = %s, want %d %s", got, wantStatus, want)
			}
			all := h.enq.enqueued()
			if want != resultAccepted {
				if len(all) != before {
					t.Fatalf("enqueued: %+v", all[before:])
				}
				return
			}
			if len(all) != before+1 {
				t.Fatalf("enqueued = %+v", all[before:])
			}
			p := all[len(all)-1]
			p.Version = queue.PayloadVersion
			if err := p.Validate(); err != nil {
				t.Fatalf("intake payload is not valid: %v", err)
			}
			if p.Owner != "Codertocat" || p.Repo != "Hello-World" || p.InstallationID == 0 || p.DeliveryID != "fixture-"+rel ||
				p.DefaultBranch != "master" {
				t.Fatalf("intake = %+v", p)
			}
			switch event {
			case "pull_request":
				pr := bodyOf[queue.PullRequestIntake](p)
				if pr == nil || pr.Number != 2 || pr.HeadRef != "changes" || !strings.HasPrefix(pr.HeadSHA, "ec26c3e") || p.Sender != "Codertocat" || pr.UpdatedAt.IsZero() {
					t.Fatalf("pull request = %+v", pr)
				}
			case "status":
				if ci := bodyOf[queue.CIIntake](p); ci == nil || ci.HeadSHA[:7] != "6113728" || !slices.Equal(ci.Branches, []string{"master", "changes", "gh-pages"}) || ci.Conclusion != "success" {
					t.Fatalf("ci = %+v", ci)
				}
			case "push":
				if push := bodyOf[queue.PushIntake](p); push == nil || push.Branch != "master" || len(push.After) != 40 || !slices.Contains(push.Changed, "README.md") {
					t.Fatalf("push = %+v", push)
				}
			default:
				t.Fatalf("a %s was accepted", event)
			}
		})
	}
	for rel := range fixtureOutcomes {
		if !seen[rel] {
			t.Errorf("fixture %s is expected but missing", rel)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no fixtures found")
	}
	if strings.Contains(h.logs.String(), `"level":"ERROR"`) {
		t.Errorf("errors logged:\n%s", h.logs.String())
	}
}

// TestFixtureReviews feeds GitHub's review payloads, changed only where they must be to ask something of
// Akira (a review that requests changes; a review comment holding /akira fix), and checks the intake
// task they make.
func TestFixtureReviews(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "webhooks")
	h := newHarness(t)
	tests := []struct {
		file, event string
		edit        func(map[string]any)
		want        queue.ReviewIntake
	}{
		{"pull_request_review/submitted.payload.json", "pull_request_review",
			func(m map[string]any) { m["review"].(map[string]any)["state"] = "changes_requested" },
			queue.ReviewIntake{Number: 2, ReviewID: 237895671, Author: "Codertocat", HeadRef: "changes"}},
		{"pull_request_review/submitted.with-organization.payload.json", "pull_request_review",
			func(m map[string]any) {
				m["review"].(map[string]any)["state"] = "changes_requested"
				m["review"].(map[string]any)["body"] = "Please split this."
			},
			queue.ReviewIntake{Number: 2, Author: "Codertocat", HeadRef: "changes", Body: "Please split this."}},
		{"pull_request_review_comment/created.payload.json", "pull_request_review_comment",
			func(m map[string]any) {
				m["comment"].(map[string]any)["body"] = "Too plain.\n/akira fix use more emoji"
			},
			queue.ReviewIntake{Number: 2, ReviewID: 237895671, CommentID: 284312630, Author: "Codertocat", HeadRef: "changes", Guidance: "use more emoji"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			tt.edit(m)
			body, _ := json.Marshal(m)
			before := len(h.enq.enqueued())
			got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, tt.event, "review-"+tt.file, body))
			if got.Status != http.StatusAccepted {
				t.Fatalf("answer = %s, want 202", got)
			}
			all := h.enq.enqueued()
			if len(all) != before+1 {
				t.Fatalf("enqueued = %+v", all[before:])
			}
			p := all[len(all)-1]
			p.Version = queue.PayloadVersion
			if err := p.Validate(); err != nil {
				t.Fatalf("intake payload is not valid: %v", err)
			}
			rv := bodyOf[queue.ReviewIntake](p)
			if rv == nil {
				t.Fatalf("intake = %+v", p)
			}
			want := tt.want
			if want.ReviewID == 0 {
				want.ReviewID = rv.ReviewID // the organization fixture's review has its own id
			}
			if *rv != want || rv.ReviewID == 0 || p.Event != tt.event {
				t.Fatalf("review = %+v, want %+v", *rv, want)
			}
		})
	}
}

// TestFixtureTriggers feeds GitHub's issues examples, changed only where they must be to start a run
// (assigned to Akira's bot; labelled, with an installation), and checks the intake task they make.
func TestFixtureTriggers(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "webhooks")
	h := newHarness(t)
	tests := []struct {
		file string
		edit func(map[string]any)
		want queue.TriggerIntake
	}{
		{"issues/assigned.with-installation.payload.json",
			func(m map[string]any) { m["assignee"].(map[string]any)["login"] = h.gh.BotLogin() },
			queue.TriggerIntake{Number: 1, Action: queue.TriggerAssigned, Actor: "Codertocat"}},
		{"issues/labeled.payload.json",
			func(m map[string]any) { m["installation"] = map[string]any{"id": 1} },
			queue.TriggerIntake{Number: 1, Action: queue.TriggerLabeled, Actor: "Codertocat", Label: "bug"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			tt.edit(m)
			body, _ := json.Marshal(m)
			before := len(h.enq.enqueued())
			got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "issues", "trigger-"+tt.file, body))
			if got.Status != http.StatusAccepted {
				t.Fatalf("answer = %s, want 202", got)
			}
			all := h.enq.enqueued()
			if len(all) != before+1 {
				t.Fatalf("enqueued = %+v", all[before:])
			}
			p := all[len(all)-1]
			p.Version = queue.PayloadVersion
			if err := p.Validate(); err != nil {
				t.Fatalf("intake payload is not valid: %v", err)
			}
			if bodyOf[queue.TriggerIntake](p) == nil || *bodyOf[queue.TriggerIntake](p) != tt.want || p.Event != "issues" {
				t.Fatalf("trigger = %+v, want %+v", bodyOf[queue.TriggerIntake](p), tt.want)
			}
		})
	}
}

// TestFakePushOfTheBaseConforms: the push webhook the fake GitHub sends when the base branch moves (a
// person's push during a run) is taken as GitHub's own push example is, and unpacked into the same
// intake fields, so the tests of a moving base drive Akira the way GitHub will.
func TestFakePushOfTheBaseConforms(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "webhooks")
	h := newHarness(t)
	example, err := os.ReadFile(filepath.Join(dir, "push", "with-new-branch.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "push", "fixture-push", example)); got.Status != http.StatusAccepted {
		t.Fatalf("GitHub's example: %s", got)
	}
	fromGitHub := h.enq.enqueued()
	h.gh.CreateRepo("octo", "demo", map[string]string{"README.md": "# demo\n", "ROADMAP.md": "- [ ] one\n"})
	h.gh.SetWebhook(h.srv.URL+"/webhook", testSecret)
	h.gh.DeliverPushes(true)
	after := h.gh.PushCommit("octo", "demo", githubtest.Push{Files: map[string]string{"ROADMAP.md": "- [ ] one\n- [ ] two\n"}, Pusher: "alice"})
	all := h.enq.enqueued()
	if len(all) != len(fromGitHub)+1 {
		t.Fatalf("enqueued %d, want one more than %d", len(all), len(fromGitHub))
	}
	want, got := fromGitHub[len(fromGitHub)-1], all[len(all)-1]
	got.Version = queue.PayloadVersion
	if err := got.Validate(); err != nil {
		t.Fatalf("intake payload is not valid: %v", err)
	}
	if got.Event != want.Event || got.Owner != "octo" || got.Repo != "demo" || got.DefaultBranch != "main" ||
		got.InstallationID != h.gh.InstallationID("octo", "demo") || got.Sender != "alice" {
		t.Errorf("intake = %+v, GitHub's example gave %+v", got, want)
	}
	if p := bodyOf[queue.PushIntake](got); p == nil || p.Branch != "main" || p.After != after || !slices.Equal(p.Changed, []string{"ROADMAP.md"}) {
		t.Errorf("push = %+v", bodyOf[queue.PushIntake](got))
	}
}
