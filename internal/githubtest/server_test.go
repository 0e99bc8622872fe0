package githubtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v60/github"
)

func TestAppJWT(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()

	app, _, err := appClient(t, s).Apps.Get(ctx, "")
	if err != nil {
		t.Fatalf("get app: %v", err)
	}
	if app.GetID() != s.AppID() || app.GetSlug() != s.AppSlug() {
		t.Errorf("app = %d %q, want %d %q", app.GetID(), app.GetSlug(), s.AppID(), s.AppSlug())
	}
	inst, _, err := appClient(t, s).Apps.FindRepositoryInstallation(ctx, "octo", "hello")
	if err != nil {
		t.Fatalf("repo installation: %v", err)
	}
	if inst.GetID() != repo.InstallationID || inst.GetAccount().GetLogin() != "octo" {
		t.Errorf("installation = %d %q, want %d octo", inst.GetID(), inst.GetAccount().GetLogin(), repo.InstallationID)
	}
	tok, resp, err := appClient(t, s).Apps.CreateInstallationToken(ctx, repo.InstallationID, nil)
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(tok.GetToken(), "ghs_") ||
		time.Until(tok.GetExpiresAt().Time) < 50*time.Minute {
		t.Errorf("token = %d %q expires %v", resp.StatusCode, tok.GetToken(), tok.GetExpiresAt())
	}

	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(key *rsa.PrivateKey, method jwt.SigningMethod, claims jwt.RegisteredClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	nowT := time.Now().Truncate(time.Second)
	good := jwt.RegisteredClaims{Issuer: strconv.FormatInt(s.AppID(), 10),
		IssuedAt: jwt.NewNumericDate(nowT.Add(-30 * time.Second)), ExpiresAt: jwt.NewNumericDate(nowT.Add(2 * time.Minute))}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	withClaims := func(f func(*jwt.RegisteredClaims)) jwt.RegisteredClaims { c := good; f(&c); return c }
	tests := []struct {
		name   string
		auth   string
		status int
	}{
		{"valid", "Bearer " + sign(key, jwt.SigningMethodRS256, good), http.StatusOK},
		{"missing", "", http.StatusUnauthorized},
		{"installation token instead", "token " + s.InstallationToken(repo.InstallationID), http.StatusUnauthorized},
		{"other key", "Bearer " + sign(otherKey, jwt.SigningMethodRS256, good), http.StatusUnauthorized},
		{"wrong issuer", "Bearer " + sign(key, jwt.SigningMethodRS256, withClaims(func(c *jwt.RegisteredClaims) { c.Issuer = "1" })), http.StatusUnauthorized},
		{"expired", "Bearer " + sign(key, jwt.SigningMethodRS256, withClaims(func(c *jwt.RegisteredClaims) {
			c.ExpiresAt = jwt.NewNumericDate(nowT.Add(-time.Minute))
		})), http.StatusUnauthorized},
		{"exp too far", "Bearer " + sign(key, jwt.SigningMethodRS256, withClaims(func(c *jwt.RegisteredClaims) {
			c.ExpiresAt = jwt.NewNumericDate(nowT.Add(time.Hour))
		})), http.StatusUnauthorized},
		{"no iat", "Bearer " + sign(key, jwt.SigningMethodRS256, withClaims(func(c *jwt.RegisteredClaims) { c.IssuedAt = nil })), http.StatusUnauthorized},
		{"issued in the future", "Bearer " + sign(key, jwt.SigningMethodRS256, withClaims(func(c *jwt.RegisteredClaims) {
			c.IssuedAt = jwt.NewNumericDate(nowT.Add(5 * time.Minute))
		})), http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"app", "repos/octo/hello/installation"} {
				req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body errorBody
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Errorf("GET /%s = %d, want %d", path, resp.StatusCode, tc.status)
				}
				if tc.status == http.StatusUnauthorized && (body.Message == "" || body.DocumentationURL == "") {
					t.Errorf("GET /%s error body = %+v, want message and documentation_url", path, body)
				}
			}
		})
	}
}

