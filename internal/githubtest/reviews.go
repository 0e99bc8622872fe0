package githubtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// The operations of pull request reviews, review comments, requested reviewers, single comments,
// branches, check runs by ref, and the App manifest conversion.

// Review is a pull request review, as a test seeds it or reads it back.
type Review struct {
	ID int64
	// User is the reviewer; State is GitHub's REST spelling: APPROVED, CHANGES_REQUESTED, COMMENTED,
	// DISMISSED or PENDING (COMMENTED when empty).
	User     string
	State    string
	Body     string
	CommitID string
	Comments []ReviewComment
}

// ReviewComment is a comment on a line of a pull request's diff.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	Number    int // the pull request
	Path      string
	Line      int
	Body      string
	User      string
	InReplyTo int64
	CreatedAt time.Time
}

type review struct {
	Review
	repo      *repoState
	number    int
	submitted time.Time
}

type reviewComment struct {
	ReviewComment
	repo *repoState
}

var reviewStates = []string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"}

// AddReview adds a review (and its line comments) to a pull request, as a reviewer would submit it.
func (s *Server) AddReview(owner, repo string, number int, rv Review) Review {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rs.issues[number]
	if is == nil || is.pr == nil {
		s.fatalf("githubtest: no pull request %s#%d", rs.fullName(), number)
		return Review{}
	}
	if rv.State == "" {
		rv.State = "COMMENTED"
	}
	rv.State = strings.ToUpper(rv.State)
	if !slices.Contains(reviewStates, rv.State) {
		s.fatalf("githubtest: review state %q is not one of %v", rv.State, reviewStates)
		return Review{}
	}
	if rv.User == "" {
		rv.User = "octocat"
	}
	if rv.CommitID == "" {
		rv.CommitID, _ = s.pullHead(s.ctx, rs, is.pr.headRepo, is.pr.head, number)
	}
	rv.ID = s.nextID("review")
	t := now()
	for i := range rv.Comments {
		c := &rv.Comments[i]
		c.ID, c.ReviewID, c.Number, c.CreatedAt = s.nextID("review_comment"), rv.ID, number, t
		if c.User == "" {
			c.User = rv.User
		}
		s.reviewComments[c.ID] = &reviewComment{ReviewComment: *c, repo: rs}
	}
	s.reviews[rv.ID] = &review{Review: rv, repo: rs, number: number, submitted: t}
	return rv
}

// ReviewComments returns the review comments of a pull request, replies included, oldest first.
func (s *Server) ReviewComments(owner, repo string, number int) []ReviewComment {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReviewComment
	for _, c := range s.prReviewComments(rs, number, 0) {
		out = append(out, c.ReviewComment)
	}
	return out
}

// RequestedReviewers returns the logins review was requested from on a pull request.
func (s *Server) RequestedReviewers(owner, repo string, number int) []string {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requested[fmt.Sprintf("%s#%d", repoKey(rs.owner, rs.name), number)])
}

// AddManifestCode makes code redeemable once at POST /app-manifests/{code}/conversions, as GitHub's
// redirect after "Create GitHub App" hands it out. The conversion answers with this server's own App
// (its id and private key), so an App created through the manifest flow authenticates here.
func (s *Server) AddManifestCode(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manifestCodes[code] = true
}

