package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type authKind int

const (
	authApp  authKind = iota // app JWT
	authRepo                 // installation token that covers the {owner}/{repo} of the path
	authNone                 // no credentials: the manifest conversion, whose code is the secret
)

// route is one REST operation. Path is the OpenAPI path template; the mux pattern is derived from it, and the
// conformance test checks the same table against the OpenAPI subset, so the two cannot drift.
type route struct {
	Method      string
	Path        string
	OperationID string
	auth        authKind
	handle      func(s *Server, w http.ResponseWriter, r *http.Request, c *call)
}

// call is what the authentication step resolved for a handler.
type call struct {
	repo *repoState // for routes with {owner}/{repo}
	tok  *token     // for authRepo routes
}

// multiSegment lists the path parameters whose values may contain "/" (x-multi-segment in GitHub's description).
var multiSegment = map[string]bool{"path": true, "ref": true, "basehead": true, "branch": true, "commit_sha": true}

var routes = []route{
	{"POST", "/app/installations/{installation_id}/access_tokens", "apps/create-installation-access-token", authApp, (*Server).createInstallationToken},
	{"GET", "/app", "apps/get-authenticated", authApp, (*Server).getApp},
	{"GET", "/repos/{owner}/{repo}/installation", "apps/get-repo-installation", authApp, (*Server).getRepoInstallation},
	{"GET", "/app/hook/deliveries", "apps/list-webhook-deliveries", authApp, (*Server).listDeliveries},
	{"POST", "/app/hook/deliveries/{delivery_id}/attempts", "apps/redeliver-webhook-delivery", authApp, (*Server).redeliver},
	{"GET", "/repos/{owner}/{repo}", "repos/get", authRepo, (*Server).getRepo},
	{"POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "issues/create-comment", authRepo, (*Server).createComment},
	{"PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/update-comment", authRepo, (*Server).updateComment},
	{"GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "issues/list-comments", authRepo, (*Server).listComments},
	{"GET", "/repos/{owner}/{repo}/issues/{issue_number}", "issues/get", authRepo, (*Server).getIssue},
	{"POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "reactions/create-for-issue-comment", authRepo, (*Server).createReaction},
	{"POST", "/repos/{owner}/{repo}/pulls", "pulls/create", authRepo, (*Server).createPull},
	{"GET", "/repos/{owner}/{repo}/pulls", "pulls/list", authRepo, (*Server).listPulls},
	{"GET", "/repos/{owner}/{repo}/pulls/{pull_number}", "pulls/get", authRepo, (*Server).getPull},
	{"PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}", "pulls/update", authRepo, (*Server).updatePull},
	{"GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files", "pulls/list-files", authRepo, (*Server).listPullFiles},
	{"POST", "/repos/{owner}/{repo}/check-runs", "checks/create", authRepo, (*Server).createCheckRun},
	{"PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/update", authRepo, (*Server).updateCheckRun},
	{"GET", "/repos/{owner}/{repo}/collaborators/{username}/permission", "repos/get-collaborator-permission-level", authRepo, (*Server).getPermission},
	{"GET", "/repos/{owner}/{repo}/contents/{path}", "repos/get-content", authRepo, (*Server).getContent},
	{"GET", "/repos/{owner}/{repo}/git/ref/{ref}", "git/get-ref", authRepo, (*Server).getRef},
	{"POST", "/repos/{owner}/{repo}/git/refs", "git/create-ref", authRepo, (*Server).createRef},
	{"GET", "/repos/{owner}/{repo}/compare/{basehead}", "repos/compare-commits", authRepo, (*Server).compare},
	{"POST", "/app-manifests/{code}/conversions", "apps/create-from-manifest", authNone, (*Server).convertManifest},
	{"GET", "/repos/{owner}/{repo}/branches/{branch}", "repos/get-branch", authRepo, (*Server).getBranch},
	{"GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs", "checks/list-for-ref", authRepo, (*Server).listCheckRunsForRef},
	{"GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/get-comment", authRepo, (*Server).getComment},
	{"DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/delete-comment", authRepo, (*Server).deleteComment},
	{"GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "pulls/list-reviews", authRepo, (*Server).listReviews},
	{"GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", "pulls/list-comments-for-review", authRepo, (*Server).listReviewCommentsOfReview},
	{"GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments", "pulls/list-review-comments", authRepo, (*Server).listReviewComments},
	{"POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", "pulls/create-reply-for-review-comment", authRepo, (*Server).replyToReviewComment},
	{"POST", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", "pulls/request-reviewers", authRepo, (*Server).requestReviewers},
	// A pull request's own CI (ci.go); these operations are described in testdata/openapi-ci.json.
	{"GET", "/repos/{owner}/{repo}/commits/{ref}/check-suites", "checks/list-suites-for-ref", authRepo, (*Server).listCheckSuitesForRef},
	{"GET", "/repos/{owner}/{repo}/commits/{ref}/status", "repos/get-combined-status-for-ref", authRepo, (*Server).getCombinedStatus},
	{"GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/get", authRepo, (*Server).getCheckRun},
	{"GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", "checks/list-annotations", authRepo, (*Server).listAnnotations},
	{"GET", "/repos/{owner}/{repo}/actions/runs", "actions/list-workflow-runs-for-repo", authRepo, (*Server).listWorkflowRuns},
	{"GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", "actions/list-jobs-for-workflow-run", authRepo, (*Server).listJobsForWorkflowRun},
	{"GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}", "actions/get-job-for-workflow-run", authRepo, (*Server).getJob},
	{"GET", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", "actions/download-job-logs-for-workflow-run", authRepo, (*Server).downloadJobLogs},
	{"POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", "actions/re-run-workflow-failed-jobs", authRepo, (*Server).rerunFailedJobs},
	{"GET", "/repos/{owner}/{repo}/rules/branches/{branch}", "repos/get-branch-rules", authRepo, (*Server).getBranchRules},
	// The Git database (gitdb.go) and a branch protection's signature rule; described in testdata/openapi-git.json.
	{"POST", "/repos/{owner}/{repo}/git/blobs", "git/create-blob", authRepo, (*Server).createBlob},
	{"POST", "/repos/{owner}/{repo}/git/trees", "git/create-tree", authRepo, (*Server).createTree},
	{"POST", "/repos/{owner}/{repo}/git/commits", "git/create-commit", authRepo, (*Server).createCommit},
	{"GET", "/repos/{owner}/{repo}/git/commits/{commit_sha}", "git/get-commit", authRepo, (*Server).getGitCommit},
	{"PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", "git/update-ref", authRepo, (*Server).updateRef},
	{"GET", "/repos/{owner}/{repo}/branches/{branch}/protection/required_signatures", "repos/get-commit-signature-protection", authRepo, (*Server).getSignatureProtection},
}

// muxPattern turns an OpenAPI path template into a ServeMux pattern. ServeMux takes a multi-segment
// wildcard only at the end, so one followed by more segments (…/commits/{ref}/check-runs) swallows them;
// param and suffix say what the handler must cut off again.
func muxPattern(method, path string) (pattern, param, suffix string) {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if multiSegment[name] {
				segs[i] = "{" + name + "...}"
				if i < len(segs)-1 {
					param, suffix = name, "/"+strings.Join(segs[i+1:], "/")
					segs = segs[:i+1]
					break
				}
			}
		}
	}
	return method + " " + strings.Join(segs, "/"), param, suffix
}

// muxOverrides registers routes whose ServeMux pattern would conflict with another's under a pattern
// that does not, with a function that maps the path values back (false: not this route, 404).
var muxOverrides = map[string]struct {
	pattern string
	adapt   func(r *http.Request) bool
}{
	// GET …/issues/comments/{comment_id} and GET …/issues/{issue_number}/comments both match
	// …/issues/comments/comments; the more specific list route keeps its pattern.
	"issues/get-comment": {"GET /repos/{owner}/{repo}/issues/{issue_number}/{comment_id}", func(r *http.Request) bool {
		if r.PathValue("issue_number") != "comments" {
			return false
		}
		r.SetPathValue("issue_number", "")
		return true
	}},
}

func (s *Server) restMux() *http.ServeMux {
	mux := http.NewServeMux()
	// Routes that share a pattern (…/commits/{ref...} with different suffixes) are told apart by the
	// suffix their multi-segment value ends with.
	type served struct {
		rt            route
		param, suffix string
		override      func(r *http.Request) bool
		hasOverride   bool
	}
	byPattern := map[string][]served{}
	var order []string
	for _, rt := range routes {
		pattern, param, suffix := muxPattern(rt.Method, rt.Path)
		override, overridden := muxOverrides[rt.OperationID]
		if overridden {
			pattern = override.pattern
		}
		if _, seen := byPattern[pattern]; !seen {
			order = append(order, pattern)
		}
		byPattern[pattern] = append(byPattern[pattern], served{rt: rt, param: param, suffix: suffix, override: override.adapt, hasOverride: overridden})
	}
	for _, pattern := range order {
		candidates := byPattern[pattern]
		// A route told apart by its suffix must be tried before the one that takes the whole value
		// (…/branches/{branch}/protection/required_signatures before …/branches/{branch}).
		sort.SliceStable(candidates, func(i, j int) bool { return candidates[i].suffix != "" && candidates[j].suffix == "" })
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			for _, c := range candidates {
				if c.hasOverride && !c.override(r) {
					continue
				}
				if c.suffix != "" {
					v, ok := strings.CutSuffix(r.PathValue(c.param), c.suffix)
					if !ok || v == "" {
						continue
					}
					r.SetPathValue(c.param, v)
				}
				s.dispatch(c.rt, w, r)
				return
			}
			writeError(w, http.StatusNotFound, "Not Found")
		})
	}
	// GitHub's web pages for the App manifest flow (not REST: no /api/v3 twin on GitHub itself).
	mux.HandleFunc("POST /settings/apps/new", s.newAppFromManifest)
	mux.HandleFunc("POST /organizations/{org}/settings/apps/new", s.newAppFromManifest)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found")
	})
	return mux
}

