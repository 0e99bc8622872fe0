package sandbox

import "testing"

// TestPolicyShows: a host path is visible in the sandbox under the work tree, the system
// directories and the read-only paths only; /tmp and HOME inside are private, so a host file there
// is not; without a sandbox everything is.
func TestPolicyShows(t *testing.T) {
	box := Policy{Mode: Bubblewrap, WorkTree: "/srv/repo", ReadOnly: []string{"/opt2/tools"}}
	tests := []struct {
		path string
		want bool
	}{
		{"/srv/repo/agent.sh", true},
		{"/srv/repo", true},
		{"/srv/repox/agent.sh", false},
		{"/usr/bin/sh", true},
		{"/etc/passwd", true},
		{"/etc/shadow", false},
		{"/opt2/tools/agent", true},
		{"/tmp/agent.sh", false},
		{Home + "/agent.sh", false},
		{"/home/me/agent.sh", false},
	}
	for _, tt := range tests {
		if got := box.Shows(tt.path); got != tt.want {
			t.Errorf("Shows(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if !(Policy{Mode: None}).Shows("/home/me/agent.sh") {
		t.Error("without a sandbox a path is hidden")
	}
}
