package githubtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

type user struct {
	login string
	id    int64
	typ   string // "User", "Bot" or "Organization"
}

// ensureUser returns the user with a login, creating it. Logins ending in "[bot]" are bots, like on GitHub.
// Callers hold s.mu.
func (s *Server) ensureUser(login string) *user {
	k := strings.ToLower(login)
	if u := s.users[k]; u != nil {
		return u
	}
	u := &user{login: login, id: s.nextID("user"), typ: "User"}
	if strings.HasSuffix(login, "[bot]") {
		u.typ = "Bot"
	}
	s.users[k] = u
	return u
}

// SetUserType sets the type of a user ("User", "Bot" or "Organization").
func (s *Server) SetUserType(login, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(login).typ = typ
}

// Repo describes a repository of the fake.
type Repo struct {
	ID             int64
	Owner          string
	Name           string
	DefaultBranch  string
	Private        bool
	InstallationID int64 // 0 when the app is not installed on it
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

type repoState struct {
	id             int64
	owner, name    string
	defaultBranch  string
	private        bool
	installationID int64
	dir            string
	parent         *repoState // set for forks
	created        time.Time
	nextNumber     int
	issues         map[int]*issue
	roles          map[string]string   // lower-case login → role name
	statuses       []Status            // commit statuses, oldest first
	required       map[string][]string // branch → the checks its protection requires
	ruleChecks     map[string][]string // branch → the checks an active ruleset requires
	strict         map[string]bool     // branch → its protection wants pull requests up to date with it
	signatures     map[string]SignatureRule
	signed         map[string]bool   // commits GitHub signed
	administration bool              // the App may read branch protection
	heads          map[string]string // branch → head, as push webhooks last reported it
	deleted        atomic.Bool       // see DeleteRepo
}

func (rs *repoState) fullName() string { return rs.owner + "/" + rs.name }

func (rs *repoState) snapshot() Repo {
	return Repo{ID: rs.id, Owner: rs.owner, Name: rs.name, DefaultBranch: rs.defaultBranch, Private: rs.private,
		InstallationID: rs.installationID}
}

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// Repo returns a repository by owner and name.
func (s *Server) Repo(owner, name string) (Repo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repos[repoKey(owner, name)]
	if rs == nil {
		return Repo{}, false
	}
	return rs.snapshot(), true
}

// repo returns a repository's state, failing the test when it does not exist.
func (s *Server) repo(owner, name string) *repoState {
	s.mu.Lock()
	rs := s.repos[repoKey(owner, name)]
	s.mu.Unlock()
	if rs == nil {
		s.fatalf("no repository %s/%s", owner, name)
	}
	return rs
}

// Roles a collaborator can have, from most to least access.
var roles = []string{"admin", "maintain", "write", "triage", "read", "none"}

// SetPermission gives a user a role on a repository: admin, maintain, write, triage, read or none.
func (s *Server) SetPermission(owner, repo, login, role string) {
	if !slices.Contains(roles, role) {
		s.fatalf("unknown role %q", role)
	}
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(login)
	rs.roles[strings.ToLower(login)] = role
}

// permissionOf maps a role to the legacy permission field GitHub still returns (maintain counts as write, triage
// as read). Users without a role can read a public repository.
func permissionOf(rs *repoState, login string) (permission, role string) {
	role, ok := rs.roles[strings.ToLower(login)]
	if !ok {
		role = "none"
		if !rs.private {
			role = "read"
		}
	}
	switch role {
	case "maintain":
		return "write", role
	case "triage":
		return "read", role
	}
	return role, role
}

// Issue is an issue or, when IsPR, the issue side of a pull request.
type Issue struct {
	Number    int
	Title     string
	Body      string
	User      string // default "octocat"
	State     string // "open" (default) or "closed"
	IsPR      bool
	CreatedAt time.Time
}

type issue struct {
	id        int64
	number    int
	title     string
	body      string
	user      string
	state     string
	created   time.Time
	updated   time.Time
	closedAt  time.Time
	pr        *pull // nil for a plain issue
	nodeID    string
	commentsN int
}

func (is *issue) snapshot() Issue {
	return Issue{Number: is.number, Title: is.title, Body: is.body, User: is.user, State: is.state, IsPR: is.pr != nil,
		CreatedAt: is.created}
}

func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// newIssue adds an issue to a repository. Callers hold s.mu.
func (s *Server) newIssue(rs *repoState, title, body, login string) *issue {
	if login == "" {
		login = "octocat"
	}
	s.ensureUser(login)
	rs.nextNumber++
	t := now()
	is := &issue{id: s.nextID("issue"), number: rs.nextNumber, title: title, body: body, user: login, state: "open",
		created: t, updated: t}
	rs.issues[is.number] = is
	return is
}

// AddIssue creates an issue and returns it with its number. A Number, when given, must be the one
// GitHub would give next (issues and pull requests share the numbers): a test that expects another
// would otherwise talk about a different issue or pull request than it created.
func (s *Server) AddIssue(owner, repo string, in Issue) Issue {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Number != 0 && in.Number != rs.nextNumber+1 {
		msg := fmt.Sprintf("githubtest: AddIssue(%s/%s, #%d): the next number is %d (issues and pull requests share numbers)", owner, repo, in.Number, rs.nextNumber+1)
		if s.tb != nil {
			s.tb.Helper()
			s.tb.Fatal(msg)
		}
		panic(msg)
	}
	is := s.newIssue(rs, in.Title, in.Body, in.User)
	if in.State == "closed" {
		is.state, is.closedAt = "closed", is.created
	}
	return is.snapshot()
}

// EditIssue changes an issue's body, as its author editing it on GitHub does (a follow-up adds
// checklist items).
func (s *Server) EditIssue(owner, repo string, number int, body string) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rs.issues[number]
	if is == nil {
		s.fatalf("edit issue: no issue %s/%s#%d", owner, repo, number)
		return
	}
	is.body, is.updated = body, now()
}

