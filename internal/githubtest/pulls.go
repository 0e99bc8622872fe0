package githubtest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// pullHead resolves a pull request's head commit in the base repository. A fork's head is fetched into
// refs/pull/<n>/head first, as GitHub does, so diffs against the base work.
func (s *Server) pullHead(ctx context.Context, rs, headRepo *repoState, head string, number int) (string, error) {
	if headRepo == rs {
		return s.resolve(ctx, rs.dir, "refs/heads/"+head)
	}
	ref := fmt.Sprintf("refs/pull/%d/head", number)
	if number == 0 {
		ref = "refs/githubtest/candidate"
	}
	if headRepo.deleted.Load() {
		return s.resolve(ctx, rs.dir, ref) // what GitHub kept of it
	}
	if _, err := s.git(ctx, rs.dir, nil, nil, "fetch", "--quiet", "--no-tags", headRepo.dir,
		"+refs/heads/"+head+":"+ref); err != nil {
		return "", err
	}
	return s.resolve(ctx, rs.dir, ref)
}

// pullShas returns the head and base commits of a pull request; a deleted branch yields "".
func (s *Server) pullShas(ctx context.Context, rs *repoState, is *issue) (head, base string) {
	head, _ = s.pullHead(ctx, rs, is.pr.headRepo, is.pr.head, is.number)
	base, _ = s.resolve(ctx, rs.dir, "refs/heads/"+is.pr.base)
	return head, base
}

func (s *Server) writePull(w http.ResponseWriter, r *http.Request, status int, rs *repoState, is *issue) {
	head, base := s.pullShas(r.Context(), rs, is)
	writeJSON(w, status, s.pullJSON(rs, is, head, base))
}

// parseHead splits "owner:branch" and finds the repository holding the branch: the base repository or a fork
// of it owned by owner.
func (s *Server) parseHead(rs *repoState, head, headRepo string) (*repoState, string, bool) {
	owner, branch, ok := strings.Cut(head, ":")
	if !ok {
		owner, branch = rs.owner, head
	}
	if headRepo != "" {
		o, n, _ := strings.Cut(headRepo, "/")
		hr := s.repos[repoKey(o, n)]
		return hr, branch, hr != nil
	}
	if strings.EqualFold(owner, rs.owner) {
		return rs, branch, true
	}
	hr := s.repos[repoKey(owner, rs.name)]
	return hr, branch, hr != nil && hr.parent == rs
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		Title               *string `json:"title"`
		Head                *string `json:"head"`
		HeadRepo            string  `json:"head_repo"`
		Base                *string `json:"base"`
		Body                string  `json:"body"`
		Draft               bool    `json:"draft"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
		Issue               *int    `json:"issue"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	rs := c.repo
	switch {
	case body.Head == nil || *body.Head == "":
		writeInvalid(w, "PullRequest", "head", "missing_field", "")
		return
	case body.Base == nil || *body.Base == "":
		writeInvalid(w, "PullRequest", "base", "missing_field", "")
		return
	case body.Issue != nil:
		writeUnprocessable(w, "githubtest: converting an issue into a pull request is not supported")
		return
	case body.Title == nil || *body.Title == "":
		writeInvalid(w, "PullRequest", "title", "missing_field", "")
		return
	}
	headRepo, head, ok := s.parseHead(rs, *body.Head, body.HeadRepo)
	if !ok {
		writeInvalid(w, "PullRequest", "head", "invalid", "")
		return
	}
	ctx := r.Context()
	baseSHA, err := s.resolve(ctx, rs.dir, "refs/heads/"+*body.Base)
	if err != nil {
		writeInvalid(w, "PullRequest", "base", "invalid", "")
		return
	}
	headSHA, err := s.pullHead(ctx, rs, headRepo, head, 0)
	if err != nil {
		writeInvalid(w, "PullRequest", "head", "invalid", "")
		return
	}
	for _, is := range rs.issues {
		if is.pr != nil && is.state == "open" && is.pr.headRepo == headRepo && is.pr.head == head && is.pr.base == *body.Base {
			writeInvalid(w, "PullRequest", "", "custom",
				fmt.Sprintf("A pull request already exists for %s:%s.", headRepo.owner, head))
			return
		}
	}
	ahead, err := s.gitString(ctx, rs.dir, "rev-list", "--count", baseSHA+".."+headSHA)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if ahead == "0" {
		writeInvalid(w, "PullRequest", "", "custom", fmt.Sprintf("No commits between %s and %s", *body.Base, *body.Head))
		return
	}
	is := s.newPull(rs, headRepo, *body.Title, body.Body, s.BotLogin(), head, *body.Base, body.Draft)
	if body.MaintainerCanModify != nil {
		is.pr.maintainerCanModify = *body.MaintainerCanModify
	}
	w.Header().Set("Location", s.api("repos/%s/pulls/%d", rs.fullName(), is.number))
	s.writePull(w, r, http.StatusCreated, rs, is)
}

