package config

import (
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/sandbox"
)

func TestOperatorEgress(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "presets, hosts and addresses", yaml: "sandbox:\n  egress:\n    allow: [go, npm, '*.example.com', '10.0.0.0/8', '127.0.0.1:5000']\n    ceiling: [pypi]\n"},
		{name: "unknown entry", yaml: "sandbox:\n  egress:\n    allow: [gopher!]\n", wantErr: `sandbox.egress.allow: egress: allowlist entry "gopher!"`},
		{name: "bad network", yaml: "sandbox:\n  network: open\n", wantErr: "want allowlist, none or allow"},
		{name: "exec with api", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: anthropic\n"},
		{name: "exec with unknown api", yaml: "agents:\n  c:\n    kind: exec\n    command: x\n    api: gemini\n", wantErr: `agents.c: api: "gemini" is not anthropic or openai`},
		{name: "model unreachable under none", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: anthropic\n    network: none\n",
			wantErr: "agents.c: network: none: the model host api.anthropic.com is unreachable under network none"},
		{name: "key passed without api under allowlist", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    env: [ANTHROPIC_API_KEY]\n",
			wantErr: "agents.c: the model host api.anthropic.com is unreachable under network allowlist"},
		{name: "key passed with the model host allowed", yaml: "sandbox:\n  egress:\n    allow: [api.anthropic.com]\nagents:\n  c:\n    kind: exec\n    command: claude -p\n    env: [ANTHROPIC_API_KEY]\n"},
		{name: "key passed under allow", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    env: [ANTHROPIC_API_KEY]\n    network: allow\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOperator([]byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRepoEgress(t *testing.T) {
	op, err := ParseOperator([]byte("sandbox:\n  egress:\n    allow: [go]\n    ceiling: [npm, '*.corp.example', '10.1.0.0/16']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if op.SandboxConfig(sandbox.Bubblewrap).VerifyNetwork != sandbox.NetAllowlist {
		t.Error("verification must default to network allowlist")
	}
	if (AgentProfile{Kind: "exec"}).AgentNetwork() != sandbox.NetAllowlist || (AgentProfile{Kind: "openai"}).AgentNetwork() != sandbox.NetAllowlist {
		t.Error("agents must default to network allowlist")
	}
	a, err := op.RepoEgress(Repo{Network: RepoNetwork{Allow: []string{"npm", "pkgs.corp.example", "10.1.2.3:8080"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dest := range []struct {
		host string
		port int
		want bool
	}{{"proxy.golang.org", 443, true}, {"registry.npmjs.org", 443, true}, {"pkgs.corp.example", 443, true},
		{"10.1.2.3", 8080, true}, {"10.1.2.3", 22, false}, {"pypi.org", 443, false}} {
		if got := a.Allows(dest.host, dest.port); got != dest.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", dest.host, dest.port, got, dest.want)
		}
	}
	err = op.ValidateRepo(Repo{Network: RepoNetwork{Allow: []string{"pypi", "evil.example", "*.example", "10.0.0.0/8"}}})
	if err == nil || !strings.Contains(err.Error(), "network.allow: pypi, evil.example, *.example, 10.0.0.0/8: not within") {
		t.Fatalf("asking beyond the ceiling: %v", err)
	}
	if a := DefaultOperator().EgressAllow(); !a.Allows("registry.npmjs.org", 443) || !a.Allows("github.com", 443) || a.Allows("example.com", 443) {
		t.Errorf("the default allowlist must be the presets: %v", a.Entries())
	}
}
