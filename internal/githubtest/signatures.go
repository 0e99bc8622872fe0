package githubtest

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SignatureRule says where a branch's demand for signed commits comes from.
type SignatureRule string

// Where GitHub keeps a requirement of signed commits: an active repository ruleset's
// required_signatures rule (visible to any App that reads the repository's metadata), or branch
// protection's required signatures (readable only with administration access).
const (
	SignaturesByRuleset    SignatureRule = "ruleset"
	SignaturesByProtection SignatureRule = "protection"
)

// signedRefsFile lists, one per line, the refs whose pushes the pre-receive hook checks.
const signedRefsFile = "githubtest-signed-refs"

// preReceiveHook refuses, as GitHub's rulesets do, a push that brings a branch requiring signatures a
// commit GitHub did not sign. It reads the lists the server keeps beside the repository (receive-pack
// runs hooks in the git directory).
//
// It also refuses, as GitHub does, a push that changes a workflow file from a token without the
// workflows permission (workflows.go): serveGit says which in GITHUBTEST_WORKFLOWS.
const preReceiveHook = `#!/bin/sh
# githubtest: required signatures (see signatures.go) and the workflows permission (workflows.go).
updates=$(cat)
zero=0000000000000000000000000000000000000000
status=0
if [ "$GITHUBTEST_WORKFLOWS" = none ]; then
	while read old new ref; do
		[ -n "$ref" ] && [ "$new" != $zero ] || continue
		if [ "$old" = $zero ]; then
			files=$(for c in $(git rev-list "$new" --not --all); do git diff-tree --no-commit-id --name-only -r --root --no-renames "$c" -- .github/workflows/; done)
		else
			files=$(git diff --name-only --no-renames "$old" "$new" -- .github/workflows/)
		fi
		[ -z "$files" ] && continue
		set -- $files
		printf 'error: refusing to allow a GitHub App to create or update workflow \140%s\140 without \140workflows\140 permission\n' "$1" >&2
		status=1
	done <<EOF
$updates
EOF
	[ $status = 0 ] || exit $status
fi
while read old new ref; do
	[ -n "$ref" ] || continue
	grep -qxF "$ref" ` + signedRefsFile + ` 2>/dev/null || continue
	[ "$new" = 0000000000000000000000000000000000000000 ] && continue
	if [ "$old" = 0000000000000000000000000000000000000000 ]; then
		commits=$(git rev-list "$new" --not --all)
	else
		commits=$(git rev-list "$old..$new")
	fi
	bad=""
	for c in $commits; do
		grep -qxF "$c" ` + signedFile + ` 2>/dev/null || bad="$bad $c"
	done
	[ -z "$bad" ] && continue
	set -- $bad
	echo "error: GH013: Repository rule violations found for $ref." >&2
	echo "Review all repository rules at $GITHUBTEST_RULES_URL?ref=$ref" >&2
	echo "" >&2
	echo "- Commits must have verified signatures." >&2
	echo "  Found $# violation(s):" >&2
	echo "" >&2
	for c in $bad; do echo "  $c" >&2; done
	echo "" >&2
	status=1
done <<EOF
$updates
EOF
exit $status
`

// RequireSignatures makes a branch of a repository accept only commits GitHub signed (rule says
// whether a ruleset or branch protection asks for them; "" lifts the requirement). A push over git that
// brings an unsigned commit is refused with GitHub's GH013 message, an API ref update with its 422, and
// a pull request into the branch with unsigned commits is blocked.
func (s *Server) RequireSignatures(owner, repo, branch string, rule SignatureRule) {
	if rule != "" && rule != SignaturesByRuleset && rule != SignaturesByProtection {
		s.fatalf("require signatures: unknown rule %q", rule)
		return
	}
	rs := s.repo(owner, repo)
	s.mu.Lock()
	if rs.signatures == nil {
		rs.signatures = map[string]SignatureRule{}
	}
	if rule == "" {
		delete(rs.signatures, branch)
	} else {
		rs.signatures[branch] = rule
	}
	err := s.writeSignatureHook(rs)
	s.mu.Unlock()
	if err != nil {
		s.fatalf("require signatures: %v", err)
	}
}

// writeSignatureHook installs the pre-receive hook and the list of refs it guards. Callers hold s.mu.
func (s *Server) writeSignatureHook(rs *repoState) error {
	var refs []string
	for b := range rs.signatures {
		refs = append(refs, "refs/heads/"+b)
	}
	sort.Strings(refs)
	if err := os.WriteFile(filepath.Join(rs.dir, signedRefsFile), []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	hooks := filepath.Join(rs.dir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(hooks, "pre-receive"), []byte(preReceiveHook), 0o755)
}

func (rs *repoState) requiresSignatures(branch string) bool { return rs.signatures[branch] != "" }

// getSignatureProtection is GET …/branches/{branch}/protection/required_signatures. Reading branch
// protection takes administration access, which Akira's App does not ask for: like GitHub for such an
// App, the fake answers 404 unless the test granted it (SetAdministration).
func (s *Server) getSignatureProtection(w http.ResponseWriter, r *http.Request, c *call) {
	branch := r.PathValue("branch")
	if !c.repo.administration {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	if len(c.repo.required[branch]) == 0 && c.repo.signatures[branch] != SignaturesByProtection {
		writeError(w, http.StatusNotFound, "Branch not protected")
		return
	}
	writeJSON(w, http.StatusOK, obj{
		"url":     s.api("repos/%s/branches/%s/protection/required_signatures", c.repo.fullName(), branch),
		"enabled": c.repo.signatures[branch] == SignaturesByProtection,
	})
}

// SetAdministration gives the App read access to a repository's administration (branch protection),
// which GitHub grants only when the App asks for the administration permission.
func (s *Server) SetAdministration(owner, repo string, on bool) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	rs.administration = on
}
