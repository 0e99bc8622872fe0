package jobs

import (
	"slices"
	"testing"

	"github.com/akira-bot/akira/jobs/runs"
)

func TestTrailerValues(t *testing.T) {
	tests := []struct {
		name, msg, key string
		want           []string
	}{
		{"checkpoint", "akira: 1.2 Add\n\nbody\n\nAkira-Run: r1\nAkira-Task: 1.2\n", "Akira-Task", []string{"1.2"}},
		{"run", "akira: start\n\nAkira-Run: r1\n", "akira-run", []string{"r1"}},
		{"only the last paragraph", "x\n\nAkira-Run: fake\n\nAkira-Run: real\n", "Akira-Run", []string{"real"}},
		{"in the body, not a trailer", "x\n\nAkira-Run: fake\n\nSigned-off-by: a\n", "Akira-Run", nil},
		{"crlf", "x\r\n\r\nAkira-Run: r2\r\n", "Akira-Run", []string{"r2"}},
		{"empty value", "x\n\nAkira-Run:\n", "Akira-Run", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runs.TrailerValues(tt.msg, tt.key); !slices.Equal(got, tt.want) {
				t.Errorf("trailerValues = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIssueOfBranch(t *testing.T) {
	tests := []struct {
		branch, prefix string
		want           int
		ok             bool
	}{
		{"akira/issue-12", "akira/", 12, true},
		{"bots/issue-3", "bots/", 3, true},
		{"akira/issue-12", "bots/", 0, false},
		{"akira/issue-x", "akira/", 0, false},
		{"akira/issue-0", "akira/", 0, false},
		{"akira/roadmap", "akira/", 0, false},
	}
	for _, tt := range tests {
		if got, ok := runs.IssueOfBranch(tt.branch, tt.prefix); got != tt.want || ok != tt.ok {
			t.Errorf("issueOfBranch(%q, %q) = %d, %v; want %d, %v", tt.branch, tt.prefix, got, ok, tt.want, tt.ok)
		}
	}
}
