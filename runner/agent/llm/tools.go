package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/sandbox"
)

// Bounds on what one tool result puts into the conversation: every byte is paid for on every
// later turn.
const (
	maxToolResultBytes = 64 << 10
	defaultReadLines   = 2000
	maxLineBytes       = 2000
	maxListEntries     = 1000
	maxSearchMatches   = 200
	maxSearchFileBytes = 4 << 20
	maxReadFileBytes   = 32 << 20
)

var toolSpecs = []toolSpec{
	{
		name: "list_files",
		description: "List files in the repository that match a glob pattern, honouring .gitignore. `**` matches any number of " +
			"directories; a pattern without '/' matches file names at any depth (\"*.go\"). Results are paths relative to the repository root.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob, e.g. \"**/*.go\" or \"cmd/*\". Default: all files."},` +
			`"path":{"type":"string","description":"Directory to list, relative to the repository root. Default: the root."}}}`),
	},
	{
		name: "read_file",
		description: "Read a text file. Lines are returned numbered (\"    12\\tcontent\"); the numbers are not part of the file. " +
			"Use offset and limit to page through long files.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the repository root."},` +
			`"offset":{"type":"integer","description":"First line to return, 1-based. Default 1."},` +
			`"limit":{"type":"integer","description":"Maximum number of lines. Default 2000."}},"required":["path"]}`),
	},
	{
		name:        "write_file",
		description: "Create a file, or replace a file's whole content. Parent directories are created. Prefer edit_file for changes to existing files.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the repository root."},` +
			`"content":{"type":"string","description":"The complete new content of the file."}},"required":["path","content"]}`),
	},
	{
		name: "edit_file",
		description: "Replace an exact string in a file. old_string must match the file exactly, whitespace and indentation " +
			"included, and occur exactly once unless replace_all is true; include enough surrounding lines to make it unique.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the repository root."},` +
			`"old_string":{"type":"string","description":"The exact text to replace."},` +
			`"new_string":{"type":"string","description":"The replacement text."},` +
			`"replace_all":{"type":"boolean","description":"Replace every occurrence. Default false."}},"required":["path","old_string","new_string"]}`),
	},
	{
		name: "search",
		description: "Search file contents with a regular expression (Go RE2 syntax), honouring .gitignore. " +
			"Returns matching lines as path:line: text.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Regular expression, e.g. \"func \\\\w+Handler\"."},` +
			`"path":{"type":"string","description":"Directory to search, relative to the repository root. Default: the root."},` +
			`"glob":{"type":"string","description":"Only search files matching this glob, e.g. \"*.go\"."},` +
			`"ignore_case":{"type":"boolean","description":"Case-insensitive match. Default false."}},"required":["pattern"]}`),
	},
	{
		name: "run_command",
		description: "Run a shell command (sh -c) in the repository root, e.g. a build or the task's verify commands. " +
			"The environment holds no credentials and there is a time limit; output is capped. Returns the exit code and combined output.",
		schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The shell command."},` +
			`"timeout_seconds":{"type":"integer","description":"Time limit in seconds; capped by the operator's limit."}},"required":["command"]}`),
	},
}

// toolbox runs the tools of one attempt.
type toolbox struct {
	ws          *workspace
	cmdTimeout  time.Duration
	outputCap   int
	passthrough []string
	// sandbox confines run_command (nil: unconfined, in the backend's own tests).
	sandbox *sandbox.Policy
	// changed records the files written or edited, for the transcript.
	changed map[string]bool
	// exitCode is the exit code of the last run_command, for the timeline; nil when the last call
	// ran none.
	exitCode *int
}

