package githubtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The Git database API (blobs, trees, commits, refs) and the commits GitHub signs. A commit made
// through the API by an App's installation, with no author, committer or signature of the caller's, is
// signed by GitHub: its author is the App's bot, its committer "GitHub <noreply@github.com>", and its
// verification says verified/valid. Every other commit (pushed over git, or made through the API with
// an author of the caller's) is unsigned. The fake writes a real gpgsig header into the commits it
// signs, so that a clone sees a commit that is not the one it would have made itself, and keeps the set
// of commits it signed: that set, not the header, is what "verified" means here, as GitHub's own keys
// are what it means there.

// webFlowName and webFlowEmail are the committer of the commits GitHub signs.
const (
	webFlowName  = "GitHub"
	webFlowEmail = "noreply@github.com"
)

// fakeSignature is the armoured signature the fake writes into the commits it signs.
const fakeSignature = "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJnZ2l0aHVidGVzdAAKCRC1aQ7uu5UhlAAAbWQIAGl0aHVidGVzdA==\n=gh00\n-----END PGP SIGNATURE-----\n"

var (
	shaRE      = regexp.MustCompile(`^[0-9a-f]{40}$`)
	zeroSHA    = strings.Repeat("0", 40)
	validModes = map[string]string{"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit"}
)

// signedFile lists, one per line, the commits of a repository GitHub signed; the pre-receive hook reads it.
const signedFile = "githubtest-signed"

