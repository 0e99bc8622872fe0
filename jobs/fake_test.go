package jobs

import (
	"context"
	"fmt"
	"github.com/akira-bot/akira/jobs/publish"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/jobs/ports"
)

// fakeGitHub is a recording fake of the GitHub ports, in the style of Prow's fake client: it keeps
// state (comments, check runs, pull requests) and records every effect as a readable line, so tests
// assert the final state and the effects rather than calls.
type fakeGitHub struct {
	mu      sync.Mutex
	owner   string
	repo    string
	effects []string

	info        ports.RepoInfo
	permissions map[string]string // login → role
	files       map[string]string // "ref:path" (ref "" is the default branch) → content
	issues      map[int]ports.Issue
	pulls       map[int]*ports.PullRequest
	pullFiles   map[int][]string
	closed      map[int]bool
	okCalls     map[string]int    // op → calls that succeed before fail[op] applies
	refs        map[string]string // "heads/<branch>" → sha
	comments    []*fakeComment
	reactions   []string
	checkRuns   map[int64]*ports.CheckRun
	nextID      int64
	// fail makes the named operation (e.g. "Permission", "CreateComment") return the error.
	fail map[string]error
	// failTimes makes the named operation fail that many more times with fail's error.
	failTimes map[string]int
	// lostAnswer makes the named operation take effect once and then answer with an error, as when
	// GitHub did the work but the answer never arrived.
	lostAnswer map[string]bool
	// calls counts calls per operation.
	calls map[string]int
	ci    fakeCI
	// reviewComments are the comments of a review, by review id.
	reviewComments map[int64][]ports.ReviewComment
}

type fakeComment struct {
	ID     int64
	Number int
	Body   string
	// Author is the person who wrote it; "" is the app itself.
	Author string
}

// createdAt orders the fake's comments as GitHub's creation times do: ids grow with time.
func (c *fakeComment) createdAt() time.Time { return time.Unix(1_700_000_000+c.ID, 0).UTC() }

// addPersonComment posts a comment as a person (the app's own go through CreateComment).
func (f *fakeGitHub) addPersonComment(number int, author, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.comments = append(f.comments, &fakeComment{ID: f.nextID, Number: number, Body: body, Author: author})
	return f.nextID
}

func (f *fakeGitHub) Thread(_ context.Context, _, _ string, number int) ([]ports.ThreadComment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Thread"); err != nil {
		return nil, err
	}
	var out []ports.ThreadComment
	for _, c := range f.comments {
		if c.Number == number {
			out = append(out, ports.ThreadComment{ID: c.ID, Author: c.Author, ByApp: c.Author == "", Body: c.Body, CreatedAt: c.createdAt()})
		}
	}
	return out, nil
}

func newFakeGitHub() *fakeGitHub {
	return &fakeGitHub{
		owner: "o", repo: "r",
		info:        ports.RepoInfo{DefaultBranch: "main", CloneURL: "https://example.invalid/o/r.git", HTMLURL: "https://example.invalid/o/r"},
		permissions: map[string]string{}, files: map[string]string{}, issues: map[int]ports.Issue{}, pulls: map[int]*ports.PullRequest{}, closed: map[int]bool{}, okCalls: map[string]int{},
		pullFiles: map[int][]string{}, refs: map[string]string{}, checkRuns: map[int64]*ports.CheckRun{}, fail: map[string]error{},
		calls: map[string]int{}, failTimes: map[string]int{}, lostAnswer: map[string]bool{}, nextID: 100,
		ci: fakeCI{checks: map[string][]ports.CICheck{}, evidence: map[string]string{}},
	}
}

// failOnce makes the next call of op fail with err.
func (f *fakeGitHub) failOnce(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op], f.failTimes[op] = err, 1
}

// failAfter lets n calls of op succeed, then makes every later one fail with err.
func (f *fakeGitHub) failAfter(op string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op], f.okCalls[op] = err, n
}

// call records an operation and returns the error it was told to fail with. The lock is held by the caller.
func (f *fakeGitHub) call(op string) error {
	f.calls[op]++
	if n, ok := f.okCalls[op]; ok && f.calls[op] <= n {
		return nil
	}
	err := f.fail[op]
	if n, counted := f.failTimes[op]; counted && err != nil {
		if n <= 1 {
			delete(f.fail, op)
			delete(f.failTimes, op)
		} else {
			f.failTimes[op] = n - 1
		}
	}
	return err
}

