package githubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Push webhooks. With DeliverPushes on, every change of a branch the fake sees (a test's PushCommit,
// a push over git, an API ref update or createCommitOnBranch) is delivered to the app's webhook
// (SetWebhook) as GitHub's push event, built from the repository as it is. Deliveries are synchronous
// and in order: when the call that moved the branch returns, the app has answered the webhook.

// maxPushCommits is how many commits GitHub lists in a push payload at most.
const maxPushCommits = 20

// DeliverPushes turns push webhooks on or off (off by default, so that tests that deliver their own
// pushes see no others).
func (s *Server) DeliverPushes(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushHooks = on
}

// pushDelivery is a push webhook waiting to be sent once the server's lock is released.
type pushDelivery struct {
	payload obj
}

// notePushes compares a repository's branches with what it last saw and queues a push webhook for each
// one that changed. Callers hold s.mu and call flushOutbox once they release it.
func (s *Server) notePushes(rs *repoState, pusher string) {
	heads, err := s.branchHeads(s.ctx, rs)
	if err != nil {
		s.logf("push webhooks: %v", err)
		return
	}
	old := rs.heads
	rs.heads = heads
	if !s.pushHooks || old == nil || rs.installationID == 0 {
		return
	}
	var names []string
	for b := range heads {
		names = append(names, b)
	}
	for b := range old {
		if _, ok := heads[b]; !ok {
			names = append(names, b)
		}
	}
	sort.Strings(names)
	for _, b := range names {
		before, after := old[b], heads[b]
		if before == after {
			continue
		}
		p, err := s.pushPayload(s.ctx, rs, b, before, after, pusher, heads)
		if err != nil {
			s.logf("push webhook for %s: %v", b, err)
			continue
		}
		s.outbox = append(s.outbox, pushDelivery{payload: p})
	}
}

// flushOutbox sends the queued webhooks. Callers do not hold s.mu.
func (s *Server) flushOutbox() {
	s.mu.Lock()
	out := s.outbox
	s.outbox = nil
	s.mu.Unlock()
	for _, d := range out {
		guid := make([]byte, 16)
		_, _ = rand.Read(guid)
		if _, _, err := s.Deliver("push", hex.EncodeToString(guid), d.payload); err != nil {
			s.logf("push webhook: %v", err)
		}
	}
}

// branchHeads maps each branch of a repository to its head.
func (s *Server) branchHeads(ctx context.Context, rs *repoState) (map[string]string, error) {
	out, err := s.gitString(ctx, rs.dir, "for-each-ref", "--format=%(objectname) %(refname:lstrip=2)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	heads := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			heads[name] = sha
		}
	}
	return heads, nil
}

// pushPayload is GitHub's push event for a branch moving from before to after ("" for none). Callers
// hold s.mu.
func (s *Server) pushPayload(ctx context.Context, rs *repoState, branch, before, after, pusher string, heads map[string]string) (obj, error) {
	created, deleted := before == "", after == ""
	b4, af := before, after
	if created {
		b4 = zeroSHA
	}
	if deleted {
		af = zeroSHA
	}
	var revs []string
	switch {
	case deleted:
	case created:
		revs = append(revs, after, "--not")
		for name, sha := range heads {
			if name != branch {
				revs = append(revs, sha)
			}
		}
	default:
		revs = []string{before + ".." + after}
	}
	forced := !created && !deleted && s.notAncestor(ctx, rs, before, after)
	commits := []any{}
	var head any
	if !deleted {
		list := []string{}
		if len(revs) > 0 {
			out, err := s.gitString(ctx, rs.dir, append([]string{"rev-list", "--reverse"}, revs...)...)
			if err != nil {
				return nil, err
			}
			list = strings.Fields(out)
		}
		if len(list) > maxPushCommits {
			list = list[len(list)-maxPushCommits:]
		}
		for _, sha := range list {
			c, err := s.pushCommitJSON(ctx, rs, sha)
			if err != nil {
				return nil, err
			}
			commits = append(commits, c)
		}
		hc, err := s.pushCommitJSON(ctx, rs, after)
		if err != nil {
			return nil, err
		}
		head = hc
	}
	compare := fmt.Sprintf("%s/%s/compare/%s...%s", s.ts.URL, rs.fullName(), short12(b4), short12(af))
	if created {
		compare = fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), after)
	}
	repo := s.repoJSON(rs)
	// A push event's repository has its times as Unix seconds, unlike every other payload.
	repo["created_at"] = rs.created.Unix()
	repo["pushed_at"] = time.Now().Unix()
	repo["master_branch"] = rs.defaultBranch
	u := s.ensureUser(pusher)
	p := obj{
		"ref": "refs/heads/" + branch, "before": b4, "after": af,
		"created": created, "deleted": deleted, "forced": forced, "base_ref": nil, "compare": compare,
		"commits": commits, "head_commit": head, "repository": repo,
		"pusher": obj{"name": u.login, "email": fmt.Sprintf("%d+%s@users.noreply.github.com", u.id, u.login)},
		"sender": s.userJSON(pusher),
	}
	if rs.installationID != 0 {
		p["installation"] = obj{"id": rs.installationID, "node_id": nodeID("MDIz", rs.installationID)}
	}
	return p, nil
}

func short12(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func (s *Server) notAncestor(ctx context.Context, rs *repoState, a, b string) bool {
	_, err := s.git(ctx, rs.dir, nil, nil, "merge-base", "--is-ancestor", a, b)
	return err != nil
}

// pushCommitJSON is a commit as a push payload lists it, with the paths it added, removed and modified.
func (s *Server) pushCommitJSON(ctx context.Context, rs *repoState, sha string) (obj, error) {
	out, err := s.git(ctx, rs.dir, nil, nil, "log", "-1", "-z", "--format=%T%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%cI%x1f%B", sha)
	if err != nil {
		return nil, err
	}
	f := strings.SplitN(strings.TrimSuffix(string(out), "\x00"), "\x1f", 7)
	if len(f) != 7 {
		return nil, fmt.Errorf("log %s: unexpected output", sha)
	}
	diff, err := s.git(ctx, rs.dir, nil, nil, "diff-tree", "-r", "-z", "--no-commit-id", "--name-status", "--no-renames", "--root", sha)
	if err != nil {
		return nil, err
	}
	added, removed, modified := []string{}, []string{}, []string{}
	fields := strings.Split(strings.TrimSuffix(string(diff), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		switch fields[i] {
		case "A":
			added = append(added, fields[i+1])
		case "D":
			removed = append(removed, fields[i+1])
		default:
			modified = append(modified, fields[i+1])
		}
	}
	person := func(name, email string) obj {
		p := obj{"name": name, "email": email}
		if login, ok := strings.CutSuffix(email, "@users.noreply.github.com"); ok {
			_, login, _ = strings.Cut(login, "+")
			p["username"] = login
		}
		return p
	}
	return obj{
		"id": sha, "tree_id": f[0], "distinct": true, "message": strings.TrimRight(f[6], "\n"), "timestamp": f[5],
		"url":       fmt.Sprintf("%s/%s/commit/%s", s.ts.URL, rs.fullName(), sha),
		"author":    person(f[1], f[2]),
		"committer": person(f[3], f[4]),
		"added":     added, "removed": removed, "modified": modified,
	}, nil
}