// Issue returns an issue (or the issue side of a pull request) by number.
func (s *Server) Issue(owner, repo string, number int) (Issue, bool) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rs.issues[number]
	if is == nil {
		return Issue{}, false
	}
	return is.snapshot(), true
}

// Reaction is a reaction on an issue comment.
type Reaction struct {
	ID      int64
	Content string
	User    string
}

// Comment is an issue or pull request comment.
type Comment struct {
	ID          int64
	Repo        string // "owner/name"
	IssueNumber int
	Body        string
	User        string
	UserType    string // "Bot" for the app's own comments
	Reactions   []Reaction
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Edits       int // how many times the body was updated through the API
}

type comment struct {
	id          int64
	repo        *repoState
	issueNumber int
	body        string
	user        string
	created     time.Time
	updated     time.Time
	reactions   []Reaction
	edits       int
}

func (s *Server) commentSnapshot(c *comment) Comment {
	return Comment{ID: c.id, Repo: c.repo.fullName(), IssueNumber: c.issueNumber, Body: c.body, User: c.user,
		UserType: s.ensureUser(c.user).typ, Reactions: slices.Clone(c.reactions), CreatedAt: c.created,
		UpdatedAt: c.updated, Edits: c.edits}
}

// newComment adds a comment. Callers hold s.mu.
func (s *Server) newComment(rs *repoState, is *issue, login, body string) *comment {
	s.ensureUser(login)
	t := now()
	c := &comment{id: s.nextID("comment"), repo: rs, issueNumber: is.number, body: body, user: login, created: t,
		updated: t}
	s.comments[c.id] = c
	is.commentsN++
	return c
}

// AddComment adds a comment by a user to an issue or pull request, as if they had posted it on GitHub.
func (s *Server) AddComment(owner, repo string, number int, login, body string) Comment {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	is := rs.issues[number]
	var c Comment
	if is != nil {
		c = s.commentSnapshot(s.newComment(rs, is, login, body))
	}
	s.mu.Unlock()
	if is == nil {
		s.fatalf("add comment: no issue %s/%s#%d", owner, repo, number)
	}
	return c
}

// Comments returns the comments of an issue or pull request, oldest first.
func (s *Server) Comments(owner, repo string, number int) []Comment {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.issueComments(rs, number) {
		out = append(out, s.commentSnapshot(c))
	}
	return out
}