// lost reports once whether the answer of op is lost after it took effect.
func (f *fakeGitHub) lost(op string) error {
	if f.lostAnswer[op] {
		delete(f.lostAnswer, op)
		return fmt.Errorf("%s: connection reset after the request was sent", op)
	}
	return nil
}

func (f *fakeGitHub) effect(format string, args ...any) {
	f.effects = append(f.effects, fmt.Sprintf(format, args...))
}

// Effects returns the recorded effects.
func (f *fakeGitHub) Effects() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.effects)
}

// commentsOn returns the bodies of the comments on an issue or pull request.
func (f *fakeGitHub) commentsOn(number int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.comments {
		if c.Number == number {
			out = append(out, c.Body)
		}
	}
	return out
}

func (f *fakeGitHub) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeGitHub) CreateCheckRun(_ context.Context, owner, repo string, cr ports.CheckRun) (int64, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CreateCheckRun"); err != nil {
		return 0, "", err
	}
	f.nextID++
	c := cr
	f.checkRuns[f.nextID] = &c
	f.effect("create check run %q %s at %s", cr.Name, cr.Status, publish.Short(cr.HeadSHA))
	return f.nextID, fmt.Sprintf("https://example.invalid/%s/%s/runs/%d", owner, repo, f.nextID), nil
}

func (f *fakeGitHub) UpdateCheckRun(_ context.Context, _, _ string, id int64, cr ports.CheckRun) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("UpdateCheckRun"); err != nil {
		return err
	}
	c, ok := f.checkRuns[id]
	if !ok {
		return fmt.Errorf("check run %d: %w", id, ports.ErrGitHubNotFound)
	}
	if cr.Status != "" {
		c.Status = cr.Status
	}
	if cr.Conclusion != "" {
		c.Status, c.Conclusion = "completed", cr.Conclusion
		f.effect("complete check run %q %s", c.Name, cr.Conclusion)
	}
	if cr.Title != "" {
		c.Title = cr.Title
	}
	if cr.Summary != "" {
		c.Summary = cr.Summary
	}
	if cr.Text != "" {
		c.Text = cr.Text
	}
	if cr.Buttons != nil {
		c.Buttons = cr.Buttons
	}
	return nil
}

func (f *fakeGitHub) CreateComment(_ context.Context, _, _ string, number int, body string) (int64, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CreateComment"); err != nil {
		return 0, "", err
	}
	f.nextID++
	f.comments = append(f.comments, &fakeComment{ID: f.nextID, Number: number, Body: body})
	first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	f.effect("comment #%d: %s", number, first)
	if err := f.lost("CreateComment"); err != nil {
		return 0, "", err
	}
	return f.nextID, fmt.Sprintf("https://example.invalid/c/%d", f.nextID), nil
}

func (f *fakeGitHub) EditComment(_ context.Context, _, _ string, id int64, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("EditComment"); err != nil {
		return err
	}
	for _, c := range f.comments {
		if c.ID == id {
			c.Body = body
			return nil
		}
	}
	return fmt.Errorf("comment %d: %w", id, ports.ErrGitHubNotFound)
}

// deleteComment is a person deleting a comment.
func (f *fakeGitHub) deleteComment(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments = slices.DeleteFunc(f.comments, func(c *fakeComment) bool { return c.ID == id })
}

func (f *fakeGitHub) FindComment(_ context.Context, _, _ string, number int, marker string) (int64, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("FindComment"); err != nil {
		return 0, "", err
	}
	for _, c := range f.comments {
		if c.Number == number && strings.Contains(c.Body, marker) {
			return c.ID, fmt.Sprintf("https://example.invalid/c/%d", c.ID), nil
		}
	}
	return 0, "", fmt.Errorf("no comment with %q: %w", marker, ports.ErrGitHubNotFound)
}

func (f *fakeGitHub) CommentBody(_ context.Context, _, _ string, id int64) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CommentBody"); err != nil {
		return "", err
	}
	for _, c := range f.comments {
		if c.ID == id {
			return c.Body, nil
		}
	}
	return "", fmt.Errorf("comment %d: %w", id, ports.ErrGitHubNotFound)
}

