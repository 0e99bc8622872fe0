// Package jobstest is test support for the flows of jobs/: a recording fake of the GitHub ports
// (GitHub), in the style of Prow's fake client.
package jobstest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner/workspace"
)

// GitHub is a recording fake of the GitHub ports, in the style of Prow's fake client: it keeps
// state (comments, check runs, pull requests) and records every effect as a readable line, so tests
// assert the final state and the effects rather than calls.
type GitHub struct {
	Mu          sync.Mutex
	Owner       string
	Repo        string
	EffectLines []string

	Info        ports.RepoInfo
	Permissions map[string]string // login → role
	Files       map[string]string // "ref:path" (ref "" is the default branch) → content
	Issues      map[int]ports.Issue
	Pulls       map[int]*ports.PullRequest
	PullFiles   map[int][]string
	Closed      map[int]bool
	OKCalls     map[string]int    // op → calls that succeed before fail[op] applies
	Refs        map[string]string // "heads/<branch>" → sha
	Comments    []*Comment
	Reactions   []string
	CheckRuns   map[int64]*ports.CheckRun
	NextID      int64
	// Fail makes the named operation (e.g. "Permission", "CreateComment") return the error.
	Fail map[string]error
	// FailTimes makes the named operation fail that many more times with fail's error.
	FailTimes map[string]int
	// LostAnswer makes the named operation take effect once and then answer with an error, as when
	// GitHub did the work but the answer never arrived.
	LostAnswer map[string]bool
	// CallCounts counts CallCounts per operation.
	CallCounts map[string]int
	CI         CI
	// ReviewThreads are the comments of a review, by review id.
	ReviewThreads map[int64][]ports.ReviewComment
	// SignedBranches are the branches whose rules require signed commits; Commits, when set, makes the
	// commits the engine publishes through the API (without it such a commit fails).
	SignedBranches map[string]bool
	Commits        workspace.CommitAPI
	// WorkflowsGrant says the installation holds the workflows permission.
	WorkflowsGrant bool
}

type Comment struct {
	ID     int64
	Number int
	Body   string
	// Author is the person who wrote it; "" is the app itself.
	Author string
}

// CreatedAt orders the fake's comments as GitHub's creation times do: ids grow with time.
func (c *Comment) CreatedAt() time.Time { return time.Unix(1_700_000_000+c.ID, 0).UTC() }

// AddPersonComment posts a comment as a person (the app's own go through CreateComment).
func (f *GitHub) AddPersonComment(number int, author, body string) int64 {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.NextID++
	f.Comments = append(f.Comments, &Comment{ID: f.NextID, Number: number, Body: body, Author: author})
	return f.NextID
}

func (f *GitHub) Thread(_ context.Context, _, _ string, number int) ([]ports.ThreadComment, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("Thread"); err != nil {
		return nil, err
	}
	var out []ports.ThreadComment
	for _, c := range f.Comments {
		if c.Number == number {
			out = append(out, ports.ThreadComment{ID: c.ID, Author: c.Author, ByApp: c.Author == "", Body: c.Body, CreatedAt: c.CreatedAt()})
		}
	}
	return out, nil
}

func NewGitHub() *GitHub {
	return &GitHub{
		Owner: "o", Repo: "r",
		Info:        ports.RepoInfo{DefaultBranch: "main", CloneURL: "https://example.invalid/o/r.git", HTMLURL: "https://example.invalid/o/r"},
		Permissions: map[string]string{}, Files: map[string]string{}, Issues: map[int]ports.Issue{}, Pulls: map[int]*ports.PullRequest{}, Closed: map[int]bool{}, OKCalls: map[string]int{},
		PullFiles: map[int][]string{}, Refs: map[string]string{}, CheckRuns: map[int64]*ports.CheckRun{}, Fail: map[string]error{},
		CallCounts: map[string]int{}, FailTimes: map[string]int{}, LostAnswer: map[string]bool{}, NextID: 100,
		CI: CI{Checks: map[string][]ports.CICheck{}, Evidence: map[string]string{}, Workflows: map[string][]string{}},
	}
}