func TestInstallationTokens(t *testing.T) {
	s, repo := newRepoServer(t)
	other := s.CreateRepo("someone", "else", nil)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)

	if _, _, err := gh.Repositories.Get(ctx, "octo", "hello"); err != nil {
		t.Fatalf("get repo with installation token: %v", err)
	}
	if _, _, err := gh.Repositories.Get(ctx, "someone", "else"); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("repo of another installation: %v, want 404", err)
	}
	if _, _, err := tokenClient(t, s, "ghs_forged").Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusUnauthorized {
		t.Errorf("forged token: %v, want 401", err)
	}
	anon := github.NewClient(nil)
	anon.BaseURL = baseURL(t, s)
	_, _, err := anon.Repositories.Get(ctx, "octo", "hello")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized || er.Message != "Bad credentials" {
		t.Errorf("no token: %v, want 401 Bad credentials", err)
	}

	// Tokens can be narrowed to some repositories of the installation.
	s.CreateRepo("octo", "second", nil)
	tok, _, err := appClient(t, s).Apps.CreateInstallationToken(ctx, repo.InstallationID,
		&github.InstallationTokenOptions{Repositories: []string{"second"}})
	if err != nil {
		t.Fatalf("scoped token: %v", err)
	}
	scoped := tokenClient(t, s, tok.GetToken())
	if _, _, err := scoped.Repositories.Get(ctx, "octo", "second"); err != nil {
		t.Errorf("scoped token on its repo: %v", err)
	}
	if _, _, err := scoped.Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("scoped token on another repo: %v, want 404", err)
	}
	if _, _, err := appClient(t, s).Apps.CreateInstallationToken(ctx, repo.InstallationID,
		&github.InstallationTokenOptions{Repositories: []string{other.Name}}); statusOf(t, err) != http.StatusUnprocessableEntity {
		t.Errorf("token for a repo outside the installation: %v, want 422", err)
	}
	if _, _, err := appClient(t, s).Apps.CreateInstallationToken(ctx, 999, nil); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("unknown installation: %v, want 404", err)
	}

	// A forced expiry invalidates the token ghinstallation cached; a fresh transport mints a new one.
	fixed := tokenClient(t, s, s.InstallationToken(repo.InstallationID))
	s.ExpireTokens()
	if _, _, err := fixed.Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusUnauthorized {
		t.Errorf("expired token: %v, want 401", err)
	}
	if _, _, err := gh.Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusUnauthorized {
		t.Errorf("cached expired token: %v, want 401", err)
	}
	fresh, _ := installationClient(t, s, repo.InstallationID)
	if _, _, err := fresh.Repositories.Get(ctx, "octo", "hello"); err != nil {
		t.Errorf("fresh token after expiry: %v", err)
	}

	s.Uninstall("octo", "hello")
	if _, _, err := fresh.Repositories.Get(ctx, "octo", "hello"); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("uninstalled repo: %v, want 404", err)
	}
}

