// Package templates renders the Markdown that Akira posts on GitHub: comments (run summary, escalation,
// refusal, help, status, configuration errors), check-run output and the pull request body.
//
// Every *.md.tmpl file holds exactly one {{define "name"}} named after the file. All files are parsed
// when the package is initialised, so a broken template fails every test of every package that
// imports this one instead of failing silently at run time.
//
// The data types below are plain values (strings, numbers, durations, slices) that the jobs and app
// layers fill; the templates never reach back into the engine.
package templates

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
)

//go:embed *.md.tmpl
var files embed.FS

const suffix = ".md.tmpl"

var set = template.Must(parseAll(files))

// parseAll parses every template file into one set after checking that each file defines exactly one
// template named after the file and nothing outside it.
func parseAll(fsys fs.FS) (*template.Template, error) {
	names, err := fs.Glob(fsys, "*"+suffix)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("templates: no %s files", suffix)
	}
	root := template.New("").Funcs(funcs).Option("missingkey=error")
	for _, file := range names {
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		want := strings.TrimSuffix(file, suffix)
		if err := checkOneDefine(file, want, string(src)); err != nil {
			return nil, err
		}
		if _, err := root.New(file).Parse(string(src)); err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
	}
	return root, nil
}

// checkOneDefine parses one file on its own and checks what it defines.
func checkOneDefine(file, want, src string) error {
	t, err := template.New(file).Funcs(funcs).Parse(src)
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	var defined []string
	for _, d := range t.Templates() {
		if d.Name() == file {
			if d.Tree != nil && !onlySpace(d.Tree.Root) {
				return fmt.Errorf("templates: %s: text outside {{define %q}}", file, want)
			}
			continue
		}
		defined = append(defined, d.Name())
	}
	sort.Strings(defined)
	if len(defined) != 1 || defined[0] != want {
		return fmt.Errorf("templates: %s must define exactly one template named %q, defines %q", file, want, defined)
	}
	return nil
}

func onlySpace(n *parse.ListNode) bool {
	if n == nil {
		return true
	}
	for _, c := range n.Nodes {
		switch c := c.(type) {
		case *parse.TextNode:
			if len(bytes.TrimSpace(c.Text)) != 0 {
				return false
			}
		case *parse.CommentNode:
		default:
			return false
		}
	}
	return true
}

// Render executes the named template ("summary", "escalation", ...) with data.
func Render(name string, data any) (string, error) {
	t := set.Lookup(name)
	if t == nil || strings.HasSuffix(name, suffix) || name == "" {
		return "", fmt.Errorf("templates: no template %q", name)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("templates: render %s: %w", name, err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}

// Fence returns a backtick fence longer than any run of backticks in s (and at least three), so that
// command output can never close the code block it is shown in.
func Fence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
			continue
		}
		run = 0
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Tail returns the last n lines of s and how many lines were left out before them. A trailing newline
// does not count as an empty last line.
func Tail(s string, n int) (string, int) {
	s = strings.TrimRight(s, "\n")
	if s == "" || n <= 0 {
		return "", strings.Count(s, "\n") + boolInt(s != "")
	}
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s, 0
	}
	return strings.Join(lines[len(lines)-n:], "\n"), len(lines) - n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fileBase is used by the tests to map a file to its template name.
func fileBase(file string) string { return strings.TrimSuffix(path.Base(file), suffix) }