func (f *fakeGitHub) ReviewComments(_ context.Context, _, _ string, _ int, reviewID int64) ([]ports.ReviewComment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ReviewComments"); err != nil {
		return nil, err
	}
	return slices.Clone(f.reviewComments[reviewID]), nil
}

func (f *fakeGitHub) ReplyToReviewComment(_ context.Context, _, _ string, number int, commentID int64, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ReplyToReviewComment"); err != nil {
		return err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	f.effect("reply on #%d to review comment %d: %s", number, commentID, first)
	return nil
}

func (f *fakeGitHub) RequestReview(_ context.Context, _, _ string, number int, reviewers []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("RequestReview"); err != nil {
		return err
	}
	f.effect("request review on #%d from %s", number, strings.Join(reviewers, ","))
	return nil
}

func (f *fakeGitHub) AddReaction(_ context.Context, _, _ string, commentID int64, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("AddReaction"); err != nil {
		return err
	}
	f.reactions = append(f.reactions, fmt.Sprintf("%s on %d", content, commentID))
	f.effect("react %s to comment %d", content, commentID)
	return nil
}

func (f *fakeGitHub) Permission(_ context.Context, _, _, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Permission"); err != nil {
		return "", err
	}
	if p, ok := f.permissions[user]; ok {
		return p, nil
	}
	return "none", nil
}

func (f *fakeGitHub) FindPullRequest(_ context.Context, _, _, head, base string) (*ports.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("FindPullRequest"); err != nil {
		return nil, err
	}
	for _, n := range sortedKeys(f.pulls) {
		if pr := f.pulls[n]; pr.HeadRef == head && (base == "" || pr.BaseRef == base) && !f.closed[n] {
			c := *pr
			return &c, nil
		}
	}
	return nil, fmt.Errorf("no pull request from %s: %w", head, ports.ErrGitHubNotFound)
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func (f *fakeGitHub) CreatePullRequest(_ context.Context, owner, repo string, spec ports.NewPullRequest) (*ports.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CreatePullRequest"); err != nil {
		return nil, err
	}
	n := 1
	for k := range f.issues {
		n = max(n, k+1)
	}
	for k := range f.pulls {
		n = max(n, k+1)
	}
	pr := &ports.PullRequest{Number: n, NodeID: fmt.Sprintf("PR_%d", n), URL: fmt.Sprintf("https://example.invalid/%s/%s/pull/%d", owner, repo, n),
		Draft: spec.Draft, HeadRef: spec.Head, BaseRef: spec.Base, HeadRepo: owner + "/" + repo}
	f.pulls[n] = pr
	f.effect("open pull request #%d %q from %s into %s (draft %t)", n, spec.Title, spec.Head, spec.Base, spec.Draft)
	c := *pr
	return &c, nil
}

func (f *fakeGitHub) GetPullRequest(_ context.Context, _, _ string, number int) (*ports.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("GetPullRequest"); err != nil {
		return nil, err
	}
	pr, ok := f.pulls[number]
	if !ok {
		return nil, fmt.Errorf("pull request #%d: %w", number, ports.ErrGitHubNotFound)
	}
	c := *pr
	c.Closed = c.Closed || f.closed[number]
	return &c, nil
}

func (f *fakeGitHub) PullRequestFiles(_ context.Context, _, _ string, number int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("PullRequestFiles"); err != nil {
		return nil, err
	}
	return slices.Clone(f.pullFiles[number]), nil
}

func (f *fakeGitHub) MarkReady(_ context.Context, _, _ string, pr *ports.PullRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("MarkReady"); err != nil {
		return err
	}
	if p, ok := f.pulls[pr.Number]; ok && p.Draft {
		p.Draft = false
		f.effect("mark pull request #%d ready", pr.Number)
	}
	pr.Draft = false
	return nil
}

func (f *fakeGitHub) ClosePullRequest(_ context.Context, _, _ string, number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ClosePullRequest"); err != nil {
		return err
	}
	if _, ok := f.pulls[number]; !ok {
		return fmt.Errorf("pull request #%d: %w", number, ports.ErrGitHubNotFound)
	}
	if !f.closed[number] {
		f.closed[number] = true
		f.effect("close pull request #%d", number)
	}
	return nil
}

