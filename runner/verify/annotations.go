package verify

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Annotation is a problem located in a file of the workspace, as GitHub check runs show them.
type Annotation struct {
	// Path is slash-separated and relative to the workspace root.
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Column    int    `json:"column,omitempty"`
	// Level is "failure", "warning" or "notice".
	Level   string `json:"level"`
	Message string `json:"message"`
}

// MaxAnnotations bounds how many annotations one output yields: past that they are noise.
const MaxAnnotations = 100

var (
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.
	tscParenRE = regexp.MustCompile(`^\s*([^\s():]+)\((\d+),(\d+)\): (error|warning|info|message) (TS\d+: .*)$`)
	// src/a.ts:3:5 - error TS2322: ...
	tscPrettyRE = regexp.MustCompile(`^\s*(\S+):(\d+):(\d+) - (error|warning|info|message) (TS\d+: .*)$`)
	// error[E0308]: mismatched types   /   warning: unused variable: `x`
	rustHeadRE = regexp.MustCompile(`^(error|warning)(\[[A-Z]+\d+\])?: (.+)$`)
	//   --> src/main.rs:2:5
	rustArrowRE = regexp.MustCompile(`^\s*--> (\S+?):(\d+):(\d+)$`)
	//   File "app/x.py", line 3, in f
	pyFrameRE = regexp.MustCompile(`^\s+File "([^"]+)", line (\d+)`)
	// ValueError: boom   /   mod.Error   /   KeyboardInterrupt
	pyExcRE = regexp.MustCompile(`^[A-Za-z_][\w.]*(: .*)?$`)
	// pkg/x.go:12:5: undefined: y   /       x_test.go:12: want 1   /   tests/test_a.py:7: AssertionError
	fileLineRE = regexp.MustCompile(`^(\s*)([^\s:()"'<>|]*[^\s:()"'<>|.]\.[A-Za-z][A-Za-z0-9_]*):(\d+)(?::(\d+))?:\s+(\S.*)$`)
	// FAIL	example.com/m/pkg	0.01s   /   ok  	example.com/m/pkg	(cached)
	goPkgRE = regexp.MustCompile(`^(?:FAIL|ok)\s+(\S+)\s`)
)

// ParseAnnotations finds file/line problems in the output of common tools: Go (compiler, vet, test
// failures), TypeScript, Python tracebacks and pytest, Rust, and anything printing
// `file:line[:col]: message`. Only relative paths are kept: an absolute path cannot be located in the
// repository (use ParseAnnotationsIn to map absolute paths inside the workspace).
func ParseAnnotations(output string) []Annotation {
	return parse("", output)
}

// ParseAnnotationsIn is ParseAnnotations for output produced in the workspace directory dir: absolute
// paths inside dir become relative, and Go test failures (which name only the file) get the package
// directory from the module path in dir/go.mod.
func ParseAnnotationsIn(dir, output string) []Annotation {
	return parse(dir, output)
}

type parser struct {
	dir    string
	module string
	out    []Annotation
	seen   map[Annotation]bool
	// goPending are indexes into out of Go test failures named by file only, waiting for the
	// "FAIL <import path>" line that says which package they belong to.
	goPending []int
}

