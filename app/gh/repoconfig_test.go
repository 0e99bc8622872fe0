package gh_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/akira-bot/akira/app/gh"
	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/templates"
)

// loadRepoConfig is how the intake and the workers read a repository's configuration: the one loader,
// over the real client's contents API, from the default branch.
func loadRepoConfig(ctx context.Context, c *gh.Client, validate ...func(config.Repo) error) (config.Repo, error) {
	rc, _, err := config.LoadRepo(ctx, flow.DefaultBranchFiles(c, owner, repo, "main"), validate...)
	return rc, err
}

func TestLoadRepoConfig(t *testing.T) {
	ctx := context.Background()

	t.Run("absent gives the defaults", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		rc, err := loadRepoConfig(ctx, e.c)
		if err != nil {
			t.Fatal(err)
		}
		def := config.DefaultRepo()
		if rc.Roadmap != def.Roadmap || rc.BranchPrefix != def.BranchPrefix || !rc.Triggers.Push {
			t.Fatalf("got %+v, want the defaults %+v", rc, def)
		}
	})

	t.Run("present, read from the default branch only", func(t *testing.T) {
		e := newEnv(t, map[string]string{".github/akira.yml": `
roadmap: docs/ROADMAP.md
branch_prefix: bot/
agent: careful
verify: [go vet ./..., go test ./...]
max_attempts: 5
allowlist: ["@alice"]
protected_paths: ["deploy/**"]
triggers: {push: false}
`}, nil)
		// A branch that changes the file must not matter.
		e.srv.PushCommit(owner, repo, githubtest.Push{Branch: "evil", Files: map[string]string{".github/akira.yml": "agent: yolo\n"}})
		rc, err := loadRepoConfig(ctx, e.c)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Roadmap != "docs/ROADMAP.md" || rc.BranchPrefix != "bot/" || rc.Agent != "careful" || rc.MaxAttempts != 5 ||
			len(rc.Verify) != 2 || !rc.Allowed("alice") || rc.Triggers.Push || !slices.Contains(rc.ProtectedPaths, "deploy/**") {
			t.Fatalf("got %+v", rc)
		}
		for _, r := range e.requests("GET", "/contents/") {
			if r.Query.Get("ref") != "main" {
				t.Fatalf("contents read at ref %q, want the default branch", r.Query.Get("ref"))
			}
		}
	})

	t.Run("yaml extension", func(t *testing.T) {
		e := newEnv(t, map[string]string{".github/akira.yaml": "max_attempts: 2\n"}, nil)
		rc, err := loadRepoConfig(ctx, e.c)
		if err != nil || rc.MaxAttempts != 2 {
			t.Fatalf("got %+v, %v", rc, err)
		}
	})

	tests := []struct {
		name, file string
		validate   func(config.Repo) error
		wantKey    string
	}{
		{"unknown key", "roadmap: R.md\nagnet: fast\n", nil, `"agnet"`},
		{"bad value", "max_attempts: 40\n", nil, "max_attempts"},
		{"bad type", "verify: {a: b}\n", nil, "line 1"},
		{"agent the operator did not define", "agent: yolo\n",
			config.Operator{Agents: map[string]config.AgentProfile{"careful": {Kind: "exec", Command: "x"}}}.ValidateRepo, "agent"},
	}
	for _, tt := range tests {
		t.Run("invalid: "+tt.name, func(t *testing.T) {
			e := newEnv(t, map[string]string{".github/akira.yml": tt.file}, nil)
			var validators []func(config.Repo) error
			if tt.validate != nil {
				validators = append(validators, tt.validate)
			}
			_, err := loadRepoConfig(ctx, e.c, validators...)
			var ce *config.RepoError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *config.RepoError", err)
			}
			if ce.Path != ".github/akira.yml" || len(ce.Problems) == 0 || !strings.Contains(strings.Join(ce.Problems, "\n"), tt.wantKey) {
				t.Fatalf("ConfigError %+v does not name %s", ce, tt.wantKey)
			}
			for _, p := range ce.Problems {
				if strings.HasPrefix(p, ".github/") {
					t.Errorf("problem %q repeats the file name", p)
				}
			}
			// What the user sees.
			out, err := templates.Render("config_error", templates.ConfigError{Path: ce.Path, Ref: "main", Problems: ce.Problems,
				Keys: config.RepoKeys(), Action: "start the run"})
			if err != nil || !strings.Contains(out, tt.wantKey) {
				t.Fatalf("rendered %q, %v", out, err)
			}
		})
	}
}

func TestRepoConfigKeys(t *testing.T) {
	got := strings.Join(config.RepoKeys(), " ")
	for _, k := range []string{"roadmap", "specs", "branch_prefix", "agent", "verify", "max_attempts", "allowlist", "protected_paths", "triggers.push", "triggers.issue_comment", "triggers.pull_request"} {
		if !strings.Contains(" "+got+" ", " "+k+" ") {
			t.Errorf("RepoKeys() = %q lacks %q", got, k)
		}
	}
}
