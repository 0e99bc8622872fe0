package githubtest

import (
	"context"
	"fmt"
	"maps"
	"strings"
)

// GitHub's workflows permission. An App may change files under .github/workflows only with it: GitHub
// refuses a push, and an API commit or ref update, that brings such a change from a token without it
// ("refusing to allow a GitHub App to create or update workflow ... without `workflows` permission").
// An installation holds the permission once the App asks for it and the installation accepts it;
// a token states the installation's permissions as they were when it was minted.

// workflowsPrefix is where GitHub keeps a repository's workflows.
const workflowsPrefix = ".github/workflows/"

// SetWorkflowsPermission grants (or takes away) the workflows permission (write) to the App's
// installation on account: the App asked for it and the installation accepted it. Tokens minted
// afterwards state it and may push workflow changes.
func (s *Server) SetWorkflowsPermission(account string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureInstallation(account).workflows = on
}

// installationPermissions are an installation's permissions as its tokens and its API state them.
func installationPermissions(in *installation) map[string]string {
	p := maps.Clone(appPermissions)
	if in != nil && in.workflows {
		p["workflows"] = "write"
	}
	return p
}

// workflowRefusal is GitHub's refusal of a ref update from old (empty or zero for a new ref) to sha
// that changes a workflow file, when tok's installation did not hold the workflows permission as it
// was minted; "" when the update may go on. Callers hold s.mu.
func (s *Server) workflowRefusal(ctx context.Context, rs *repoState, tok *token, old, sha string) string {
	if tok == nil || tok.workflows {
		return ""
	}
	var changed []string
	if old != "" && old != zeroSHA {
		out, err := s.gitString(ctx, rs.dir, "diff", "--name-only", "--no-renames", old, sha, "--", workflowsPrefix)
		if err != nil {
			return "refusing to allow a GitHub App to create or update workflows without `workflows` permission"
		}
		changed = strings.Fields(out)
	} else {
		// A new ref: what its commits that no other ref holds change, each against its first parent.
		commits, err := s.gitString(ctx, rs.dir, "rev-list", sha, "--not", "--all")
		if err != nil {
			return "refusing to allow a GitHub App to create or update workflows without `workflows` permission"
		}
		for _, c := range strings.Fields(commits) {
			out, _ := s.gitString(ctx, rs.dir, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "--no-renames", c, "--", workflowsPrefix)
			changed = append(changed, strings.Fields(out)...)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return fmt.Sprintf("refusing to allow a GitHub App to create or update workflow `%s` without `workflows` permission", changed[0])
}
