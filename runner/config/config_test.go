package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRepo(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    func(*Repo)
		wantErr string
	}{
		{name: "empty file gives defaults", yaml: "", want: func(*Repo) {}},
		{name: "all keys", yaml: `
roadmap: docs/ROADMAP.md
specs: ["specs/**"]
branch_prefix: bot/
agent: claude
verify: [go test ./..., make lint]
max_attempts: 5
allowlist: [alice, "@Bob"]
protected_paths: ["deploy/**"]
triggers: {issue_comment: true, push: false, pull_request: false}
`, want: func(r *Repo) {
			r.Roadmap, r.Specs, r.BranchPrefix, r.Agent = "docs/ROADMAP.md", []string{"specs/**"}, "bot/", "claude"
			r.Verify, r.MaxAttempts, r.Allowlist = []string{"go test ./...", "make lint"}, 5, []string{"alice", "@Bob"}
			r.ProtectedPaths, r.ownProtectedPaths = []string{"deploy/**"}, true
			r.Triggers = Triggers{IssueComment: true, Label: DefaultTriggerLabel}
		}},
		{name: "unknown key named with its line", yaml: "roadmap: R.md\nagnet: claude\n", wantErr: `line 2: unknown key "agnet"`},
		{name: "bad value type", yaml: "max_attempts: many\n", wantErr: "line 1"},
		{name: "out of range", yaml: "max_attempts: 50\n", wantErr: "max_attempts: 50 is out of range"},
		{name: "confidence out of range", yaml: "min_confidence: 80\n", wantErr: "min_confidence: 80 is not between 0 and 1"},
		{name: "escaping roadmap", yaml: "roadmap: ../x.md\n", wantErr: "roadmap: \"../x.md\" must be a relative path"},
		{name: "absolute roadmap", yaml: "roadmap: /etc/passwd\n", wantErr: "must be a relative path"},
		{name: "bad branch prefix", yaml: "branch_prefix: 'a b/'\n", wantErr: "branch_prefix"},
		{name: "bad glob", yaml: "specs: ['specs/[']\n", wantErr: "specs: \"specs/[\" is not a valid glob"},
		{name: "not yaml", yaml: "roadmap: [\n", wantErr: ".github/akira.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRepo([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultRepo()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestRepoAllowed(t *testing.T) {
	r := Repo{Allowlist: []string{"alice", "@Bob"}}
	for login, want := range map[string]bool{"alice": true, "ALICE": true, "bob": true, "mallory": false, "": false} {
		if got := r.Allowed(login); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", login, got, want)
		}
	}
}

func TestParseOperator(t *testing.T) {
	op, err := ParseOperator([]byte(`
default_agent: claude
agents:
  claude:
    kind: exec
    command: claude -p --permission-mode acceptEdits
    api: anthropic
    timeout: 30m
  gpt:
    kind: openai
    model: gpt-4.1
    api_key_env: OPENAI_API_KEY
    prices: {gpt-4.1: {input_per_mtok: 2, output_per_mtok: 8}}
max_attempts: 4
`))
	if err != nil {
		t.Fatal(err)
	}
	if op.MaxAttempts != 4 || time.Duration(op.Agents["claude"].Timeout) != 30*time.Minute || op.Agents["gpt"].Prices["gpt-4.1"].OutputPerMTok != 8 {
		t.Fatalf("parsed %+v", op)
	}
	name, p, err := op.Agent("")
	if err != nil || name != "claude" || p.Command == "" {
		t.Fatalf("default agent: %q %+v %v", name, p, err)
	}
	if err := op.ValidateRepo(Repo{Agent: "rogue"}); err == nil || !strings.Contains(err.Error(), `agent "rogue" is not one of the profiles the operator defined (claude, gpt)`) {
		t.Fatalf("ValidateRepo rogue: %v", err)
	}
	if err := op.ValidateRepo(Repo{Agent: "gpt"}); err != nil {
		t.Fatal(err)
	}
}

