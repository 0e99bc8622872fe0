package config

import (
	"strings"
	"testing"
	"time"
)

func TestCIFor(t *testing.T) {
	tests := []struct {
		name     string
		operator string
		repo     string
		want     CI
		err      string
	}{
		{name: "defaults", want: CI{Watch: CIWatchLast, Timeout: Duration(DefaultCITimeout), Grace: Duration(DefaultCIGrace), MaxFixRounds: 2}},
		{name: "repository settings", repo: "ci:\n  timeout: 10m\n  grace: 30s\n  max_fix_rounds: 3\n  rerun_flaky: true\n",
			want: CI{Watch: CIWatchLast, Timeout: Duration(10 * time.Minute), Grace: Duration(30 * time.Second), MaxFixRounds: 3, RerunFlaky: true}},
		{name: "a repository turns it off", repo: "ci:\n  watch: off\n",
			want: CI{Watch: CIWatchOff, Timeout: Duration(DefaultCITimeout), Grace: Duration(DefaultCIGrace), MaxFixRounds: 2}},
		{name: "the operator's off wins", operator: "ci:\n  watch: off\n", repo: "ci:\n  watch: last\n",
			want: CI{Watch: CIWatchOff, Timeout: Duration(DefaultCITimeout), Grace: Duration(DefaultCIGrace), MaxFixRounds: 2}},
		{name: "a bad watch is named", repo: "ci:\n  watch: always\n", err: `ci.watch: "always"`},
		{name: "too many rounds", repo: "ci:\n  max_fix_rounds: 50\n", err: "ci.max_fix_rounds: 50 is out of range"},
		{name: "an unknown key is named", repo: "ci:\n  wait: 5m\n", err: "wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := ParseOperator([]byte("agents:\n  sh:\n    kind: exec\n    command: sh x\ndefault_agent: sh\n" + tt.operator))
			if err != nil {
				t.Fatal(err)
			}
			repo, err := ParseRepo([]byte(tt.repo))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := op.CIFor(repo); got != tt.want {
				t.Fatalf("CIFor = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := ParseOperator([]byte("agents:\n  sh:\n    kind: exec\n    command: sh x\ndefault_agent: sh\nci:\n  watch: sometimes\n")); err == nil {
		t.Error("the operator's bad watch must be refused")
	}
}
