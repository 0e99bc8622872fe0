package githubtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// GraphQL supports only the mutations that have no REST equivalent and that Akira needs:
// markPullRequestReadyForReview, convertPullRequestToDraft and createCommitOnBranch (graphqlcommit.go). The pull request id is read from the variables
// (any variable holding a known node id) or from a literal pullRequestId: "..." in the query.

var pullRequestIDLiteral = regexp.MustCompile(`pullRequestId\s*:\s*"([^"]+)"`)

type graphQLError struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
}

func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	tok := s.tokenFor(r)
	if tok == nil {
		writeJSON(w, http.StatusUnauthorized, obj{"message": "Bad credentials", "documentation_url": "https://docs.github.com/graphql"})
		return
	}
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, obj{"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"})
		return
	}
	if strings.Contains(req.Query, "createCommitOnBranch") {
		defer s.flushOutbox()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.createCommitOnBranch(w, r, tok, req.Variables)
		return
	}
	var mutation string
	var draft bool
	switch {
	case strings.Contains(req.Query, "markPullRequestReadyForReview"):
		mutation, draft = "markPullRequestReadyForReview", false
	case strings.Contains(req.Query, "convertPullRequestToDraft"):
		mutation, draft = "convertPullRequestToDraft", true
	default:
		writeJSON(w, http.StatusOK, obj{"errors": []graphQLError{{
			Message: "githubtest supports only the markPullRequestReadyForReview, convertPullRequestToDraft and createCommitOnBranch mutations",
		}}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.findNodeID(req.Query, req.Variables)
	ref, ok := s.nodes[id]
	if !ok || !s.tokenCovers(tok, ref.repo) {
		writeJSON(w, http.StatusOK, obj{"data": obj{mutation: nil}, "errors": []graphQLError{{
			Type: "NOT_FOUND", Message: "Could not resolve to a node with the global id of '" + id + "'",
		}}})
		return
	}
	is := ref.repo.issues[ref.number]
	is.pr.draft = draft
	is.updated = now()
	writeJSON(w, http.StatusOK, obj{"data": obj{mutation: obj{"pullRequest": obj{
		"id": is.nodeID, "number": is.number, "isDraft": is.pr.draft,
	}}}})
}

// findNodeID looks for a pull request node id in the variables (nested objects included), then in the query.
// Callers hold s.mu.
func (s *Server) findNodeID(query string, vars map[string]any) string {
	var found string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if _, ok := s.nodes[v]; ok && found == "" {
				found = v
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(vars)
	if found != "" {
		return found
	}
	if m := pullRequestIDLiteral.FindStringSubmatch(query); m != nil {
		return m[1]
	}
	if in, ok := vars["input"].(map[string]any); ok {
		if id, ok := in["pullRequestId"].(string); ok {
			return id
		}
	}
	if id, ok := vars["pullRequestId"].(string); ok {
		return id
	}
	return ""
}
