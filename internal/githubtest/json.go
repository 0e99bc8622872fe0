package githubtest

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"
)

// Builders of GitHub's response objects. They fill the fields go-github reads plus the identifying URLs; callers
// hold s.mu.

type obj = map[string]any

func nodeID(prefix string, id int64) string {
	return prefix + "kwDO" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) api(format string, args ...any) string {
	return s.ts.URL + "/" + fmt.Sprintf(format, args...)
}

func (s *Server) userJSON(login string) obj {
	u := s.ensureUser(login)
	prefix := "U_"
	if u.typ == "Bot" {
		prefix = "BOT_"
	}
	return obj{
		"login":      u.login,
		"id":         u.id,
		"node_id":    nodeID(prefix, u.id),
		"type":       u.typ,
		"site_admin": false,
		"url":        s.api("users/%s", u.login),
		"html_url":   s.ts.URL + "/" + u.login,
		"avatar_url": s.ts.URL + "/avatars/" + u.login,
	}
}

func (s *Server) repoJSON(rs *repoState) obj {
	visibility := "public"
	if rs.private {
		visibility = "private"
	}
	o := obj{
		"id":             rs.id,
		"node_id":        nodeID("R_", rs.id),
		"name":           rs.name,
		"full_name":      rs.fullName(),
		"owner":          s.userJSON(rs.owner),
		"private":        rs.private,
		"visibility":     visibility,
		"fork":           rs.parent != nil,
		"archived":       false,
		"disabled":       false,
		"default_branch": rs.defaultBranch,
		"html_url":       s.ts.URL + "/" + rs.fullName(),
		"url":            s.api("repos/%s", rs.fullName()),
		"clone_url":      s.CloneURL(rs.owner, rs.name),
		"git_url":        s.CloneURL(rs.owner, rs.name),
		"created_at":     ts(rs.created),
		"updated_at":     ts(rs.created),
	}
	if rs.parent != nil {
		o["parent"] = obj{"id": rs.parent.id, "name": rs.parent.name, "full_name": rs.parent.fullName(),
			"owner": s.userJSON(rs.parent.owner), "default_branch": rs.parent.defaultBranch}
	}
	return o
}

var appPermissions = map[string]string{
	"checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write",
	"actions": "read", "statuses": "read",
}

var appEvents = []string{"check_run", "check_suite", "issue_comment", "issues", "pull_request", "pull_request_review", "pull_request_review_comment", "push", "status", "workflow_run"}

func (s *Server) appJSON() obj {
	return obj{
		"id":           s.appID,
		"slug":         s.appSlug,
		"node_id":      nodeID("A_", s.appID),
		"name":         s.appSlug,
		"owner":        s.userJSON("akira-bot"),
		"description":  "fake GitHub App",
		"external_url": s.ts.URL,
		"html_url":     s.ts.URL + "/apps/" + s.appSlug,
		"created_at":   "2024-01-01T00:00:00Z",
		"updated_at":   "2024-01-01T00:00:00Z",
		"permissions":  appPermissions,
		"events":       appEvents,
	}
}

func (s *Server) installationJSON(in *installation) obj {
	acct := s.userJSON(in.account)
	return obj{
		"id":                   in.id,
		"account":              acct,
		"app_id":               s.appID,
		"app_slug":             s.appSlug,
		"target_id":            acct["id"],
		"target_type":          acct["type"],
		"repository_selection": "selected",
		"permissions":          installationPermissions(in),
		"events":               appEvents,
		"access_tokens_url":    s.api("app/installations/%d/access_tokens", in.id),
		"repositories_url":     s.api("installation/repositories"),
		"html_url":             s.ts.URL + "/settings/installations/" + strconv.FormatInt(in.id, 10),
		"created_at":           ts(in.created),
		"updated_at":           ts(in.created),
		"single_file_name":     nil,
	}
}

func authorAssociation(rs *repoState, login string) string {
	if login == rs.owner {
		return "OWNER"
	}
	if _, role := permissionOf(rs, login); role != "none" && role != "read" {
		return "COLLABORATOR"
	}
	return "NONE"
}

func (s *Server) issueJSON(rs *repoState, is *issue) obj {
	o := obj{
		"id":                 is.id,
		"node_id":            nodeID("I_", is.id),
		"number":             is.number,
		"title":              is.title,
		"body":               is.body,
		"user":               s.userJSON(is.user),
		"state":              is.state,
		"locked":             false,
		"labels":             []any{},
		"assignees":          []any{},
		"comments":           is.commentsN,
		"author_association": authorAssociation(rs, is.user),
		"url":                s.api("repos/%s/issues/%d", rs.fullName(), is.number),
		"html_url":           fmt.Sprintf("%s/%s/issues/%d", s.ts.URL, rs.fullName(), is.number),
		"comments_url":       s.api("repos/%s/issues/%d/comments", rs.fullName(), is.number),
		"repository_url":     s.api("repos/%s", rs.fullName()),
		"created_at":         ts(is.created),
		"updated_at":         ts(is.updated),
		"closed_at":          ts(is.closedAt),
	}
	if is.pr != nil {
		o["draft"] = is.pr.draft
		o["html_url"] = fmt.Sprintf("%s/%s/pull/%d", s.ts.URL, rs.fullName(), is.number)
		o["pull_request"] = obj{
			"url":       s.api("repos/%s/pulls/%d", rs.fullName(), is.number),
			"html_url":  o["html_url"],
			"diff_url":  fmt.Sprintf("%s/%s/pull/%d.diff", s.ts.URL, rs.fullName(), is.number),
			"patch_url": fmt.Sprintf("%s/%s/pull/%d.patch", s.ts.URL, rs.fullName(), is.number),
			"merged_at": nil,
		}
	}
	return o
}