func TestParseOperatorErrors(t *testing.T) {
	tests := map[string]string{
		"agents:\n  a: {kind: exec}\n":                                   "agents.a: command: required for kind exec",
		"agents:\n  a: {kind: llama}\n":                                  `agents.a: kind: "llama" is not exec`,
		"agents:\n  a: {kind: openai}\n":                                 "agents.a: model: required for kind openai",
		"agents:\n  a: {kind: exec, command: x, timeout: soon}\n":        "not a duration",
		"default_agent: b\nagents:\n  a: {kind: exec, command: x}\n":     `default_agent: "b" is not one of the agents (a)`,
		"max_attempts: 0\nmax_atempts: 3\n":                              `unknown key "max_atempts"`,
		"agents:\n  a: {kind: anthropic, model: m, base_url: ftp://x}\n": "base_url",
		"judge: {kind: exec, model: m}\n":                                `judge: kind: "exec" is not openai or anthropic`,
		"judge: {kind: openai}\n":                                        "judge: model: required",
		"judge: {kind: openai, model: m, min_confidence: 1.5}\n":         "judge: min_confidence: 1.5 is not between 0 and 1",
		"judge: {kind: openai, model: m, min_confidnce: 0.9}\n":          `unknown key "min_confidnce"`,
		"memory: {embeddings: {base_url: http://x}}\n":                   "memory.embeddings: model: required",
		"memory: {embeddings: {model: e, min_similarity: -1}}\n":         "memory.embeddings: min_similarity: -1 is not between 0 and 1",
	}
	for in, want := range tests {
		_, err := ParseOperator([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOperator(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/sub/x.yml", true},
		{".github/workflows/**", ".github/akira.yml", false},
		{"**/tasks.md", "tasks.md", true},
		{"**/tasks.md", "specs/001-x/tasks.md", true},
		{"specs/*.md", "specs/a.md", true},
		{"specs/*.md", "specs/x/a.md", false},
		{"ROADMAP.md", "ROADMAP.md", true},
		{"ROADMAP.md", "docs/ROADMAP.md", false},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.glob, tt.name); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

// The operator files shipped with the project must stay valid as the schema changes.
func TestShippedOperatorFiles(t *testing.T) {
	for _, file := range []string{"../../examples/akira.yaml", "../../deploy/akira.yaml"} {
		op, err := LoadOperator(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, _, err := op.Agent(""); err != nil {
			t.Fatalf("%s: default agent: %v", file, err)
		}
	}
}

func TestRepoSyncAndWorkflows(t *testing.T) {
	tests := []struct {
		yaml          string
		syncOff       bool
		workflows     bool
		ownProtected  bool
		wantErrSubstr string
	}{
		{"", false, false, false, ""},
		{"sync: off\nworkflows: allow\n", true, true, false, ""},
		{"sync: on\nworkflows: refuse\nprotected_paths: ['.github/workflows/**']\n", false, false, true, ""},
		{"sync: later\n", false, false, false, `sync: "later": want on or off`},
		{"workflows: yes\n", false, false, false, `workflows: "yes": want refuse or allow`},
	}
	for _, tt := range tests {
		r, err := ParseRepo([]byte(tt.yaml))
		if tt.wantErrSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
				t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.wantErrSubstr)
			}
			continue
		}
		if err != nil || r.SyncOff() != tt.syncOff || r.AllowsWorkflows() != tt.workflows || r.OwnProtectedPaths() != tt.ownProtected {
			t.Errorf("%q: sync off %v, workflows %v, own protected %v, %v", tt.yaml, r.SyncOff(), r.AllowsWorkflows(), r.OwnProtectedPaths(), err)
		}
	}
}

func TestOperatorCommitsAndWorkflows(t *testing.T) {
	op, err := ParseOperator([]byte("allow_workflows: true\ncommits: github\n"))
	if err != nil || !op.AllowWorkflows || op.Commits != CommitsGitHub {
		t.Fatalf("operator = %+v, %v", op, err)
	}
	if _, err := ParseOperator([]byte("commits: signed\n")); err == nil || !strings.Contains(err.Error(), `commits: "signed": want git or github`) {
		t.Errorf("bad commits: %v", err)
	}
}