func parse(dir, output string) []Annotation {
	p := &parser{dir: dir, seen: map[Annotation]bool{}}
	if dir != "" {
		p.module = goModule(filepath.Join(dir, "go.mod"))
	}
	lines := strings.Split(ansiRE.ReplaceAllString(strings.ReplaceAll(output, "\r\n", "\n"), ""), "\n")
	for i := 0; i < len(lines) && len(p.out) < MaxAnnotations; i++ {
		line := lines[i]
		if m := tscParenRE.FindStringSubmatch(line); m != nil {
			p.add(m[1], m[2], m[3], level(m[4]), m[5])
			continue
		}
		if m := tscPrettyRE.FindStringSubmatch(line); m != nil {
			p.add(m[1], m[2], m[3], level(m[4]), m[5])
			continue
		}
		if m := rustHeadRE.FindStringSubmatch(line); m != nil {
			// The location follows the header within a couple of lines.
			for j := i + 1; j < len(lines) && j <= i+3; j++ {
				if a := rustArrowRE.FindStringSubmatch(lines[j]); a != nil {
					p.add(a[1], a[2], a[3], level(m[1]), strings.TrimSpace(m[1]+m[2]+": "+m[3]))
					i = j
					break
				}
			}
			continue
		}
		if strings.HasPrefix(line, "Traceback (most recent call last):") {
			i = p.traceback(lines, i+1)
			continue
		}
		if m := goPkgRE.FindStringSubmatch(line); m != nil {
			p.resolveGo(m[1])
			continue
		}
		if m := fileLineRE.FindStringSubmatch(line); m != nil {
			msg := m[5]
			lvl := "failure"
			switch {
			case strings.HasPrefix(msg, "warning:"):
				lvl, msg = "warning", strings.TrimSpace(strings.TrimPrefix(msg, "warning:"))
			case strings.HasPrefix(msg, "note:") || strings.HasPrefix(msg, "info:"):
				lvl = "notice"
			case strings.HasPrefix(msg, "error:"):
				msg = strings.TrimSpace(strings.TrimPrefix(msg, "error:"))
			}
			n := len(p.out)
			p.add(m[2], m[3], m[4], lvl, msg)
			// An indented bare file name is how `go test` reports a failing assertion.
			if len(p.out) > n && m[1] != "" && !strings.Contains(m[2], "/") && strings.HasSuffix(m[2], ".go") {
				p.goPending = append(p.goPending, n)
			}
		}
	}
	return p.out
}

// traceback reads the frames of a Python traceback starting at lines[i] and annotates the last frame
// in the workspace with the exception line. It returns the index of the last line it consumed.
func (p *parser) traceback(lines []string, i int) int {
	var file, line string
	for ; i < len(lines); i++ {
		l := lines[i]
		if m := pyFrameRE.FindStringSubmatch(l); m != nil {
			if _, ok := p.rel(m[1]); ok {
				file, line = m[1], m[2]
			}
			continue
		}
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || l == "" {
			continue // source lines and carets under a frame
		}
		if file != "" && pyExcRE.MatchString(l) {
			p.add(file, line, "", "failure", strings.TrimSpace(l))
		}
		return i
	}
	return i
}

func (p *parser) resolveGo(importPath string) {
	if p.module != "" && (importPath == p.module || strings.HasPrefix(importPath, p.module+"/")) {
		rel := strings.TrimPrefix(strings.TrimPrefix(importPath, p.module), "/")
		for _, k := range p.goPending {
			old := p.out[k]
			delete(p.seen, old)
			p.out[k].Path = path.Join(rel, old.Path)
			p.seen[p.out[k]] = true
		}
	}
	p.goPending = p.goPending[:0]
}

func (p *parser) add(file, line, col, lvl, msg string) {
	rel, ok := p.rel(file)
	if !ok {
		return
	}
	n, err := strconv.Atoi(line)
	if err != nil || n <= 0 {
		return
	}
	c, _ := strconv.Atoi(col)
	a := Annotation{Path: rel, StartLine: n, EndLine: n, Column: c, Level: lvl, Message: strings.TrimSpace(msg)}
	if a.Message == "" || p.seen[a] {
		return
	}
	p.seen[a] = true
	p.out = append(p.out, a)
}

// rel maps a path from tool output onto a clean workspace-relative path.
func (p *parser) rel(file string) (string, bool) {
	if strings.Contains(file, "://") || strings.HasPrefix(file, "<") {
		return "", false
	}
	if filepath.IsAbs(file) {
		if p.dir == "" {
			return "", false
		}
		r, err := filepath.Rel(p.dir, file)
		if err != nil {
			return "", false
		}
		file = r
	}
	file = path.Clean(filepath.ToSlash(file))
	if file == "." || file == ".." || strings.HasPrefix(file, "../") || strings.HasPrefix(file, "/") {
		return "", false
	}
	return file, true
}

func level(s string) string {
	switch s {
	case "warning":
		return "warning"
	case "info", "message":
		return "notice"
	}
	return "failure"
}

func goModule(gomod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
