package bridge

import (
	"testing"

	"github.com/akira-bot/akira/app"
	"github.com/akira-bot/akira/jobs"
)

func TestWebURL(t *testing.T) {
	tests := []struct{ api, want string }{
		{"https://api.github.com/", "https://github.com"},
		{"https://ghes.example.com/api/v3/", "https://ghes.example.com"},
		{"https://ghes.example.com/api/v3", "https://ghes.example.com"},
		{"http://127.0.0.1:4321/", "http://127.0.0.1:4321"},
	}
	for _, tt := range tests {
		if got := WebURL(tt.api); got != tt.want {
			t.Errorf("WebURL(%q) = %q, want %q", tt.api, got, tt.want)
		}
	}
}

func TestRunPayload(t *testing.T) {
	tests := []struct {
		name string
		req  app.RunRequest
		want jobs.Trigger
		num  int
	}{
		{"comment on an issue", app.RunRequest{Trigger: app.TriggerIssueComment, IssueNumber: 4}, jobs.TriggerIssue, 4},
		{"comment on a pull request", app.RunRequest{Trigger: app.TriggerIssueComment, IssueNumber: 5, PRNumber: 5, Branch: "f"}, jobs.TriggerPullRequest, 5},
		{"pull request", app.RunRequest{Trigger: app.TriggerPullRequest, PRNumber: 6, Branch: "f"}, jobs.TriggerPullRequest, 6},
		{"push", app.RunRequest{Trigger: app.TriggerPush, Branch: "main"}, jobs.TriggerPush, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.DeliveryID, tt.req.InstallationID, tt.req.Owner, tt.req.Repo = "d", 1, "o", "r"
			p := RunPayload(tt.req)
			if p.Trigger != tt.want || p.Number != tt.num {
				t.Fatalf("trigger %s number %d, want %s %d", p.Trigger, p.Number, tt.want, tt.num)
			}
			p.Version = jobs.PayloadVersion
			if err := p.Validate(); err != nil {
				t.Fatalf("converted payload is invalid: %v", err)
			}
			if p.Trigger == jobs.TriggerPush && p.Branch != "" {
				t.Errorf("a push run must not target the pushed branch %q", p.Branch)
			}
		})
	}
}
