package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// PostedManifest is a GitHub App manifest posted to the "new GitHub App" page.
type PostedManifest struct {
	// Org is the organization that will own the App ("" for the person's own account).
	Org      string
	Manifest map[string]any
}

// subscribableEvents are webhook events a GitHub App can subscribe to (installation events are sent
// to every App and cannot be chosen).
var subscribableEvents = []string{
	"branch_protection_rule", "check_run", "check_suite", "commit_comment", "create", "delete", "deployment",
	"deployment_status", "discussion", "discussion_comment", "fork", "gollum", "issue_comment", "issues", "label",
	"member", "merge_group", "milestone", "public", "pull_request", "pull_request_review",
	"pull_request_review_comment", "pull_request_review_thread", "push", "release", "repository", "status",
	"workflow_dispatch", "workflow_job", "workflow_run",
}

// manifestPermissionLevels are the access levels a manifest may ask for.
var manifestPermissionLevels = []string{"read", "write", "admin"}

// newAppFromManifest is the "new GitHub App" page receiving a manifest form. GitHub shows the
// manifest for a person to confirm the name and press "Create GitHub App", then redirects to the
// manifest's redirect_url with a one-time code and the state the form's URL carried; the fake
// takes that press as given and redirects at once. A manifest GitHub would refuse gets its 422
// page instead.
func (s *Server) newAppFromManifest(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &m); err != nil {
		http.Error(w, "Invalid GitHub App configuration: the manifest is not JSON", http.StatusUnprocessableEntity)
		return
	}
	if problem := manifestProblem(m); problem != "" {
		http.Error(w, "Invalid GitHub App configuration: "+problem, http.StatusUnprocessableEntity)
		return
	}
	redirect, err := url.Parse(m["redirect_url"].(string))
	if err != nil {
		http.Error(w, "Invalid GitHub App configuration: redirect_url", http.StatusUnprocessableEntity)
		return
	}
	code := randomHex(10)
	s.mu.Lock()
	s.manifestCodes[code] = true
	s.manifests = append(s.manifests, PostedManifest{Org: r.PathValue("org"), Manifest: m})
	s.mu.Unlock()
	q := redirect.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	redirect.RawQuery = q.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// manifestProblem says what GitHub would refuse in a manifest, or "".
func manifestProblem(m map[string]any) string {
	if u, _ := m["url"].(string); u == "" {
		return "url is required"
	}
	if u, _ := m["redirect_url"].(string); u == "" {
		return "redirect_url is required for the code to come back"
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if active, ok := hook["active"].(bool); !ok || active {
		if u, _ := hook["url"].(string); u == "" {
			return "hook_attributes.url is required for an active webhook"
		}
	}
	perms, _ := m["default_permissions"].(map[string]any)
	for name, level := range perms {
		if l, _ := level.(string); !slices.Contains(manifestPermissionLevels, l) {
			return fmt.Sprintf("default_permissions.%s: %v is not read, write or admin", name, level)
		}
	}
	events, _ := m["default_events"].([]any)
	for _, e := range events {
		if name, _ := e.(string); !slices.Contains(subscribableEvents, name) {
			return fmt.Sprintf("default_events: %v is not an event a GitHub App can subscribe to", e)
		}
	}
	return ""
}

// PostedManifests returns the manifests posted to the "new GitHub App" page, oldest first.
func (s *Server) PostedManifests() []PostedManifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.manifests)
}