// call runs one tool. A returned error is for the model (the tool failed), never an agent failure.
func (tb *toolbox) call(ctx context.Context, name, args string) (string, error) {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	decode := func(v any) error {
		if err := json.Unmarshal([]byte(args), v); err != nil {
			return fmt.Errorf("invalid arguments for %s: %v", name, err)
		}
		return nil
	}
	switch name {
	case "list_files":
		var a struct{ Pattern, Path string }
		if err := decode(&a); err != nil {
			return "", err
		}
		return tb.listFiles(ctx, a.Pattern, a.Path)
	case "read_file":
		var a struct {
			Path          string
			Offset, Limit int
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return tb.readFile(a.Path, a.Offset, a.Limit)
	case "write_file":
		var a struct {
			Path    string
			Content *string
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		if a.Content == nil {
			return "", errors.New("write_file needs content")
		}
		return tb.writeFile(a.Path, *a.Content)
	case "edit_file":
		var a struct {
			Path       string
			OldString  *string `json:"old_string"`
			NewString  *string `json:"new_string"`
			ReplaceAll bool    `json:"replace_all"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		if a.OldString == nil || a.NewString == nil {
			return "", errors.New("edit_file needs old_string and new_string")
		}
		return tb.editFile(a.Path, *a.OldString, *a.NewString, a.ReplaceAll)
	case "search":
		var a struct {
			Pattern, Path, Glob string
			IgnoreCase          bool `json:"ignore_case"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return tb.search(ctx, a.Pattern, a.Path, a.Glob, a.IgnoreCase)
	case "run_command":
		var a struct {
			Command        string
			TimeoutSeconds float64 `json:"timeout_seconds"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return tb.runCommand(ctx, a.Command, a.TimeoutSeconds)
	}
	return "", fmt.Errorf("unknown tool %q; the tools are list_files, read_file, write_file, edit_file, search, run_command", name)
}

// dirPrefix resolves an optional directory argument to a slash prefix of workspace paths ("" = all).
func (tb *toolbox) dirPrefix(dir string) (string, error) {
	if strings.TrimSpace(dir) == "" || strings.TrimSpace(dir) == "." {
		return "", nil
	}
	rel, abs, err := tb.ws.resolve(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("directory %q does not exist", dir)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory", dir)
	}
	if rel == "." {
		return "", nil
	}
	return rel + "/", nil
}

// filesMatching lists the workspace's files (honouring .gitignore) below dir whose path relative to
// dir matches glob (every file when glob is empty). what names the glob in errors the model sees.
func (tb *toolbox) filesMatching(ctx context.Context, dir, glob, what string) ([]string, error) {
	if glob != "" {
		if err := validGlob(glob); err != nil {
			return nil, fmt.Errorf("bad %s %q: %v", what, glob, err)
		}
	}
	prefix, err := tb.dirPrefix(dir)
	if err != nil {
		return nil, err
	}
	all, err := tb.ws.files(ctx)
	if err != nil {
		return nil, fmt.Errorf("list files: %v", err)
	}
	var out []string
	for _, f := range all {
		if strings.HasPrefix(f, prefix) && (glob == "" || matchGlob(glob, strings.TrimPrefix(f, prefix))) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (tb *toolbox) listFiles(ctx context.Context, pattern, dir string) (string, error) {
	files, err := tb.filesMatching(ctx, dir, pattern, "pattern")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	n := 0
	for _, f := range files {
		if n < maxListEntries {
			b.WriteString(f + "\n")
		}
		n++
	}
	if n == 0 {
		return "no files match", nil
	}
	if n > maxListEntries {
		fmt.Fprintf(&b, "… %d more files; narrow the pattern\n", n-maxListEntries)
	}
	return b.String(), nil
}

func (tb *toolbox) readFile(p string, offset, limit int) (string, error) {
	_, abs, err := tb.ws.resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("file %q does not exist", p)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%q is a directory; use list_files", p)
	}
	if fi.Size() > maxReadFileBytes {
		return "", fmt.Errorf("%q is too large to read (%d bytes); use search, or run_command with head or sed", p, fi.Size())
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("read %q: %v", p, errors.Unwrap(err))
	}
	if binary(data) {
		return fmt.Sprintf("%q is a binary file (%d bytes); not shown", p, len(data)), nil
	}
	if len(data) == 0 {
		return fmt.Sprintf("%q is empty", p), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = defaultReadLines
	}
	if offset > len(lines) {
		return "", fmt.Errorf("offset %d is past the end of %q (%d lines)", offset, p, len(lines))
	}
	end := min(offset-1+limit, len(lines))
	var b strings.Builder
	for i := offset - 1; i < end; i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		if len(line) > maxLineBytes {
			line = line[:maxLineBytes] + " … [line truncated]"
		}
		row := fmt.Sprintf("%6d\t%s\n", i+1, line)
		if b.Len()+len(row) > maxToolResultBytes {
			end = i
			break
		}
		b.WriteString(row)
	}
	if offset > 1 || end < len(lines) {
		fmt.Fprintf(&b, "(lines %d-%d of %d; use offset to read more)\n", offset, end, len(lines))
	}
	return b.String(), nil
}

func (tb *toolbox) writeFile(p, content string) (string, error) {
	rel, abs, err := tb.ws.resolve(p)
	if err != nil {
		return "", err
	}
	if err := tb.ws.writable(p, rel); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(abs); err == nil {
		if fi.IsDir() {
			return "", fmt.Errorf("%q is a directory", p)
		}
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", fmt.Errorf("create parent of %q: %v", p, errors.Unwrap(err))
	}
	if err := os.WriteFile(abs, []byte(content), mode); err != nil {
		return "", fmt.Errorf("write %q: %v", p, errors.Unwrap(err))
	}
	tb.changed[rel] = true
	return fmt.Sprintf("wrote %d bytes to %s", len(content), rel), nil
}

func (tb *toolbox) editFile(p, oldS, newS string, all bool) (string, error) {
	rel, abs, err := tb.ws.resolve(p)
	if err != nil {
		return "", err
	}
	if err := tb.ws.writable(p, rel); err != nil {
		return "", err
	}
	if oldS == "" {
		return "", errors.New("old_string is empty; use write_file to create a file")
	}
	if oldS == newS {
		return "", errors.New("old_string and new_string are the same")
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("file %q does not exist", p)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("read %q: %v", p, errors.Unwrap(err))
	}
	content := string(data)
	n := strings.Count(content, oldS)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_string not found in %s; read the file again and copy the text exactly, whitespace included", rel)
	case n > 1 && !all:
		return "", fmt.Errorf("old_string occurs %d times in %s; include more surrounding lines to make it unique, or set replace_all", n, rel)
	}
	replaced := 1
	if all {
		content, replaced = strings.ReplaceAll(content, oldS, newS), n
	} else {
		content = strings.Replace(content, oldS, newS, 1)
	}
	if err := os.WriteFile(abs, []byte(content), fi.Mode().Perm()); err != nil {
		return "", fmt.Errorf("write %q: %v", p, errors.Unwrap(err))
	}
	tb.changed[rel] = true
	return fmt.Sprintf("replaced %d occurrence(s) in %s", replaced, rel), nil
}

func (tb *toolbox) search(ctx context.Context, pattern, dir, glob string, ignoreCase bool) (string, error) {
	if pattern == "" {
		return "", errors.New("pattern is empty")
	}
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("bad regular expression: %v", err)
	}
	files, err := tb.filesMatching(ctx, dir, glob, "glob")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	n := 0
	for _, f := range files {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		abs := filepath.Join(tb.ws.root, filepath.FromSlash(f))
		// Symlinks are skipped: their target may be outside the workspace.
		fi, err := os.Lstat(abs)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSearchFileBytes {
			continue
		}
		data, err := os.ReadFile(abs)
		if err != nil || binary(data) {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			n++
			if n <= maxSearchMatches {
				line = strings.TrimRight(line, "\r")
				if len(line) > 300 {
					line = line[:300] + " …"
				}
				fmt.Fprintf(&b, "%s:%d: %s\n", f, i+1, line)
			}
		}
	}
	if n == 0 {
		return "no matches", nil
	}
	if n > maxSearchMatches {
		fmt.Fprintf(&b, "… %d more matches; narrow the pattern, path or glob\n", n-maxSearchMatches)
	}
	return b.String(), nil
}

func (tb *toolbox) runCommand(ctx context.Context, command string, timeoutSecs float64) (string, error) {
	if strings.TrimSpace(command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := tb.cmdTimeout
	if timeoutSecs > 0 {
		timeout = min(timeout, time.Duration(timeoutSecs*float64(time.Second)))
	}
	res, err := proc.Run(ctx, proc.Cmd{
		Shell:     command,
		Sandbox:   tb.sandbox,
		Dir:       tb.ws.root,
		Env:       proc.Environ(tb.passthrough),
		Timeout:   timeout,
		OutputCap: tb.outputCap,
	})
	out := string(res.Output)
	if res.Truncated {
		out += "\n[output truncated]"
	}
	switch {
	case errors.Is(err, proc.ErrTimeout):
		return "", fmt.Errorf("command timed out after %s and was killed; output so far:\n%s", timeout, out)
	case err != nil && ctx.Err() != nil:
		return "", fmt.Errorf("command stopped: %v", ctx.Err())
	case err != nil:
		return "", fmt.Errorf("command could not run: %v", err)
	}
	if res.Limit != "" {
		out += "\n[akira: " + res.Limit + "]"
	}
	code := res.ExitCode
	tb.exitCode = &code
	return fmt.Sprintf("exit code: %d\n%s", res.ExitCode, out), nil
}

func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