// FailOnce makes the next call of op fail with err.
func (f *GitHub) FailOnce(op string, err error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Fail[op], f.FailTimes[op] = err, 1
}

// FailAfter lets n calls of op succeed, then makes every later one fail with err.
func (f *GitHub) FailAfter(op string, n int, err error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Fail[op], f.OKCalls[op] = err, n
}

// Call records an operation and returns the error it was told to fail with. The lock is held by the caller.
func (f *GitHub) Call(op string) error {
	f.CallCounts[op]++
	if n, ok := f.OKCalls[op]; ok && f.CallCounts[op] <= n {
		return nil
	}
	err := f.Fail[op]
	if n, counted := f.FailTimes[op]; counted && err != nil {
		if n <= 1 {
			delete(f.Fail, op)
			delete(f.FailTimes, op)
		} else {
			f.FailTimes[op] = n - 1
		}
	}
	return err
}

// Lost reports once whether the answer of op is Lost after it took effect.
func (f *GitHub) Lost(op string) error {
	if f.LostAnswer[op] {
		delete(f.LostAnswer, op)
		return fmt.Errorf("%s: connection reset after the request was sent", op)
	}
	return nil
}

func (f *GitHub) Effect(format string, args ...any) {
	f.EffectLines = append(f.EffectLines, fmt.Sprintf(format, args...))
}

// Effects returns the recorded effects.
func (f *GitHub) Effects() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.EffectLines)
}

// CommentsOn returns the bodies of the comments on an issue or pull request.
func (f *GitHub) CommentsOn(number int) []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []string
	for _, c := range f.Comments {
		if c.Number == number {
			out = append(out, c.Body)
		}
	}
	return out
}

func (f *GitHub) Calls(op string) int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.CallCounts[op]
}

func (f *GitHub) CreateCheckRun(_ context.Context, owner, repo string, cr ports.CheckRun) (int64, string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CreateCheckRun"); err != nil {
		return 0, "", err
	}
	f.NextID++
	c := cr
	f.CheckRuns[f.NextID] = &c
	f.Effect("create check run %q %s at %s", cr.Name, cr.Status, short(cr.HeadSHA))
	return f.NextID, fmt.Sprintf("https://example.invalid/%s/%s/runs/%d", owner, repo, f.NextID), nil
}

func (f *GitHub) UpdateCheckRun(_ context.Context, _, _ string, id int64, cr ports.CheckRun) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("UpdateCheckRun"); err != nil {
		return err
	}
	c, ok := f.CheckRuns[id]
	if !ok {
		return fmt.Errorf("check run %d: %w", id, ports.ErrGitHubNotFound)
	}
	if cr.Status != "" {
		c.Status = cr.Status
	}
	if cr.Conclusion != "" {
		c.Status, c.Conclusion = "completed", cr.Conclusion
		f.Effect("complete check run %q %s", c.Name, cr.Conclusion)
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

func (f *GitHub) CreateComment(_ context.Context, _, _ string, number int, body string) (int64, string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CreateComment"); err != nil {
		return 0, "", err
	}
	f.NextID++
	f.Comments = append(f.Comments, &Comment{ID: f.NextID, Number: number, Body: body})
	first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	f.Effect("comment #%d: %s", number, first)
	if err := f.Lost("CreateComment"); err != nil {
		return 0, "", err
	}
	return f.NextID, fmt.Sprintf("https://example.invalid/c/%d", f.NextID), nil
}

func (f *GitHub) EditComment(_ context.Context, _, _ string, id int64, body string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("EditComment"); err != nil {
		return err
	}
	for _, c := range f.Comments {
		if c.ID == id {
			c.Body = body
			return nil
		}
	}
	return fmt.Errorf("comment %d: %w", id, ports.ErrGitHubNotFound)
}

// DeleteComment is a person deleting a comment.
func (f *GitHub) DeleteComment(id int64) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Comments = slices.DeleteFunc(f.Comments, func(c *Comment) bool { return c.ID == id })
}