// markSigned records a commit the fake signed. Callers hold s.mu.
func (s *Server) markSigned(rs *repoState, sha string) error {
	if rs.signed == nil {
		rs.signed = map[string]bool{}
	}
	rs.signed[sha] = true
	f, err := os.OpenFile(filepath.Join(rs.dir, signedFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("record signed commit: %w", err)
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, sha)
	return err
}

// Verified reports whether GitHub signed a commit of a repository (its verification says verified).
func (s *Server) Verified(owner, repo, sha string) bool {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	return rs.signed[sha]
}

// verificationJSON is a commit's verification object, as the commit APIs return it. Callers hold s.mu.
func (s *Server) verificationJSON(ctx context.Context, rs *repoState, sha string) obj {
	if !rs.signed[sha] {
		return obj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	}
	raw, err := s.git(ctx, rs.dir, nil, nil, "cat-file", "commit", sha)
	payload := string(raw)
	if err == nil {
		payload = stripSignature(payload)
	}
	return obj{"verified": true, "reason": "valid", "signature": fakeSignature, "payload": payload,
		"verified_at": ts(now())}
}

// stripSignature is a commit object without its gpgsig header: what the signature signs.
func stripSignature(commit string) string {
	var out []string
	inSig := false
	for _, line := range strings.Split(commit, "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			inSig = true
			continue
		case inSig && strings.HasPrefix(line, " "):
			continue
		}
		inSig = false
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// botIdentity is the author GitHub gives the commits an App makes through the API.
func (s *Server) botIdentity() (name, email string) {
	u := s.ensureUser(s.BotLogin())
	return s.BotLogin(), fmt.Sprintf("%d+%s@users.noreply.github.com", u.id, s.BotLogin())
}

// signedCommit writes a commit that GitHub signs and returns its sha. Callers hold s.mu.
func (s *Server) signedCommit(ctx context.Context, rs *repoState, tree string, parents []string, message string) (string, error) {
	name, email := s.botIdentity()
	s.commitClock++
	date := fmt.Sprintf("%d +0000", 1700000000+s.commitClock)
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s <%s> %s\n", name, email, date)
	fmt.Fprintf(&b, "committer %s <%s> %s\n", webFlowName, webFlowEmail, date)
	b.WriteString("gpgsig " + strings.ReplaceAll(strings.TrimSuffix(fakeSignature, "\n"), "\n", "\n ") + "\n")
	b.WriteString("\n" + message)
	out, err := s.git(ctx, rs.dir, []byte(b.String()), nil, "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	return sha, s.markSigned(rs, sha)
}

// objectType is the type of an object of a repository, "" when it does not exist.
func (s *Server) objectType(ctx context.Context, rs *repoState, sha string) string {
	if !shaRE.MatchString(sha) {
		return ""
	}
	typ, err := s.gitString(ctx, rs.dir, "cat-file", "-t", sha)
	if err != nil {
		return ""
	}
	return typ
}

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Content == nil {
		writeInvalid(w, "Blob", "content", "missing_field", "")
		return
	}
	data := []byte(*body.Content)
	switch body.Encoding {
	case "", "utf-8", "utf8":
	case "base64":
		dec, err := base64.StdEncoding.DecodeString(strings.Map(dropSpace, *body.Content))
		if err != nil {
			writeInvalid(w, "Blob", "content", "invalid", "content is not valid Base64")
			return
		}
		data = dec
	default:
		writeInvalid(w, "Blob", "encoding", "invalid", fmt.Sprintf("encoding %q is not supported", body.Encoding))
		return
	}
	out, err := s.git(r.Context(), c.repo.dir, data, nil, "hash-object", "-w", "--stdin")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	sha := strings.TrimSpace(string(out))
	w.Header().Set("Location", s.api("repos/%s/git/blobs/%s", c.repo.fullName(), sha))
	writeJSON(w, http.StatusCreated, obj{"sha": sha, "url": s.api("repos/%s/git/blobs/%s", c.repo.fullName(), sha)})
}

func dropSpace(r rune) rune {
	if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
		return -1
	}
	return r
}

// treeEntry is one entry of a create-tree request. SHA is json.RawMessage so that an explicit null (delete
// the path) is told apart from a missing sha (content given).
type treeEntry struct {
	Path    string          `json:"path"`
	Mode    string          `json:"mode"`
	Type    string          `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		BaseTree string      `json:"base_tree"`
		Tree     []treeEntry `json:"tree"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Tree == nil {
		writeInvalid(w, "Tree", "tree", "missing_field", "")
		return
	}
	ctx, rs := r.Context(), c.repo
	if body.BaseTree != "" && s.objectType(ctx, rs, body.BaseTree) != "tree" {
		writeUnprocessable(w, "Invalid tree info: base_tree "+body.BaseTree+" is not a tree")
		return
	}
	sha, msg, err := s.buildTree(ctx, rs, body.BaseTree, body.Tree)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if msg != "" {
		writeUnprocessable(w, msg)
		return
	}
	tree, err := s.treeJSON(ctx, rs, sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Location", s.api("repos/%s/git/trees/%s", rs.fullName(), sha))
	writeJSON(w, http.StatusCreated, tree)
}

// buildTree writes the tree a create-tree request describes. msg is GitHub's 422 message for a request
// that cannot be served.
func (s *Server) buildTree(ctx context.Context, rs *repoState, base string, entries []treeEntry) (sha, msg string, err error) {
	tmp, err := os.MkdirTemp("", "githubtest-tree-")
	if err != nil {
		return "", "", fmt.Errorf("temp index: %w", err)
	}
	defer os.RemoveAll(tmp)
	// An empty work tree of its own: index commands want one, and none may touch a real one.
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return "", "", fmt.Errorf("temp work tree: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"), "GIT_WORK_TREE=" + work}
	if base != "" {
		if _, err := s.git(ctx, rs.dir, nil, env, "read-tree", base); err != nil {
			return "", "", err
		}
	} else if _, err := s.git(ctx, rs.dir, nil, env, "read-tree", "--empty"); err != nil {
		return "", "", err
	}
	// Checked and gathered first, then applied with a few git commands for all entries at once: a big
	// tree must not cost git processes per file. A path named twice takes its last entry.
	type placed struct {
		path, mode, typ, target string
		content                 *string
		remove                  bool
	}
	var order []string
	byPath := map[string]*placed{}
	var shas []string
	for i, e := range entries {
		path := strings.Trim(e.Path, "/")
		if path == "" || strings.Contains(path, "//") || strings.HasPrefix(path, "../") || strings.Contains(path, "/../") || path == ".." || path == ".git" || strings.HasPrefix(path, ".git/") {
			return "", fmt.Sprintf("tree.path %q is invalid", e.Path), nil
		}
		typ, ok := validModes[e.Mode]
		if !ok {
			return "", fmt.Sprintf("tree[%d].mode %q is not one of 100644, 100755, 040000, 160000, 120000", i, e.Mode), nil
		}
		if e.Type != "" && e.Type != typ {
			return "", fmt.Sprintf("tree[%d].type %q does not fit mode %s", i, e.Type, e.Mode), nil
		}
		p := &placed{path: path, mode: e.Mode, typ: typ}
		isNull := string(bytes.TrimSpace(e.SHA)) == "null"
		hasSHA := len(e.SHA) > 0 && !isNull
		switch {
		case hasSHA && e.Content != nil:
			return "", fmt.Sprintf("tree[%d]: use either sha or content, not both", i), nil
		case hasSHA:
			if err := json.Unmarshal(e.SHA, &p.target); err != nil || !shaRE.MatchString(p.target) {
				return "", fmt.Sprintf("tree.sha %s is not a valid %s", strings.Trim(string(e.SHA), `"`), typ), nil
			}
			if typ != "commit" {
				shas = append(shas, p.target)
			}
		case e.Content != nil:
			if typ != "blob" {
				return "", fmt.Sprintf("tree[%d]: content is only for blobs", i), nil
			}
			p.content = e.Content
		case isNull:
			p.remove = true
		default:
			return "", fmt.Sprintf("tree[%d]: sha or content is required", i), nil
		}
		if _, seen := byPath[path]; !seen {
			order = append(order, path)
		}
		byPath[path] = p
	}
	if len(shas) > 0 {
		out, _ := s.git(ctx, rs.dir, []byte(strings.Join(shas, "\n")+"\n"), nil, "cat-file", "--batch-check=%(objectname) %(objecttype)")
		types := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if sha, typ, ok := strings.Cut(line, " "); ok {
				types[sha] = typ
			}
		}
		for _, path := range order {
			if p := byPath[path]; p.target != "" && p.typ != "commit" && types[p.target] != p.typ {
				return "", fmt.Sprintf("tree.sha %s is not a valid %s", p.target, p.typ), nil
			}
		}
	}
	// Contents become blobs in one command, each from a file of its own.
	var files []string
	var withContent []*placed
	for i, path := range order {
		if p := byPath[path]; p.content != nil {
			f := filepath.Join(tmp, fmt.Sprintf("content-%d", i))
			if err := os.WriteFile(f, []byte(*p.content), 0o600); err != nil {
				return "", "", fmt.Errorf("content: %w", err)
			}
			files, withContent = append(files, f), append(withContent, p)
		}
	}
	if len(files) > 0 {
		out, err := s.git(ctx, rs.dir, []byte(strings.Join(files, "\n")+"\n"), nil, "hash-object", "-w", "--stdin-paths")
		if err != nil {
			return "", "", err
		}
		blobs := strings.Fields(string(out))
		if len(blobs) != len(withContent) {
			return "", "", fmt.Errorf("hash-object wrote %d blobs for %d contents", len(blobs), len(withContent))
		}
		for i, p := range withContent {
			p.target = blobs[i]
		}
	}
	// Whatever was at each path (a file, or a directory's files) goes first. No entries at all is the
	// base tree itself (createCommitOnBranch without file changes makes an empty commit).
	if len(order) > 0 {
		if _, err := s.git(ctx, rs.dir, []byte(strings.Join(order, "\x00")+"\x00"), env, "--literal-pathspecs", "rm", "--cached", "-r", "-q",
			"--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return "", "", err
		}
	}
	var info bytes.Buffer
	for i, path := range order {
		switch p := byPath[path]; {
		case p.remove:
		case p.typ == "tree":
			if _, err := s.git(ctx, rs.dir, nil, env, "read-tree", "--prefix="+path+"/", p.target); err != nil {
				return "", fmt.Sprintf("tree[%d]: %s cannot be placed at %s", i, p.target, path), nil
			}
		default:
			fmt.Fprintf(&info, "%s %s\t%s\x00", p.mode, p.target, path)
		}
	}
	if info.Len() > 0 {
		if _, err := s.git(ctx, rs.dir, info.Bytes(), env, "update-index", "-z", "--add", "--index-info"); err != nil {
			return "", "a path cannot be placed: a file is in the way of a directory, or the other way round", nil
		}
	}
	out, err := s.git(ctx, rs.dir, nil, env, "write-tree", "--missing-ok")
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(out)), "", nil
}

