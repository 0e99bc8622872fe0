package config

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLoadRepo(t *testing.T) {
	op := Operator{Agents: map[string]AgentProfile{"careful": {Kind: "exec", Command: "x"}}}
	tests := []struct {
		name     string
		files    map[string]string
		readErr  error
		wantPath string
		check    func(t *testing.T, r Repo)
		// problem is a fragment of the *RepoError's problems; readFails says the read failed instead.
		problem   string
		readFails bool
	}{
		{name: "no file gives the defaults", check: func(t *testing.T, r Repo) {
			if r.Roadmap != DefaultRoadmap || !r.Triggers.Push {
				t.Errorf("repo = %+v", r)
			}
		}},
		{name: ".yml", files: map[string]string{".github/akira.yml": "roadmap: a.md\n"}, wantPath: ".github/akira.yml",
			check: func(t *testing.T, r Repo) {
				if r.Roadmap != "a.md" {
					t.Errorf("roadmap = %q", r.Roadmap)
				}
			}},
		{name: ".yaml", files: map[string]string{".github/akira.yaml": "roadmap: b.md\nagent: careful\n"}, wantPath: ".github/akira.yaml",
			check: func(t *testing.T, r Repo) {
				if r.Roadmap != "b.md" || r.Agent != "careful" {
					t.Errorf("repo = %+v", r)
				}
			}},
		{name: "both: .yml wins", files: map[string]string{".github/akira.yml": "roadmap: a.md\n", ".github/akira.yaml": "roadmap: [\n"},
			wantPath: ".github/akira.yml", check: func(t *testing.T, r Repo) {
				if r.Roadmap != "a.md" {
					t.Errorf("roadmap = %q", r.Roadmap)
				}
			}},
		{name: "bad yaml in .yaml", files: map[string]string{".github/akira.yaml": "roadmap: [\n"}, wantPath: ".github/akira.yaml", problem: "line"},
		{name: "unknown key", files: map[string]string{".github/akira.yml": "agnet: x\n"}, wantPath: ".github/akira.yml", problem: "agnet"},
		{name: "agent the operator does not offer", files: map[string]string{".github/akira.yaml": "agent: yolo\n"},
			wantPath: ".github/akira.yaml", problem: "agent"},
		{name: "read failure", readErr: errors.New("GitHub answered 502"), readFails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var read []string
			reader := func(_ context.Context, path string) ([]byte, bool, error) {
				read = append(read, path)
				if tt.readErr != nil {
					return nil, false, tt.readErr
				}
				data, ok := tt.files[path]
				return []byte(data), ok, nil
			}
			r, path, err := LoadRepo(context.Background(), reader, op.ValidateRepo)
			if path != tt.wantPath {
				t.Errorf("path = %q, want %q (read %v)", path, tt.wantPath, read)
			}
			var re *RepoError
			switch {
			case tt.readFails:
				if err == nil || errors.As(err, &re) || !errors.Is(err, tt.readErr) {
					t.Fatalf("err = %v, want the read failure, not a RepoError", err)
				}
			case tt.problem != "":
				if !errors.As(err, &re) || re.Path != tt.wantPath || !strings.Contains(strings.Join(re.Problems, "\n"), tt.problem) {
					t.Fatalf("err = %#v, want a RepoError for %s naming %q", err, tt.wantPath, tt.problem)
				}
				for _, p := range re.Problems {
					if strings.HasPrefix(p, ".github/") {
						t.Errorf("problem %q repeats the file name", p)
					}
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, r)
			}
		})
	}
}