func TestShortTokenTTLMakesClientsRefresh(t *testing.T) {
	s, repo := newRepoServer(t, WithTokenTTL(30*time.Second))
	gh, _ := installationClient(t, s, repo.InstallationID)
	for range 3 {
		if _, _, err := gh.Repositories.Get(context.Background(), "octo", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.TokensIssued(); n != 3 {
		t.Errorf("tokens issued = %d, want 3 (ghinstallation refreshes a token within a minute of expiry)", n)
	}
}

func TestRepoAndPermissions(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)

	r, _, err := gh.Repositories.Get(ctx, "octo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if r.GetID() != repo.ID || r.GetDefaultBranch() != "main" || r.GetFullName() != "octo/hello" ||
		r.GetCloneURL() != s.CloneURL("octo", "hello") || r.GetPrivate() {
		t.Errorf("repo = %d %q %q %q private=%v", r.GetID(), r.GetDefaultBranch(), r.GetFullName(), r.GetCloneURL(), r.GetPrivate())
	}

	for _, role := range []string{"admin", "maintain", "write", "triage", "read", "none"} {
		s.SetPermission("octo", "hello", "user-"+role, role)
	}
	tests := []struct{ login, permission, role string }{
		{"user-admin", "admin", "admin"},
		{"user-maintain", "write", "maintain"},
		{"user-write", "write", "write"},
		{"user-triage", "read", "triage"},
		{"user-read", "read", "read"},
		{"user-none", "none", "none"},
		{"stranger", "read", "read"}, // anyone can read a public repository
	}
	for _, tc := range tests {
		p, _, err := gh.Repositories.GetPermissionLevel(ctx, "octo", "hello", tc.login)
		if err != nil {
			t.Fatalf("%s: %v", tc.login, err)
		}
		if p.GetPermission() != tc.permission || p.GetUser().GetLogin() != tc.login || p.GetUser().GetRoleName() != tc.role {
			t.Errorf("%s: permission %q role %q, want %q %q", tc.login, p.GetPermission(), p.GetUser().GetRoleName(), tc.permission, tc.role)
		}
	}

	s.CreateRepo("octo", "secret", nil, Private(), DefaultBranch("trunk"))
	p, _, err := gh.Repositories.GetPermissionLevel(ctx, "octo", "secret", "stranger")
	if err != nil || p.GetPermission() != "none" {
		t.Errorf("stranger on a private repo: %v %q, want none", err, p.GetPermission())
	}
	if got := s.Branch("octo", "secret", "trunk"); got == "" {
		t.Error("private repo has no trunk branch")
	}
}

func TestIssueComments(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	is := s.AddIssue("octo", "hello", Issue{Title: "Do things", Body: "- [ ] a\n- [ ] b", User: "alice"})
	human := s.AddComment("octo", "hello", is.Number, "alice", "/akira run")

	got, _, err := gh.Issues.Get(ctx, "octo", "hello", is.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTitle() != "Do things" || got.GetUser().GetLogin() != "alice" || got.IsPullRequest() || got.GetComments() != 1 {
		t.Errorf("issue = %q by %q pr=%v comments=%d", got.GetTitle(), got.GetUser().GetLogin(), got.IsPullRequest(), got.GetComments())
	}
	if _, _, err := gh.Issues.Get(ctx, "octo", "hello", 99); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("missing issue: %v, want 404", err)
	}

	c, resp, err := gh.Issues.CreateComment(ctx, "octo", "hello", is.Number, &github.IssueComment{Body: ptr("Starting.")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || c.GetUser().GetLogin() != s.BotLogin() || c.GetUser().GetType() != "Bot" {
		t.Errorf("comment = %d by %q (%q)", resp.StatusCode, c.GetUser().GetLogin(), c.GetUser().GetType())
	}
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "hello", c.GetID(), &github.IssueComment{Body: ptr("Done.")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "hello", 12345, &github.IssueComment{Body: ptr("x")}); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("edit missing comment: %v, want 404", err)
	}

	long := strings.Repeat("é", maxCommentLen+1)
	_, _, err = gh.Issues.CreateComment(ctx, "octo", "hello", is.Number, &github.IssueComment{Body: &long})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity || len(er.Errors) != 1 || er.Errors[0].Field != "body" {
		t.Errorf("too long comment: %v, want 422 on body", err)
	}
	exact := strings.Repeat("é", maxCommentLen)
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "hello", c.GetID(), &github.IssueComment{Body: &exact}); err != nil {
		t.Errorf("comment of exactly the limit: %v", err)
	}
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "hello", c.GetID(), &github.IssueComment{Body: ptr("Done.")}); err != nil {
		t.Fatal(err)
	}

	r, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "hello", human.ID, "eyes")
	if err != nil || resp.StatusCode != http.StatusCreated || r.GetContent() != "eyes" {
		t.Errorf("reaction: %v %v", err, r)
	}
	if _, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "hello", human.ID, "eyes"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("repeated reaction: %v, want 200", err)
	}
	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "hello", human.ID, "thumbsup"); statusOf(t, err) != http.StatusUnprocessableEntity {
		t.Errorf("bad reaction: %v, want 422", err)
	}

	comments := s.Comments("octo", "hello", is.Number)
	if len(comments) != 2 {
		t.Fatalf("comments = %+v", comments)
	}
	if comments[0].Body != "/akira run" || comments[0].UserType != "User" || len(comments[0].Reactions) != 1 ||
		comments[0].Reactions[0] != (Reaction{ID: r.GetID(), Content: "eyes", User: s.BotLogin()}) {
		t.Errorf("human comment = %+v", comments[0])
	}
	if comments[1].Body != "Done." || comments[1].UserType != "Bot" || comments[1].Edits != 3 {
		t.Errorf("bot comment = %+v", comments[1])
	}
}

