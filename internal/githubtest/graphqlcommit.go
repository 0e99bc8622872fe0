package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// createCommitOnBranchInput is GitHub's CreateCommitOnBranchInput.
type createCommitOnBranchInput struct {
	Branch *struct {
		RepositoryNameWithOwner string `json:"repositoryNameWithOwner"`
		BranchName              string `json:"branchName"`
		ID                      string `json:"id"`
	} `json:"branch"`
	Message *struct {
		Headline string  `json:"headline"`
		Body     *string `json:"body"`
	} `json:"message"`
	FileChanges *struct {
		Additions []struct {
			Path     string `json:"path"`
			Contents string `json:"contents"`
		} `json:"additions"`
		Deletions []struct {
			Path string `json:"path"`
		} `json:"deletions"`
	} `json:"fileChanges"`
	ExpectedHeadOid  *string `json:"expectedHeadOid"`
	ClientMutationID *string `json:"clientMutationId"`
}

// createCommitOnBranch is GitHub's GraphQL mutation of that name: one commit of file additions
// (base64) and deletions on top of a branch's head, which must be expectedHeadOid, signed by GitHub.
// Callers hold s.mu.
func (s *Server) createCommitOnBranch(w http.ResponseWriter, r *http.Request, tok *token, vars map[string]any) {
	fail := func(typ, msg string) {
		writeJSON(w, http.StatusOK, obj{"data": obj{"createCommitOnBranch": nil}, "errors": []graphQLError{{Type: typ, Message: msg}}})
	}
	raw, err := json.Marshal(vars["input"])
	var in createCommitOnBranchInput
	if err == nil {
		err = json.Unmarshal(raw, &in)
	}
	switch {
	case err != nil || vars["input"] == nil:
		fail("", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value")
		return
	case in.Branch == nil:
		fail("", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for branch (Expected value to not be null)")
		return
	case in.Message == nil || in.Message.Headline == "":
		fail("", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for message.headline (Expected value to not be null)")
		return
	case in.ExpectedHeadOid == nil:
		fail("", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for expectedHeadOid (Expected value to not be null)")
		return
	case in.Branch.RepositoryNameWithOwner == "" || in.Branch.BranchName == "":
		fail("", "githubtest: give branch as repositoryNameWithOwner and branchName")
		return
	}
	owner, name, _ := strings.Cut(in.Branch.RepositoryNameWithOwner, "/")
	rs := s.repos[repoKey(owner, name)]
	if rs == nil || !s.tokenCovers(tok, rs) {
		fail("NOT_FOUND", fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", in.Branch.RepositoryNameWithOwner))
		return
	}
	ctx, branch := r.Context(), strings.TrimPrefix(in.Branch.BranchName, "refs/heads/")
	ref := "refs/heads/" + branch
	head, err := s.gitString(ctx, rs.dir, "rev-parse", "--verify", "--quiet", ref)
	if err != nil || head == "" {
		fail("NOT_FOUND", fmt.Sprintf("A ref named \"%s\" does not exist in %s.", ref, rs.fullName()))
		return
	}
	if *in.ExpectedHeadOid != head {
		fail("STALE_DATA", fmt.Sprintf("Expected branch to point to \"%s\" but it did not. Pull and try again.", *in.ExpectedHeadOid))
		return
	}
	// Modes of the files at the head: an existing file keeps its own (an executable stays one).
	modes := map[string]string{}
	if list, err := s.git(ctx, rs.dir, nil, nil, "ls-tree", "-r", "-z", head); err == nil {
		for _, rec := range strings.Split(string(list), "\x00") {
			if meta, path, ok := strings.Cut(rec, "\t"); ok {
				modes[path] = strings.Fields(meta)[0]
			}
		}
	}
	var entries []treeEntry
	if fc := in.FileChanges; fc != nil {
		for _, d := range fc.Deletions {
			entries = append(entries, treeEntry{Path: d.Path, Mode: "100644", SHA: json.RawMessage("null")})
		}
		for _, a := range fc.Additions {
			data, err := base64.StdEncoding.DecodeString(a.Contents)
			if err != nil {
				fail("", fmt.Sprintf("contents of %s is not valid Base64", a.Path))
				return
			}
			content := string(data)
			mode := "100644"
			if m := modes[strings.Trim(a.Path, "/")]; m == "100755" {
				mode = m
			}
			entries = append(entries, treeEntry{Path: a.Path, Mode: mode, Content: &content})
		}
	}
	baseTree, err := s.gitString(ctx, rs.dir, "rev-parse", head+"^{tree}")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	tree, msg, err := s.buildTree(ctx, rs, baseTree, entries)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if msg != "" {
		fail("UNPROCESSABLE", msg)
		return
	}
	message := in.Message.Headline
	if in.Message.Body != nil && *in.Message.Body != "" {
		message += "\n\n" + *in.Message.Body
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	sha, err := s.signedCommit(ctx, rs, tree, []string{head}, message)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if msg := s.workflowRefusal(ctx, rs, tok, head, sha); msg != "" {
		fail("FORBIDDEN", msg)
		return
	}
	if _, err := s.git(ctx, rs.dir, nil, nil, "update-ref", ref, sha, head); err != nil {
		fail("STALE_DATA", fmt.Sprintf("Expected branch to point to \"%s\" but it did not. Pull and try again.", head))
		return
	}
	s.notePushes(rs, s.BotLogin())
	var clientID any
	if in.ClientMutationID != nil {
		clientID = *in.ClientMutationID
	}
	writeJSON(w, http.StatusOK, obj{"data": obj{"createCommitOnBranch": obj{
		"clientMutationId": clientID,
		"commit": obj{"oid": sha, "url": fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), sha),
			"message": strings.TrimSuffix(message, "\n")},
		"ref": obj{"name": ref},
	}}})
}
