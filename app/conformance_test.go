package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/app/githubtest"
	"github.com/akira-bot/akira/runner/config"
)

// fixturesDir finds the shared GitHub fixtures: the "shared" folder beside the repository root.
func fixturesDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test's directory")
		}
		dir = parent
	}
	fx := filepath.Join(dir, "..", "shared", "fixtures", "github")
	if _, err := os.Stat(filepath.Join(fx, "webhooks")); err != nil {
		t.Skipf("no shared GitHub fixtures beside the repository (%v)", err)
	}
	return fx
}

// fixtureInstallations points every call at the fake's installation of the repository: the fixtures'
// installation ids (1, 957387, ...) are examples that do not match each other or anything real.
type fixtureInstallations struct {
	next GitHub
	fake *githubtest.Server
}

func (f fixtureInstallations) id(orig int64, owner, repo string) int64 {
	if id := f.fake.InstallationID(owner, repo); id != 0 {
		return id
	}
	return orig
}

func (f fixtureInstallations) PermissionLevel(ctx context.Context, inst int64, owner, repo, user string) (string, error) {
	return f.next.PermissionLevel(ctx, f.id(inst, owner, repo), owner, repo, user)
}

func (f fixtureInstallations) RepoConfig(ctx context.Context, inst int64, owner, repo, def string) (config.Repo, error) {
	return f.next.RepoConfig(ctx, f.id(inst, owner, repo), owner, repo, def)
}

func (f fixtureInstallations) PullRequest(ctx context.Context, inst int64, owner, repo string, n int) (PullRequestInfo, error) {
	return f.next.PullRequest(ctx, f.id(inst, owner, repo), owner, repo, n)
}

func (f fixtureInstallations) PullRequestFiles(ctx context.Context, inst int64, owner, repo string, n int) ([]string, error) {
	return f.next.PullRequestFiles(ctx, f.id(inst, owner, repo), owner, repo, n)
}

func (f fixtureInstallations) CreateComment(ctx context.Context, inst int64, owner, repo string, n int, body string) error {
	return f.next.CreateComment(ctx, f.id(inst, owner, repo), owner, repo, n, body)
}

func (f fixtureInstallations) AddReaction(ctx context.Context, inst int64, owner, repo string, id int64, content string) error {
	return f.next.AddReaction(ctx, f.id(inst, owner, repo), owner, repo, id, content)
}

// fixtureOutcomes is what the intake does with each of GitHub's example payloads, given the world the test
// builds: Codertocat/Hello-World (default branch master) with issue #1 and pull request #2 from the branch
// "changes", which changes ROADMAP.md; Codertocat is an admin.
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

	"issues/opened.payload.json":                   resultIgnored,
	"issues/opened.with-empty-body.payload.json":   resultIgnored,
	"issues/opened.with-organization.payload.json": resultIgnored,
	"issues/opened.with-transfer.payload.json":     resultIgnored,

	"ping/payload.json":                   resultAcknowledged,
	"ping/with-app_id.payload.json":       resultAcknowledged,
	"ping/with-organization.payload.json": resultAcknowledged,

	"pull_request/closed.payload.json":                             resultIgnored,
	"pull_request/closed.with-organization.payload.json":           resultIgnored,
	"pull_request/opened.payload.json":                             resultAccepted,
	"pull_request/opened.with-null-body.json":                      resultAccepted,
	"pull_request/opened.with-organization.payload.json":           resultAccepted,
	"pull_request/ready_for_review.payload.json":                   resultIgnored,
	"pull_request/ready_for_review.with-installation.payload.json": resultIgnored,
	"pull_request/ready_for_review.with-organization.payload.json": resultIgnored,
	"pull_request/reopened.payload.json":                           resultAccepted,
	"pull_request/reopened.with-organization.payload.json":         resultAccepted,
	"pull_request/synchronize.payload.json":                        resultAccepted,

	"pull_request_review_comment/created.payload.json":                   resultIgnored,
	"pull_request_review_comment/created.with-organization.payload.json": resultIgnored,

	// Tags, and pushes to master that add README.md only.
	"push/1.payload.json":                          resultIgnored,
	"push/payload.json":                            resultIgnored,
	"push/with-installation.payload.json":          resultIgnored,
	"push/with-new-branch.payload.json":            resultIgnored,
	"push/with-no-username-committer.payload.json": resultIgnored,
	"push/with-organization.payload.json":          resultIgnored,
}

// TestFixtureConformance feeds every example payload GitHub documents through the server: each must be
// accepted or ignored as designed, never answered with a 4xx or a 5xx.
func TestFixtureConformance(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "webhooks")
	var fi *fixtureInstallations
	h := newHarness(t, withGitHub(func(next GitHub) GitHub {
		fi = &fixtureInstallations{next: next}
		return fi
	}))
	fi.fake = h.gh
	h.gh.CreateRepo("Codertocat", "Hello-World", map[string]string{"README.md": "# Hello-World\n", "ROADMAP.md": roadmap},
		githubtest.DefaultBranch("master"))
	h.gh.SetPermission("Codertocat", "Hello-World", "Codertocat", "admin")
	h.gh.AddIssue("Codertocat", "Hello-World", githubtest.Issue{Title: "Spelling error in the README file", User: "Codertocat"})
	h.gh.PushCommit("Codertocat", "Hello-World", githubtest.Push{Branch: "changes", Files: map[string]string{"ROADMAP.md": roadmap + "- [ ] T2 More\n"}})
	pr := h.gh.AddPullRequest("Codertocat", "Hello-World", githubtest.PullRequest{Title: "Update the README with new information", Head: "changes", User: "Codertocat"})
	if pr.Number != 2 {
		t.Fatalf("pull request is #%d, the fixtures' is #2", pr.Number)
	}

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
			runsBefore, resumesBefore := h.enq.enqueued()
			got := h.do(h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, event, "fixture-"+rel, body))
			wantStatus := http.StatusOK
			if want == resultAccepted {
				wantStatus = http.StatusAccepted
			}
			if got.Status != wantStatus || got.Result != want {
				t.Fatalf("answer = %s, want %d %s", got, wantStatus, want)
			}
			runs, resumes := h.enq.enqueued()
			if len(resumes) != len(resumesBefore) {
				t.Fatalf("resumed: %+v", resumes[len(resumesBefore):])
			}
			if want != resultAccepted {
				if len(runs) != len(runsBefore) {
					t.Fatalf("enqueued: %+v", runs[len(runsBefore):])
				}
				return
			}
			if len(runs) != len(runsBefore)+1 {
				t.Fatalf("runs = %+v", runs)
			}
			r := runs[len(runs)-1]
			if r.Trigger != TriggerPullRequest || r.Owner != "Codertocat" || r.Repo != "Hello-World" || r.PRNumber != 2 ||
				r.Branch != "changes" || !strings.HasPrefix(r.HeadSHA, "ec26c3e") || r.DeliveryID != "fixture-"+rel ||
				r.Sender != "Codertocat" || r.DefaultBranch != "master" {
				t.Fatalf("run = %+v", r)
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
	if comments := h.botComments(githubtest.Repo{Owner: "Codertocat", Name: "Hello-World"}, 2); len(comments) != 0 {
		t.Errorf("Akira commented on the fixtures' pull request: %q", comments)
	}
}
