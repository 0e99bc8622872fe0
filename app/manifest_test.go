package app

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestManifestIsGenerated: the manifest people register by hand (deploy/) is the one setup posts.
func TestManifestIsGenerated(t *testing.T) {
	deployed, err := os.ReadFile("../deploy/github-app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(deployed, manifestJSON) {
		t.Error("deploy/github-app-manifest.json differs from app/manifest.json: run go generate ./app/")
	}
}

// subscribableEvents are the webhook events a GitHub App chooses (ping and the installation events
// come to every App unasked).
var subscribableEvents = []string{
	"check_run", "check_suite", "commit_comment", "create", "delete", "deployment", "deployment_status",
	"discussion", "discussion_comment", "fork", "issue_comment", "issues", "label", "member", "merge_group",
	"milestone", "public", "pull_request", "pull_request_review", "pull_request_review_comment",
	"pull_request_review_thread", "push", "release", "repository", "status", "workflow_dispatch",
	"workflow_job", "workflow_run",
}

// eventPermission is the permission GitHub requires of an App before it may subscribe to an event.
var eventPermission = map[string]string{
	"check_run": "checks", "check_suite": "checks", "issue_comment": "issues", "issues": "issues",
	"pull_request": "pull_requests", "pull_request_review": "pull_requests",
	"pull_request_review_comment": "pull_requests", "pull_request_review_thread": "pull_requests",
	"push": "contents", "release": "contents", "create": "contents", "delete": "contents",
	"workflow_run": "actions", "workflow_job": "actions", "status": "statuses",
}

// TestManifestMatchesTheHandlers: the manifest subscribes to exactly the events the webhook server
// routes (no event a handler waits for is missing, none is delivered only to be dropped), and asks
// for each event's permission and for what the jobs do (write contents, pull requests, issues and
// checks; read the pull request's CI: Actions' runs and logs, commit statuses), nothing more.
func TestManifestMatchesTheHandlers(t *testing.T) {
	m, err := AppManifest()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	var routed []string
	for _, event := range subscribableEvents {
		res := h.send(event, map[string]any{"action": "created"})
		if !strings.Contains(res.Reason, "is not handled") {
			routed = append(routed, event)
		}
	}
	events := slices.Sorted(slices.Values(m.DefaultEvents))
	if !slices.Equal(events, routed) {
		t.Errorf("manifest events = %v; the handlers route %v", events, routed)
	}
	for _, e := range m.DefaultEvents {
		perm := eventPermission[e]
		if perm == "" || m.DefaultPermissions[perm] == "" {
			t.Errorf("event %s needs the %q permission, which the manifest does not ask for", e, perm)
		}
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write",
		"actions": "read", "statuses": "read", "metadata": "read"}
	if len(m.DefaultPermissions) != len(want) {
		t.Errorf("manifest permissions = %v; want exactly %v", m.DefaultPermissions, want)
	}
	for p, level := range want {
		if m.DefaultPermissions[p] != level {
			t.Errorf("permission %s = %q; want %q", p, m.DefaultPermissions[p], level)
		}
	}
	if m.Public {
		t.Error("the manifest makes a public App: anyone could install it and spend the operator's agents")
	}
}
