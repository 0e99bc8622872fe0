package githubtest

// DeleteRepo deletes a repository, as its owner may at any time: typically a fork whose pull request
// stays open on its parent. The API no longer knows it; its pull requests keep their head commit
// (GitHub keeps refs/pull/<n>/head in the base repository) and show `"head": {"repo": null}`.
func (s *Server) DeleteRepo(owner, name string) {
	gone := s.repo(owner, name)
	type headOf struct {
		base *repoState
		is   *issue
	}
	var heads []headOf
	s.mu.Lock()
	for _, rs := range s.repos {
		for _, is := range rs.issues {
			if is.pr != nil && rs != gone && is.pr.headRepo == gone {
				heads = append(heads, headOf{rs, is})
			}
		}
	}
	s.mu.Unlock()
	for _, h := range heads {
		if _, err := s.pullHead(s.ctx, h.base, gone, h.is.pr.head, h.is.number); err != nil {
			s.fatalf("delete %s/%s: keep the head of pull request #%d: %v", owner, name, h.is.number, err)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.repos, repoKey(owner, name))
	gone.deleted.Store(true)
}