func (f *GitHub) FindComment(_ context.Context, _, _ string, number int, marker string) (int64, string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("FindComment"); err != nil {
		return 0, "", err
	}
	for _, c := range f.Comments {
		if c.Number == number && strings.Contains(c.Body, marker) {
			return c.ID, fmt.Sprintf("https://example.invalid/c/%d", c.ID), nil
		}
	}
	return 0, "", fmt.Errorf("no comment with %q: %w", marker, ports.ErrGitHubNotFound)
}

func (f *GitHub) CommentBody(_ context.Context, _, _ string, id int64) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CommentBody"); err != nil {
		return "", err
	}
	for _, c := range f.Comments {
		if c.ID == id {
			return c.Body, nil
		}
	}
	return "", fmt.Errorf("comment %d: %w", id, ports.ErrGitHubNotFound)
}

func (f *GitHub) ReviewComments(_ context.Context, _, _ string, _ int, reviewID int64) ([]ports.ReviewComment, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("ReviewComments"); err != nil {
		return nil, err
	}
	return slices.Clone(f.ReviewThreads[reviewID]), nil
}

func (f *GitHub) ReplyToReviewComment(_ context.Context, _, _ string, number int, commentID int64, body string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("ReplyToReviewComment"); err != nil {
		return err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	f.Effect("reply on #%d to review comment %d: %s", number, commentID, first)
	return nil
}

func (f *GitHub) RequestReview(_ context.Context, _, _ string, number int, reviewers []string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("RequestReview"); err != nil {
		return err
	}
	f.Effect("request review on #%d from %s", number, strings.Join(reviewers, ","))
	return nil
}

func (f *GitHub) AddReaction(_ context.Context, _, _ string, commentID int64, content string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("AddReaction"); err != nil {
		return err
	}
	f.Reactions = append(f.Reactions, fmt.Sprintf("%s on %d", content, commentID))
	f.Effect("react %s to comment %d", content, commentID)
	return nil
}

func (f *GitHub) Permission(_ context.Context, _, _, user string) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("Permission"); err != nil {
		return "", err
	}
	if p, ok := f.Permissions[user]; ok {
		return p, nil
	}
	return "none", nil
}

func (f *GitHub) FindPullRequest(_ context.Context, _, _, head, base string) (*ports.PullRequest, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("FindPullRequest"); err != nil {
		return nil, err
	}
	for _, n := range SortedKeys(f.Pulls) {
		if pr := f.Pulls[n]; pr.HeadRef == head && (base == "" || pr.BaseRef == base) && !f.Closed[n] {
			c := *pr
			return &c, nil
		}
	}
	return nil, fmt.Errorf("no pull request from %s: %w", head, ports.ErrGitHubNotFound)
}

func SortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func (f *GitHub) CreatePullRequest(_ context.Context, owner, repo string, spec ports.NewPullRequest) (*ports.PullRequest, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CreatePullRequest"); err != nil {
		return nil, err
	}
	n := 1
	for k := range f.Issues {
		n = max(n, k+1)
	}
	for k := range f.Pulls {
		n = max(n, k+1)
	}
	pr := &ports.PullRequest{Number: n, NodeID: fmt.Sprintf("PR_%d", n), URL: fmt.Sprintf("https://example.invalid/%s/%s/pull/%d", owner, repo, n),
		Draft: spec.Draft, HeadRef: spec.Head, BaseRef: spec.Base, HeadRepo: owner + "/" + repo}
	f.Pulls[n] = pr
	f.Effect("open pull request #%d %q from %s into %s (draft %t)", n, spec.Title, spec.Head, spec.Base, spec.Draft)
	c := *pr
	return &c, nil
}

func (f *GitHub) GetPullRequest(_ context.Context, _, _ string, number int) (*ports.PullRequest, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("GetPullRequest"); err != nil {
		return nil, err
	}
	pr, ok := f.Pulls[number]
	if !ok {
		return nil, fmt.Errorf("pull request #%d: %w", number, ports.ErrGitHubNotFound)
	}
	c := *pr
	c.Closed = c.Closed || f.Closed[number]
	return &c, nil
}

