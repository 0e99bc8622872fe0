package llm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newToolbox(t *testing.T, dir string, protected ...string) *toolbox {
	t.Helper()
	ws, err := openWorkspace(dir, protected)
	if err != nil {
		t.Fatalf("openWorkspace: %v", err)
	}
	return &toolbox{ws: ws, cmdTimeout: time.Minute, outputCap: DefaultOutputCap, changed: map[string]bool{}}
}

func call(t *testing.T, tb *toolbox, name string, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tb.call(context.Background(), name, string(raw))
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestPathConfinement(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := newRepo(t, map[string]string{
		"docs/readme.md":           "hello\n",
		".github/workflows/ci.yml": "on: push\n",
		".github/CODEOWNERS":       "* @team\n",
	})
	symlink(t, outside, filepath.Join(dir, "out"))
	symlink(t, secret, filepath.Join(dir, "passwd"))
	symlink(t, "../"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "rel-out"))
	symlink(t, ".github/workflows", filepath.Join(dir, "alias"))
	symlink(t, "docs", filepath.Join(dir, "inner"))
	symlink(t, "/nonexistent/akira-test", filepath.Join(dir, "dangling"))
	tb := newToolbox(t, dir, ".github/workflows/**")

	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		wantErr string // empty: allowed
	}{
		{"dot-dot", "read_file", map[string]any{"path": "../x"}, "outside the workspace"},
		{"dot-dot inside a path", "read_file", map[string]any{"path": "docs/../../x"}, "outside the workspace"},
		{"absolute", "read_file", map[string]any{"path": "/etc/passwd"}, "is absolute"},
		{"absolute write", "write_file", map[string]any{"path": "/tmp/akira-escape", "content": "x"}, "is absolute"},
		{"symlinked directory", "read_file", map[string]any{"path": "out/secret.txt"}, "outside the workspace"},
		{"symlinked file", "read_file", map[string]any{"path": "passwd"}, "outside the workspace"},
		{"relative symlink out", "read_file", map[string]any{"path": "rel-out"}, "outside the workspace"},
		{"write through a symlinked directory", "write_file", map[string]any{"path": "out/new.txt", "content": "x"}, "outside the workspace"},
		{"write through a symlinked file", "write_file", map[string]any{"path": "passwd", "content": "owned"}, "outside the workspace"},
		{"edit through a symlinked file", "edit_file", map[string]any{"path": "passwd", "old_string": "top", "new_string": "no"}, "outside the workspace"},
		{"dangling symlink", "write_file", map[string]any{"path": "dangling", "content": "x"}, "cannot be resolved"},
		{"list outside", "list_files", map[string]any{"path": ".."}, "outside the workspace"},
		{"search outside", "search", map[string]any{"pattern": "secret", "path": "out"}, "outside the workspace"},
		{"search absolute", "search", map[string]any{"pattern": "root", "path": "/etc"}, "is absolute"},
		{"empty path", "read_file", map[string]any{"path": ""}, "path is empty"},
		{"symlink inside the workspace", "read_file", map[string]any{"path": "inner/readme.md"}, ""},
		{"protected write", "write_file", map[string]any{"path": ".github/workflows/ci.yml", "content": "on: pull_request_target\n"}, "is protected"},
		{"protected new file", "write_file", map[string]any{"path": ".github/workflows/new.yml", "content": "x"}, "is protected"},
		{"protected edit", "edit_file", map[string]any{"path": ".github/workflows/ci.yml", "old_string": "push", "new_string": "pull_request_target"}, "is protected"},
		{"protected through an alias", "write_file", map[string]any{"path": "alias/evil.yml", "content": "x"}, "is protected"},
		{"protected with a dot-dot detour", "write_file", map[string]any{"path": "docs/../.github/workflows/x.yml", "content": "x"}, "is protected"},
		{"protected, other case", "write_file", map[string]any{"path": ".GitHub/Workflows/x.yml", "content": "x"}, "is protected"},
		{"git metadata", "write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, "inside .git"},
		{"unprotected neighbour", "write_file", map[string]any{"path": ".github/CODEOWNERS", "content": "* @other\n"}, ""},
		{"reading a protected file is fine", "read_file", map[string]any{"path": ".github/workflows/ci.yml"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := call(t, tb, tt.tool, tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("%s: %v", tt.tool, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("%s(%v) = %q, %v; want an error containing %q", tt.tool, tt.args, out, err, tt.wantErr)
			}
			// The model sees paths as it named them, never the machine's layout.
			if strings.Contains(err.Error(), outside) || strings.Contains(err.Error(), dir) {
				t.Errorf("error leaks a real path: %v", err)
			}
		})
	}
	if got := readFile(t, secret); got != "top secret\n" {
		t.Errorf("the file outside was changed: %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files were created outside: %v", entries)
	}
	if got := readFile(t, filepath.Join(dir, ".github/workflows/ci.yml")); got != "on: push\n" {
		t.Errorf("protected file changed: %q", got)
	}
	for _, p := range []string{".github/workflows/new.yml", ".github/workflows/evil.yml", ".git/hooks/pre-commit", ".GitHub"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		wantErr string
		want    string
	}{
		{"unique", map[string]any{"old_string": "b := 2", "new_string": "b := 20"}, "", "a := 1\nb := 20\na := 1\n"},
		{"missing", map[string]any{"old_string": "c := 3", "new_string": "c := 4"}, "not found", ""},
		{"whitespace must match", map[string]any{"old_string": "b :=  2", "new_string": "x"}, "not found", ""},
		{"not unique", map[string]any{"old_string": "a := 1", "new_string": "a := 10"}, "occurs 2 times", ""},
		{"replace_all", map[string]any{"old_string": "a := 1", "new_string": "a := 10", "replace_all": true}, "", "a := 10\nb := 2\na := 10\n"},
		{"empty old_string", map[string]any{"old_string": "", "new_string": "x"}, "old_string is empty", ""},
		{"no change", map[string]any{"old_string": "b := 2", "new_string": "b := 2"}, "are the same", ""},
		{"missing field", map[string]any{"old_string": "b := 2"}, "needs old_string and new_string", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const orig = "a := 1\nb := 2\na := 1\n"
			dir := newRepo(t, map[string]string{"x.go": orig})
			tb := newToolbox(t, dir)
			tt.args["path"] = "x.go"
			_, err := call(t, tb, "edit_file", tt.args)
			got := readFile(t, filepath.Join(dir, "x.go"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got != orig {
					t.Errorf("a failed edit changed the file: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("edit_file: %v", err)
			}
			if got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		tb := newToolbox(t, newRepo(t, map[string]string{"x.go": "x"}))
		if _, err := call(t, tb, "edit_file", map[string]any{"path": "nope.go", "old_string": "a", "new_string": "b"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestWriteFileKeepsModeAndCreatesDirs(t *testing.T) {
	dir := newRepo(t, map[string]string{"run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := newToolbox(t, dir)
	if _, err := call(t, tb, "write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v", fi.Mode())
	}
	if _, err := call(t, tb, "write_file", map[string]any{"path": "a/b/c.txt", "content": "deep"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "a/b/c.txt")); got != "deep" {
		t.Errorf("a/b/c.txt = %q", got)
	}
	if _, err := call(t, tb, "write_file", map[string]any{"path": "a"}); err == nil {
		t.Error("write_file without content succeeded")
	}
}

func TestSearchRespectsGitignore(t *testing.T) {
	dir := newRepo(t, map[string]string{
		".gitignore":       "ignored/\n*.log\n",
		"src/main.go":      "package main // NEEDLE\n",
		"src/other.go":     "package main\n",
		"docs/guide.md":    "needle in lower case\n",
		"vendor/skip.bin":  "NEEDLE\x00binary",
		"tracked/keep.txt": "NEEDLE tracked\n",
	})
	for name, content := range map[string]string{
		"ignored/x.go":      "NEEDLE ignored dir\n",
		"app.log":           "NEEDLE ignored file\n",
		"new/untracked.txt": "NEEDLE untracked but not ignored\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb := newToolbox(t, dir)
	tests := []struct {
		name       string
		args       map[string]any
		want, deny []string
	}{
		{"all", map[string]any{"pattern": "NEEDLE"},
			[]string{"src/main.go:1: package main // NEEDLE", "tracked/keep.txt:1:", "new/untracked.txt:1:"},
			[]string{"ignored/", "app.log", "skip.bin", "guide.md"}},
		{"ignore case", map[string]any{"pattern": "needle", "ignore_case": true}, []string{"docs/guide.md:1:", "src/main.go:1:"}, []string{"app.log"}},
		{"path", map[string]any{"pattern": "NEEDLE", "path": "src"}, []string{"src/main.go"}, []string{"tracked/", "new/"}},
		{"glob", map[string]any{"pattern": "NEEDLE", "glob": "*.txt"}, []string{"tracked/keep.txt", "new/untracked.txt"}, []string{"src/main.go"}},
		{"no match", map[string]any{"pattern": "HAYSTACK"}, []string{"no matches"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := call(t, tb, "search", tt.args)
			if err != nil {
				t.Fatalf("search: %v", err)
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("result lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.deny {
				if strings.Contains(out, s) {
					t.Errorf("result has %q:\n%s", s, out)
				}
			}
		})
	}
	if _, err := call(t, tb, "search", map[string]any{"pattern": "("}); err == nil || !strings.Contains(err.Error(), "bad regular expression") {
		t.Errorf("bad regexp: err = %v", err)
	}
}

func TestListFiles(t *testing.T) {
	dir := newRepo(t, map[string]string{
		".gitignore":           "build/\n",
		"go.mod":               "module x\n",
		"cmd/app/main.go":      "package main\n",
		"cmd/app/main_test.go": "package main\n",
		"pkg/lib.go":           "package pkg\n",
	})
	os.MkdirAll(filepath.Join(dir, "build"), 0o755)
	os.WriteFile(filepath.Join(dir, "build/out.go"), []byte("x"), 0o644)
	tb := newToolbox(t, dir)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, ".gitignore\ncmd/app/main.go\ncmd/app/main_test.go\ngo.mod\npkg/lib.go\n"},
		{map[string]any{"pattern": "*.go"}, "cmd/app/main.go\ncmd/app/main_test.go\npkg/lib.go\n"},
		{map[string]any{"pattern": "**/*_test.go"}, "cmd/app/main_test.go\n"},
		{map[string]any{"pattern": "cmd/*"}, "no files match"},
		{map[string]any{"pattern": "cmd/**"}, "cmd/app/main.go\ncmd/app/main_test.go\n"},
		{map[string]any{"pattern": "*.go", "path": "cmd"}, "cmd/app/main.go\ncmd/app/main_test.go\n"},
		{map[string]any{"pattern": "app/main.go", "path": "cmd/"}, "cmd/app/main.go\n"},
	}
	for _, tt := range tests {
		out, err := call(t, tb, "list_files", tt.args)
		if err != nil {
			t.Fatalf("list_files(%v): %v", tt.args, err)
		}
		if out != tt.want {
			t.Errorf("list_files(%v) = %q, want %q", tt.args, out, tt.want)
		}
	}
	if _, err := call(t, tb, "list_files", map[string]any{"path": "go.mod"}); err == nil {
		t.Error("listing a file as a directory succeeded")
	}
}

// Without git, listing falls back to walking the directory.
func TestListFilesWithoutGit(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/x.txt"), []byte("x"), 0o644)
	tb := newToolbox(t, dir)
	out, err := call(t, tb, "list_files", map[string]any{})
	if err != nil || out != "a/x.txt\n" {
		t.Fatalf("list_files = %q, %v", out, err)
	}
}

func TestReadFile(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		b.WriteString("line " + string(rune('0'+i%10)) + "\n")
	}
	dir := newRepo(t, map[string]string{"f.txt": b.String(), "empty.txt": "", "bin.dat": "a\x00b"})
	tb := newToolbox(t, dir)
	tests := []struct {
		args    map[string]any
		want    []string
		deny    []string
		wantErr string
	}{
		{args: map[string]any{"path": "f.txt"}, want: []string{"     1\tline 1\n", "    10\tline 0\n"}, deny: []string{"of 10"}},
		{args: map[string]any{"path": "f.txt", "offset": 3, "limit": 2}, want: []string{"     3\tline 3\n     4\tline 4\n", "(lines 3-4 of 10"}, deny: []string{"line 5"}},
		{args: map[string]any{"path": "f.txt", "offset": 11}, wantErr: "past the end"},
		{args: map[string]any{"path": "empty.txt"}, want: []string{"is empty"}},
		{args: map[string]any{"path": "bin.dat"}, want: []string{"binary file"}},
		{args: map[string]any{"path": "missing.txt"}, wantErr: "does not exist"},
		{args: map[string]any{"path": "."}, wantErr: "is a directory"},
	}
	for _, tt := range tests {
		out, err := call(t, tb, "read_file", tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("read_file(%v) err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("read_file(%v): %v", tt.args, err)
		}
		for _, s := range tt.want {
			if !strings.Contains(out, s) {
				t.Errorf("read_file(%v) = %q, lacks %q", tt.args, out, s)
			}
		}
		for _, s := range tt.deny {
			if strings.Contains(out, s) {
				t.Errorf("read_file(%v) = %q, has %q", tt.args, out, s)
			}
		}
	}
}

func TestToolCallErrors(t *testing.T) {
	tb := newToolbox(t, newRepo(t, map[string]string{"a": "a"}))
	for _, tt := range []struct{ name, args, want string }{
		{"no_such_tool", `{}`, "unknown tool"},
		{"read_file", `{"path": 1}`, "invalid arguments for read_file"},
		{"read_file", `not json`, "invalid arguments"},
		{"run_command", `{"command": "  "}`, "command is empty"},
		{"list_files", `{"pattern": "[a-"}`, "bad pattern"},
	} {
		if _, err := tb.call(context.Background(), tt.name, tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s(%s) err = %v, want %q", tt.name, tt.args, err, tt.want)
		}
	}
}

// Commands get a scrubbed environment: a token in Akira's environment is invisible to them, and
// only the operator's passthrough names are added.
func TestRunCommandEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_leaked")
	t.Setenv("OPENAI_API_KEY", "sk-leaked")
	t.Setenv("AKIRA_TEST_PASSTHROUGH", "visible")
	dir := newRepo(t, map[string]string{"a": "a"})
	tb := newToolbox(t, dir)
	tb.passthrough = []string{"AKIRA_TEST_PASSTHROUGH"}
	out, err := call(t, tb, "run_command", map[string]any{"command": `echo "gh=[$GITHUB_TOKEN] oa=[$OPENAI_API_KEY] pass=[$AKIRA_TEST_PASSTHROUGH]"; env; pwd`})
	if err != nil {
		t.Fatalf("run_command: %v", err)
	}
	for _, s := range []string{"exit code: 0", "gh=[] oa=[] pass=[visible]", tb.ws.root + "\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"ghs_leaked", "sk-leaked"} {
		if strings.Contains(out, s) {
			t.Errorf("a secret reached the command:\n%s", out)
		}
	}
}

func TestRunCommandLimits(t *testing.T) {
	dir := newRepo(t, map[string]string{"a": "a"})
	t.Run("operator timeout", func(t *testing.T) {
		tb := newToolbox(t, dir)
		tb.cmdTimeout = 200 * time.Millisecond
		_, err := call(t, tb, "run_command", map[string]any{"command": "echo started; sleep 30"})
		if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || !strings.Contains(err.Error(), "started") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the model may only shorten it", func(t *testing.T) {
		tb := newToolbox(t, dir)
		tb.cmdTimeout = 200 * time.Millisecond
		_, err := call(t, tb, "run_command", map[string]any{"command": "sleep 30", "timeout_seconds": 3600})
		if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
			t.Fatalf("err = %v", err)
		}
		tb.cmdTimeout = time.Hour
		_, err = call(t, tb, "run_command", map[string]any{"command": "sleep 30", "timeout_seconds": 0.2})
		if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		tb := newToolbox(t, dir)
		tb.outputCap = 100
		out, err := call(t, tb, "run_command", map[string]any{"command": "head -c 10000 /dev/zero | tr '\\0' x; echo; echo END"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "[output truncated]") || !strings.Contains(out, "END") || len(out) > 300 {
			t.Errorf("output (%d bytes) = %q", len(out), out)
		}
	})
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/sub/x.yml", true},
		{".github/workflows/**", ".github/CODEOWNERS", false},
		{".github/workflows/**", "x/.github/workflows/ci.yml", false},
		{"*.go", "main.go", true},
		{"*.go", "a/b/main.go", true},
		{"*.go", "main.go.txt", false},
		{"cmd/*", "cmd/x", true},
		{"cmd/*", "cmd/x/y", false},
		{"**/*_test.go", "x_test.go", true},
		{"**/*_test.go", "a/b/x_test.go", true},
		{"docs/", "docs/a/b.md", true},
		{"/go.mod", "go.mod", true},
		{"/go.mod", "sub/go.mod", false},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "a/b/c/y", false},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