// treeJSON is the git-tree object of a tree, listed recursively as GitHub does when asked.
func (s *Server) treeJSON(ctx context.Context, rs *repoState, sha string) (obj, error) {
	list, err := s.git(ctx, rs.dir, nil, nil, "ls-tree", "-z", "-l", sha)
	if err != nil {
		return nil, err
	}
	entries := []any{}
	for _, line := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		e := obj{"path": name, "mode": f[0], "type": f[1], "sha": f[2]}
		if f[1] == "blob" {
			size, _ := strconv.Atoi(f[3])
			e["size"] = size
			e["url"] = s.api("repos/%s/git/blobs/%s", rs.fullName(), f[2])
		} else if f[1] == "tree" {
			e["url"] = s.api("repos/%s/git/trees/%s", rs.fullName(), f[2])
		}
		entries = append(entries, e)
	}
	return obj{"sha": sha, "url": s.api("repos/%s/git/trees/%s", rs.fullName(), sha), "tree": entries, "truncated": false}, nil
}

type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (s *Server) createCommit(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		Message   *string    `json:"message"`
		Tree      *string    `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *gitPerson `json:"author"`
		Committer *gitPerson `json:"committer"`
		Signature *string    `json:"signature"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	ctx, rs := r.Context(), c.repo
	switch {
	case body.Message == nil:
		writeInvalid(w, "Commit", "message", "missing_field", "")
		return
	case body.Tree == nil:
		writeInvalid(w, "Commit", "tree", "missing_field", "")
		return
	case s.objectType(ctx, rs, *body.Tree) != "tree":
		writeUnprocessable(w, "Tree SHA does not exist")
		return
	}
	for _, p := range body.Parents {
		if s.objectType(ctx, rs, p) != "commit" {
			writeUnprocessable(w, "Parent SHA does not exist or is not a commit object")
			return
		}
	}
	var sha string
	var err error
	if body.Author == nil && body.Committer == nil && body.Signature == nil {
		sha, err = s.signedCommit(ctx, rs, *body.Tree, body.Parents, *body.Message)
	} else {
		sha, err = s.unsignedCommit(ctx, rs, *body.Tree, body.Parents, *body.Message, body.Author, body.Committer)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.writeGitCommit(w, r, http.StatusCreated, rs, sha)
}

// unsignedCommit is a commit made through the API with an author or committer of the caller's: GitHub
// does not sign it. Callers hold s.mu.
func (s *Server) unsignedCommit(ctx context.Context, rs *repoState, tree string, parents []string, message string, author, committer *gitPerson) (string, error) {
	if author == nil {
		name, email := s.botIdentity()
		author = &gitPerson{Name: name, Email: email}
	}
	if committer == nil {
		committer = author
	}
	s.commitClock++
	date := fmt.Sprintf("%d +0000", 1700000000+s.commitClock)
	env := []string{"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email, "GIT_COMMITTER_DATE=" + date}
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := s.git(ctx, rs.dir, []byte(message), env, args...)
	return strings.TrimSpace(string(out)), err
}

func (s *Server) getGitCommit(w http.ResponseWriter, r *http.Request, c *call) {
	sha := r.PathValue("commit_sha")
	if s.objectType(r.Context(), c.repo, sha) != "commit" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.writeGitCommit(w, r, http.StatusOK, c.repo, sha)
}

// writeGitCommit answers with the git-commit object of a commit.
func (s *Server) writeGitCommit(w http.ResponseWriter, r *http.Request, status int, rs *repoState, sha string) {
	infos, err := s.commits(r, rs.dir, "-1", sha)
	if err != nil || len(infos) == 0 {
		writeError(w, http.StatusInternalServerError, fmt.Sprint("commit: ", err))
		return
	}
	ci := infos[0]
	parents := []any{}
	for _, p := range ci.parents {
		parents = append(parents, obj{"sha": p, "url": s.api("repos/%s/git/commits/%s", rs.fullName(), p),
			"html_url": fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), p)})
	}
	out := obj{
		"sha":          ci.sha,
		"node_id":      nodeID("C_", int64(len(ci.sha))),
		"url":          s.api("repos/%s/git/commits/%s", rs.fullName(), ci.sha),
		"html_url":     fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), ci.sha),
		"author":       obj{"name": ci.authorName, "email": ci.authorEmail, "date": ci.aDate},
		"committer":    obj{"name": ci.commName, "email": ci.commEmail, "date": ci.cDate},
		"tree":         obj{"sha": ci.tree, "url": s.api("repos/%s/git/trees/%s", rs.fullName(), ci.tree)},
		"message":      ci.message,
		"parents":      parents,
		"verification": s.verificationJSON(r.Context(), rs, ci.sha),
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", s.api("repos/%s/git/commits/%s", rs.fullName(), ci.sha))
	}
	writeJSON(w, status, out)
}