func (f *GitHub) PullRequestFiles(_ context.Context, _, _ string, number int) ([]string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("PullRequestFiles"); err != nil {
		return nil, err
	}
	return slices.Clone(f.PullFiles[number]), nil
}

func (f *GitHub) MarkReady(_ context.Context, _, _ string, pr *ports.PullRequest) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("MarkReady"); err != nil {
		return err
	}
	if p, ok := f.Pulls[pr.Number]; ok && p.Draft {
		p.Draft = false
		f.Effect("mark pull request #%d ready", pr.Number)
	}
	pr.Draft = false
	return nil
}

func (f *GitHub) ClosePullRequest(_ context.Context, _, _ string, number int) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("ClosePullRequest"); err != nil {
		return err
	}
	if _, ok := f.Pulls[number]; !ok {
		return fmt.Errorf("pull request #%d: %w", number, ports.ErrGitHubNotFound)
	}
	if !f.Closed[number] {
		f.Closed[number] = true
		f.Effect("close pull request #%d", number)
	}
	return nil
}

func (f *GitHub) GetIssue(_ context.Context, _, _ string, number int) (ports.Issue, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("GetIssue"); err != nil {
		return ports.Issue{}, err
	}
	is, ok := f.Issues[number]
	if !ok {
		return ports.Issue{}, fmt.Errorf("issue #%d: %w", number, ports.ErrGitHubNotFound)
	}
	return is, nil
}

func (f *GitHub) GetFile(_ context.Context, _, _, ref, path string) ([]byte, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("GetFile"); err != nil {
		return nil, err
	}
	if ref == f.Info.DefaultBranch {
		ref = ""
	}
	data, ok := f.Files[ref+":"+path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, ports.ErrGitHubNotFound)
	}
	return []byte(data), nil
}

func (f *GitHub) GetRef(_ context.Context, _, _, ref string) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("GetRef"); err != nil {
		return "", err
	}
	sha, ok := f.Refs[ref]
	if ok {
		return sha, nil
	}
	// A repository served from a local bare repository answers from it, as GitHub would.
	if f.Info.CloneURL != "" {
		out, err := exec.Command("git", "--git-dir="+f.Info.CloneURL, "rev-parse", "--verify", "--quiet", "refs/"+ref).Output()
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", fmt.Errorf("%s: %w", ref, ports.ErrGitHubNotFound)
}

func (f *GitHub) CreateRef(_ context.Context, _, _, ref, sha string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CreateRef"); err != nil {
		return err
	}
	ref = strings.TrimPrefix(ref, "refs/")
	if _, ok := f.Refs[ref]; ok {
		return fmt.Errorf("%s: reference already exists", ref)
	}
	if f.Refs == nil {
		f.Refs = map[string]string{}
	}
	f.Refs[ref] = sha
	f.Effect("create ref %s at %s", ref, sha)
	return nil
}