func (s *Server) pullByNumber(w http.ResponseWriter, r *http.Request, rs *repoState) *issue {
	n, ok := pathInt(w, r, "pull_number")
	if !ok {
		return nil
	}
	is := rs.issues[int(n)]
	if is == nil || is.pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return is
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, c *call) {
	if is := s.pullByNumber(w, r, c.repo); is != nil {
		s.writePull(w, r, http.StatusOK, c.repo, is)
	}
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		writeInvalid(w, "PullRequest", "state", "invalid", "")
		return
	}
	headOwner, headRef, hasOwner := strings.Cut(q.Get("head"), ":")
	if !hasOwner {
		headOwner, headRef = "", headOwner
	}
	var pulls []*issue
	for _, is := range c.repo.issues {
		switch {
		case is.pr == nil,
			state != "all" && is.state != state,
			q.Get("base") != "" && is.pr.base != q.Get("base"),
			headRef != "" && is.pr.head != headRef,
			headOwner != "" && !strings.EqualFold(is.pr.headRepo.owner, headOwner):
			continue
		}
		pulls = append(pulls, is)
	}
	asc := q.Get("direction") == "asc"
	sort.Slice(pulls, func(i, j int) bool {
		a, b := pulls[i], pulls[j]
		if q.Get("sort") == "updated" && !a.updated.Equal(b.updated) {
			return a.updated.Before(b.updated) == asc
		}
		return (a.number < b.number) == asc
	})
	lo, hi := s.paginate(w, r, len(pulls))
	out := []any{}
	for _, is := range pulls[lo:hi] {
		head, base := s.pullShas(r.Context(), c.repo, is)
		out = append(out, s.pullJSONSimple(c.repo, is, head, base))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) updatePull(w http.ResponseWriter, r *http.Request, c *call) {
	is := s.pullByNumber(w, r, c.repo)
	if is == nil {
		return
	}
	var body struct {
		Title               *string `json:"title"`
		Body                *string `json:"body"`
		State               *string `json:"state"`
		Base                *string `json:"base"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
		// Not part of GitHub's REST API, which ignores it: real GitHub needs the GraphQL mutation
		// markPullRequestReadyForReview. Accepted here as a convenience for tests.
		Draft *bool `json:"draft"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.State != nil && *body.State != "open" && *body.State != "closed" {
		writeInvalid(w, "PullRequest", "state", "invalid", "")
		return
	}
	if body.Base != nil {
		if _, err := s.resolve(r.Context(), c.repo.dir, "refs/heads/"+*body.Base); err != nil {
			writeInvalid(w, "PullRequest", "base", "invalid", "")
			return
		}
		is.pr.base = *body.Base
	}
	if body.Title != nil {
		is.title = *body.Title
	}
	if body.Body != nil {
		is.body = *body.Body
	}
	if body.MaintainerCanModify != nil {
		is.pr.maintainerCanModify = *body.MaintainerCanModify
	}
	if body.Draft != nil {
		is.pr.draft = *body.Draft
	}
	if body.State != nil && *body.State != is.state {
		is.state = *body.State
		is.closedAt = now()
		if is.state == "open" {
			is.closedAt = time.Time{}
		}
	}
	is.updated = now()
	s.writePull(w, r, http.StatusOK, c.repo, is)
}

func (s *Server) listPullFiles(w http.ResponseWriter, r *http.Request, c *call) {
	is := s.pullByNumber(w, r, c.repo)
	if is == nil {
		return
	}
	ctx := r.Context()
	head, base := s.pullShas(ctx, c.repo, is)
	if head == "" || base == "" {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	mb, err := s.gitString(ctx, c.repo.dir, "merge-base", base, head)
	if err != nil {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	files, err := s.diffFiles(ctx, c.repo.dir, mb, head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	lo, hi := s.paginate(w, r, len(files))
	out := []any{}
	for _, f := range files[lo:hi] {
		out = append(out, s.fileJSON(c.repo, head, f))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) fileJSON(rs *repoState, ref string, f fileChange) obj {
	o := obj{
		"sha":          f.sha,
		"filename":     f.filename,
		"status":       f.status,
		"additions":    f.additions,
		"deletions":    f.deletions,
		"changes":      f.additions + f.deletions,
		"blob_url":     fmt.Sprintf("%s/%s/blob/%s/%s", s.ts.URL, rs.fullName(), ref, f.filename),
		"raw_url":      fmt.Sprintf("%s/%s/raw/%s/%s", s.ts.URL, rs.fullName(), ref, f.filename),
		"contents_url": s.api("repos/%s/contents/%s?ref=%s", rs.fullName(), f.filename, ref),
	}
	if f.previous != "" {
		o["previous_filename"] = f.previous
	}
	return o
}