// prReviewComments are a pull request's review comments (of one review when reviewID is not 0).
func (s *Server) prReviewComments(rs *repoState, number int, reviewID int64) []*reviewComment {
	var out []*reviewComment
	for _, c := range s.reviewComments {
		if c.repo == rs && c.Number == number && (reviewID == 0 || c.ReviewID == reviewID) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// pathPull is the pull request the route's {pull_number} names; it answers 404 itself.
func pathPull(w http.ResponseWriter, r *http.Request, c *call) (*issue, bool) {
	n, ok := pathInt(w, r, "pull_number")
	if !ok {
		return nil, false
	}
	is := c.repo.issues[int(n)]
	if is == nil || is.pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return is, true
}

func (s *Server) reviewJSON(rv *review) obj {
	rs := rv.repo
	html := fmt.Sprintf("%s/%s/pull/%d#pullrequestreview-%d", s.ts.URL, rs.fullName(), rv.number, rv.ID)
	var commit any
	if rv.CommitID != "" {
		commit = rv.CommitID
	}
	o := obj{
		"id":                 rv.ID,
		"node_id":            nodeID("PRR_", rv.ID),
		"user":               s.userJSON(rv.User),
		"body":               rv.Body,
		"state":              rv.State,
		"html_url":           html,
		"pull_request_url":   s.api("repos/%s/pulls/%d", rs.fullName(), rv.number),
		"commit_id":          commit,
		"author_association": authorAssociation(rs, rv.User),
		"_links": obj{
			"html":         obj{"href": html},
			"pull_request": obj{"href": s.api("repos/%s/pulls/%d", rs.fullName(), rv.number)},
		},
	}
	if rv.State != "PENDING" {
		o["submitted_at"] = ts(rv.submitted)
	}
	return o
}

// reviewCommentJSON is the pull-request-review-comment shape; forReview gives the review-comment shape
// of GET …/reviews/{id}/comments, where position and original_position are required.
func (s *Server) reviewCommentJSON(c *reviewComment, commitID string, forReview bool) obj {
	rs := c.repo
	html := fmt.Sprintf("%s/%s/pull/%d#discussion_r%d", s.ts.URL, rs.fullName(), c.Number, c.ID)
	self := s.api("repos/%s/pulls/comments/%d", rs.fullName(), c.ID)
	pr := s.api("repos/%s/pulls/%d", rs.fullName(), c.Number)
	o := obj{
		"id":                       c.ID,
		"node_id":                  nodeID("PRRC_", c.ID),
		"url":                      self,
		"pull_request_review_id":   c.ReviewID,
		"diff_hunk":                "@@ -1 +1 @@",
		"path":                     c.Path,
		"commit_id":                commitID,
		"original_commit_id":       commitID,
		"user":                     s.userJSON(c.User),
		"body":                     c.Body,
		"created_at":               ts(c.CreatedAt),
		"updated_at":               ts(c.CreatedAt),
		"html_url":                 html,
		"pull_request_url":         pr,
		"author_association":       authorAssociation(rs, c.User),
		"line":                     c.Line,
		"original_line":            c.Line,
		"side":                     "RIGHT",
		"position":                 c.Line,
		"original_position":        c.Line,
		"_links":                   obj{"self": obj{"href": self}, "html": obj{"href": html}, "pull_request": obj{"href": pr}},
		"start_line":               nil,
		"original_start_line":      nil,
		"start_side":               nil,
		"subject_type":             "line",
		"reactions":                obj{"url": self + "/reactions", "total_count": 0},
		"body_html":                nil,
		"body_text":                nil,
		"performed_via_github_app": nil,
	}
	if c.InReplyTo != 0 {
		o["in_reply_to_id"] = c.InReplyTo
	}
	if forReview {
		delete(o, "subject_type")
	}
	return o
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathPull(w, r, c)
	if !ok {
		return
	}
	var all []*review
	for _, rv := range s.reviews {
		if rv.repo == c.repo && rv.number == is.number {
			all = append(all, rv)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	lo, hi := s.paginate(w, r, len(all))
	out := []any{}
	for _, rv := range all[lo:hi] {
		out = append(out, s.reviewJSON(rv))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listReviewCommentsOfReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathPull(w, r, c)
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "review_id")
	if !ok {
		return
	}
	rv := s.reviews[id]
	if rv == nil || rv.repo != c.repo || rv.number != is.number {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	all := s.prReviewComments(c.repo, is.number, id)
	lo, hi := s.paginate(w, r, len(all))
	out := []any{}
	for _, cm := range all[lo:hi] {
		out = append(out, s.reviewCommentJSON(cm, rv.CommitID, true))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) commitOfReview(id int64) string {
	if rv := s.reviews[id]; rv != nil {
		return rv.CommitID
	}
	return ""
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathPull(w, r, c)
	if !ok {
		return
	}
	all := s.prReviewComments(c.repo, is.number, 0)
	lo, hi := s.paginate(w, r, len(all))
	out := []any{}
	for _, cm := range all[lo:hi] {
		out = append(out, s.reviewCommentJSON(cm, s.commitOfReview(cm.ReviewID), false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) replyToReviewComment(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathPull(w, r, c)
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return
	}
	parent := s.reviewComments[id]
	if parent == nil || parent.repo != c.repo || parent.Number != is.number {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, ok := commentBody(w, r)
	if !ok {
		return
	}
	// A reply answers the thread's first comment, as GitHub does when the parent is itself a reply.
	root := parent.ID
	if parent.InReplyTo != 0 {
		root = parent.InReplyTo
	}
	rc := &reviewComment{repo: c.repo, ReviewComment: ReviewComment{ID: s.nextID("review_comment"), ReviewID: parent.ReviewID,
		Number: is.number, Path: parent.Path, Line: parent.Line, Body: body, User: s.BotLogin(), InReplyTo: root, CreatedAt: now()}}
	s.reviewComments[rc.ID] = rc
	writeJSON(w, http.StatusCreated, s.reviewCommentJSON(rc, s.commitOfReview(rc.ReviewID), false))
}

func (s *Server) requestReviewers(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathPull(w, r, c)
	if !ok {
		return
	}
	var body struct {
		Reviewers     *[]string `json:"reviewers"`
		TeamReviewers *[]string `json:"team_reviewers"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Reviewers == nil && body.TeamReviewers == nil {
		writeInvalid(w, "PullRequest", "reviewers", "missing_field", "")
		return
	}
	if body.TeamReviewers != nil && len(*body.TeamReviewers) > 0 {
		writeUnprocessable(w, "Reviews may only be requested from collaborators. One or more of the teams you specified is not a collaborator of the "+c.repo.fullName()+" repository.")
		return
	}
	key := fmt.Sprintf("%s#%d", repoKey(c.repo.owner, c.repo.name), is.number)
	if body.Reviewers != nil {
		for _, login := range *body.Reviewers {
			if _, role := permissionOf(c.repo, login); role == "none" && !strings.EqualFold(login, c.repo.owner) {
				writeUnprocessable(w, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+c.repo.fullName()+" repository.")
				return
			}
		}
		for _, login := range *body.Reviewers {
			if !slices.Contains(s.requested[key], login) {
				s.requested[key] = append(s.requested[key], login)
			}
		}
	}
	head, base := s.pullShas(r.Context(), c.repo, is)
	o := s.pullJSONSimple(c.repo, is, head, base)
	reviewers := []any{}
	for _, login := range s.requested[key] {
		reviewers = append(reviewers, s.userJSON(login))
	}
	o["requested_reviewers"], o["requested_teams"] = reviewers, []any{}
	writeJSON(w, http.StatusCreated, o)
}

func (s *Server) issueCommentByID(w http.ResponseWriter, r *http.Request, c *call) (*comment, bool) {
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return nil, false
	}
	cm := s.comments[id]
	if cm == nil || cm.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return cm, true
}

func (s *Server) getComment(w http.ResponseWriter, r *http.Request, c *call) {
	if cm, ok := s.issueCommentByID(w, r, c); ok {
		writeJSON(w, http.StatusOK, s.commentJSON(cm))
	}
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, ok := s.issueCommentByID(w, r, c)
	if !ok {
		return
	}
	delete(s.comments, cm.id)
	if is := c.repo.issues[cm.issueNumber]; is != nil && is.commentsN > 0 {
		is.commentsN--
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getBranch(w http.ResponseWriter, r *http.Request, c *call) {
	branch := r.PathValue("branch")
	sha, err := s.resolve(r.Context(), c.repo.dir, "refs/heads/"+branch)
	if err != nil || sha == "" {
		writeError(w, http.StatusNotFound, "Branch not found")
		return
	}
	commits, err := s.commits(r, c.repo.dir, "-1", sha)
	if err != nil || len(commits) == 0 {
		writeError(w, http.StatusNotFound, "Branch not found")
		return
	}
	self := s.api("repos/%s/branches/%s", c.repo.fullName(), branch)
	required := c.repo.required[branch]
	level, contexts, checks := "off", []any{}, []any{}
	for _, name := range required {
		level = "everyone"
		contexts = append(contexts, name)
		checks = append(checks, obj{"context": name, "app_id": nil})
	}
	writeJSON(w, http.StatusOK, obj{
		"name":      branch,
		"commit":    s.commitJSON(c.repo, commits[0]),
		"_links":    obj{"self": self, "html": fmt.Sprintf("%s/%s/tree/%s", s.ts.URL, c.repo.fullName(), branch)},
		"protected": len(required) > 0,
		"protection": obj{
			"enabled":                len(required) > 0,
			"required_status_checks": obj{"enforcement_level": level, "contexts": contexts, "checks": checks},
		},
		"protection_url": self + "/protection",
	})
}

func (s *Server) listCheckRunsForRef(w http.ResponseWriter, r *http.Request, c *call) {
	ref := r.PathValue("ref")
	sha, err := s.resolve(r.Context(), c.repo.dir, ref)
	if err != nil || sha == "" {
		writeError(w, http.StatusNotFound, "No commit found for SHA: "+ref)
		return
	}
	q := r.URL.Query()
	var all []*checkRun
	for _, cr := range s.checkRuns {
		if cr.repo != c.repo || cr.HeadSHA != sha {
			continue
		}
		if name := q.Get("check_name"); name != "" && cr.Name != name {
			continue
		}
		if st := q.Get("status"); st != "" && cr.Status != st {
			continue
		}
		if id := q.Get("app_id"); id != "" && id != fmt.Sprint(s.appOf(cr).ID) {
			continue
		}
		all = append(all, cr)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	if q.Get("filter") != "all" {
		// "latest" (the default) keeps the newest check run of each name.
		seen := map[string]bool{}
		all = slices.DeleteFunc(all, func(cr *checkRun) bool {
			if seen[cr.Name] {
				return true
			}
			seen[cr.Name] = true
			return false
		})
	}
	lo, hi := s.paginate(w, r, len(all))
	out := []any{}
	for _, cr := range all[lo:hi] {
		out = append(out, s.checkRunJSON(cr))
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(all), "check_runs": out})
}

func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request, _ *call) {
	code := r.PathValue("code")
	if !s.manifestCodes[code] {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	delete(s.manifestCodes, code)
	o := s.appJSON()
	o["client_id"] = "Iv1." + randomHex(8)
	o["client_secret"] = randomHex(20)
	o["webhook_secret"] = randomHex(20)
	o["pem"] = string(s.keyPEM)
	writeJSON(w, http.StatusCreated, o)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