func (s *Server) dispatch(rt route, w http.ResponseWriter, r *http.Request) {
	c := &call{}
	switch rt.auth {
	case authApp:
		if !s.checkAppJWT(w, r) {
			return
		}
	case authRepo:
		if c.tok = s.tokenFor(r); c.tok == nil {
			writeError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
	}
	// Webhooks a handler queued (a branch it moved) go out once the lock is released.
	defer s.flushOutbox()
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner := r.PathValue("owner"); owner != "" {
		c.repo = s.repos[repoKey(owner, r.PathValue("repo"))]
		if c.repo == nil || (c.tok != nil && !s.tokenCovers(c.tok, c.repo)) {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
	}
	// Handlers run under s.mu, git commands included: this serialises the fake's REST traffic, which keeps
	// state and repositories consistent at no cost that matters in tests.
	rt.handle(s, w, r, c)
}

// decodeBody decodes a JSON request body; it writes GitHub's 400 and returns false on malformed JSON.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func pathInt(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return 0, false
	}
	return n, true
}

// paginate applies per_page/page to n items, sets GitHub's Link header and returns the slice bounds.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max(1, (n+per-1)/per)
	link := func(p int, rel string) string {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = v
		}
		q2.Set("page", strconv.Itoa(p))
		q2.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.ts.URL, r.URL.EscapedPath(), q2.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((page-1)*per, n)
	return lo, min(lo+per, n)
}

