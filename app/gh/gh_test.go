package gh_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/recovery"
)

const owner, repo = "octo", "hello"

type env struct {
	srv *githubtest.Server
	app *gh.App
	c   *gh.Client
}

// fastRetry keeps backoffs short; Retry-After is still honoured as GitHub sends it.
var fastRetry = gh.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second, SecondaryDelay: 10 * time.Millisecond}

func newEnv(t testing.TB, files map[string]string, base http.RoundTripper, opts ...githubtest.Option) *env {
	t.Helper()
	srv := githubtest.New(t, opts...)
	if files == nil {
		files = map[string]string{"README.md": "# hello\n"}
	}
	srv.CreateRepo(owner, repo, files)
	hc := srv.Client()
	if base != nil {
		hc = &http.Client{Transport: base}
	}
	app, err := gh.NewApp(gh.AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.PrivateKeyPEM(), BaseURL: srv.URL(), HTTPClient: hc, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Installation(srv.InstallationID(owner, repo))
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, app: app, c: c}
}

// requests returns the recorded API requests whose path contains sub, token minting excluded.
func (e *env) requests(method, sub string) []githubtest.Request {
	var out []githubtest.Request
	for _, r := range e.srv.Requests() {
		if (method == "" || r.Method == method) && strings.Contains(r.Path, sub) && !strings.Contains(r.Path, "/access_tokens") {
			out = append(out, r)
		}
	}
	return out
}

func statuses(rs []githubtest.Request) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}