func (s *Server) updateRef(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		SHA   *string `json:"sha"`
		Force bool    `json:"force"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.SHA == nil {
		writeUnprocessable(w, "Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	}
	ctx, rs := r.Context(), c.repo
	ref := "refs/" + strings.TrimPrefix(r.PathValue("ref"), "refs/")
	if !s.hasRef(ctx, rs.dir, ref) {
		writeUnprocessable(w, "Reference does not exist")
		return
	}
	sha := *body.SHA
	if s.objectType(ctx, rs, sha) != "commit" {
		writeUnprocessable(w, "Object does not exist")
		return
	}
	old, err := s.gitString(ctx, rs.dir, "rev-parse", "--verify", ref)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !body.Force {
		if _, err := s.git(ctx, rs.dir, nil, nil, "merge-base", "--is-ancestor", old, sha); err != nil {
			writeUnprocessable(w, "Update is not a fast forward")
			return
		}
	}
	if msg := s.workflowRefusal(ctx, rs, c.tok, old, sha); msg != "" {
		writeUnprocessable(w, msg)
		return
	}
	if bad := s.unsignedCommits(ctx, rs, ref, old, sha); len(bad) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, obj{
			"message":           "Repository rule violations found\n\nCommits must have verified signatures.\n\n",
			"documentation_url": "https://docs.github.com/repositories/configuring-branches-and-merges-in-your-repository/managing-rulesets/about-rulesets",
			"status":            "422",
		})
		return
	}
	if _, err := s.git(ctx, rs.dir, nil, nil, "update-ref", ref, sha, old); err != nil {
		writeUnprocessable(w, "Reference cannot be updated")
		return
	}
	s.notePushes(rs, s.BotLogin())
	writeJSON(w, http.StatusOK, s.refJSON(rs, ref, sha, "commit"))
}

// unsignedCommits are the commits an update of ref from old to sha brings that GitHub did not sign,
// when the branch's rules require signatures; none otherwise. Callers hold s.mu.
func (s *Server) unsignedCommits(ctx context.Context, rs *repoState, ref, old, sha string) []string {
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || !rs.requiresSignatures(branch) {
		return nil
	}
	args := []string{"rev-list", sha, "--not", "--all"}
	if old != "" && old != zeroSHA {
		args = []string{"rev-list", old + ".." + sha}
	}
	out, err := s.gitString(ctx, rs.dir, args...)
	if err != nil {
		return []string{sha}
	}
	var bad []string
	for _, c := range strings.Fields(out) {
		if !rs.signed[c] {
			bad = append(bad, c)
		}
	}
	sort.Strings(bad)
	return bad
}
