package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/testproc"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		cmd, bases string
	}{
		{"go", map[string]string{"go.mod": "module x\n", "Makefile": "test:\n\tgo test\n"}, "go test ./...", "go.mod"},
		{"npm with tests", map[string]string{"package.json": `{"scripts":{"test":"vitest run"}}`}, "npm test", "package.json"},
		{"npm placeholder is not a test", map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`}, "", ""},
		{"npm without scripts", map[string]string{"package.json": `{"name":"x"}`}, "", ""},
		{"pyproject", map[string]string{"pyproject.toml": "[project]\nname='x'\n"}, "pytest", "pyproject.toml"},
		{"pytest.ini", map[string]string{"pytest.ini": "[pytest]\n"}, "pytest", "pytest.ini"},
		{"cargo", map[string]string{"Cargo.toml": "[package]\n"}, "cargo test", "Cargo.toml"},
		{"make with test target", map[string]string{"Makefile": "build:\n\tcc x.c\ntest: build\n\t./x\n"}, "make test", "Makefile"},
		{"make variable named test is not a target", map[string]string{"Makefile": "test := 1\ntest = 2\nall:\n"}, "", ""},
		{"nothing", map[string]string{"README.md": "hi\n"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			cmd, reason := Detect(dir)
			if cmd != tt.cmd || reason != tt.bases {
				t.Fatalf("Detect = %q (%q), want %q (%q)", cmd, reason, tt.cmd, tt.bases)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"go.mod": "module x\n"})
	empty := t.TempDir()
	tests := []struct {
		name           string
		dir            string
		task, fallback []string
		want           Source
		cmds           string
	}{
		{"task wins", dir, []string{"make lint"}, []string{"true"}, SourceTask, "make lint"},
		{"fallback next", dir, nil, []string{"true", "false"}, SourceConfigured, "true && false"},
		{"detected", dir, nil, nil, SourceDetected, "go test ./..."},
		{"none", empty, nil, nil, SourceNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Choose(tt.dir, tt.task, tt.fallback)
			if p.Source != tt.want || strings.Join(p.Commands, " && ") != tt.cmds {
				t.Fatalf("Choose = %+v", p)
			}
			if d := p.Describe(); d == "" || (p.Source == SourceNone) != strings.HasPrefix(d, "no verification") {
				t.Fatalf("Describe = %q", d)
			}
		})
	}
}

func TestRunResults(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AKIRA_GITHUB_TOKEN", "ghs_verifysecret")
	results, err := Run(context.Background(), dir, []string{
		"echo ok",
		"echo 'x.go:3:1: broken' >&2; exit 4",
		"env",
	}, Options{Env: proc.Environ(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("want every command run even after a failure, got %d results", len(results))
	}
	if !results[0].Passed() || results[0].Output != "ok\n" {
		t.Fatalf("first = %+v", results[0])
	}
	if r := results[1]; r.Passed() || r.ExitCode != 4 || len(r.Annotations) != 1 || r.Annotations[0].Path != "x.go" {
		t.Fatalf("second = %+v", r)
	}
	if strings.Contains(results[2].Output, "ghs_verifysecret") {
		t.Fatal("a secret of Akira's environment reached a verification command")
	}
	if Passed(results) {
		t.Fatal("Passed with a failing command")
	}
}

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	results, err := Run(context.Background(), dir, []string{"sleep 60 & echo $! > pid; wait"},
		Options{Env: proc.Environ(nil), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || !results[0].TimedOut || results[0].Passed() || !strings.Contains(results[0].Output, "verification timeout") {
		t.Fatalf("results = %+v", results)
	}
	testproc.WaitGoneFromFile(t, pidFile)
}

func TestRunContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, t.TempDir(), []string{"true"}, Options{Env: proc.Environ(nil)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestTail(t *testing.T) {
	s := strings.Repeat("line\n", 100) + "last é\n"
	got := Tail(s, 20)
	if !strings.HasPrefix(got, "…\n") || !strings.HasSuffix(got, "last é\n") || len(got) > 30 {
		t.Fatalf("Tail = %q", got)
	}
	if Tail("short", 20) != "short" {
		t.Fatal("short strings are kept whole")
	}
}

// Output that names the work tree by its absolute path (a compiler's error, a test runner's stack)
// reaches prompts, check runs and comments with the worker's directory taken out.
func TestOutputNamesNoWorkerPath(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), dir, []string{`echo "$PWD/div.go:7: integer divide by zero"; echo "in $PWD"; exit 1`}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := res[0].Output
	if strings.Contains(out, dir) {
		t.Errorf("output names the worker's directory %s:\n%s", dir, out)
	}
	if !strings.Contains(out, "div.go:7: integer divide by zero") || !strings.Contains(out, "in .") {
		t.Errorf("output lost what it said:\n%s", out)
	}
	if len(res[0].Annotations) != 1 || res[0].Annotations[0].Path != "div.go" {
		t.Errorf("annotations = %+v; want div.go", res[0].Annotations)
	}
}