func TestNewAppValidates(t *testing.T) {
	key, err := githubtest.NewTestKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  gh.AppConfig
	}{
		{"no app id", gh.AppConfig{PrivateKeyPEM: key}},
		{"no key", gh.AppConfig{AppID: 1}},
		{"bad key", gh.AppConfig{AppID: 1, PrivateKeyPEM: []byte("not a key")}},
		{"bad url", gh.AppConfig{AppID: 1, PrivateKeyPEM: key, BaseURL: "ftp://x/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gh.NewApp(tt.cfg); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestGraphQLURL(t *testing.T) {
	tests := []struct{ rest, want string }{
		{"https://api.github.com/", "https://api.github.com/graphql"},
		{"https://ghes.example.com/api/v3/", "https://ghes.example.com/api/graphql"},
		{"https://ghes.example.com/api/v3", "https://ghes.example.com/api/graphql"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/graphql"},
	}
	for _, tt := range tests {
		if got := gh.GraphQLURL(tt.rest); got != tt.want {
			t.Errorf("GraphQLURL(%q) = %q, want %q", tt.rest, got, tt.want)
		}
	}
}

func TestEnterpriseURLs(t *testing.T) {
	// The fake also serves the GitHub Enterprise Server layout: REST under /api/v3/, GraphQL at /api/graphql.
	srv := githubtest.New(t)
	srv.CreateRepo(owner, repo, map[string]string{"a": "a\n"})
	app, err := gh.NewApp(gh.AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.PrivateKeyPEM(), BaseURL: srv.URL() + "api/v3", Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Installation(srv.InstallationID(owner, repo))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/x", Files: map[string]string{"x": "x\n"}})
	pr, err := c.CreatePullRequest(ctx, owner, repo, ports.NewPullRequest{Title: "x", Head: "akira/x", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MarkReady(ctx, owner, repo, pr); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	joined := strings.Join(paths, "\n")
	if !strings.Contains(joined, "POST /api/graphql") || !strings.Contains(joined, "POST /app/installations/") {
		t.Fatalf("requests:\n%s", joined)
	}
}

func TestInstallationClientIsCached(t *testing.T) {
	e := newEnv(t, nil, nil)
	again, err := e.app.Installation(e.c.InstallationID())
	if err != nil || again != e.c {
		t.Fatalf("Installation returned %p, %v; want the cached %p", again, err, e.c)
	}
	if _, err := e.app.Installation(0); err == nil {
		t.Fatal("installation 0: want an error")
	}
}

func TestTokensJWTAndRefresh(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()

	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.TokensIssued(); n != 1 {
		t.Fatalf("two API calls minted %d tokens, want 1 (cached)", n)
	}
	var mint githubtest.Request
	for _, r := range e.srv.Requests() {
		if strings.HasSuffix(r.Path, "/access_tokens") {
			mint = r
		}
	}
	if !strings.HasPrefix(mint.Header.Get("Authorization"), "Bearer ") || mint.Status != http.StatusCreated {
		t.Fatalf("token request: Authorization %q, status %d; want a JWT bearer and 201", mint.Header.Get("Authorization"), mint.Status)
	}

	// Git gets the API's token while it is valid for long yet: one token serves both.
	t1, err := e.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := e.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if t1 != t2 || !strings.HasPrefix(t2, "ghs_") || e.srv.TokensIssued() != 1 {
		t.Fatalf("Token returned %q then %q, %d tokens minted; want the API's one token twice", t1, t2, e.srv.TokensIssued())
	}
	e.srv.ResetRequests()
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatal(err)
	}
	if got := e.lastRequest("GET", "/repos/").Header.Get("Authorization"); got != "token "+t2 {
		t.Fatalf("API call used %q, want the git token %q", got, t2)
	}

	// A token GitHub expired early is replaced on the 401, and the call succeeds.
	e.srv.ExpireTokens()
	e.srv.ResetRequests()
	before := e.srv.TokensIssued()
	if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
		t.Fatalf("after forced expiry: %v", err)
	}
	// The read is conditional (the same repository was read before): unchanged, it is a 304.
	if got := statuses(e.requests("GET", "/repos/")); len(got) != 2 || got[0] != 401 || got[1] != 304 {
		t.Fatalf("statuses after forced expiry = %v, want [401 304]", got)
	}
	if e.srv.TokensIssued() != before+1 {
		t.Fatalf("tokens issued %d → %d, want one more", before, e.srv.TokensIssued())
	}
}

func (e *env) lastRequest(method, sub string) githubtest.Request {
	rs := e.requests(method, sub)
	if len(rs) == 0 {
		return githubtest.Request{}
	}
	return rs[len(rs)-1]
}

func TestTokenExpiresQuicklyIsRefreshed(t *testing.T) {
	// ghinstallation refreshes a token a minute before expiry: a 30s TTL means each call mints one.
	e := newEnv(t, nil, nil, githubtest.WithTokenTTL(30*time.Second))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := e.c.DefaultBranch(ctx, owner, repo); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.srv.TokensIssued(); n != 3 {
		t.Fatalf("tokens issued = %d, want 3", n)
	}
}

func TestGitAuthHeaderWorksWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	h, err := e.c.GitAuthHeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name, value, ok := strings.Cut(h, ": ")
	if !ok || name != "Authorization" || !strings.HasPrefix(value, "Basic ") {
		t.Fatalf("header = %q", h)
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(value, "Basic "))
	if err != nil || !strings.HasPrefix(string(dec), "x-access-token:ghs_") {
		t.Fatalf("decoded credentials %q, %v", dec, err)
	}
	// The header is what the engine gives git through GIT_CONFIG_*; never through the URL.
	cmd := exec.CommandContext(ctx, "git", "ls-remote", e.srv.CloneURL(owner, repo))
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0="+h,
		"GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refs/heads/main") {
		t.Fatalf("git ls-remote: %v\n%s", err, out)
	}
}

func TestPermission(t *testing.T) {
	e := newEnv(t, nil, nil)
	for _, role := range []string{"admin", "maintain", "write", "triage", "read", "none"} {
		e.srv.SetPermission(owner, repo, "u-"+role, role)
	}
	tests := []struct{ user, want string }{
		{"u-admin", ports.PermAdmin},
		{"u-maintain", ports.PermMaintain},
		{"u-write", ports.PermWrite},
		{"u-triage", ports.PermTriage},
		{"u-read", ports.PermRead},
		{"u-none", ports.PermNone},
		{"stranger", ports.PermRead}, // public repository: anyone reads
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			got, err := e.c.Permission(context.Background(), owner, repo, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Permission = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestComments(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "Do things", Body: "- [ ] a\n"})

	id, url, err := e.c.CreateComment(ctx, owner, repo, is.Number, "first")
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 || url == "" {
		t.Fatalf("CreateComment = %d, %q", id, url)
	}
	if err := e.c.EditComment(ctx, owner, repo, id, "second"); err != nil {
		t.Fatal(err)
	}
	cm, ok := e.srv.Comment(id)
	if !ok || cm.Body != "second" {
		t.Fatalf("comment after edit = %+v", cm)
	}
	for i := 0; i < 104; i++ {
		e.srv.AddComment(owner, repo, is.Number, "someone", "hi")
	}
	all, err := e.c.ListComments(ctx, owner, repo, is.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 105 || all[0].ID != id || all[0].Body != "second" || all[0].User != e.srv.BotLogin() || all[0].UserType != "Bot" {
		t.Fatalf("ListComments: %d comments, first %+v", len(all), all[0])
	}
	if pages := len(e.requests("GET", "/comments")); pages != 2 {
		t.Fatalf("listing 105 comments took %d requests, want 2 pages", pages)
	}
	thread, err := e.c.Thread(ctx, owner, repo, is.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(thread) != 105 || !thread[0].ByApp || thread[0].ID != id || thread[1].ByApp || thread[1].Author != "someone" ||
		thread[0].CreatedAt.IsZero() || thread[104].CreatedAt.Before(thread[0].CreatedAt) {
		t.Fatalf("Thread: %d comments, first %+v, second %+v", len(thread), thread[0], thread[1])
	}

	if err := e.c.EditComment(ctx, owner, repo, 987654, "x"); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("edit of a missing comment: %v, want ErrNotFound", err)
	}
}

func TestLongCommentIsTruncatedAndAccepted(t *testing.T) {
	e := newEnv(t, nil, nil)
	is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
	body := "```text\n" + strings.Repeat("é ligne de sortie\n", 5000) // 90,000 bytes, fence left open
	id, _, err := e.c.CreateComment(context.Background(), owner, repo, is.Number, body)
	if err != nil {
		t.Fatalf("the fake rejected the comment: %v", err)
	}
	cm, _ := e.srv.Comment(id)
	if len(cm.Body) > gh.MaxCommentLen {
		t.Fatalf("stored body is %d bytes", len(cm.Body))
	}
	if !strings.Contains(cm.Body, "\n```\n\n… output truncated: ") || !strings.HasSuffix(cm.Body, " characters omitted") {
		t.Fatalf("body end = %q", cm.Body[len(cm.Body)-120:])
	}
}

func TestReaction(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
	cm := e.srv.AddComment(owner, repo, is.Number, "alice", "/akira run")
	for i := 0; i < 2; i++ { // reacting twice is fine
		if err := e.c.AddReaction(ctx, owner, repo, cm.ID, gh.ReactionEyes); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := e.srv.Comment(cm.ID)
	if len(got.Reactions) != 1 || got.Reactions[0].Content != "eyes" || got.Reactions[0].User != e.srv.BotLogin() {
		t.Fatalf("reactions = %+v", got.Reactions)
	}
	if err := e.c.AddReaction(ctx, owner, repo, cm.ID, "thumbsup"); err == nil {
		t.Fatal("unknown reaction: want an error")
	}
}

func annotations(n int) []ports.Annotation {
	out := make([]ports.Annotation, n)
	for i := range out {
		out[i] = ports.Annotation{Path: "pkg/a.go", StartLine: i + 1, Level: gh.LevelFailure, Message: "bad"}
	}
	return out
}

// TestCreateCheckRunOnce: a create is one request; a create whose answer was lost (the job died)
// and is sent again as MayExist finds the check run GitHub made and updates it; a completed one is
// not reused.
func TestCreateCheckRunOnce(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	sha := e.srv.Branch(owner, repo, "main")
	cr := ports.CheckRun{Name: "akira: 1.1 First", HeadSHA: sha, Status: gh.StatusInProgress, ExternalID: "run-1/1.1", Title: "Running", Summary: "attempt 1"}
	e.srv.ResetRequests()
	first, _, err := e.c.CreateCheckRun(ctx, owner, repo, cr)
	if err != nil {
		t.Fatal(err)
	}
	var checks []string
	for _, r := range e.srv.Requests() {
		if strings.Contains(r.Path, "/check-runs") || strings.Contains(r.Path, "/check-suites") {
			checks = append(checks, r.Method+" "+r.Path)
		}
	}
	if len(checks) != 1 || !strings.HasPrefix(checks[0], http.MethodPost) {
		t.Errorf("a first create asked GitHub %v, want the one POST", checks)
	}
	cr.Summary, cr.MayExist = "attempt 1, again", true
	again, _, err := e.c.CreateCheckRun(ctx, owner, repo, cr)
	if err != nil || again != first {
		t.Fatalf("second create = %d, %v; want the first check run %d", again, err, first)
	}
	if n := len(e.srv.CheckRuns(owner, repo)); n != 1 {
		t.Fatalf("%d check runs, want 1", n)
	}
	// Another task, or another run's same task: a check run of its own.
	other := cr
	other.ExternalID = "run-2/1.1"
	if id, _, err := e.c.CreateCheckRun(ctx, owner, repo, other); err != nil || id == first {
		t.Fatalf("create for another run = %d, %v", id, err)
	}
	// Completed: a new round gets a new check run.
	if err := e.c.UpdateCheckRun(ctx, owner, repo, first, ports.CheckRun{Conclusion: "action_required", Title: "Needs a decision", Summary: "x"}); err != nil {
		t.Fatal(err)
	}
	if id, _, err := e.c.CreateCheckRun(ctx, owner, repo, cr); err != nil || id == first {
		t.Fatalf("create after completion = %d, %v; want a new check run", id, err)
	}
	if n := len(e.srv.CheckRuns(owner, repo)); n != 3 {
		t.Fatalf("%d check runs, want 3", n)
	}
}

func TestCheckRunAnnotationBatches(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	sha := e.srv.Branch(owner, repo, "main")
	name := publish.CheckRunName("T1", "Parse the config")
	if name != "akira: T1 Parse the config" {
		t.Fatalf("CheckRunName = %q", name)
	}
	e.srv.ResetRequests()
	id, url, err := e.c.CreateCheckRun(ctx, owner, repo, ports.CheckRun{
		Name: name, HeadSHA: sha, Status: gh.StatusInProgress, ExternalID: "run-1/T1",
		Summary: "verifying", Text: "details", Annotations: annotations(120),
	})
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 || url == "" {
		t.Fatalf("CreateCheckRun = %d, %q", id, url)
	}
	sent := slices.DeleteFunc(e.requests("", "/check-runs"), func(r githubtest.Request) bool {
		return r.Method == http.MethodGet // the lookup of an existing check run
	})
	var perRequest []int
	for _, r := range sent {
		var body struct {
			Name   *string `json:"name"`
			Output struct {
				Title       string            `json:"title"`
				Summary     string            `json:"summary"`
				Text        *string           `json:"text"`
				Annotations []json.RawMessage `json:"annotations"`
			} `json:"output"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		perRequest = append(perRequest, len(body.Output.Annotations))
		if body.Output.Summary != "verifying" || body.Output.Title != name {
			t.Errorf("%s %s: output title %q summary %q; every batch needs both", r.Method, r.Path, body.Output.Title, body.Output.Summary)
		}
		if r.Method == "PATCH" && (body.Name != nil || body.Output.Text != nil) {
			t.Errorf("annotation batch resent name or text: %s", r.Body)
		}
	}
	if len(sent) != 3 || sent[0].Method != "POST" || sent[1].Method != "PATCH" || sent[2].Method != "PATCH" ||
		perRequest[0] != 50 || perRequest[1] != 50 || perRequest[2] != 20 {
		t.Fatalf("requests %v with %v annotations; want POST, PATCH, PATCH with 50, 50, 20", statuses(sent), perRequest)
	}
	cr, _ := e.srv.CheckRun(id)
	if len(cr.Annotations) != 120 || cr.Text != "details" || cr.Name != name || cr.ExternalID != "run-1/T1" || cr.Status != "in_progress" {
		t.Fatalf("stored check run: %d annotations, text %q, name %q, external id %q, status %q",
			len(cr.Annotations), cr.Text, cr.Name, cr.ExternalID, cr.Status)
	}

	// Update with 51 more: one PATCH carries the conclusion and 50, the next one the last.
	e.srv.ResetRequests()
	if err := e.c.UpdateCheckRun(ctx, owner, repo, id, ports.CheckRun{Conclusion: gh.ConclusionFailure, Title: "Failed", Summary: "failed", Annotations: annotations(51)}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.requests("PATCH", "/check-runs")); n != 2 {
		t.Fatalf("update with 51 annotations: %d requests, want 2", n)
	}
	cr, _ = e.srv.CheckRun(id)
	if len(cr.Annotations) != 171 || cr.Conclusion != "failure" || cr.Status != "completed" || cr.Name != name {
		t.Fatalf("after update: %d annotations, conclusion %q, status %q, name %q", len(cr.Annotations), cr.Conclusion, cr.Status, cr.Name)
	}
}

func TestCheckRunOutputTruncated(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	sha := e.srv.Branch(owner, repo, "main")
	long := strings.Repeat("x", 70000) + "\n" + strings.Repeat("ü", 1000)
	id, _, err := e.c.CreateCheckRun(ctx, owner, repo, ports.CheckRun{Name: "akira: T1 big", HeadSHA: sha, Title: "Big", Summary: long, Text: long})
	if err != nil {
		t.Fatalf("the fake rejected the output: %v", err)
	}
	cr, _ := e.srv.CheckRun(id)
	for field, v := range map[string]string{"summary": cr.Summary, "text": cr.Text} {
		if len(v) > gh.MaxCheckOutputLen {
			t.Errorf("%s is %d bytes, over the limit", field, len(v))
		}
		if !strings.HasSuffix(v, " characters omitted") || !strings.Contains(v, "… output truncated: ") {
			t.Errorf("%s does not end with the truncation note: %q", field, v[len(v)-80:])
		}
	}
	if cr.Title != "Big" {
		t.Errorf("title = %q", cr.Title)
	}
}

func TestCheckRunEscalationButtons(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	sha := e.srv.Branch(owner, repo, "main")
	id, _, err := e.c.CreateCheckRun(ctx, owner, repo, ports.CheckRun{Name: "akira: T2 x", HeadSHA: sha, Status: gh.StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.UpdateCheckRun(ctx, owner, repo, id, ports.CheckRun{Conclusion: gh.ConclusionActionRequired,
		Title: "Needs a decision", Summary: "escalated", Buttons: ports.EscalationButtons(), DetailsURL: "https://example.com/x"}); err != nil {
		t.Fatal(err)
	}
	cr, _ := e.srv.CheckRun(id)
	if cr.Conclusion != "action_required" || len(cr.Actions) != 3 || cr.Actions[0].Identifier != "approve" ||
		cr.Actions[1].Identifier != "retry" || cr.Actions[2].Identifier != "skip" {
		t.Fatalf("escalated check run: conclusion %q, actions %+v", cr.Conclusion, cr.Actions)
	}
	// Skipping ends as neutral and takes the buttons away.
	if err := e.c.UpdateCheckRun(ctx, owner, repo, id, ports.CheckRun{Conclusion: gh.ConclusionNeutral, Title: "Skipped", Summary: "skipped"}); err != nil {
		t.Fatal(err)
	}
	cr, _ = e.srv.CheckRun(id)
	if cr.Conclusion != "neutral" || len(cr.Actions) != 0 || cr.Summary != "skipped" || cr.Title != "Skipped" || cr.Name != "akira: T2 x" {
		t.Fatalf("skipped check run: conclusion %q, actions %+v, summary %q, title %q", cr.Conclusion, cr.Actions, cr.Summary, cr.Title)
	}
	if err := e.c.UpdateCheckRun(ctx, owner, repo, id, ports.CheckRun{Title: "t", Text: "no summary"}); err == nil {
		t.Fatal("output without a summary: want an error")
	}
	if err := e.c.UpdateCheckRun(ctx, owner, repo, id, ports.CheckRun{Summary: "no title"}); err == nil {
		t.Fatal("output without a title: want an error")
	}
	if _, _, err := e.c.CreateCheckRun(ctx, owner, repo, ports.CheckRun{Name: "x"}); err == nil {
		t.Fatal("no head sha: want an error")
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name  string
		fault githubtest.Fault
		want  []int
	}{
		{"502 then success", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 502, Times: 1}, []int{502, 201}},
		{"500 twice then success", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 500, Times: 2}, []int{500, 500, 201}},
		{"secondary rate limit with Retry-After", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 403, Times: 1}, []int{403, 201}},
		{"429 with Retry-After", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 429, Times: 1,
			Header: http.Header{"Retry-After": {"0"}}}, []int{429, 201}},
		{"secondary rate limit by message", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 403, Times: 1,
			Message: "You have exceeded a secondary rate limit and have been temporarily blocked."}, []int{403, 201}},
		{"primary rate limit reset", githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 403, Times: 1,
			Message: "API rate limit exceeded", Header: http.Header{"X-Ratelimit-Remaining": {"0"},
				"X-Ratelimit-Reset": {"0"}}}, []int{403, 201}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // most of the time is spent waiting out Retry-After
			e := newEnv(t, nil, nil)
			is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
			e.srv.InjectFault(tt.fault)
			if _, _, err := e.c.CreateComment(context.Background(), owner, repo, is.Number, "hello"); err != nil {
				t.Fatal(err)
			}
			got := statuses(e.requests("POST", "/comments"))
			if jsonInts(got) != jsonInts(tt.want) {
				t.Fatalf("statuses = %v, want %v", got, tt.want)
			}
			if n := len(e.srv.Comments(owner, repo, is.Number)); n != 1 {
				t.Fatalf("%d comments posted, want 1", n)
			}
		})
	}
}

func jsonInts(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestNoRetry(t *testing.T) {
	t.Run("404 passes through", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		_, err := e.c.GetFile(context.Background(), owner, repo, "", "missing.txt")
		if !errors.Is(err, ports.ErrGitHubNotFound) || gh.StatusOf(err) != 404 {
			t.Fatalf("err = %v (status %d), want ErrNotFound", err, gh.StatusOf(err))
		}
		if n := len(e.requests("GET", "/contents/")); n != 1 {
			t.Fatalf("%d requests for a 404, want 1", n)
		}
	})
	t.Run("422 passes through", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		e.srv.InjectFault(githubtest.Fault{Method: "POST", PathPattern: "/comments", Status: 422, Times: 1, Message: "Validation Failed"})
		is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
		if _, _, err := e.c.CreateComment(context.Background(), owner, repo, is.Number, "x"); gh.StatusOf(err) != 422 {
			t.Fatalf("err = %v, want a 422", err)
		}
		if n := len(e.requests("POST", "/comments")); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("gives up after MaxRetries", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		e.srv.InjectFault(githubtest.Fault{PathPattern: "/repos/octo/hello", Status: 503})
		_, err := e.c.DefaultBranch(context.Background(), owner, repo)
		if gh.StatusOf(err) != 503 {
			t.Fatalf("err = %v, want a 503", err)
		}
		if n := len(e.requests("GET", "/repos/")); n != fastRetry.MaxRetries+1 {
			t.Fatalf("%d requests, want %d", n, fastRetry.MaxRetries+1)
		}
	})
	t.Run("Retry-After over the cap is returned", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		e.srv.InjectFault(githubtest.Fault{PathPattern: "/repos/octo/hello", Status: 403, Header: http.Header{"Retry-After": {"3600"}}})
		if _, err := e.c.DefaultBranch(context.Background(), owner, repo); gh.StatusOf(err) != 403 {
			t.Fatalf("err = %v, want the 403", err)
		}
		if n := len(e.requests("GET", "/repos/")); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		e.srv.InjectFault(githubtest.Fault{PathPattern: "/repos/octo/hello", Status: 403, Header: http.Header{"Retry-After": {"4"}}})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for len(e.requests("GET", "/repos/")) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if _, err := e.c.DefaultBranch(ctx, owner, repo); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

// inflight counts concurrent requests that reach the network, by a predicate.
type inflight struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	cur   atomic.Int32
	peak  atomic.Int32
}

func (f *inflight) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.match(r) {
		n := f.cur.Add(1)
		defer f.cur.Add(-1)
		for {
			p := f.peak.Load()
			if n <= p || f.peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Give a concurrent request the chance to overlap if nothing serialises them.
		time.Sleep(5 * time.Millisecond)
	}
	return f.next.RoundTrip(r)
}

func TestMutationsAreSerialised(t *testing.T) {
	counter := &inflight{next: http.DefaultTransport, match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
	}}
	e := newEnv(t, nil, counter)
	is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
	if _, err := e.c.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.c.CreateComment(context.Background(), owner, repo, is.Number, "hi")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := counter.peak.Load(); p != 1 {
		t.Fatalf("%d comment POSTs were in flight at once, want 1", p)
	}
	if n := len(e.srv.Comments(owner, repo, is.Number)); n != 8 {
		t.Fatalf("%d comments, want 8", n)
	}
}

func TestPullRequests(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "hi\n", "ROADMAP.md": "- [ ] a\n"}, nil)
	ctx := context.Background()
	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/roadmap", Files: map[string]string{"ROADMAP.md": "- [x] a\n", "a.go": "package a\n"}})

	if _, err := e.c.FindPullRequest(ctx, owner, repo, "akira/roadmap", "main"); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("FindPullRequest before create: %v, want ErrNotFound", err)
	}
	spec := ports.NewPullRequest{Title: "Akira: roadmap", Body: "Closes #1", Head: "akira/roadmap", Base: "main", Draft: true}
	pr, err := e.c.CreatePullRequest(ctx, owner, repo, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Draft || pr.Number == 0 || pr.NodeID == "" || pr.URL == "" || pr.HeadRef != "akira/roadmap" || pr.BaseRef != "main" {
		t.Fatalf("created %+v", pr)
	}
	if pr.HeadRepo != owner+"/"+repo {
		t.Fatalf("same-repository pull request has head repository %q", pr.HeadRepo)
	}
	again, err := e.c.CreatePullRequest(ctx, owner, repo, spec)
	if err != nil {
		t.Fatalf("second create: %v", err)
	}
	if again.Number != pr.Number {
		t.Fatalf("second create returned #%d, want #%d", again.Number, pr.Number)
	}
	if n := len(e.srv.PullRequests(owner, repo)); n != 1 {
		t.Fatalf("%d pull requests, want 1", n)
	}

	files, err := e.c.PullRequestFiles(ctx, owner, repo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != "ROADMAP.md,a.go" && strings.Join(files, ",") != "a.go,ROADMAP.md" {
		t.Fatalf("files = %v", files)
	}
	is, err := e.c.GetIssue(ctx, owner, repo, pr.Number)
	if err != nil || is.Title != "Akira: roadmap" || is.Number != pr.Number {
		t.Fatalf("GetIssue = %+v, %v", is, err)
	}

	e.srv.ResetRequests()
	if err := e.c.MarkReady(ctx, owner, repo, pr); err != nil {
		t.Fatal(err)
	}
	got, _ := e.srv.PullRequest(owner, repo, pr.Number)
	if got.Draft || pr.Draft {
		t.Fatalf("after MarkReady: server draft %v, local draft %v", got.Draft, pr.Draft)
	}
	if r := e.lastRequest("POST", "/graphql"); r.Status != 200 || !strings.Contains(string(r.Body), "markPullRequestReadyForReview") {
		t.Fatalf("graphql request: %d %s", r.Status, r.Body)
	}
	// Already ready: nothing is sent.
	e.srv.ResetRequests()
	if err := e.c.MarkReady(ctx, owner, repo, pr); err != nil || len(e.requests("", "/")) != 0 {
		t.Fatalf("MarkReady on a ready pull request: %v, %d requests", err, len(e.requests("", "/")))
	}
	// A PR without its node id is looked up first.
	fetched, err := e.c.GetPullRequest(ctx, owner, repo, pr.Number)
	if err != nil || fetched.Draft {
		t.Fatalf("GetPullRequest = %+v, %v", fetched, err)
	}
	// Closing is a PATCH of its state; the closed pull request is no longer found for its branch.
	if err := e.c.ClosePullRequest(ctx, owner, repo, pr.Number); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.srv.PullRequest(owner, repo, pr.Number); got.State != "closed" {
		t.Fatalf("after ClosePullRequest: state %q", got.State)
	}
	if _, err := e.c.FindPullRequest(ctx, owner, repo, fetched.HeadRef, ""); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("FindPullRequest of a closed pull request = %v, want not found", err)
	}
	if err := e.c.ClosePullRequest(ctx, owner, repo, 9999); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("ClosePullRequest of a missing pull request = %v, want not found", err)
	}
}

func TestMarkReadyWithoutNodeID(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/x", Files: map[string]string{"x": "x\n"}})
	pr, err := e.c.CreatePullRequest(ctx, owner, repo, ports.NewPullRequest{Title: "x", Head: "akira/x", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.MarkReady(ctx, owner, repo, &ports.PullRequest{Number: pr.Number, Draft: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.srv.PullRequest(owner, repo, pr.Number); got.Draft {
		t.Fatal("still a draft")
	}
}

func TestRefsAndFiles(t *testing.T) {
	e := newEnv(t, map[string]string{"README.md": "# hello\n", "docs/a.txt": "a\n"}, nil)
	ctx := context.Background()
	br, err := e.c.DefaultBranch(ctx, owner, repo)
	if err != nil || br != "main" {
		t.Fatalf("DefaultBranch = %q, %v", br, err)
	}
	data, err := e.c.GetFile(ctx, owner, repo, "main", "README.md")
	if err != nil || string(data) != "# hello\n" {
		t.Fatalf("GetFile = %q, %v", data, err)
	}
	if _, err := e.c.GetFile(ctx, owner, repo, "main", "docs"); err == nil || errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("GetFile of a directory: %v, want a non-404 error", err)
	}
	sha, err := e.c.GetRef(ctx, owner, repo, "heads/main")
	if err != nil || sha != e.srv.Branch(owner, repo, "main") {
		t.Fatalf("GetRef = %q, %v", sha, err)
	}
	if err := e.c.CreateRef(ctx, owner, repo, "refs/heads/akira/new", sha); err != nil {
		t.Fatal(err)
	}
	if got, err := e.c.GetRef(ctx, owner, repo, "refs/heads/akira/new"); err != nil || got != sha {
		t.Fatalf("GetRef of the new branch = %q, %v", got, err)
	}
	if _, err := e.c.GetRef(ctx, owner, repo, "heads/nope"); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("GetRef of a missing branch: %v, want ErrNotFound", err)
	}
	if _, err := e.c.GetIssue(ctx, owner, repo, 999); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("GetIssue of a missing issue: %v", err)
	}
}

func TestFindCommentAndApp(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	login, err := e.app.BotLogin(ctx)
	if err != nil || login != e.srv.BotLogin() {
		t.Fatalf("BotLogin = %q, %v; want %q", login, err, e.srv.BotLogin())
	}

	is := e.srv.AddIssue(owner, repo, githubtest.Issue{Title: "t"})
	marker := "<!-- akira:summary run=r1 -->"
	e.srv.AddComment(owner, repo, is.Number, "mallory", marker+"\nfake summary")
	if _, _, err := e.c.FindComment(ctx, owner, repo, is.Number, marker); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Fatalf("a human's comment was found: %v", err)
	}
	cid, _, err := e.c.CreateComment(ctx, owner, repo, is.Number, marker+"\nreal summary")
	if err != nil {
		t.Fatal(err)
	}
	found, url, err := e.c.FindComment(ctx, owner, repo, is.Number, marker)
	if err != nil || found != cid || url == "" {
		t.Fatalf("FindComment = %d %q, %v; want comment %d", found, url, err, cid)
	}
}

// TestSweepRedeliversWhatFailed: the sweep pages through the App's deliveries with the real client and
// asks for the redelivery of each delivery whose attempts all failed with a 5xx or no answer, within
// the cap; one that succeeded later, one refused with a 4xx, and one too old are left alone.
func TestSweepRedeliversWhatFailed(t *testing.T) {
	e := newEnv(t, nil, nil)
	now := time.Now()
	add := func(guid string, status int, ago time.Duration) githubtest.Delivery {
		return e.srv.AddDelivery(githubtest.Delivery{GUID: guid, Event: "issue_comment", StatusCode: status,
			Status: http.StatusText(status), DeliveredAt: now.Add(-ago)})
	}
	add("old-failure", 503, 7*time.Hour)
	failed := add("failed", 503, time.Hour)
	e.srv.AddDelivery(githubtest.Delivery{GUID: "timed-out", Event: "push", Status: "timed out", DeliveredAt: now.Add(-50 * time.Minute)})
	add("later-ok", 502, 40*time.Minute)
	add("later-ok", 200, 39*time.Minute)
	add("bad-signature", 401, 30*time.Minute)
	add("unknown-repo", 404, 29*time.Minute)
	for i := range recovery.MaxRedeliveries {
		add("hopeless", 500, time.Duration(20-i)*time.Minute)
	}
	// Enough successful deliveries to take three pages of 100.
	for i := range 250 {
		add(fmt.Sprintf("ok-%d", i), 200, time.Duration(10*60-i)*time.Second)
	}
	res, err := recovery.Sweep(context.Background(), e.app, now, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Redelivered != 2 || res.GivenUp != 1 {
		t.Fatalf("sweep = %+v, want 2 redelivered and 1 given up", res)
	}
	got := e.srv.Redeliveries()
	if len(got) != 2 || !slices.Contains(got, failed.ID) {
		t.Fatalf("redeliveries = %v, want %d and the timed-out one", got, failed.ID)
	}
	// The fake records a request once its handler returns, which a client that read the whole answer
	// may not wait for: the last page's record can come a moment after the sweep.
	pages := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pages = len(e.requests("GET", "/app/hook/deliveries")); pages >= 3 {
			break
		}
	}
	if pages < 3 {
		t.Errorf("%d pages read, want the cursor followed", pages)
	}
}

// TestEditPullRequestBody: the body of a pull request Akira opened (its marker in the body) is
// replaced, once: the same body again sends no PATCH; a body a person replaced (no marker) is left as
// they wrote it.
func TestEditPullRequestBody(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	const marker = "<!-- akira:pr run=r1 -->"
	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/x", Files: map[string]string{"x": "x\n"}})
	pr, err := e.c.CreatePullRequest(ctx, owner, repo, ports.NewPullRequest{Title: "x", Body: marker + "\n**🔄 Working.**", Head: "akira/x", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	finished := marker + "\n**✅ Finished: ready for review.**\n\n- [x] `1.1` One\n"
	for _, tc := range []struct {
		name    string
		body    string
		patches int
	}{
		{"a new state", finished, 1},
		{"the same body again", finished, 0},
	} {
		e.srv.ResetRequests()
		if err := e.c.EditPullRequestBody(ctx, owner, repo, pr.Number, marker, tc.body); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, _ := e.srv.PullRequest(owner, repo, pr.Number); got.Body != tc.body {
			t.Errorf("%s: body %q, want %q", tc.name, got.Body, tc.body)
		}
		if n := len(e.requests(http.MethodPatch, "/pulls/")); n != tc.patches {
			t.Errorf("%s: %d PATCH requests, want %d", tc.name, n, tc.patches)
		}
	}

	e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "akira/y", Files: map[string]string{"y": "y\n"}})
	theirs := e.srv.AddPullRequest(owner, repo, githubtest.PullRequest{Title: "mine", Body: "I describe this change myself.", Head: "akira/y", Base: "main", User: "alice"})
	e.srv.ResetRequests()
	if err := e.c.EditPullRequestBody(ctx, owner, repo, theirs.Number, marker, finished); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.srv.PullRequest(owner, repo, theirs.Number); got.Body != "I describe this change myself." || len(e.requests(http.MethodPatch, "/pulls/")) != 0 {
		t.Errorf("a body without Akira's marker was changed: %q", got.Body)
	}
	if err := e.c.EditPullRequestBody(ctx, owner, repo, 9999, marker, finished); !errors.Is(err, ports.ErrGitHubNotFound) {
		t.Errorf("a missing pull request: %v, want not found", err)
	}
}
