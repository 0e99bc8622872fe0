package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/config"
)

// akira init writes a .github/akira.yml that parses, with the detected setup and verify, and never
// replaces one without --force.
func TestInit(t *testing.T) {
	tests := []struct {
		name        string
		files       map[string]string
		wantSetup   []string
		wantVerify  []string
		wantComment string
	}{
		{"go", map[string]string{"go.mod": "module x\n"}, []string{"go mod download"}, []string{"go test ./..."}, "# Detected from go.mod."},
		{"node", map[string]string{"package.json": `{"scripts":{"test":"jest"}}`, "package-lock.json": "{}"},
			[]string{"npm ci"}, []string{"npm test"}, "# Detected from package.json + package-lock.json."},
		{"python", map[string]string{"requirements.txt": "requests\n"},
			[]string{"python3 -m venv .venv && .venv/bin/pip install -r requirements.txt"}, nil, "# verify:"},
		{"nothing", map[string]string{"README.md": "hi\n"}, nil, nil, "# setup:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, errOut, code := runCmd(t, "init", "--dir", dir)
			if code != 0 {
				t.Fatalf("akira init: exit %d: %s", code, errOut)
			}
			data, err := os.ReadFile(filepath.Join(dir, ".github", "akira.yml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, string(data)) || !strings.Contains(string(data), tt.wantComment) {
				t.Errorf("akira init printed %q and wrote %q, want it to say %q", out, data, tt.wantComment)
			}
			rc, err := config.ParseRepo(data)
			if err != nil {
				t.Fatalf("the written file does not parse: %v\n%s", err, data)
			}
			if strings.Join(rc.Setup.Commands, "|") != strings.Join(tt.wantSetup, "|") || strings.Join(rc.Verify, "|") != strings.Join(tt.wantVerify, "|") {
				t.Errorf("setup %q verify %q, want %q and %q", rc.Setup.Commands, rc.Verify, tt.wantSetup, tt.wantVerify)
			}
		})
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".github", "akira.yml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("verify: [make check]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCmd(t, "init", "--dir", dir)
	if code != 2 || !strings.Contains(errOut, "exists already; use --force") {
		t.Errorf("akira init over a file: exit %d, %q; want 2 and a refusal", code, errOut)
	}
	if data, _ := os.ReadFile(path); string(data) != "verify: [make check]\n" {
		t.Errorf("the existing file changed: %q", data)
	}
	if _, errOut, code := runCmd(t, "init", "--dir", dir, "--force"); code != 0 {
		t.Fatalf("akira init --force: exit %d: %s", code, errOut)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "go mod download") {
		t.Errorf("--force did not replace the file: %q", data)
	}
}