// issueComments returns an issue's comments by id. Callers hold s.mu.
func (s *Server) issueComments(rs *repoState, number int) []*comment {
	var out []*comment
	for _, c := range s.comments {
		if c.repo == rs && c.issueNumber == number {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Comment returns a comment by id.
func (s *Server) Comment(id int64) (Comment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.comments[id]
	if c == nil {
		return Comment{}, false
	}
	return s.commentSnapshot(c), true
}

// PullRequest is a pull request. Head and Base are branch names; HeadRepo is "owner/name" of a fork, empty when
// the head branch is in the same repository.
type PullRequest struct {
	Number   int
	Title    string
	Body     string
	User     string // default "octocat"
	Head     string
	Base     string // default: the repository's default branch
	HeadRepo string
	Draft    bool
	State    string // "open" (default) or "closed"
	Merged   bool
	NodeID   string // GraphQL id, set by the server
}

type pull struct {
	id                  int64
	head, base          string
	headRepo            *repoState
	draft               bool
	merged              bool
	maintainerCanModify bool
	merge               *mergeResult // the last test merge (mergeable.go)
}

func (is *issue) pullSnapshot(rs *repoState) PullRequest {
	pr := PullRequest{Number: is.number, Title: is.title, Body: is.body, User: is.user, Head: is.pr.head,
		Base: is.pr.base, Draft: is.pr.draft, State: is.state, Merged: is.pr.merged, NodeID: is.nodeID}
	if is.pr.headRepo != rs {
		pr.HeadRepo = is.pr.headRepo.fullName()
	}
	return pr
}

type nodeRef struct {
	repo   *repoState
	number int
}

// newPull adds a pull request. Callers hold s.mu.
func (s *Server) newPull(rs, headRepo *repoState, title, body, login, head, base string, draft bool) *issue {
	is := s.newIssue(rs, title, body, login)
	is.pr = &pull{id: s.nextID("pull"), head: head, base: base, headRepo: headRepo, draft: draft,
		maintainerCanModify: true}
	is.nodeID = nodeID("PR_", is.pr.id)
	s.nodes[is.nodeID] = nodeRef{repo: rs, number: is.number}
	return is
}

// AddPullRequest opens a pull request as a user would, without checking that the branches exist.
func (s *Server) AddPullRequest(owner, repo string, pr PullRequest) PullRequest {
	rs := s.repo(owner, repo)
	headRepo := rs
	if pr.HeadRepo != "" {
		o, n, _ := strings.Cut(pr.HeadRepo, "/")
		headRepo = s.repo(o, n)
	}
	s.mu.Lock()
	if pr.Base == "" {
		pr.Base = rs.defaultBranch
	}
	is := s.newPull(rs, headRepo, pr.Title, pr.Body, pr.User, pr.Head, pr.Base, pr.Draft)
	if pr.State == "closed" {
		is.state, is.closedAt = "closed", is.created
	}
	is.pr.merged = pr.Merged
	out := is.pullSnapshot(rs)
	s.mu.Unlock()
	if headRepo != rs {
		// GitHub keeps a fork's head in the base repository from the start: refs/pull/<n>/head is
		// what anyone with access to the base can fetch.
		if _, err := s.pullHead(s.ctx, rs, headRepo, pr.Head, out.Number); err != nil {
			s.logf("pull request from %s: keep its head: %v", pr.HeadRepo, err)
		}
	}
	return out
}

// PullRequest returns a pull request by number.
func (s *Server) PullRequest(owner, repo string, number int) (PullRequest, bool) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rs.issues[number]
	if is == nil || is.pr == nil {
		return PullRequest{}, false
	}
	return is.pullSnapshot(rs), true
}

// PullRequests returns all pull requests of a repository, by number.
func (s *Server) PullRequests(owner, repo string) []PullRequest {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PullRequest
	for _, is := range rs.issues {
		if is.pr != nil {
			out = append(out, is.pullSnapshot(rs))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// Annotation is a check run annotation.
type Annotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	StartColumn     *int   `json:"start_column,omitempty"`
	EndColumn       *int   `json:"end_column,omitempty"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
	RawDetails      string `json:"raw_details,omitempty"`
}

// Action is a check run button.
type Action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// CheckRun is a check run with the annotations accumulated over all its updates.
type CheckRun struct {
	ID          int64
	Repo        string // "owner/name"
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	Actions     []Action
	StartedAt   time.Time
	CompletedAt time.Time
	Updates     int // PATCH requests applied
}

type checkRun struct {
	CheckRun
	repo    *repoState
	suiteID int64
	// app is the app that reported it when not this fake's own App (see ForeignCheckRun).
	app           *CIApp
	headBranch    string
	workflowRunID int64
}

func (c *checkRun) snapshot() CheckRun {
	out := c.CheckRun
	out.Annotations = slices.Clone(c.Annotations)
	out.Actions = slices.Clone(c.Actions)
	return out
}

// CheckRuns returns a repository's check runs, oldest first.
func (s *Server) CheckRuns(owner, repo string) []CheckRun {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.checkRuns {
		if c.repo == rs {
			out = append(out, c.snapshot())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CheckRun returns a check run by id.
func (s *Server) CheckRun(id int64) (CheckRun, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checkRuns[id]
	if c == nil {
		return CheckRun{}, false
	}
	return c.snapshot(), true
}

// Delivery is a webhook delivery as listed by GET /app/hook/deliveries.
type Delivery struct {
	ID             int64
	GUID           string
	Event          string
	Action         string
	Status         string // default "OK"
	StatusCode     int    // default 200 when Status is empty too; 0 with a Status: no answer
	Redelivery     bool
	InstallationID int64
	RepositoryID   int64
	DeliveredAt    time.Time
	// Payload is the body sent, kept by Deliver so that a redelivery sends it again.
	Payload []byte
}

// AddDelivery records a webhook delivery for the deliveries API and returns it with its id.
func (s *Server) AddDelivery(d Delivery) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.ID == 0 {
		d.ID = s.nextID("delivery")
	}
	// Status alone (with code 0) is an attempt that got no answer, such as "timed out".
	if d.Status == "" && d.StatusCode == 0 {
		d.Status, d.StatusCode = "OK", 200
	}
	if d.DeliveredAt.IsZero() {
		d.DeliveredAt = now()
	}
	s.deliveries = append(s.deliveries, d)
	return d
}

// Redeliveries returns the ids of deliveries the app asked to redeliver, in order.
func (s *Server) Redeliveries() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.redeliveries)
}
