package githubtest

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

func readBody(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

// base64Lines encodes like GitHub's contents API: standard base64 broken into 60-character lines.
func base64Lines(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	for len(enc) > 60 {
		sb.WriteString(enc[:60])
		sb.WriteByte('\n')
		enc = enc[60:]
	}
	sb.WriteString(enc)
	sb.WriteByte('\n')
	return sb.String()
}

func (s *Server) contentEntry(rs *repoState, ref, p, typ, sha string, size int) obj {
	self := s.api("repos/%s/contents/%s?ref=%s", rs.fullName(), p, url.QueryEscape(ref))
	kind := "blob"
	if typ == "dir" {
		kind = "tree"
	}
	git := s.api("repos/%s/git/%ss/%s", rs.fullName(), kind, sha)
	html := fmt.Sprintf("%s/%s/%s/%s/%s", s.ts.URL, rs.fullName(), kind, ref, p)
	var download any
	if typ == "file" {
		download = fmt.Sprintf("%s/%s/raw/%s/%s", s.ts.URL, rs.fullName(), ref, p)
	}
	return obj{
		"type": typ, "size": size, "name": path.Base(p), "path": p, "sha": sha,
		"url": self, "git_url": git, "html_url": html, "download_url": download,
		"_links": obj{"self": self, "git": git, "html": html},
	}
}

func (s *Server) getContent(w http.ResponseWriter, r *http.Request, c *call) {
	rs, ctx := c.repo, r.Context()
	p := strings.Trim(r.PathValue("path"), "/")
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = rs.defaultBranch
	}
	commit, err := s.resolve(ctx, rs.dir, ref)
	if err != nil {
		writeError(w, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	obj := commit + ":" + p
	out, err := s.gitString(ctx, rs.dir, "cat-file", "-t", obj)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	switch out {
	case "blob":
		sha, _ := s.gitString(ctx, rs.dir, "rev-parse", obj)
		data, err := s.git(ctx, rs.dir, nil, nil, "cat-file", "blob", sha)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "application/vnd.github.raw") {
			w.Header().Set("Content-Type", "application/vnd.github.raw")
			_, _ = w.Write(data)
			return
		}
		e := s.contentEntry(rs, ref, p, "file", sha, len(data))
		e["encoding"] = "base64"
		e["content"] = base64Lines(data)
		writeJSON(w, http.StatusOK, e)
	case "tree":
		list, err := s.git(ctx, rs.dir, nil, nil, "ls-tree", "-z", "-l", obj)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		entries := []any{}
		for _, line := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
			meta, name, ok := strings.Cut(line, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 4 {
				continue
			}
			typ := map[string]string{"blob": "file", "tree": "dir", "commit": "submodule"}[f[1]]
			if f[0] == "120000" {
				typ = "symlink"
			}
			size, _ := strconv.Atoi(f[3])
			entries = append(entries, s.contentEntry(rs, ref, strings.TrimPrefix(p+"/"+name, "/"), typ, f[2], size))
		}
		writeJSON(w, http.StatusOK, entries)
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

func (s *Server) refJSON(rs *repoState, ref, sha, typ string) obj {
	return obj{
		"ref":     ref,
		"node_id": nodeID("REF_", int64(len(ref))),
		"url":     s.api("repos/%s/git/%s", rs.fullName(), ref),
		"object":  obj{"type": typ, "sha": sha, "url": s.api("repos/%s/git/%ss/%s", rs.fullName(), typ, sha)},
	}
}

func (s *Server) getRef(w http.ResponseWriter, r *http.Request, c *call) {
	ref := "refs/" + strings.TrimPrefix(r.PathValue("ref"), "refs/")
	ctx := r.Context()
	sha, err := s.gitString(ctx, c.repo.dir, "rev-parse", "--verify", "--quiet", ref)
	if err != nil || !s.hasRef(ctx, c.repo.dir, ref) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	typ, err := s.gitString(ctx, c.repo.dir, "cat-file", "-t", sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(c.repo, ref, sha, typ))
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		Ref *string `json:"ref"`
		SHA *string `json:"sha"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	switch {
	case body.Ref == nil:
		writeUnprocessable(w, "Invalid request.\n\n\"ref\" wasn't supplied.")
		return
	case body.SHA == nil:
		writeUnprocessable(w, "Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	}
	ref, sha, ctx, dir := *body.Ref, *body.SHA, r.Context(), c.repo.dir
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 {
		writeUnprocessable(w, "Reference name is invalid")
		return
	}
	if _, err := s.git(ctx, dir, nil, nil, "check-ref-format", ref); err != nil {
		writeUnprocessable(w, "Reference name is invalid")
		return
	}
	typ, err := s.gitString(ctx, dir, "cat-file", "-t", sha)
	if err != nil || len(sha) != 40 {
		writeUnprocessable(w, "Object does not exist")
		return
	}
	if s.hasRef(ctx, dir, ref) {
		writeUnprocessable(w, "Reference already exists")
		return
	}
	if typ == "commit" {
		if msg := s.workflowRefusal(ctx, c.repo, c.tok, "", sha); msg != "" {
			writeUnprocessable(w, msg)
			return
		}
	}
	if _, err := s.git(ctx, dir, nil, nil, "update-ref", ref, sha, strings.Repeat("0", 40)); err != nil {
		writeUnprocessable(w, "Reference already exists")
		return
	}
	w.Header().Set("Location", s.api("repos/%s/git/%s", c.repo.fullName(), ref))
	writeJSON(w, http.StatusCreated, s.refJSON(c.repo, ref, sha, typ))
}

type commitInfo struct {
	sha, tree, message             string
	parents                        []string
	authorName, authorEmail, aDate string
	commName, commEmail, cDate     string
}

func (s *Server) commits(r *http.Request, dir string, args ...string) ([]commitInfo, error) {
	out, err := s.git(r.Context(), dir, nil, nil, append([]string{"log", "-z",
		"--format=%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B"}, args...)...)
	if err != nil {
		return nil, err
	}
	var cs []commitInfo
	for _, rec := range strings.Split(string(out), "\x00") {
		f := strings.Split(rec, "\x1f")
		if len(f) != 10 {
			continue
		}
		cs = append(cs, commitInfo{sha: f[0], tree: f[1], parents: strings.Fields(f[2]), authorName: f[3],
			authorEmail: f[4], aDate: f[5], commName: f[6], commEmail: f[7], cDate: f[8],
			message: strings.TrimRight(f[9], "\n")})
	}
	return cs, nil
}

func (s *Server) commitJSON(rs *repoState, c commitInfo) obj {
	parents := []any{}
	for _, p := range c.parents {
		parents = append(parents, obj{"sha": p, "url": s.api("repos/%s/commits/%s", rs.fullName(), p),
			"html_url": fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), p)})
	}
	return obj{
		"sha":          c.sha,
		"node_id":      nodeID("C_", int64(len(c.sha))),
		"url":          s.api("repos/%s/commits/%s", rs.fullName(), c.sha),
		"html_url":     fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), c.sha),
		"comments_url": s.api("repos/%s/commits/%s/comments", rs.fullName(), c.sha),
		"commit": obj{
			"message":       c.message,
			"author":        obj{"name": c.authorName, "email": c.authorEmail, "date": c.aDate},
			"committer":     obj{"name": c.commName, "email": c.commEmail, "date": c.cDate},
			"tree":          obj{"sha": c.tree, "url": s.api("repos/%s/git/trees/%s", rs.fullName(), c.tree)},
			"url":           s.api("repos/%s/git/commits/%s", rs.fullName(), c.sha),
			"comment_count": 0,
			"verification":  s.verificationJSON(s.ctx, rs, c.sha),
		},
		"author":    nil,
		"committer": nil,
		"parents":   parents,
	}
}

// compareSide resolves one side of a comparison: a ref of the repository, or "owner:branch" of the
// repository or of a fork in its network (fetched into the repository first, as GitHub compares across
// a network). Callers hold s.mu.
func (s *Server) compareSide(ctx context.Context, rs *repoState, ref string) (string, error) {
	owner, branch, ok := strings.Cut(ref, ":")
	if !ok || strings.EqualFold(owner, rs.owner) {
		if ok {
			ref = branch
		}
		return s.resolve(ctx, rs.dir, ref)
	}
	other := s.repos[repoKey(owner, rs.name)]
	if other == nil || (other.parent != rs && rs.parent != other) {
		return "", fmt.Errorf("no repository of %s in the network of %s", owner, rs.fullName())
	}
	local := "refs/githubtest/compare/" + strings.ToLower(owner)
	if _, err := s.git(ctx, rs.dir, nil, nil, "fetch", "--quiet", "--no-tags", other.dir, "+refs/heads/"+branch+":"+local); err != nil {
		return "", err
	}
	return s.resolve(ctx, rs.dir, local)
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request, c *call) {
	rs, ctx := c.repo, r.Context()
	basehead := r.PathValue("basehead")
	base, head, ok := strings.Cut(basehead, "...")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	baseSHA, err1 := s.compareSide(ctx, rs, base)
	headSHA, err2 := s.compareSide(ctx, rs, head)
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	mb, err := s.gitString(ctx, rs.dir, "merge-base", baseSHA, headSHA)
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("No common ancestor between %s and %s.", base, head))
		return
	}
	counts, err := s.gitString(ctx, rs.dir, "rev-list", "--left-right", "--count", baseSHA+"..."+headSHA)
	behindS, aheadS, _ := strings.Cut(counts, "\t")
	behind, _ := strconv.Atoi(behindS)
	ahead, _ := strconv.Atoi(aheadS)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	status := "diverged"
	switch {
	case ahead == 0 && behind == 0:
		status = "identical"
	case behind == 0:
		status = "ahead"
	case ahead == 0:
		status = "behind"
	}
	list, err := s.commits(r, rs.dir, "--reverse", baseSHA+".."+headSHA)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	ends, err := s.commits(r, rs.dir, "--no-walk=unsorted", baseSHA, mb)
	if err != nil || len(ends) == 0 {
		writeError(w, http.StatusInternalServerError, fmt.Sprint("compare: ", err))
		return
	}
	mbInfo := ends[len(ends)-1]
	files, err := s.diffFiles(ctx, rs.dir, mb, headSHA)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	commits, fileList := []any{}, []any{}
	for _, ci := range list {
		commits = append(commits, s.commitJSON(rs, ci))
	}
	for _, f := range files {
		fileList = append(fileList, s.fileJSON(rs, headSHA, f))
	}
	htmlURL := fmt.Sprintf("%s/%s/compare/%s", s.ts.URL, rs.fullName(), basehead)
	writeJSON(w, http.StatusOK, obj{
		"url":               s.api("repos/%s/compare/%s", rs.fullName(), basehead),
		"html_url":          htmlURL,
		"permalink_url":     fmt.Sprintf("%s/%s/compare/%s...%s", s.ts.URL, rs.fullName(), baseSHA, headSHA),
		"diff_url":          htmlURL + ".diff",
		"patch_url":         htmlURL + ".patch",
		"base_commit":       s.commitJSON(rs, ends[0]),
		"merge_base_commit": s.commitJSON(rs, mbInfo),
		"status":            status,
		"ahead_by":          ahead,
		"behind_by":         behind,
		"total_commits":     ahead,
		"commits":           commits,
		"files":             fileList,
	})
}