func (f *fakeGitHub) GetIssue(_ context.Context, _, _ string, number int) (ports.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("GetIssue"); err != nil {
		return ports.Issue{}, err
	}
	is, ok := f.issues[number]
	if !ok {
		return ports.Issue{}, fmt.Errorf("issue #%d: %w", number, ports.ErrGitHubNotFound)
	}
	return is, nil
}

func (f *fakeGitHub) GetFile(_ context.Context, _, _, ref, path string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("GetFile"); err != nil {
		return nil, err
	}
	if ref == f.info.DefaultBranch {
		ref = ""
	}
	data, ok := f.files[ref+":"+path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, ports.ErrGitHubNotFound)
	}
	return []byte(data), nil
}

func (f *fakeGitHub) GetRef(_ context.Context, _, _, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("GetRef"); err != nil {
		return "", err
	}
	sha, ok := f.refs[ref]
	if ok {
		return sha, nil
	}
	// A repository served from a local bare repository answers from it, as GitHub would.
	if f.info.CloneURL != "" {
		out, err := exec.Command("git", "--git-dir="+f.info.CloneURL, "rev-parse", "--verify", "--quiet", "refs/"+ref).Output()
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", fmt.Errorf("%s: %w", ref, ports.ErrGitHubNotFound)
}

func (f *fakeGitHub) BranchCommits(_ context.Context, _, _, base, head string) ([]ports.BranchCommit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("BranchCommits"); err != nil {
		return nil, err
	}
	if f.info.CloneURL == "" {
		return nil, fmt.Errorf("%s...%s: %w", base, head, ports.ErrGitHubNotFound)
	}
	out, err := exec.Command("git", "--git-dir="+f.info.CloneURL, "log", "--reverse", "--format=%H%x00%B%x1e",
		"refs/heads/"+base+"..refs/heads/"+head, "--").Output()
	if err != nil {
		return nil, fmt.Errorf("%s...%s: %w", base, head, ports.ErrGitHubNotFound)
	}
	var cs []ports.BranchCommit
	for _, rec := range strings.Split(string(out), "\x1e") {
		sha, msg, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
		if ok {
			cs = append(cs, ports.BranchCommit{SHA: sha, Message: msg})
		}
	}
	return cs, nil
}

func (f *fakeGitHub) Repository(context.Context, string, string) (ports.RepoInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Repository"); err != nil {
		return ports.RepoInfo{}, err
	}
	return f.info, nil
}

func (f *fakeGitHub) GitAuthHeader(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("GitAuthHeader"); err != nil {
		return "", err
	}
	return "Authorization: Basic dGVzdA==", nil
}

var _ ports.GitHub = (*fakeGitHub)(nil)

// installations hands out f for every installation.
func (f *fakeGitHub) installations() ports.Installations {
	return ports.InstallationsFunc(func(context.Context, int64) (ports.GitHub, error) { return f, nil })
}

// ciOf is what the fake CI reports: checks per commit, the evidence of each check by name, and the
// jobs re-run.
type fakeCI struct {
	checks   map[string][]ports.CICheck
	evidence map[string]string
	reruns   []int64
	required []string
}

func (f *fakeGitHub) CIChecks(_ context.Context, _, _, sha string) ([]ports.CICheck, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CIChecks"); err != nil {
		return nil, err
	}
	return slices.Clone(f.ci.checks[sha]), nil
}

func (f *fakeGitHub) CIEvidence(_ context.Context, _, _ string, c ports.CICheck) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CIEvidence"); err != nil {
		return "", err
	}
	return f.ci.evidence[c.Name], nil
}

func (f *fakeGitHub) RerunFailedJobs(_ context.Context, _, _ string, jobID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("RerunFailedJobs"); err != nil {
		return err
	}
	f.ci.reruns = append(f.ci.reruns, jobID)
	f.effect("re-run failed jobs of job %d", jobID)
	return nil
}

func (f *fakeGitHub) RequiredChecks(context.Context, string, string, string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ci.required), f.call("RequiredChecks")
}