func TestListCommentsPagination(t *testing.T) {
	s, repo := newRepoServer(t)
	gh, _ := installationClient(t, s, repo.InstallationID)
	is := s.AddIssue("octo", "hello", Issue{Title: "many"})
	for i := range 5 {
		s.AddComment("octo", "hello", is.Number, "alice", "c"+strconv.Itoa(i))
	}
	var bodies []string
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}}
	pages := 0
	for {
		cs, resp, err := gh.Issues.ListComments(context.Background(), "octo", "hello", is.Number, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range cs {
			bodies = append(bodies, c.GetBody())
		}
		if pages == 1 && resp.LastPage != 3 {
			t.Errorf("last page = %d, want 3", resp.LastPage)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if pages != 3 || strings.Join(bodies, ",") != "c0,c1,c2,c3,c4" {
		t.Errorf("pages = %d, bodies = %v", pages, bodies)
	}
}

func TestWebhookSigning(t *testing.T) {
	// Known answer from GitHub's documentation on validating webhook deliveries.
	if got, want := SignPayload("It's a Secret to Everybody", []byte("Hello, World!")),
		"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; got != want {
		t.Errorf("SignPayload = %s, want %s", got, want)
	}
	s := New(t)
	raw := []byte(`{"action":"created" }`)
	req := s.SignedWebhook("http://akira.test/webhook", "shh", "issue_comment", "d-1", raw)
	body, _ := io.ReadAll(req.Body)
	if string(body) != string(raw) {
		t.Errorf("raw payload changed: %s", body)
	}
	if req.Header.Get("X-GitHub-Event") != "issue_comment" || req.Header.Get("X-GitHub-Delivery") != "d-1" ||
		req.Header.Get("X-Hub-Signature-256") != SignPayload("shh", raw) || req.Method != http.MethodPost {
		t.Errorf("headers = %v", req.Header)
	}
	req = s.SignedWebhook("http://akira.test/webhook", "shh", "ping", "d-2", map[string]any{"zen": "ok"})
	body, _ = io.ReadAll(req.Body)
	if string(body) != `{"zen":"ok"}` || req.Header.Get("X-Hub-Signature-256") != SignPayload("shh", body) {
		t.Errorf("marshalled payload = %s, signature %s", body, req.Header.Get("X-Hub-Signature-256"))
	}
}

func TestWebhookDeliveries(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	app := appClient(t, s)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) != 0 {
		t.Fatalf("empty deliveries: %v %v", err, list)
	}
	d := s.AddDelivery(Delivery{GUID: "g-1", Event: "issue_comment", Action: "created", StatusCode: 502,
		Status: "Bad Gateway", InstallationID: repo.InstallationID, RepositoryID: repo.ID})
	list, _, err = app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) != 1 || list[0].GetGUID() != "g-1" || list[0].GetStatusCode() != 502 {
		t.Fatalf("deliveries: %v %v", err, list)
	}
	if _, resp, err := app.Apps.RedeliverHookDelivery(ctx, d.ID); err != nil && !errors.As(err, new(*github.AcceptedError)) || resp.StatusCode != http.StatusAccepted {
		t.Errorf("redeliver: %v", err)
	}
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, 1); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("redeliver unknown: %v, want 404", err)
	}
	if got := s.Redeliveries(); len(got) != 1 || got[0] != d.ID {
		t.Errorf("redeliveries = %v", got)
	}
}

// TestDeliverAndRedeliver: Deliver sends a signed webhook to the app's URL and keeps it; asked to
// redeliver it, the fake sends the same body under the same GUID again, and lists the new attempt.
func TestDeliverAndRedeliver(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	type got struct {
		guid, event, sig string
		body             []byte
	}
	seen := make(chan got, 2)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- got{r.Header.Get("X-GitHub-Delivery"), r.Header.Get("X-GitHub-Event"), r.Header.Get("X-Hub-Signature-256"), body}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(hook.Close)
	if _, _, err := s.Deliver("ping", "g-0", obj{}); err == nil {
		t.Error("Deliver without a webhook URL did not fail")
	}
	s.SetWebhook(hook.URL, "sekrit")
	payload := obj{"action": "created", "installation": obj{"id": repo.InstallationID}, "repository": obj{"id": repo.ID}}
	status, _, err := s.Deliver("issue_comment", "g-1", payload)
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("deliver = %d, %v", status, err)
	}
	first := <-seen
	if first.guid != "g-1" || first.event != "issue_comment" || first.sig != SignPayload("sekrit", first.body) {
		t.Fatalf("delivered %+v", first)
	}
	list, _, err := appClient(t, s).Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) != 1 || list[0].GetAction() != "created" || list[0].GetInstallationID() != repo.InstallationID || list[0].GetStatusCode() != 202 {
		t.Fatalf("deliveries after Deliver: %v %+v", err, list)
	}
	if _, _, err := appClient(t, s).Apps.RedeliverHookDelivery(ctx, list[0].GetID()); err != nil && !errors.As(err, new(*github.AcceptedError)) {
		t.Fatal(err)
	}
	select {
	case again := <-seen:
		if again.guid != "g-1" || !bytes.Equal(again.body, first.body) {
			t.Errorf("redelivered %+v, want the same GUID and body", again)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the redelivery never came")
	}
	// The fake records the attempt once the app answered it, a moment after the app saw it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		list, _, err = appClient(t, s).Apps.ListHookDeliveries(ctx, nil)
		if err == nil && len(list) == 2 && list[0].GetRedelivery() && list[0].GetGUID() == "g-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries after the redelivery: %v %+v", err, list)
		}
	}
}

func TestEnterprisePrefix(t *testing.T) {
	s, repo := newRepoServer(t)
	c, err := github.NewClient(nil).WithAuthToken(s.InstallationToken(repo.InstallationID)).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(c.BaseURL.Path, "/api/v3/") {
		t.Fatalf("base = %s", c.BaseURL)
	}
	if _, _, err := c.Repositories.Get(context.Background(), "octo", "hello"); err != nil {
		t.Errorf("get repo through /api/v3: %v", err)
	}
	reqs := s.Requests()
	if last := reqs[len(reqs)-1]; last.Path != "/repos/octo/hello" {
		t.Errorf("recorded path %q", last.Path)
	}
}
