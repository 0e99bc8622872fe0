package githubtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// PostComment is a person commenting on an issue or pull request on GitHub: the comment is added as
// login's and the issue_comment webhook GitHub sends for it is delivered to the app (SetWebhook), its
// payload built from the same objects the REST API returns. It returns the comment and the app's
// answer to the delivery.
func (s *Server) PostComment(owner, repo string, number int, login, body string) (Comment, int, []byte, error) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	is := rs.issues[number]
	if is == nil {
		s.mu.Unlock()
		return Comment{}, 0, nil, fmt.Errorf("githubtest: post comment: no issue %s/%s#%d", owner, repo, number)
	}
	c := s.newComment(rs, is, login, body)
	payload := obj{
		"action":     "created",
		"issue":      s.issueJSON(rs, is),
		"comment":    s.commentJSON(c),
		"repository": s.repoJSON(rs),
		"sender":     s.userJSON(login),
	}
	if rs.installationID != 0 {
		payload["installation"] = obj{"id": rs.installationID, "node_id": nodeID("MDIz", rs.installationID)}
	}
	snap := s.commentSnapshot(c)
	s.mu.Unlock()

	guid := make([]byte, 16)
	if _, err := rand.Read(guid); err != nil {
		return snap, 0, nil, fmt.Errorf("githubtest: delivery id: %w", err)
	}
	status, answer, err := s.Deliver("issue_comment", hex.EncodeToString(guid), payload)
	return snap, status, answer, err
}
