package githubtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Mergeability, as GitHub reports it on a pull request: GitHub computes it in the background with
// `git merge-tree --write-tree` after the head or the base moves, and answers `"mergeable": null`,
// `"mergeable_state": "unknown"` until it is done. The fake is deterministic about it: the first read of a
// pull request after its head or base moved answers unknown (and computes); every later read answers
// what was computed. The merge result is kept per head and base; the state also reads the draft flag,
// the branch's rules and the head's checks, which change without a push.

// mergeResult is the test merge of a pull request's head into its base.
type mergeResult struct {
	head, base string
	conflict   bool
	files      []string // conflicting paths
	behind     bool     // the base has commits the head lacks
	commit     string   // the test merge commit (refs/pull/<n>/merge), "" on a conflict
}

// mergeability answers a pull request's mergeable, mergeable_state and merge_commit_sha. Callers hold s.mu.
func (s *Server) mergeability(ctx context.Context, rs *repoState, is *issue, head, base string) (mergeable any, state string, commit any) {
	p := is.pr
	if is.state != "open" || head == "" || base == "" {
		return nil, "unknown", nil
	}
	if p.merge == nil || p.merge.head != head || p.merge.base != base {
		m, err := s.testMerge(ctx, rs, is.number, head, base)
		if err != nil {
			s.logf("mergeability of #%d: %v", is.number, err)
			p.merge = nil
		} else {
			p.merge = m
		}
		return nil, "unknown", nil
	}
	m := p.merge
	if m.conflict {
		return false, "dirty", nil
	}
	commit = m.commit
	switch {
	case p.draft:
		return true, "draft", commit
	case m.behind && rs.strict[p.base]:
		return true, "behind", commit
	case s.blocked(ctx, rs, p.base, head, base):
		return true, "blocked", commit
	case s.unstable(rs, head, p.base):
		return true, "unstable", commit
	}
	return true, "clean", commit
}

// testMerge merges head into base without a work tree, as GitHub does, and keeps the merge commit at
// refs/pull/<n>/merge. Callers hold s.mu.
func (s *Server) testMerge(ctx context.Context, rs *repoState, number int, head, base string) (*mergeResult, error) {
	m := &mergeResult{head: head, base: base}
	if _, err := s.git(ctx, rs.dir, nil, nil, "merge-base", "--is-ancestor", base, head); err != nil {
		m.behind = true
	}
	out, err := s.git(ctx, rs.dir, nil, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base, head)
	if err != nil {
		var exit *exec.ExitError
		// Exit status 1 is a merge with conflicts; anything else is git failing.
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			return nil, err
		}
		m.conflict = true
		fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(fields) > 1 {
			m.files = slices.DeleteFunc(fields[1:], func(f string) bool { return f == "" })
		}
		_, _ = s.git(ctx, rs.dir, nil, nil, "update-ref", "-d", fmt.Sprintf("refs/pull/%d/merge", number))
		return m, nil
	}
	tree := strings.TrimSuffix(strings.SplitN(string(out), "\x00", 2)[0], "\n")
	s.commitClock++
	date := fmt.Sprintf("%d +0000", 1700000000+s.commitClock)
	env := []string{"GIT_AUTHOR_NAME=" + webFlowName, "GIT_AUTHOR_EMAIL=" + webFlowEmail, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + webFlowName, "GIT_COMMITTER_EMAIL=" + webFlowEmail, "GIT_COMMITTER_DATE=" + date}
	msg := fmt.Sprintf("Merge %s into %s\n", head, base)
	sha, err := s.git(ctx, rs.dir, []byte(msg), env, "commit-tree", tree, "-p", base, "-p", head)
	if err != nil {
		return nil, err
	}
	m.commit = strings.TrimSpace(string(sha))
	if _, err := s.git(ctx, rs.dir, nil, nil, "update-ref", fmt.Sprintf("refs/pull/%d/merge", number), m.commit); err != nil {
		return nil, err
	}
	return m, nil
}

// blocked: a check the base branch requires is missing or did not pass on the head, or the branch
// requires signed commits and the pull request brings one GitHub did not sign. Callers hold s.mu.
func (s *Server) blocked(ctx context.Context, rs *repoState, branch, head, base string) bool {
	results := s.checkResults(rs, head)
	for _, name := range s.requiredChecks(rs, branch) {
		if r, ok := results[name]; !ok || !r.passed() {
			return true
		}
	}
	if !rs.requiresSignatures(branch) {
		return false
	}
	out, err := s.gitString(ctx, rs.dir, "rev-list", base+".."+head)
	if err != nil {
		return true
	}
	for _, c := range strings.Fields(out) {
		if !rs.signed[c] {
			return true
		}
	}
	return false
}

// unstable: a check that is not required failed or has not finished. Callers hold s.mu.
func (s *Server) unstable(rs *repoState, head, branch string) bool {
	required := s.requiredChecks(rs, branch)
	for name, r := range s.checkResults(rs, head) {
		if !slices.Contains(required, name) && !r.passed() {
			return true
		}
	}
	return false
}

func (s *Server) requiredChecks(rs *repoState, branch string) []string {
	out := slices.Clone(rs.required[branch])
	for _, name := range rs.ruleChecks[branch] {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// checkResult is the latest word of one check (a check run by name, or a status by context) on a commit.
type checkResult struct {
	done       bool
	conclusion string
}

func (r checkResult) passed() bool {
	return r.done && (r.conclusion == "success" || r.conclusion == "neutral" || r.conclusion == "skipped")
}

// checkResults are a commit's checks by name: the newest check run of each name and the newest status of
// each context. Callers hold s.mu.
func (s *Server) checkResults(rs *repoState, sha string) map[string]checkResult {
	out := map[string]checkResult{}
	newest := map[string]int64{}
	for _, cr := range s.checkRuns {
		if cr.repo != rs || cr.HeadSHA != sha || cr.ID < newest[cr.Name] {
			continue
		}
		newest[cr.Name] = cr.ID
		out[cr.Name] = checkResult{done: cr.Status == "completed", conclusion: cr.Conclusion}
	}
	for _, st := range rs.statuses {
		if st.SHA != sha {
			continue
		}
		// Statuses are kept oldest first: the last one of a context is its state.
		switch st.State {
		case "pending":
			out[st.Context] = checkResult{}
		default:
			out[st.Context] = checkResult{done: true, conclusion: st.State}
		}
	}
	return out
}

// Mergeability is what GitHub would answer about a pull request now, for tests that assert on it
// without reading it through the API (which would count as the read that starts the computation).
type Mergeability struct {
	Known     bool
	Mergeable bool
	State     string
	Conflicts []string // the paths the test merge conflicts in
}

// PullMergeability computes a pull request's mergeability (as a read through the API after GitHub
// finished computing would answer it).
func (s *Server) PullMergeability(owner, repo string, number int) Mergeability {
	rs := s.repo(owner, repo)
	if _, ok := s.PullRequest(owner, repo, number); !ok {
		s.fatalf("mergeability: no pull request %s/%s#%d", owner, repo, number)
		return Mergeability{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rs.issues[number]
	head, base := s.pullShas(s.ctx, rs, is)
	mergeable, state, _ := s.mergeability(s.ctx, rs, is, head, base)
	if state == "unknown" && is.pr.merge != nil {
		mergeable, state, _ = s.mergeability(s.ctx, rs, is, head, base)
	}
	m := Mergeability{State: state}
	if b, ok := mergeable.(bool); ok {
		m.Known, m.Mergeable = true, b
	}
	if is.pr.merge != nil {
		m.Conflicts = slices.Clone(is.pr.merge.files)
	}
	return m
}
