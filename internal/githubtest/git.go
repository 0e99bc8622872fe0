package githubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// gitTimeout bounds every git command the server runs.
const gitTimeout = 2 * time.Minute

// Identities used for commits the server makes, so results never depend on the machine's git config.
const (
	setupName  = "Akira Test"
	setupEmail = "akira-test@example.com"
	humanName  = "Test Human"
	humanEmail = "human@example.com"
)

func findGit() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("githubtest: git not found: %w", err)
	}
	return p, nil
}

// gitEnv is a clean environment for git: no inherited GIT_* variables, no user or system config.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	return append(env, extra...)
}

// git runs a git command in a bare repository and returns its stdout.
func (s *Server) git(ctx context.Context, dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.CommandContext(ctx, s.gitBin, args...)
	cmd.Env = gitEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// stdout goes back too: some commands (merge-tree) say what went wrong there.
		return stdout.Bytes(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (s *Server) gitString(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := s.git(ctx, dir, nil, nil, args...)
	return strings.TrimSpace(string(out)), err
}

// RepoOption configures CreateRepo.
type RepoOption func(*repoConfig)

type repoConfig struct {
	defaultBranch string
	private       bool
	notInstalled  bool
}

// DefaultBranch sets the repository's default branch (default "main").
func DefaultBranch(name string) RepoOption { return func(c *repoConfig) { c.defaultBranch = name } }

// Private makes the repository private.
func Private() RepoOption { return func(c *repoConfig) { c.private = true } }

// NotInstalled leaves the app uninstalled on the repository.
func NotInstalled() RepoOption { return func(c *repoConfig) { c.notInstalled = true } }

// CreateRepo creates a bare repository with one commit holding files (path → content) on the default branch,
// and installs the app on it (one installation per owner account) unless NotInstalled is given.
func (s *Server) CreateRepo(owner, name string, files map[string]string, opts ...RepoOption) Repo {
	c := repoConfig{defaultBranch: "main"}
	for _, o := range opts {
		o(&c)
	}
	s.mu.Lock()
	exists := s.repos[repoKey(owner, name)] != nil
	s.mu.Unlock()
	if exists {
		s.fatalf("create repo: %s/%s exists", owner, name)
		return Repo{}
	}
	dir := filepath.Join(s.root, owner, name+".git")
	if err := s.createBare(dir, c.defaultBranch, files); err != nil {
		s.fatalf("create repo %s/%s: %v", owner, name, err)
		return Repo{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(owner)
	rs := &repoState{id: s.nextID("repo"), owner: owner, name: name, defaultBranch: c.defaultBranch,
		private: c.private, dir: dir, created: now(), issues: map[int]*issue{}, roles: map[string]string{}}
	if !c.notInstalled {
		rs.installationID = s.ensureInstallation(owner).id
	}
	s.repos[repoKey(owner, name)] = rs
	if err := s.writeSignatureHook(rs); err != nil { // the hook guards the workflows permission too
		s.fatalf("create repo %s/%s: %v", owner, name, err)
	}
	s.notePushes(rs, owner)
	return rs.snapshot()
}

// Fork creates forkOwner/name as a fork of owner/name with the same branches and history. The app is not
// installed on the fork (call Install to change that).
func (s *Server) Fork(owner, name, forkOwner string) Repo {
	parent := s.repo(owner, name)
	s.mu.Lock()
	exists := s.repos[repoKey(forkOwner, name)] != nil
	s.mu.Unlock()
	if exists {
		s.fatalf("fork: %s/%s exists", forkOwner, name)
		return Repo{}
	}
	dir := filepath.Join(s.root, forkOwner, name+".git")
	if _, err := s.git(s.ctx, "", nil, nil, "clone", "--quiet", "--bare", "--no-hardlinks", parent.dir, dir); err != nil {
		s.fatalf("fork %s/%s: %v", owner, name, err)
		return Repo{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(forkOwner)
	rs := &repoState{id: s.nextID("repo"), owner: forkOwner, name: name, defaultBranch: parent.defaultBranch,
		private: parent.private, dir: dir, parent: parent, created: now(), issues: map[int]*issue{},
		roles: map[string]string{}}
	s.repos[repoKey(forkOwner, name)] = rs
	if err := s.writeSignatureHook(rs); err != nil { // the hook guards the workflows permission too
		s.fatalf("fork %s/%s: %v", owner, name, err)
	}
	s.notePushes(rs, forkOwner)
	return rs.snapshot()
}

func (s *Server) createBare(dir, branch string, files map[string]string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s already exists", filepath.Base(dir))
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	ctx := s.ctx
	if _, err := s.git(ctx, "", nil, nil, "init", "--quiet", "--bare", "--initial-branch="+branch, dir); err != nil {
		return err
	}
	if len(files) == 0 {
		files = map[string]string{"README.md": "# test\n"}
	}
	_, err := s.commit(ctx, dir, commitSpec{
		branch: branch, files: files, message: "Initial commit", name: setupName, email: setupEmail,
	})
	return err
}

type commitSpec struct {
	branch      string
	from        string // start point when branch does not exist; empty for a root commit
	files       map[string]string
	delete      []string
	message     string
	name, email string
}

// commit writes a commit onto a branch of a bare repository with plumbing commands, so no worktree is needed.
func (s *Server) commit(ctx context.Context, dir string, c commitSpec) (string, error) {
	tmp, err := os.MkdirTemp("", "githubtest-index-")
	if err != nil {
		return "", fmt.Errorf("temp index: %w", err)
	}
	defer os.RemoveAll(tmp)
	s.mu.Lock()
	s.commitClock++
	// A fixed clock keeps hashes reproducible while still ordering commits.
	date := fmt.Sprintf("%d +0000", 1700000000+s.commitClock)
	s.mu.Unlock()
	env := []string{
		"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"),
		"GIT_AUTHOR_NAME=" + c.name, "GIT_AUTHOR_EMAIL=" + c.email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + c.name, "GIT_COMMITTER_EMAIL=" + c.email, "GIT_COMMITTER_DATE=" + date,
	}
	parent, _ := s.resolve(ctx, dir, "refs/heads/"+c.branch)
	old := parent
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	if parent == "" && c.from != "" {
		if parent, err = s.resolve(ctx, dir, c.from); err != nil {
			return "", err
		}
	}
	if parent != "" {
		if _, err := s.git(ctx, dir, nil, env, "read-tree", parent); err != nil {
			return "", err
		}
	}
	paths := make([]string, 0, len(c.files))
	for p := range c.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var info bytes.Buffer
	for _, p := range paths {
		sha, err := s.git(ctx, dir, []byte(c.files[p]), env, "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&info, "100644 %s\t%s\n", strings.TrimSpace(string(sha)), strings.Trim(p, "/"))
	}
	for _, p := range c.delete {
		fmt.Fprintf(&info, "0 %s\t%s\n", strings.Repeat("0", 40), strings.Trim(p, "/"))
	}
	if info.Len() > 0 {
		if _, err := s.git(ctx, dir, info.Bytes(), env, "update-index", "--index-info"); err != nil {
			return "", err
		}
	}
	tree, err := s.git(ctx, dir, nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree))}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	out, err := s.git(ctx, dir, []byte(c.message), env, args...)
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	if _, err := s.git(ctx, dir, nil, nil, "update-ref", "refs/heads/"+c.branch, sha, old); err != nil {
		return "", err
	}
	return sha, nil
}

func (s *Server) hasRef(ctx context.Context, dir, ref string) bool {
	_, err := s.git(ctx, dir, nil, nil, "show-ref", "--verify", "--quiet", ref)
	return err == nil
}

// resolve turns a branch name, full ref, tag or sha into a commit sha.
func (s *Server) resolve(ctx context.Context, dir, ref string) (string, error) {
	cands := []string{ref}
	if !strings.HasPrefix(ref, "refs/") {
		cands = []string{"refs/heads/" + ref, "refs/tags/" + ref, ref}
	}
	for _, c := range cands {
		if strings.HasPrefix(c, "-") {
			continue
		}
		out, err := s.git(ctx, dir, nil, nil, "rev-parse", "--verify", "--quiet", c+"^{commit}")
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", fmt.Errorf("no commit found for %q", ref)
}

// GitDir is the path of a repository's bare git directory.
func (s *Server) GitDir(owner, repo string) string { return s.repo(owner, repo).dir }

// CloneURL is the smart HTTP URL of a repository, the clone_url GitHub reports. Git needs an installation token
// (basic auth with user x-access-token, or an Authorization header through http.extraheader).
func (s *Server) CloneURL(owner, repo string) string {
	return s.ts.URL + "/" + owner + "/" + repo + ".git"
}

// Branch returns the commit a branch (or any ref or sha) points to, "" when it does not exist.
func (s *Server) Branch(owner, repo, ref string) string {
	sha, _ := s.resolve(s.ctx, s.repo(owner, repo).dir, ref)
	return sha
}

// Branches lists the branch names of a repository.
func (s *Server) Branches(owner, repo string) []string {
	out, err := s.gitString(s.ctx, s.repo(owner, repo).dir, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/")
	if err != nil {
		s.fatalf("branches: %v", err)
	}
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// FileAt returns the content of a file at a ref, and whether it exists.
func (s *Server) FileAt(owner, repo, ref, path string) (string, bool) {
	dir := s.repo(owner, repo).dir
	sha, err := s.resolve(s.ctx, dir, ref)
	if err != nil {
		return "", false
	}
	out, err := s.git(s.ctx, dir, nil, nil, "cat-file", "blob", sha+":"+strings.Trim(path, "/"))
	if err != nil {
		return "", false
	}
	return string(out), true
}

// Commit is one commit as read back from a repository. Trailers keeps the last value of each key.
type Commit struct {
	SHA      string
	Parents  []string
	Author   string // "Name <email>"
	Subject  string
	Body     string
	Trailers map[string]string
}

// Log returns the commits reachable from ref, newest first; nil when ref does not exist.
func (s *Server) Log(owner, repo, ref string) []Commit {
	dir := s.repo(owner, repo).dir
	sha, err := s.resolve(s.ctx, dir, ref)
	if err != nil {
		return nil
	}
	commits, err := s.log(s.ctx, dir, sha)
	if err != nil {
		s.fatalf("log: %v", err)
	}
	return commits
}

func (s *Server) log(ctx context.Context, dir string, revs ...string) ([]Commit, error) {
	out, err := s.git(ctx, dir, nil, nil, append([]string{"log", "-z",
		"--format=%H%x1f%P%x1f%an <%ae>%x1f%s%x1f%b%x1f%(trailers:only,unfold)"}, revs...)...)
	if err != nil {
		return nil, err
	}
	var commits []Commit
	for _, rec := range strings.Split(string(out), "\x00") {
		f := strings.Split(rec, "\x1f")
		if len(f) != 6 {
			continue
		}
		c := Commit{SHA: f[0], Parents: strings.Fields(f[1]), Author: f[2], Subject: f[3],
			Body: strings.TrimRight(f[4], "\n"), Trailers: map[string]string{}}
		for _, line := range strings.Split(f[5], "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				c.Trailers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		commits = append(commits, c)
	}
	return commits, nil
}

// Push describes a commit a person pushes.
type Push struct {
	Branch  string            // created from From (default: the default branch) when it does not exist
	From    string            // start point for a new branch
	Message string            // default "Update files"
	Files   map[string]string // path → new content
	Delete  []string          // paths to remove
	Author  string            // "Name <email>"; default "Test Human <human@example.com>"
	Pusher  string            // the login a push webhook names as pusher and sender; default the repository's owner
}

// PushCommit simulates a person pushing one commit and returns its sha.
func (s *Server) PushCommit(owner, repo string, p Push) string {
	rs := s.repo(owner, repo)
	c := commitSpec{branch: p.Branch, from: p.From, files: p.Files, delete: p.Delete, message: p.Message,
		name: humanName, email: humanEmail}
	if c.branch == "" {
		c.branch = rs.defaultBranch
	}
	if c.from == "" {
		c.from = "refs/heads/" + rs.defaultBranch
	}
	if c.message == "" {
		c.message = "Update files"
	}
	if p.Author != "" {
		name, email, ok := strings.Cut(p.Author, "<")
		if !ok {
			s.fatalf("push: author %q is not \"Name <email>\"", p.Author)
		}
		c.name, c.email = strings.TrimSpace(name), strings.TrimSuffix(strings.TrimSpace(email), ">")
	}
	sha, err := s.commit(s.ctx, rs.dir, c)
	if err != nil {
		s.fatalf("push to %s/%s: %v", owner, repo, err)
	}
	pusher := p.Pusher
	if pusher == "" {
		pusher = rs.owner
	}
	s.mu.Lock()
	s.notePushes(rs, pusher)
	s.mu.Unlock()
	s.flushOutbox()
	return sha
}

// serveGit serves git smart HTTP for /{owner}/{repo}.git/... through `git http-backend`.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	m := gitPathRE.FindStringSubmatch(r.URL.Path)
	tok := s.tokenFor(r)
	if tok == nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token. Password authentication is not supported for Git operations.",
			http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	rs := s.repos[repoKey(m[1], m[2])]
	// A public repository (a fork a pull request comes from, say) can be fetched by anyone; pushing
	// takes a token of an installation that covers it.
	allowed := rs != nil && (s.tokenCovers(tok, rs) || (!rs.private && isGitRead(r)))
	workflows := "none" // the pre-receive hook refuses workflow changes from a token without the permission
	if tok.workflows {
		workflows = "write"
	}
	s.mu.Unlock()
	if !allowed {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		// A push may move branches: their webhooks go out once git answered.
		defer func() {
			s.mu.Lock()
			s.notePushes(rs, s.BotLogin())
			s.mu.Unlock()
			s.flushOutbox()
		}()
	}
	// net/http/cgi refuses chunked bodies, and git sends large pushes chunked: buffer them.
	if len(r.TransferEncoding) > 0 {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
	}
	// Served paths use the repository's stored spelling, so a differently cased URL still finds it.
	r.URL.Path = "/" + rs.owner + "/" + rs.name + ".git" + m[3]
	var stderr bytes.Buffer
	h := &cgi.Handler{
		Path: s.gitBin,
		Args: []string{"http-backend"},
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"REMOTE_USER=x-access-token",
			"GITHUBTEST_RULES_URL=" + s.ts.URL + "/" + rs.fullName() + "/rules",
			"GITHUBTEST_WORKFLOWS=" + workflows,
		},
		Stderr: &stderr,
	}
	h.ServeHTTP(w, r)
	if stderr.Len() > 0 {
		s.logf("git http-backend %s %s: %s", r.Method, r.URL.Path, strings.TrimSpace(stderr.String()))
	}
}

// isGitRead reports a request of git's fetch side (upload-pack), never a push.
func isGitRead(r *http.Request) bool {
	if strings.HasSuffix(r.URL.Path, "/info/refs") {
		return r.URL.Query().Get("service") == "git-upload-pack"
	}
	return strings.HasSuffix(r.URL.Path, "/git-upload-pack")
}

// tokenCovers reports whether a token may access a repository. Callers hold s.mu.
func (s *Server) tokenCovers(t *token, rs *repoState) bool {
	if rs.installationID == 0 || rs.installationID != t.installationID {
		return false
	}
	return t.repos == nil || t.repos[repoKey(rs.owner, rs.name)]
}

type fileChange struct {
	filename  string
	previous  string // the old path of a rename
	status    string
	additions int
	deletions int
	sha       string
}

// diffFiles lists the files changed between two commits, renames found as GitHub finds them.
func (s *Server) diffFiles(ctx context.Context, dir, from, to string) ([]fileChange, error) {
	raw, err := s.git(ctx, dir, nil, nil, "diff-tree", "-r", "-z", "-M", "--raw", from, to)
	if err != nil {
		return nil, err
	}
	// -z --raw: ":modes shas status\0path\0", and a second path after a rename's.
	var files []fileChange
	byPath := map[string]int{}
	if len(raw) == 0 {
		return nil, nil
	}
	fields := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	for i := 0; i < len(fields); i++ {
		parts := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(parts) < 5 || i+1 >= len(fields) {
			return nil, errors.New("diff-tree: malformed raw line")
		}
		fc := fileChange{filename: fields[i+1], sha: parts[3]}
		i++
		switch parts[4][:1] {
		case "A":
			fc.status = "added"
		case "D":
			fc.status, fc.sha = "removed", parts[2]
		case "R":
			if i+1 >= len(fields) {
				return nil, errors.New("diff-tree: malformed rename")
			}
			fc.status, fc.previous, fc.filename = "renamed", fc.filename, fields[i+1]
			i++
		default:
			fc.status = "modified"
		}
		byPath[fc.filename] = len(files)
		files = append(files, fc)
	}
	num, err := s.git(ctx, dir, nil, nil, "diff-tree", "-r", "-z", "-M", "--numstat", from, to)
	if err != nil {
		return nil, err
	}
	// -z --numstat: "added\tdeleted\tpath\0", or "added\tdeleted\t\0old\0new\0" for a rename.
	nf := strings.Split(strings.TrimSuffix(string(num), "\x00"), "\x00")
	for i := 0; i < len(nf); i++ {
		parts := strings.SplitN(nf[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if path == "" && i+2 < len(nf) {
			path = nf[i+2]
			i += 2
		}
		if idx, ok := byPath[path]; ok {
			files[idx].additions, _ = strconv.Atoi(parts[0])
			files[idx].deletions, _ = strconv.Atoi(parts[1])
		}
	}
	return files, nil
}
