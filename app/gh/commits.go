package gh

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/runner/workspace"
)

// Commits that GitHub signs, the compare API and a branch's signature rules: what a run needs when its
// base moves or its base's rules require signed commits.

// SignedCommits makes a repository's checkpoints through GitHub's API, which signs them. It implements
// workspace.CommitAPI.
type SignedCommits struct {
	c           *Client
	owner, repo string
}

// SignedCommits returns the API committer of a repository.
func (c *Client) SignedCommits(owner, repo string) *SignedCommits {
	return &SignedCommits{c: c, owner: owner, repo: repo}
}

var _ workspace.CommitAPI = (*SignedCommits)(nil)

// CommitAPI implements ports.SignedCommits: the repository's API committer, as the engine takes it.
func (c *Client) CommitAPI(owner, repo string) workspace.CommitAPI {
	return c.SignedCommits(owner, repo)
}

// maxGraphQLCommitBytes keeps a createCommitOnBranch request well under what GitHub accepts in one
// GraphQL call; a larger checkpoint goes through the Git database one blob at a time.
const maxGraphQLCommitBytes = 8 << 20

// CreateCommit makes the commit with GraphQL's createCommitOnBranch when it can say everything the
// commit holds (one parent; regular files that stay regular files; at least one change), else with the Git database API
// (blobs, a tree over the parent's, the commit, then the ref), which checks the tree GitHub built
// before the branch moves. A branch that moved is workspace.ErrPushRejected.
func (s *SignedCommits) CreateCommit(ctx context.Context, c workspace.APICommit) (string, error) {
	if len(c.Parents) == 0 {
		return "", errors.New("gh: create commit: no parent")
	}
	if graphQLFits(c) {
		return s.createCommitOnBranch(ctx, c)
	}
	return s.createCommitGitDatabase(ctx, c)
}

func graphQLFits(c workspace.APICommit) bool {
	// createCommitOnBranch is not documented to take a commit without file changes (the run's start
	// commit): that one goes through the Git database, which is.
	if len(c.Parents) != 1 || len(c.Changes) == 0 {
		return false
	}
	size := 0
	for _, fc := range c.Changes {
		if fc.Delete {
			continue
		}
		// createCommitOnBranch writes files as 100644 and keeps an existing file's mode: anything
		// else (an executable bit gained or lost, a symlink, a submodule) needs a tree entry.
		if fc.Mode != "100644" || (fc.OldMode != "" && fc.OldMode != "100644") {
			return false
		}
		size += len(fc.Content)
	}
	return size*4/3 < maxGraphQLCommitBytes
}