// --- apps ---

func (s *Server) createInstallationToken(w http.ResponseWriter, r *http.Request, _ *call) {
	id, ok := pathInt(w, r, "installation_id")
	if !ok {
		return
	}
	in := s.installations[id]
	if in == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var body struct {
		Repositories  []string `json:"repositories"`
		RepositoryIDs []int64  `json:"repository_ids"`
	}
	if data, err := io.ReadAll(r.Body); err == nil {
		raw := strings.TrimSpace(string(data))
		if raw != "" && raw != "null" {
			if err := json.Unmarshal([]byte(raw), &body); err != nil {
				writeError(w, http.StatusBadRequest, "Problems parsing JSON")
				return
			}
		}
	}
	var scoped map[string]bool
	var scopedRepos []any
	if len(body.Repositories)+len(body.RepositoryIDs) > 0 {
		scoped = map[string]bool{}
		for _, rs := range s.repos {
			if rs.installationID != id {
				continue
			}
			if slices.Contains(body.Repositories, rs.name) || slices.Contains(body.RepositoryIDs, rs.id) {
				scoped[repoKey(rs.owner, rs.name)] = true
				scopedRepos = append(scopedRepos, s.repoJSON(rs))
			}
		}
		if len(scoped) != len(body.Repositories)+len(body.RepositoryIDs) {
			writeUnprocessable(w, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
	}
	t := s.mintToken(id, scoped)
	resp := obj{
		"token":                t.value,
		"expires_at":           t.expiresAt.UTC().Format(time.RFC3339),
		"permissions":          installationPermissions(in),
		"repository_selection": "selected",
	}
	if scopedRepos != nil {
		resp["repositories"] = scopedRepos
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) getApp(w http.ResponseWriter, _ *http.Request, _ *call) {
	o := s.appJSON()
	o["installations_count"] = len(s.installations)
	writeJSON(w, http.StatusOK, o)
}

func (s *Server) getRepoInstallation(w http.ResponseWriter, _ *http.Request, c *call) {
	in := s.installations[c.repo.installationID]
	if in == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON(in))
}

// listDeliveries pages with a cursor, like GitHub: per_page (default 30, at most 100) and an opaque
// cursor that the Link header's rel="next" carries.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, _ *call) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	// Newest first, like GitHub.
	var all []Delivery
	for i := len(s.deliveries) - 1; i >= 0; i-- {
		d := s.deliveries[i]
		if st := q.Get("status"); st == "success" && d.StatusCode/100 != 2 ||
			st == "failure" && d.StatusCode/100 == 2 {
			continue
		}
		all = append(all, d)
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "v1_"))
		if err != nil || n < 0 || n > len(all) {
			writeInvalid(w, "Delivery", "cursor", "invalid", "")
			return
		}
		start = n
	}
	end := min(start+per, len(all))
	if end < len(all) {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = v
		}
		q2.Set("cursor", "v1_"+strconv.Itoa(end))
		q2.Set("per_page", strconv.Itoa(per))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.ts.URL, r.URL.EscapedPath(), q2.Encode()))
	}
	out := []any{}
	for _, d := range all[start:end] {
		var action any
		if d.Action != "" {
			action = d.Action
		}
		out = append(out, obj{
			"id": d.ID, "guid": d.GUID, "delivered_at": ts(d.DeliveredAt), "redelivery": d.Redelivery,
			"duration": 0.1, "status": d.Status, "status_code": d.StatusCode, "event": d.Event,
			"action": action, "installation_id": d.InstallationID, "repository_id": d.RepositoryID,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, _ *call) {
	id, ok := pathInt(w, r, "delivery_id")
	if !ok {
		return
	}
	i := slices.IndexFunc(s.deliveries, func(d Delivery) bool { return d.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.redeliveries = append(s.redeliveries, id)
	if d := s.deliveries[i]; d.Payload != nil && s.hookURL != "" {
		// GitHub sends it again a moment after accepting the request, with the same GUID.
		target, secret := s.hookURL, s.hookSecret
		go func() { _, _, _ = s.deliver(target, secret, d.Event, d.GUID, d.Payload, true) }()
	}
	writeJSON(w, http.StatusAccepted, obj{})
}

// --- repos, collaborators ---

func (s *Server) getRepo(w http.ResponseWriter, _ *http.Request, c *call) {
	writeJSON(w, http.StatusOK, s.repoJSON(c.repo))
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request, c *call) {
	login := r.PathValue("username")
	perm, role := permissionOf(c.repo, login)
	u := s.userJSON(login)
	rank := slices.Index(roles, role)
	u["permissions"] = obj{
		"admin": rank <= 0, "maintain": rank <= 1, "push": rank <= 2, "triage": rank <= 3, "pull": rank <= 4,
	}
	u["role_name"] = role
	writeJSON(w, http.StatusOK, obj{"permission": perm, "role_name": role, "user": u})
}

// --- issues and comments ---

// maxCommentLen is GitHub's limit on an issue comment body, in characters.
const maxCommentLen = 65536

// pathIssue is the issue (or pull request) the route's {issue_number} names; it answers 404 itself.
func pathIssue(w http.ResponseWriter, r *http.Request, c *call) (*issue, bool) {
	n, ok := pathInt(w, r, "issue_number")
	if !ok {
		return nil, false
	}
	is := c.repo.issues[int(n)]
	if is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return is, true
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathIssue(w, r, c)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.issueJSON(c.repo, is))
}

func commentBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &body) {
		return "", false
	}
	if body.Body == nil {
		writeInvalid(w, "IssueComment", "body", "missing_field", "")
		return "", false
	}
	if utf8.RuneCountInString(*body.Body) > maxCommentLen {
		writeInvalid(w, "IssueComment", "body", "custom",
			fmt.Sprintf("body is too long (maximum is %d characters)", maxCommentLen))
		return "", false
	}
	return *body.Body, true
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathIssue(w, r, c)
	if !ok {
		return
	}
	body, ok := commentBody(w, r)
	if !ok {
		return
	}
	cm := s.newComment(c.repo, is, s.BotLogin(), body)
	w.Header().Set("Location", s.api("repos/%s/issues/comments/%d", c.repo.fullName(), cm.id))
	writeJSON(w, http.StatusCreated, s.commentJSON(cm))
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return
	}
	cm := s.comments[id]
	if cm == nil || cm.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, ok := commentBody(w, r)
	if !ok {
		return
	}
	cm.body, cm.updated = body, now()
	cm.edits++
	writeJSON(w, http.StatusOK, s.commentJSON(cm))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, c *call) {
	is, ok := pathIssue(w, r, c)
	if !ok {
		return
	}
	all := s.issueComments(c.repo, is.number)
	if since := r.URL.Query().Get("since"); since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			writeInvalid(w, "IssueComment", "since", "invalid", "")
			return
		}
		all = slices.DeleteFunc(all, func(cm *comment) bool { return cm.updated.Before(t) })
	}
	lo, hi := s.paginate(w, r, len(all))
	out := []any{}
	for _, cm := range all[lo:hi] {
		out = append(out, s.commentJSON(cm))
	}
	writeJSON(w, http.StatusOK, out)
}

var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

func (s *Server) createReaction(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return
	}
	cm := s.comments[id]
	if cm == nil || cm.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var body struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if !slices.Contains(reactionContents, body.Content) {
		writeInvalid(w, "Reaction", "content", "invalid", "")
		return
	}
	bot := s.BotLogin()
	reactionJSON := func(re Reaction) obj {
		return obj{"id": re.ID, "node_id": nodeID("REA_", re.ID), "user": s.userJSON(re.User),
			"content": re.Content, "created_at": ts(now())}
	}
	for _, re := range cm.reactions {
		if re.User == bot && re.Content == body.Content {
			writeJSON(w, http.StatusOK, reactionJSON(re))
			return
		}
	}
	re := Reaction{ID: s.nextID("reaction"), Content: body.Content, User: bot}
	cm.reactions = append(cm.reactions, re)
	writeJSON(w, http.StatusCreated, reactionJSON(re))
}
