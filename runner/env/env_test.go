package env

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		files       []string
		wantInstall string
		wantReason  string
	}{
		{[]string{"go.mod", "Makefile"}, "go mod download", "go.mod"},
		{[]string{"package.json", "package-lock.json"}, "npm ci", "package.json + package-lock.json"},
		{[]string{"package.json", "pnpm-lock.yaml"}, "pnpm install --frozen-lockfile", "package.json + pnpm-lock.yaml"},
		{[]string{"package.json", "yarn.lock"}, "yarn install --frozen-lockfile", "package.json + yarn.lock"},
		{[]string{"package.json"}, "npm install", "package.json"},
		{[]string{"pyproject.toml", "uv.lock"}, "uv sync --frozen", "pyproject.toml + uv.lock"},
		{[]string{"pyproject.toml", "poetry.lock"}, "poetry install --no-interaction", "pyproject.toml + poetry.lock"},
		{[]string{"requirements.txt"}, "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt", "requirements.txt"},
		{[]string{"Cargo.toml"}, "cargo fetch", "Cargo.toml"},
		{[]string{"Makefile"}, "make", "Makefile"},
		{[]string{"README.md"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.files, ","), func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Detect(dir); got.Install != tt.wantInstall || got.Reason != tt.wantReason {
				t.Errorf("Detect = %+v, want %q from %q", got, tt.wantInstall, tt.wantReason)
			}
		})
	}
}

func TestDetectIgnoresASymlinkedBuildFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if got := Detect(dir); got.Install != "" {
		t.Errorf("Detect = %+v, want nothing for a symlink", got)
	}
}

func TestSetupLogKeepsBothEndsOfALongOutput(t *testing.T) {
	res, err := Setup(context.Background(), t.TempDir(), []string{"echo FIRST; head -c 3000000 /dev/zero | tr '\\0' 'a'; echo; echo LAST"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() != nil {
		t.Fatalf("setup failed: %+v", res.Failed())
	}
	if len(res.Log) > MaxLogBytes+100 || !strings.Contains(res.Log, "FIRST") || !strings.Contains(res.Log, "LAST") || !strings.Contains(res.Log, "bytes not kept") {
		t.Errorf("log of %d bytes: want at most %d with both ends and a note of what was cut", len(res.Log), MaxLogBytes)
	}
}
