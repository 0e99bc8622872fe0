package config

import (
	"strconv"
	"strings"
	"testing"
)

// TestRepoEgressRangeWithinCeiling: a repository's address range is within the operator's ceiling
// only when the ceiling wholly contains it: a range that merely starts inside the ceiling (10.0.0.0/8
// under 10.0.0.0/16), the same range spelled as IPv4-mapped IPv6, or any port under a ceiling of one
// port is refused, naming the entry; what the ceiling contains is let through, and only that.
func TestRepoEgressRangeWithinCeiling(t *testing.T) {
	op, err := ParseOperator([]byte("sandbox:\n  egress:\n    allow: [go]\n    ceiling: ['10.0.0.0/16', '192.168.7.9:5432']\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		asked   string
		refused bool
		inside  string // an address:port the result must let through
		outside string // one it must not
	}{
		{asked: "10.0.0.0/8", refused: true},
		{asked: "10.0.0.0/15", refused: true},
		{asked: "10.1.0.0/16", refused: true},
		{asked: "0.0.0.0/0", refused: true},
		{asked: "::ffff:10.0.0.0/104", refused: true},
		{asked: "192.168.7.9", refused: true}, // every port, under a ceiling of one
		{asked: "192.168.7.0/24", refused: true},
		{asked: "10.0.0.0/16", inside: "10.0.255.1:443", outside: "10.1.0.1:443"},
		{asked: "10.0.3.0/24", inside: "10.0.3.7:8080", outside: "10.0.4.1:8080"},
		{asked: "10.0.3.7:6379", inside: "10.0.3.7:6379", outside: "10.0.3.7:22"},
		{asked: "192.168.7.9:5432", inside: "192.168.7.9:5432", outside: "192.168.7.9:5433"},
	}
	for _, tt := range tests {
		t.Run(tt.asked, func(t *testing.T) {
			repo := Repo{Network: RepoNetwork{Allow: []string{tt.asked}}}
			a, err := op.RepoEgress(repo)
			verr := op.ValidateRepo(repo)
			if tt.refused {
				want := "network.allow: " + tt.asked + ": not within"
				if err == nil || !strings.Contains(err.Error(), want) || verr == nil || !strings.Contains(verr.Error(), want) {
					t.Errorf("RepoEgress = %v, ValidateRepo = %v; want both to refuse with %q", err, verr, want)
				}
				return
			}
			if err != nil || verr != nil {
				t.Fatalf("RepoEgress = %v, ValidateRepo = %v; want it let through", err, verr)
			}
			for addr, want := range map[string]bool{tt.inside: true, tt.outside: false} {
				host, port, _ := strings.Cut(addr, ":")
				n, err := strconv.Atoi(port)
				if err != nil {
					t.Fatal(err)
				}
				if got := a.Allows(host, n); got != want {
					t.Errorf("Allows(%s) = %v, want %v", addr, got, want)
				}
			}
		})
	}
}