func (s *SignedCommits) createCommitOnBranch(ctx context.Context, c workspace.APICommit) (string, error) {
	if c.NewBranch {
		if err := s.c.CreateRef(ctx, s.owner, s.repo, "heads/"+c.Branch, c.Parents[0]); err != nil {
			return "", fmt.Errorf("gh: create commit: %w", err)
		}
	}
	additions, deletions := []map[string]string{}, []map[string]string{}
	for _, fc := range c.Changes {
		if fc.Delete {
			deletions = append(deletions, map[string]string{"path": fc.Path})
			continue
		}
		additions = append(additions, map[string]string{"path": fc.Path, "contents": base64.StdEncoding.EncodeToString(fc.Content)})
	}
	headline, body, _ := strings.Cut(strings.TrimRight(c.Message, "\n"), "\n")
	input := map[string]any{
		"branch":          map[string]string{"repositoryNameWithOwner": s.owner + "/" + s.repo, "branchName": c.Branch},
		"message":         map[string]string{"headline": headline, "body": strings.TrimLeft(body, "\n")},
		"fileChanges":     map[string]any{"additions": additions, "deletions": deletions},
		"expectedHeadOid": c.Parents[0],
	}
	const mutation = `mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }`
	var out struct {
		Data struct {
			Create *struct {
				Commit struct {
					OID string `json:"oid"`
				} `json:"commit"`
			} `json:"createCommitOnBranch"`
		} `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := s.c.graphQL(ctx, mutation, map[string]any{"input": input}, &out); err != nil {
		return "", fmt.Errorf("gh: create commit on %s: %w", c.Branch, err)
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		stale := false
		for i, e := range out.Errors {
			msgs[i] = e.Message
			stale = stale || e.Type == "STALE_DATA"
		}
		err := fmt.Errorf("gh: create commit on %s: %s", c.Branch, strings.Join(msgs, "; "))
		if stale {
			return "", fmt.Errorf("%w: %w", err, workspace.ErrPushRejected)
		}
		return "", err
	}
	if out.Data.Create == nil || out.Data.Create.Commit.OID == "" {
		return "", fmt.Errorf("gh: create commit on %s: GitHub returned no commit", c.Branch)
	}
	return out.Data.Create.Commit.OID, nil
}

func (s *SignedCommits) createCommitGitDatabase(ctx context.Context, c workspace.APICommit) (string, error) {
	gc := s.c.gh.Git
	entries := make([]*github.TreeEntry, 0, len(c.Changes))
	for _, fc := range c.Changes {
		e := &github.TreeEntry{Path: github.String(fc.Path), Mode: github.String(fc.Mode), Type: github.String("blob")}
		switch {
		case fc.Delete:
			// go-github sends "sha": null for an entry with neither sha nor content: a deletion.
		case fc.Mode == "160000":
			e.Type, e.SHA = github.String("commit"), github.String(fc.SHA)
		case utf8.Valid(fc.Content) && !strings.ContainsRune(string(fc.Content), 0):
			e.Content = github.String(string(fc.Content))
		default:
			blob, _, err := gc.CreateBlob(ctx, s.owner, s.repo, &github.Blob{
				Content: github.String(base64.StdEncoding.EncodeToString(fc.Content)), Encoding: github.String("base64")})
			if err != nil {
				return "", apiErr("create blob for "+fc.Path, err)
			}
			e.SHA = blob.SHA
		}
		entries = append(entries, e)
	}
	// A commit that changes no file (the run's start commit) keeps its parent's tree: "create a
	// tree" takes at least one entry, "create a commit" any tree.
	tree := &github.Tree{SHA: github.String(c.BaseTree)}
	if len(entries) > 0 {
		var err error
		if tree, _, err = gc.CreateTree(ctx, s.owner, s.repo, c.BaseTree, entries); err != nil {
			return "", apiErr("create tree", err)
		}
	}
	if c.Tree != "" && tree.GetSHA() != c.Tree {
		return "", fmt.Errorf("gh: create commit on %s: GitHub's tree %s is not the checkpoint's %s: %w", c.Branch, tree.GetSHA(), c.Tree, workspace.ErrAPICommitMismatch)
	}
	parents := make([]*github.Commit, len(c.Parents))
	for i, p := range c.Parents {
		parents[i] = &github.Commit{SHA: github.String(p)}
	}
	// No author and no committer: GitHub then signs the commit as the App's.
	commit, _, err := gc.CreateCommit(ctx, s.owner, s.repo, &github.Commit{Message: github.String(c.Message), Tree: tree, Parents: parents}, nil)
	if err != nil {
		return "", apiErr("create commit", err)
	}
	if c.NewBranch {
		if err := s.c.CreateRef(ctx, s.owner, s.repo, "heads/"+c.Branch, commit.GetSHA()); err != nil {
			return "", fmt.Errorf("gh: create commit: %w", err)
		}
		return commit.GetSHA(), nil
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + c.Branch), Object: &github.GitObject{SHA: commit.SHA}}
	if _, _, err := gc.UpdateRef(ctx, s.owner, s.repo, ref, false); err != nil {
		if StatusOf(err) == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "fast forward") {
			return "", fmt.Errorf("gh: update %s: %w: %w", c.Branch, workspace.ErrPushRejected, err)
		}
		return "", apiErr("update "+c.Branch, err)
	}
	return commit.GetSHA(), nil
}

// SignaturesRequired reports whether a branch accepts only signed commits: an active ruleset's
// required_signatures rule, or branch protection's required signatures. Branch protection needs the
// administration permission to read; when GitHub refuses it the rulesets still count, and only when
// neither answers is the error returned.
func (c *Client) SignaturesRequired(ctx context.Context, owner, repo, branch string) (bool, error) {
	req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/rules/branches/%s?per_page=100", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(branch)), nil)
	if err != nil {
		return false, fmt.Errorf("gh: rules of %s: %w", branch, err)
	}
	var rules []struct {
		Type string `json:"type"`
	}
	_, rerr := c.gh.Do(ctx, req, &rules)
	for _, r := range rules {
		if rerr == nil && r.Type == "required_signatures" {
			return true, nil
		}
	}
	sig, _, perr := c.gh.Repositories.GetSignaturesProtectedBranch(ctx, owner, repo, branch)
	switch {
	case perr == nil:
		return sig.GetEnabled(), nil
	case StatusOf(perr) == http.StatusNotFound:
		perr = nil // no protection: nothing required by it
	}
	if rerr != nil && perr != nil {
		return false, errors.Join(apiErr("rules of "+branch, rerr), apiErr("signature protection of "+branch, perr))
	}
	return false, nil
}

// BaseComparison is how a run's branch stands against its base.
type BaseComparison struct {
	// Status is GitHub's: identical, ahead, behind or diverged.
	Status            string
	AheadBy, BehindBy int
	// MergeBase is the newest commit both share; BaseHead the base's head.
	MergeBase, BaseHead string
}

// Behind says the base has commits the branch lacks.
func (b BaseComparison) Behind() bool { return b.BehindBy > 0 }

// CompareWithBase compares head (a branch, or "owner:branch" of a fork) with base through the
// compare API.
func (c *Client) CompareWithBase(ctx context.Context, owner, repo, base, head string) (BaseComparison, error) {
	cmp, _, err := c.gh.Repositories.CompareCommits(ctx, owner, repo, base, head, &github.ListOptions{PerPage: 1})
	if err != nil {
		return BaseComparison{}, apiErr("compare "+base+"..."+head, err)
	}
	return BaseComparison{Status: cmp.GetStatus(), AheadBy: cmp.GetAheadBy(), BehindBy: cmp.GetBehindBy(),
		MergeBase: cmp.GetMergeBaseCommit().GetSHA(), BaseHead: cmp.GetBaseCommit().GetSHA()}, nil
}

// CompareBase is CompareWithBase in the ports' terms: how a run's branch stands against its base.
func (c *Client) CompareBase(ctx context.Context, owner, repo, base, head string) (ports.BaseComparison, error) {
	cmp, err := c.CompareWithBase(ctx, owner, repo, base, head)
	if err != nil {
		return ports.BaseComparison{}, err
	}
	return ports.BaseComparison{AheadBy: cmp.AheadBy, BehindBy: cmp.BehindBy, BaseHead: cmp.BaseHead}, nil
}

// PullMergeability is what GitHub says of a pull request's merge: Known is false while GitHub still
// computes it (mergeable null, mergeable_state "unknown"; read again later).
type PullMergeability struct {
	Known     bool
	Mergeable bool
	// State is GitHub's mergeable_state: clean, dirty (conflicts), behind, blocked, unstable, draft,
	// has_hooks or unknown.
	State   string
	HeadSHA string
	BaseSHA string
}

// Conflicts says GitHub found the pull request's merge to conflict.
func (m PullMergeability) Conflicts() bool { return m.Known && (!m.Mergeable || m.State == "dirty") }

// Mergeability reads a pull request's mergeable and mergeable_state.
func (c *Client) Mergeability(ctx context.Context, owner, repo string, number int) (PullMergeability, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return PullMergeability{}, apiErr("get pull request", err)
	}
	m := PullMergeability{State: p.GetMergeableState(), HeadSHA: p.GetHead().GetSHA(), BaseSHA: p.GetBase().GetSHA()}
	if p.Mergeable != nil {
		m.Known, m.Mergeable = true, *p.Mergeable
	}
	if m.State == "unknown" {
		m.Known = false
	}
	return m, nil
}