func (f *GitHub) BranchCommits(_ context.Context, _, _, base, head string) ([]ports.BranchCommit, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("BranchCommits"); err != nil {
		return nil, err
	}
	if f.Info.CloneURL == "" {
		return nil, fmt.Errorf("%s...%s: %w", base, head, ports.ErrGitHubNotFound)
	}
	out, err := exec.Command("git", "--git-dir="+f.Info.CloneURL, "log", "--reverse", "--format=%H%x00%B%x1e",
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

// CompareBase counts, in the local bare repository the fake serves (Info.CloneURL), the commits
// each side has that the other lacks.
func (f *GitHub) CompareBase(_ context.Context, _, _, base, head string) (ports.BaseComparison, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CompareBase"); err != nil {
		return ports.BaseComparison{}, err
	}
	if f.Info.CloneURL == "" {
		return ports.BaseComparison{}, fmt.Errorf("%s...%s: %w", base, head, ports.ErrGitHubNotFound)
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"--git-dir=" + f.Info.CloneURL}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	counts, err := git("rev-list", "--left-right", "--count", "refs/heads/"+base+"...refs/heads/"+head, "--")
	if err != nil {
		return ports.BaseComparison{}, fmt.Errorf("%s...%s: %w", base, head, ports.ErrGitHubNotFound)
	}
	var c ports.BaseComparison
	if _, err := fmt.Sscanf(counts, "%d %d", &c.BehindBy, &c.AheadBy); err != nil {
		return ports.BaseComparison{}, fmt.Errorf("%s...%s: %q: %w", base, head, counts, err)
	}
	c.BaseHead, _ = git("rev-parse", "refs/heads/"+base)
	return c, nil
}

func (f *GitHub) Repository(context.Context, string, string) (ports.RepoInfo, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("Repository"); err != nil {
		return ports.RepoInfo{}, err
	}
	return f.Info, nil
}

func (f *GitHub) GitAuthHeader(context.Context) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("GitAuthHeader"); err != nil {
		return "", err
	}
	return "Authorization: Basic dGVzdA==", nil
}

var _ ports.GitHub = (*GitHub)(nil)

// Installations hands out f for every installation.
func (f *GitHub) Installations() ports.Installations {
	return ports.InstallationsFunc(func(context.Context, int64) (ports.GitHub, error) { return f, nil })
}

// ciOf is what the fake CI reports: checks per commit, the evidence of each check by name, and the
// jobs re-run.
type CI struct {
	Checks   map[string][]ports.CICheck
	Evidence map[string]string
	Reruns   []int64
	Required []string
	// Workflows are the workflow files per ref (a commit or a branch).
	Workflows map[string][]string
}

func (f *GitHub) CIChecks(_ context.Context, _, _, sha string) ([]ports.CICheck, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CIChecks"); err != nil {
		return nil, err
	}
	return slices.Clone(f.CI.Checks[sha]), nil
}

func (f *GitHub) CIEvidence(_ context.Context, _, _ string, c ports.CICheck) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("CIEvidence"); err != nil {
		return "", err
	}
	return f.CI.Evidence[c.Name], nil
}

func (f *GitHub) RerunFailedJobs(_ context.Context, _, _ string, jobID int64) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("RerunFailedJobs"); err != nil {
		return err
	}
	f.CI.Reruns = append(f.CI.Reruns, jobID)
	f.Effect("re-run failed jobs of job %d", jobID)
	return nil
}

func (f *GitHub) RequiredChecks(context.Context, string, string, string) ([]string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.CI.Required), f.Call("RequiredChecks")
}

// WorkflowFiles answers from CI.Workflows (ref → files).
func (f *GitHub) WorkflowFiles(_ context.Context, _, _, ref string) ([]string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.Call("WorkflowFiles"); err != nil {
		return nil, err
	}
	return slices.Clone(f.CI.Workflows[ref]), nil
}

func (f *GitHub) SignaturesRequired(_ context.Context, _, _, branch string) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.SignedBranches[branch], f.Call("SignaturesRequired")
}

func (f *GitHub) CommitAPI(_, _ string) workspace.CommitAPI {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.CallCounts["CommitAPI"]++
	if f.Commits != nil {
		return f.Commits
	}
	return noCommitAPI{}
}

// noCommitAPI is the API committer of a fake that was given none.
type noCommitAPI struct{}

func (noCommitAPI) CreateCommit(context.Context, workspace.APICommit) (string, error) {
	return "", fmt.Errorf("jobstest: no commits through the API in this test")
}

func (f *GitHub) WorkflowsGranted(context.Context) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.WorkflowsGrant, f.Call("WorkflowsGranted")
}

// short is a commit's SHA as the effects read it.
func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// CheckRunNamed returns the fake GitHub's check run with the name, or nil.
func (f *GitHub) CheckRunNamed(name string) *ports.CheckRun {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, c := range f.CheckRuns {
		if c.Name == name {
			cc := *c
			return &cc
		}
	}
	return nil
}