func (s *Server) commentJSON(c *comment) obj {
	rs := c.repo
	reactions := obj{"total_count": len(c.reactions), "url": s.api("repos/%s/issues/comments/%d/reactions", rs.fullName(), c.id)}
	for _, k := range []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"} {
		reactions[k] = 0
	}
	for _, r := range c.reactions {
		reactions[r.Content] = reactions[r.Content].(int) + 1
	}
	htmlKind := "issues"
	if is := rs.issues[c.issueNumber]; is != nil && is.pr != nil {
		htmlKind = "pull"
	}
	return obj{
		"id":                 c.id,
		"node_id":            nodeID("IC_", c.id),
		"body":               c.body,
		"user":               s.userJSON(c.user),
		"author_association": authorAssociation(rs, c.user),
		"created_at":         ts(c.created),
		"updated_at":         ts(c.updated),
		"url":                s.api("repos/%s/issues/comments/%d", rs.fullName(), c.id),
		"html_url":           fmt.Sprintf("%s/%s/%s/%d#issuecomment-%d", s.ts.URL, rs.fullName(), htmlKind, c.issueNumber, c.id),
		"issue_url":          s.api("repos/%s/issues/%d", rs.fullName(), c.issueNumber),
		"reactions":          reactions,
	}
}

func (s *Server) branchJSON(rs *repoState, ref, sha string) obj {
	var repo any = s.repoJSON(rs)
	if rs.deleted.Load() {
		repo = nil // GitHub's answer once a pull request's head repository is deleted
	}
	return obj{
		"label": rs.owner + ":" + ref,
		"ref":   ref,
		"sha":   sha,
		"user":  s.userJSON(rs.owner),
		"repo":  repo,
	}
}

// pullJSON is a pull request as GET …/pulls/{n} answers it, mergeability included (reading it is what
// makes GitHub compute it).
func (s *Server) pullJSON(rs *repoState, is *issue, headSHA, baseSHA string) obj {
	o := s.pullJSONSimple(rs, is, headSHA, baseSHA)
	o["mergeable"], o["mergeable_state"], o["merge_commit_sha"] = s.mergeability(s.ctx, rs, is, headSHA, baseSHA)
	return o
}

// pullJSONSimple is a pull request as lists show it (pull-request-simple): without its mergeability.
func (s *Server) pullJSONSimple(rs *repoState, is *issue, headSHA, baseSHA string) obj {
	p := is.pr
	htmlURL := fmt.Sprintf("%s/%s/pull/%d", s.ts.URL, rs.fullName(), is.number)
	var mergedAt any
	if p.merged {
		mergedAt = ts(is.closedAt)
	}
	return obj{
		"id":                    p.id,
		"node_id":               is.nodeID,
		"number":                is.number,
		"state":                 is.state,
		"locked":                false,
		"title":                 is.title,
		"body":                  is.body,
		"user":                  s.userJSON(is.user),
		"draft":                 p.draft,
		"merged":                p.merged,
		"maintainer_can_modify": p.maintainerCanModify,
		"author_association":    authorAssociation(rs, is.user),
		"labels":                []any{},
		"comments":              is.commentsN,
		"head":                  s.branchJSON(p.headRepo, p.head, headSHA),
		"base":                  s.branchJSON(rs, p.base, baseSHA),
		"url":                   s.api("repos/%s/pulls/%d", rs.fullName(), is.number),
		"html_url":              htmlURL,
		"diff_url":              htmlURL + ".diff",
		"patch_url":             htmlURL + ".patch",
		"issue_url":             s.api("repos/%s/issues/%d", rs.fullName(), is.number),
		"comments_url":          s.api("repos/%s/issues/%d/comments", rs.fullName(), is.number),
		"statuses_url":          s.api("repos/%s/statuses/%s", rs.fullName(), headSHA),
		"created_at":            ts(is.created),
		"updated_at":            ts(is.updated),
		"closed_at":             ts(is.closedAt),
		"merged_at":             mergedAt,
	}
}

func (s *Server) checkRunJSON(c *checkRun) obj {
	rs := c.repo
	var conclusion any
	if c.Conclusion != "" {
		conclusion = c.Conclusion
	}
	var externalID, detailsURL any
	if c.ExternalID != "" {
		externalID = c.ExternalID
	}
	if c.DetailsURL != "" {
		detailsURL = c.DetailsURL
	}
	output := obj{
		"title":             nil,
		"summary":           nil,
		"text":              nil,
		"annotations_count": len(c.Annotations),
		"annotations_url":   s.api("repos/%s/check-runs/%d/annotations", rs.fullName(), c.ID),
	}
	if c.Title != "" {
		output["title"] = c.Title
	}
	if c.Summary != "" {
		output["summary"] = c.Summary
	}
	if c.Text != "" {
		output["text"] = c.Text
	}
	return obj{
		"id":            c.ID,
		"node_id":       nodeID("CR_", c.ID),
		"name":          c.Name,
		"head_sha":      c.HeadSHA,
		"external_id":   externalID,
		"details_url":   detailsURL,
		"status":        c.Status,
		"conclusion":    conclusion,
		"started_at":    ts(c.StartedAt),
		"completed_at":  ts(c.CompletedAt),
		"output":        output,
		"url":           s.api("repos/%s/check-runs/%d", rs.fullName(), c.ID),
		"html_url":      fmt.Sprintf("%s/%s/runs/%d", s.ts.URL, rs.fullName(), c.ID),
		"check_suite":   obj{"id": c.suiteID},
		"app":           s.checkRunAppJSON(c),
		"pull_requests": []any{},
		"deployment":    nil,
	}
}
